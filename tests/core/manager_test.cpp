// Managers: DJL semantics (docs/design.md §4) and invariants 3 and 4 of §3.
#include <doctest/doctest.h>

#include <sstream>

#include "test_util.hpp"

using namespace ndgc;
using test::AutoClose;
using test::host_bytes;

TEST_CASE("invariant 3: closing a manager closes its arrays whatever handles remain") {
  NDManager m = NDManager::new_base_manager("inv3");
  NDArray a = m.ones({2, 3});
  a.set_name("weights");
  NDArray copy = a;
  m.close();
  CHECK(a.is_closed());
  CHECK(copy.is_closed());
  CHECK_THROWS_WITH_AS(a.shape(), doctest::Contains("'weights'"), ArrayClosed);
  CHECK_THROWS_WITH_AS(copy.add(copy), doctest::Contains("because its manager closed"), ArrayClosed);
  CHECK_THROWS_WITH_AS(a.sum(), doctest::Contains("(2, 3)"), ArrayClosed);
  CHECK_THROWS_WITH_AS(a.sum(), doctest::Contains(a.uid().to_string().c_str()), ArrayClosed);
  CHECK(a.uid() == copy.uid());  // identity survives the close
}

TEST_CASE("invariant 4: after all managers close, bytes in use are back") {
  std::uint64_t before = host_bytes();
  {
    NDManager m = NDManager::new_base_manager("inv4");
    NDManager sub = m.new_sub_manager("sub");
    NDArray a = m.random_normal({64, 64});
    NDArray v = a.transpose();
    NDArray b = sub.ones({64}).add(sub.ones({64}));
    NDArray c = a.matmul(v).sum({0});
    CHECK(host_bytes() > before);
  }
  CHECK(host_bytes() == before);
}

TEST_CASE("close is idempotent; sub-managers close first; closing the system manager throws") {
  NDManager m = NDManager::new_base_manager("parent");
  NDManager sub = m.new_sub_manager("child");
  NDManager subsub = sub.new_sub_manager("grandchild");
  NDArray x = subsub.ones({1});
  m.close();
  m.close();
  CHECK_FALSE(sub.is_open());
  CHECK_FALSE(subsub.is_open());
  CHECK(x.is_closed());
  CHECK_THROWS_WITH_AS(NDManager::system().close(), doctest::Contains("system manager"), InvalidArgument);
  CHECK(NDManager::system().is_open());
}

TEST_CASE("a closed manager throws ManagerClosed through every reference") {
  NDManager m = NDManager::new_base_manager("gone");
  ManagerRef ref = m;
  m.close();
  CHECK(ref.name() == "gone");
  CHECK_FALSE(ref.is_open());
  CHECK_THROWS_WITH_AS(ref.ones({2}), doctest::Contains("'system/gone'"), ManagerClosed);
  CHECK_THROWS_WITH_AS((void)ref.new_sub_manager("x"), doctest::Contains("closed"), ManagerClosed);
  CHECK_THROWS_AS(ref.resource_count(), ManagerClosed);
  CHECK_THROWS_AS(ref.debug_dump(), ManagerClosed);
  NDManager other = NDManager::new_base_manager("other");
  NDArray a = other.ones({1});
  CHECK_THROWS_WITH_AS(ref.attach(a), doctest::Contains("attach"), ManagerClosed);
  CHECK(a.manager().same(other));
  CHECK_THROWS_WITH_AS(ManagerRef().ones({1}), doctest::Contains("empty"), InvalidArgument);
}

TEST_CASE("an op's output joins the manager of its first array input") {
  NDManager a_mgr = NDManager::new_base_manager("a");
  NDManager b_mgr = NDManager::new_base_manager("b");
  NDArray a = a_mgr.ones({3}), b = b_mgr.ones({3});
  CHECK(a.add(b).manager().same(a_mgr));
  CHECK(b.add(a).manager().same(b_mgr));
  CHECK((b * 2.0).manager().same(b_mgr));
  CHECK(a.reshape({3, 1}).manager().same(a_mgr));
}

TEST_CASE("attach and detach move arrays between managers") {
  NDManager m1 = NDManager::new_base_manager("m1");
  NDManager m2 = NDManager::new_base_manager("m2");
  NDArray a = m1.ones({4});
  a.attach(m2);
  CHECK(a.manager().same(m2));
  CHECK(m1.array_count() == 0);
  CHECK(m2.array_count() == 1);
  m1.close();
  CHECK_FALSE(a.is_closed());
  a.detach();
  CHECK(a.manager().is_system());
  m2.close();
  CHECK_FALSE(a.is_closed());
  a.close();  // detached arrays are the user's to close
  CHECK(a.is_closed());
}

TEST_CASE("temp_attach: the array returns to its manager when the borrower closes") {
  NDManager owner = NDManager::new_base_manager("owner");
  NDArray a = owner.ones({4});
  {
    NDManager borrower = owner.new_sub_manager("borrower");
    a.temp_attach(borrower);
    CHECK(a.manager().same(borrower));
    CHECK(owner.array_count() == 0);
  }
  CHECK_FALSE(a.is_closed());
  CHECK(a.manager().same(owner));
  CHECK(owner.array_count() == 1);
}

TEST_CASE("temp_attach: the array closes if its original manager closed first") {
  NDManager borrower = NDManager::new_base_manager("borrower");
  NDArray a;
  {
    NDManager owner = NDManager::new_base_manager("owner");
    a = owner.ones({4});
    a.temp_attach(borrower);
  }
  CHECK_FALSE(a.is_closed());  // the borrower holds it now
  borrower.close();
  CHECK(a.is_closed());
}

TEST_CASE("temp_attach nests: each borrower returns the array to the one it came from") {
  NDManager owner = NDManager::new_base_manager("owner");
  NDManager first = NDManager::new_base_manager("first");
  NDManager second = NDManager::new_base_manager("second");
  NDArray a = owner.ones({1});
  a.temp_attach(first);
  a.temp_attach(second);
  second.close();
  CHECK(a.manager().same(first));
  first.close();
  CHECK(a.manager().same(owner));
  // A permanent attach ends the loan.
  NDManager third = NDManager::new_base_manager("third");
  a.temp_attach(third);
  NDManager fourth = NDManager::new_base_manager("fourth");
  a.attach(fourth);
  third.close();
  fourth.close();
  CHECK(a.is_closed());
}

TEST_CASE("ret moves an array to the parent") {
  NDManager parent = NDManager::new_base_manager("parent");
  NDArray r;
  {
    NDManager child = parent.new_sub_manager("child");
    NDArray t = child.ones({3}) * 4.0;
    r = child.ret(t);
    CHECK(r.same(t));
  }
  CHECK(r.manager().same(parent));
  CHECK(r.to_vector<float>() == std::vector<float>{4, 4, 4});
  CHECK_THROWS_WITH_AS(NDManager::system().ret(r), doctest::Contains("no parent"), InvalidArgument);
}

TEST_CASE("cap: attach and op outputs throw ManagerCapped; sub-managers and ret are exempt") {
  NDManager m = NDManager::new_base_manager("capped");
  NDArray w = m.ones({2});
  m.cap();
  CHECK(m.is_capped());
  std::uint64_t before = host_bytes();
  CHECK_THROWS_WITH_AS(m.zeros({2}), doctest::Contains("capped"), ManagerCapped);
  CHECK_THROWS_WITH_AS(w.add(w), doctest::Contains("add"), ManagerCapped);
  CHECK(host_bytes() == before);  // the failed op left nothing behind
  CHECK(m.array_count() == 1);
  NDManager other = NDManager::new_base_manager("other");
  NDArray x = other.ones({2});
  CHECK_THROWS_AS(m.attach(x), ManagerCapped);
  CHECK_THROWS_AS(x.temp_attach(m), ManagerCapped);
  NDManager sub = m.new_sub_manager("exempt");
  NDArray y = sub.ret(sub.ones({2}));
  CHECK(y.manager().same(m));
}

TEST_CASE("names, uids, parents, counts and listings") {
  NDManager m = NDManager::new_base_manager("base");
  CHECK(m.name() == "base");
  m.set_name("renamed");
  CHECK(m.name() == "renamed");
  CHECK(m.parent().is_system());
  CHECK_FALSE(NDManager::system().parent().defined());
  CHECK(m.uid() != NDManager::new_base_manager().uid());
  NDManager sub = m.new_sub_manager("sub");
  NDArray a = m.ones({1}), b = sub.ones({2});
  { NDArray orphan = m.zeros({3}); }
  CHECK(m.array_count() == 2);
  CHECK(m.resource_count() == 3);  // two arrays and a sub-manager, as DJL counts resources
  NDList listed = m.managed_arrays();  // reachable arrays of m and its sub-managers
  CHECK(listed.size() == 2);
  CHECK(m.sub_managers().size() == 1);
}

TEST_CASE("debug_dump lists the tree, and each array in the detailed form") {
  NDManager m = NDManager::new_base_manager("dumped");
  NDManager sub = m.new_sub_manager("inner");
  NDArray a = m.ones({2, 2});
  a.set_name("alpha");
  NDArray b = sub.zeros({3});
  std::string brief = m.debug_dump(false);
  CHECK(brief.find("dumped") != std::string::npos);
  CHECK(brief.find("  inner") != std::string::npos);
  CHECK(brief.find("'alpha'") == std::string::npos);
  std::ostringstream out;
  m.debug_dump(out, true);
  std::string full = out.str();
  CHECK(full.find("'alpha' (2, 2) float32 16 B") != std::string::npos);
  CHECK(full.find("manager_test.cpp:") != std::string::npos);
  CHECK(full.find("handles=1") != std::string::npos);
}

TEST_CASE("a moved-from or default NDManager is inert; move assignment closes the old one") {
  NDManager a = NDManager::new_base_manager("a");
  NDArray x = a.ones({1});
  NDManager b = std::move(a);
  CHECK_FALSE(x.is_closed());
  b = NDManager::new_base_manager("c");
  CHECK(x.is_closed());
  ManagerRef kept = NDManager::new_base_manager("released").release();
  CHECK(kept.is_open());
  kept.close();
}

// ---- issue 11 ---------------------------------------------------------------

TEST_CASE("temp_attach to the system manager throws InvalidArgument and moves nothing") {
  NDManager m = NDManager::new_base_manager("lender");
  NDArray a = m.ones({2});
  CHECK_THROWS_WITH_AS(a.temp_attach(NDManager::system()),
                       doctest::Contains("system manager cannot be temp-attached to: it never closes"),
                       InvalidArgument);
  CHECK_THROWS_AS(NDManager::system().temp_attach(a), InvalidArgument);
  CHECK_THROWS_WITH_AS(NDManager::system().temp_attach_all(NDList{a}),
                       doctest::Contains("temp_attach_all: the system manager cannot be temp-attached"),
                       InvalidArgument);
  CHECK(a.manager().same(m));
  CHECK(m.array_count() == 1);
  m.close();
  CHECK(a.is_closed());  // still m's: closed with it, not lent away
}

TEST_CASE("new_sub_manager on another device, with or without a name") {
  test::FakeGpuProbe probe(2);  // gpu(0) and gpu(1) usable; no array is made on them
  NDManager base = NDManager::new_base_manager("devices");
  NDManager g = base.new_sub_manager(Device::gpu(1));
  CHECK(g.device() == Device::gpu(1));
  CHECK(g.parent().same(base));
  NDManager named = base.new_sub_manager("host-side", Device::cpu());
  CHECK(named.name() == "host-side");
  CHECK(named.device() == Device::cpu());
  CHECK(named.ones({2}).manager().same(named));
  NDManager plain = g.new_sub_manager("inherits");
  CHECK(plain.device() == Device::gpu(1));  // a sub-manager defaults to its parent's device
  ManagerRef ref = base;                    // a ManagerRef can do it too
  CHECK(ref.new_sub_manager(Device::gpu(0)).device() == Device::gpu(0));

  CHECK_THROWS_WITH_AS((void)base.new_sub_manager(Device::gpu(kMaxGpus)),
                       doctest::Contains("new_sub_manager: gpu(16) is not a valid device"), InvalidArgument);
  CHECK_THROWS_AS((void)base.new_sub_manager("bad", Device{DeviceType::cpu, 3}), InvalidArgument);
  base.close();
  CHECK_THROWS_WITH_AS((void)ref.new_sub_manager(Device::cpu()), doctest::Contains("is closed"), ManagerClosed);
  CHECK_THROWS_AS((void)ref.new_sub_manager("late", Device::cpu()), ManagerClosed);
}

TEST_CASE("attach_all and temp_attach_all move every array; a refused call moves none") {
  NDManager from = NDManager::new_base_manager("from");
  NDManager to = NDManager::new_base_manager("to");
  NDList list{from.ones({2}), from.zeros({3})};
  to.attach_all(list);
  for (const NDArray& a : list) CHECK(a.manager().same(to));

  NDManager borrower = to.new_sub_manager("borrower");
  borrower.temp_attach_all(list);
  for (const NDArray& a : list) CHECK(a.manager().same(borrower));
  borrower.close();
  for (const NDArray& a : list) {
    CHECK_FALSE(a.is_closed());
    CHECK(a.manager().same(to));  // lent, so given back
  }

  to.attach_all(NDList{});       // an empty list: nothing to do
  to.temp_attach_all(NDList{});

  NDManager capped = NDManager::new_base_manager("capped");
  capped.cap();
  CHECK_THROWS_WITH_AS(capped.attach_all(list), doctest::Contains("attach_all: manager 'system/capped'"),
                       ManagerCapped);
  CHECK_THROWS_AS(capped.temp_attach_all(list), ManagerCapped);
  CHECK_THROWS_AS(list.attach(capped), ManagerCapped);
  for (const NDArray& a : list) CHECK(a.manager().same(to));

  NDManager closed = NDManager::new_base_manager("closed");
  closed.close();
  CHECK_THROWS_WITH_AS(closed.attach_all(list), doctest::Contains("attach_all: manager 'system/closed'"),
                       ManagerClosed);
  CHECK_THROWS_AS(closed.attach_all(NDList{}), ManagerClosed);  // the manager is checked even for an empty list
  CHECK_THROWS_AS(closed.temp_attach_all(list), ManagerClosed);
  for (const NDArray& a : list) CHECK(a.manager().same(to));
}

TEST_CASE("get(manager, index): the view joins the given manager") {
  NDManager model = NDManager::new_base_manager("model");
  NDArray table = model.arange(0, 12).reshape({3, 4});
  const std::size_t held = model.array_count();
  model.cap();  // a long-lived manager nothing should land in
  CHECK_THROWS_AS(table.get("1"), ManagerCapped);
  NDManager step = NDManager::new_base_manager("step");
  NDArray row = table.get(step, "1, 1:3");
  CHECK(row.manager().same(step));
  CHECK(row.to_vector<float>() == std::vector<float>{5, 6});
  CHECK(row.shares_storage(table));  // still a view
  CHECK(model.array_count() == held);
  step.close();
  CHECK(row.is_closed());
  CHECK_FALSE(table.is_closed());
  CHECK(table.to_vector<float>()[11] == 11);  // the buffer is still the table's

  CHECK_THROWS_WITH_AS(table.get(step, "0"), doctest::Contains("get: manager 'system/step'"), ManagerClosed);
  NDManager capped = NDManager::new_base_manager("capped-get");
  capped.cap();
  CHECK_THROWS_WITH_AS(table.get(capped, "0"), doctest::Contains("capped"), ManagerCapped);
  CHECK_THROWS_WITH_AS(table.get(ManagerRef(), "0"), doctest::Contains("ManagerRef is empty"), InvalidArgument);
  CHECK_THROWS_AS(table.get(NDManager::new_base_manager("ok"), "7"), InvalidArgument);  // index out of range
}

TEST_CASE("new_sub_manager on a GPU that is not available throws InvalidArgument naming it") {
  REQUIRE(gpu_count() == 0);  // this binary links no CUDA engine
  NDManager base = NDManager::new_base_manager("no-gpu");
  CHECK_THROWS_WITH_AS((void)base.new_sub_manager(Device::gpu(1)),
                       doctest::Contains("new_sub_manager: gpu(1) is not available"), InvalidArgument);
  CHECK(base.sub_managers().empty());
}

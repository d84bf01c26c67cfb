// NDList: manager calls over every handle in the list.
#include <doctest/doctest.h>

#include "test_util.hpp"

using namespace ndgc;

TEST_CASE("NDList attach, temp_attach, detach, head, at") {
  NDManager a = NDManager::new_base_manager("a");
  NDManager b = NDManager::new_base_manager("b");
  NDList list{a.ones({2}), a.zeros({3})};
  CHECK(list.size() == 2);
  CHECK(list.nbytes() == 20);
  list.attach(b);
  CHECK(b.array_count() == 2);
  CHECK(a.array_count() == 0);
  {
    NDManager c = NDManager::new_base_manager("c");
    list.temp_attach(c);
    CHECK(c.array_count() == 2);
  }
  CHECK(b.array_count() == 2);
  list.detach();
  CHECK(b.array_count() == 0);
  CHECK(list.head().manager().is_system());
  CHECK_THROWS_WITH_AS(list.at(5), doctest::Contains("index 5"), InvalidArgument);
  CHECK_THROWS_WITH_AS(NDList().head(), doctest::Contains("empty"), InvalidArgument);
  for (NDArray& x : list) x.close();
}

TEST_CASE("NDList::close closes every array; manager() is the first array's") {
  NDManager m = NDManager::new_base_manager("list-close");
  NDManager other = NDManager::new_base_manager("list-other");
  NDList list{m.ones({2}), other.zeros({3}), NDArray()};
  CHECK(list.manager().same(m));
  NDArray keep = m.ones({1});
  list.close();
  CHECK(list[0].is_closed());
  CHECK(list[1].is_closed());
  CHECK(list.size() == 3);  // the handles stay
  CHECK_FALSE(keep.is_closed());
  list.close();  // idempotent
  CHECK(m.array_count() == 1);
  CHECK(other.array_count() == 0);
  CHECK_THROWS_AS((void)list.manager(), ArrayClosed);

  CHECK_THROWS_WITH_AS((void)NDList().manager(), doctest::Contains("NDList::manager: the list is empty"),
                       InvalidArgument);
}

TEST_CASE("NDList::temp_attach to the system manager throws InvalidArgument, even when empty") {
  NDManager m = NDManager::new_base_manager("list-temp");
  NDList list{m.ones({2}), m.ones({3})};
  CHECK_THROWS_WITH_AS(list.temp_attach(NDManager::system()),
                       doctest::Contains("system manager cannot be temp-attached to"), InvalidArgument);
  CHECK_THROWS_AS(NDList().temp_attach(NDManager::system()), InvalidArgument);
  for (const NDArray& a : list) CHECK(a.manager().same(m));
}

// Note [Inline handles]: two handles inline, a third moves them all to the heap.
TEST_CASE("NDList: order, copies and moves across the inline-to-heap move; clear drops the handles") {
  test::AutoClose on(true);  // a handle left behind would keep its array open
  NDManager m = NDManager::new_base_manager("inline");
  auto values = [](const NDList& l) {
    std::vector<float> v;
    for (const NDArray& a : l) v.push_back(a.item<float>());
    return v;
  };
  NDList list;
  CHECK(list.empty());
  CHECK(list.begin() == list.end());
  for (int i = 0; i < 5; ++i) {
    list.push_back(m.full({}, double(i)));
    CHECK(list.size() == std::size_t(i + 1));
    CHECK(list.arrays().size() == list.size());
    NDList copy = list;                 // a copy shares the handles
    CHECK(values(copy) == values(list));
    NDList moved = std::move(copy);     // a move leaves the source empty
    CHECK(copy.empty());
    CHECK(values(moved) == values(list));
    moved = std::move(moved);           // self-move keeps it
    CHECK(moved.size() == list.size());
  }
  CHECK(values(list) == std::vector<float>{0, 1, 2, 3, 4});
  CHECK(list.at(4).item<float>() == 4);
  CHECK_THROWS_WITH_AS(list.at(5), doctest::Contains("index 5 is out of range for a list of 5"), InvalidArgument);
  gc::poll();
  CHECK(m.array_count() == 5);
  list.clear();                         // drops every handle: auto-close closes the arrays
  gc::poll();
  CHECK(list.empty());
  CHECK(m.array_count() == 0);
  list.push_back(m.ones({2}));          // refilled after having spilled
  CHECK(list.size() == 1);
  CHECK(list.head().shape() == Shape{2});
  NDList two{m.ones({1}), m.zeros({1})};
  two.clear();
  gc::poll();
  CHECK(m.array_count() == 1);
}

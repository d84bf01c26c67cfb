// NDScope: arrays created inside a block close when it ends, except kept ones.
#include <doctest/doctest.h>

#include <thread>

#include "test_util.hpp"

using namespace ndgc;

TEST_CASE("a scope closes what was created inside it, except what it keeps") {
  NDManager m = NDManager::new_base_manager("scoped");
  NDArray outside = m.ones({2});
  NDArray kept, dropped;
  std::uint64_t before = test::host_bytes();
  {
    NDScope scope;
    dropped = m.ones({64}) * 3.0;  // two arrays: ones and the product
    kept = scope.keep(dropped.sum());
    CHECK(scope.tracked() == 2);
  }
  CHECK(dropped.is_closed());
  CHECK_FALSE(kept.is_closed());
  CHECK_FALSE(outside.is_closed());
  CHECK(kept.item<float>() == 192.0f);
  CHECK(test::host_bytes() == before + 4);
}

TEST_CASE("scopes nest; each closes only its own arrays") {
  NDManager m = NDManager::new_base_manager("nested");
  NDArray a, b;
  {
    NDScope outer;
    a = m.ones({1});
    {
      NDScope inner;
      b = m.ones({1});
    }
    CHECK(b.is_closed());
    CHECK_FALSE(a.is_closed());
  }
  CHECK(a.is_closed());
}

TEST_CASE("a scope belongs to its thread") {
  NDManager m = NDManager::new_base_manager("per-thread");
  NDArray from_thread;
  {
    NDScope scope;
    std::thread([&] { from_thread = m.ones({1}); }).join();
  }
  CHECK_FALSE(from_thread.is_closed());
}

TEST_CASE("keep on an NDList; arrays closed earlier are skipped") {
  NDManager m = NDManager::new_base_manager("list-scope");
  NDList kept;
  {
    NDScope scope;
    kept = scope.keep(NDList{m.ones({1}), m.zeros({1})});
    NDArray gone = m.ones({1});
    gone.close();
  }
  CHECK_FALSE(kept[0].is_closed());
  CHECK_FALSE(kept[1].is_closed());
}

TEST_CASE("NDScope::attach closes an array made elsewhere; detach spares one made inside") {
  NDManager m = NDManager::new_base_manager("scope-attach");
  NDArray before = m.ones({2});
  NDArray inside;
  {
    NDScope scope;
    scope.attach(before);
    scope.attach(before);  // twice: still one entry
    inside = m.zeros({3});
    CHECK(scope.tracked() == 2);
    scope.detach(inside);
    CHECK(scope.tracked() == 1);
    CHECK_THROWS_WITH_AS(scope.attach(NDArray()), doctest::Contains("NDScope::attach: the NDArray handle is empty"),
                         InvalidArgument);
    NDArray gone = m.ones({1});
    gone.close();
    CHECK_THROWS_WITH_AS(scope.attach(gone), doctest::Contains("NDScope::attach"), ArrayClosed);
  }
  CHECK(before.is_closed());
  CHECK_FALSE(inside.is_closed());
}

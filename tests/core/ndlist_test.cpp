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

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

// FreeList (support/free_list.hpp): reuse on the same thread, the depth
// bound, per-thread lists. Sanitizer builds bypass the lists (exact
// objects), so these checks skip there.
#include <doctest/doctest.h>

#include <thread>
#include <vector>

#include "support/free_list.hpp"

namespace ndgc::support {
namespace {
struct TagA;
struct TagB;
using ListA = FreeList<48, TagA>;
using ListB = FreeList<48, TagB>;
}  // namespace

TEST_CASE("a freed block is handed out again on the same thread, last in first out" *
          doctest::skip(NDGC_EXACT_OBJECTS)) {
  void* a = ListA::allocate();
  void* b = ListA::allocate();
  const int before = ListA::cached();
  ListA::free(a);
  ListA::free(b);
  CHECK(ListA::cached() == before + 2);
  CHECK(ListA::allocate() == b);
  CHECK(ListA::allocate() == a);
  CHECK(ListA::cached() == before);
  ListA::free(a);
  ListA::free(b);
}

TEST_CASE("lists of different tags are separate" * doctest::skip(NDGC_EXACT_OBJECTS)) {
  void* a = ListA::allocate();
  const int b_before = ListB::cached();
  ListA::free(a);
  CHECK(ListB::cached() == b_before);
  void* b = ListB::allocate();
  CHECK(b != a);
  ListB::free(b);
}

TEST_CASE("a thread keeps at most kFreeListDepth blocks; the rest go back to the heap" *
          doctest::skip(NDGC_EXACT_OBJECTS)) {
  std::thread([] {
    CHECK(ListA::cached() == 0);  // a new thread starts with an empty list
    std::vector<void*> blocks;
    for (int i = 0; i < kFreeListDepth + 10; ++i) blocks.push_back(ListA::allocate());
    for (void* p : blocks) ListA::free(p);
    CHECK(ListA::cached() == kFreeListDepth);
  }).join();
}

TEST_CASE("a block freed on another thread joins that thread's list" * doctest::skip(NDGC_EXACT_OBJECTS)) {
  void* p = ListA::allocate();
  const int here = ListA::cached();
  std::thread([p] {
    ListA::free(p);
    CHECK(ListA::cached() == 1);
    CHECK(ListA::allocate() == p);
    ListA::free(p);
  }).join();
  CHECK(ListA::cached() == here);
}

}  // namespace ndgc::support

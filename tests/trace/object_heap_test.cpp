// Collectable objects and `new NDArray` on the collected heap
// (src/trace/object_heap.cpp), and what the collector always sees.
#include <doctest/doctest.h>

#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "trace_util.hpp"

using namespace ndgc;
using test::collect_until;
using test::TraceOn;

namespace {

struct Node : Collectable {
  NDArray value;
  Node* other = nullptr;
};

struct Bag : Collectable {
  std::vector<NDArray, CollectableAllocator<NDArray>> parts;
};

[[gnu::noinline]] void make_cycle(const ManagerRef& m) {
  Node* a = new Node;
  Node* b = new Node;
  a->value = m.ones({256});
  b->value = m.ones({256});
  a->other = b;
  b->other = a;
}

[[gnu::noinline]] void make_bag(const ManagerRef& m) {
  Bag* bag = new Bag;
  for (int i = 0; i < 5; ++i) bag->parts.push_back(m.zeros({32}));
}

// Garbage of every kind between collections.
[[gnu::noinline]] void churn(const ManagerRef& m) {
  for (int i = 0; i < 50; ++i) {
    (void)m.ones({4}).add(1.0);
    auto* n = new Node;
    n->value = m.zeros({2});
    n->value = NDArray();  // dropped properly: refcounting reclaims it
    std::vector<std::string> noise(10, std::string(100, 'x'));
  }
}

}  // namespace

TEST_CASE("two Collectables pointing at each other, dropped: both arrays reclaimed as leaked") {
  test::run_clean([] {
    TraceOn on;
    test::settle();
    NDManager m = NDManager::new_base_manager("cycle");
    const std::uint64_t before = test::host_bytes();
    const std::uint64_t leaked = gc::stats().leaked_handles;
    make_cycle(m);
    CHECK(m.array_count() == 2);
    REQUIRE(collect_until([&] { return m.array_count() == 0; }));
    CHECK(test::host_bytes() == before);
    CHECK(gc::stats().leaked_handles == leaked + 2);
  });
}

TEST_CASE("a container with CollectableAllocator inside a dropped Collectable is reclaimed with it") {
  test::run_clean([] {
    TraceOn on;
    NDManager m = NDManager::new_base_manager("bag");
    make_bag(m);
    CHECK(m.array_count() == 5);
    REQUIRE(collect_until([&] { return m.array_count() == 0; }));
  });
}

TEST_CASE("handles the program can reach are never reclaimed, over many collections") {
  test::run_clean([] {
    TraceOn on;
    test::settle();
    NDManager m = NDManager::new_base_manager("reachable");
    NDManager scratch = NDManager::new_base_manager("scratch");
    const std::uint64_t leaked = gc::stats().leaked_handles;

    std::vector<NDArray> in_vector;
    for (int i = 0; i < 20; ++i) in_vector.push_back(m.full({3}, double(i)));
    std::unordered_map<std::string, NDArray> in_map;
    for (int i = 0; i < 20; ++i) in_map.emplace("k" + std::to_string(i), m.full({3}, double(i)));
    Node* reachable = new Node;  // a Collectable the stack points at
    reachable->value = m.full({3}, 7.0);
    reachable->other = new Node;
    reachable->other->value = m.full({3}, 8.0);
    NDArray* fresh = new NDArray(m.full({3}, 9.0));  // a `new NDArray` the stack points at
    auto owned = std::make_unique<NDArray>(m.full({3}, 10.0));
    auto shared = std::make_shared<NDArray>(m.full({3}, 11.0));
    const std::size_t count = m.array_count();

    for (int round = 0; round < 25; ++round) {
      churn(scratch);
      test::wipe_stack();
      gc::collect();
    }
    CHECK(gc::stats().leaked_handles == leaked);
    CHECK(m.array_count() == count);
    for (int i = 0; i < 20; ++i) {
      CHECK(in_vector[std::size_t(i)].sum().item<float>() == 3.0f * float(i));
      CHECK(in_map.at("k" + std::to_string(i)).sum().item<float>() == 3.0f * float(i));
    }
    CHECK(reachable->value.sum().item<float>() == 21.0f);
    CHECK(reachable->other->value.sum().item<float>() == 24.0f);
    CHECK(fresh->sum().item<float>() == 27.0f);
    CHECK(owned->sum().item<float>() == 30.0f);
    CHECK(shared->sum().item<float>() == 33.0f);
    delete fresh;
    delete reachable->other;
    delete reachable;
  });
}

TEST_CASE("delete frees a new NDArray from whichever heap it came from") {
  NDManager m = NDManager::new_base_manager("delete");
  NDArray* before_on = new NDArray(m.ones({1}));  // ordinary heap
  NDArray* while_on = nullptr;
  {
    TraceOn on;
    while_on = new NDArray(m.ones({1}));  // collected heap
    delete before_on;
  }
  NDArray* after_off = new NDArray(m.ones({1}));
  delete while_on;
  delete after_off;
  gc::sweep();
  CHECK(m.array_count() == 0);
  alignas(NDArray) unsigned char buffer[sizeof(NDArray)];
  TraceOn on;
  auto* placed = new (buffer) NDArray(m.ones({2}));  // placement new is untouched
  CHECK(placed->handle_count() == 1);
  placed->~NDArray();
  NDArray* nothrow = new (std::nothrow) NDArray(m.ones({2}));
  REQUIRE(nothrow);
  delete nothrow;
}

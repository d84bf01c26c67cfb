// Heap allocations counted with a hook, not a timer: a test binary that links
// tests/malloc_counter.cpp replaces malloc and its relatives (operator new
// calls malloc) by counting wrappers around glibc's own entry points, so
// every heap allocation on any thread is seen, whatever layer makes it. The
// count is global and relaxed; it only ever grows.
//
//   const std::uint64_t before = test::heap_allocations();
//   ...                                            // the code under test
//   CHECK(test::heap_allocations() - before == 0);
//
// Sanitizer builds keep their runtime's malloc (a second definition would
// break it): there kCountsMalloc is false and the count stays 0, so tests
// skip themselves with `doctest::skip(!test::kCountsMalloc)`.
#pragma once

#include <cstdint>

#include "support/sanitizers.hpp"

#if NDGC_ASAN || NDGC_TSAN
#define NDGC_COUNT_MALLOC 0
#else
#define NDGC_COUNT_MALLOC 1
#endif

namespace ndgc::test {

inline constexpr bool kCountsMalloc = NDGC_COUNT_MALLOC;

// Heap allocations so far in this process (0 where kCountsMalloc is false).
std::uint64_t heap_allocations() noexcept;
// Those of them made inside a oneDNN execute (ops/cpu/onednn.hpp), which
// frees them before it returns.
std::uint64_t onednn_heap_allocations() noexcept;

}  // namespace ndgc::test

// The counting malloc of tests/malloc_counter.hpp.
#include "malloc_counter.hpp"

#include <atomic>
#include <cstddef>

#include "ops/cpu/onednn.hpp"

namespace {
std::atomic<std::uint64_t> g_allocations{0}, g_onednn_allocations{0};
[[maybe_unused]] void count() noexcept {
  g_allocations.fetch_add(1, std::memory_order_relaxed);
  if (ndgc::ops::cpu::inside_onednn()) g_onednn_allocations.fetch_add(1, std::memory_order_relaxed);
}
}  // namespace

std::uint64_t ndgc::test::heap_allocations() noexcept { return g_allocations.load(std::memory_order_relaxed); }
std::uint64_t ndgc::test::onednn_heap_allocations() noexcept {
  return g_onednn_allocations.load(std::memory_order_relaxed);
}

#if NDGC_COUNT_MALLOC
extern "C" {
void* __libc_malloc(std::size_t);
void* __libc_calloc(std::size_t, std::size_t);
void* __libc_realloc(void*, std::size_t);
void* __libc_memalign(std::size_t, std::size_t);
void __libc_free(void*);

void* malloc(std::size_t n) {
  count();
  return __libc_malloc(n);
}
void* calloc(std::size_t n, std::size_t m) {
  count();
  return __libc_calloc(n, m);
}
void* realloc(void* p, std::size_t n) {
  count();
  return __libc_realloc(p, n);
}
void* memalign(std::size_t a, std::size_t n) {
  count();
  return __libc_memalign(a, n);
}
void* aligned_alloc(std::size_t a, std::size_t n) {
  count();
  return __libc_memalign(a, n);
}
int posix_memalign(void** out, std::size_t a, std::size_t n) {
  count();
  void* p = __libc_memalign(a, n);
  if (!p) return 12;  // ENOMEM
  *out = p;
  return 0;
}
void free(void* p) { __libc_free(p); }
}
#endif

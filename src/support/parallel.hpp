// Intra-op parallelism for kernels: parallel_for and parallel_chunks.
//
// Both run `body` over [0, n) on the pool of support/thread_pool.cpp, the
// calling thread taking a share, and return when every piece has finished.
// Work of n <= grain, a count of 1 thread, a region inside another region and
// a region that finds the pool busy all run inline on the caller, with no
// hand-off at all. The body must do kernel arithmetic only (Note [What pool
// threads may do] in thread_pool.cpp): no allocation from a workspace, no
// registry or manager, no user code. An exception from a piece is rethrown on
// the caller (the lowest piece's, when several throw).
//
// Determinism: parallel_for splits [0, n) into as many pieces as threads, so
// its body must give the same bits however the range is cut (element-wise
// work). parallel_chunks cuts [0, n) into fixed chunks of `chunk` elements
// whatever the thread count, so a reduction that writes one partial per chunk
// and combines them in chunk order gives the same bits on 1 thread or 64.
#pragma once

#include <cstdint>
#include <type_traits>
#include <utility>
#include <vector>

namespace ndgc::support {

// ATen's grain: below this many elements a hand-off costs more than it saves.
constexpr std::int64_t kGrainSize = 32768;

// A non-owning, non-allocating reference to a callable (llvm::function_ref):
// a region runs every step without touching the heap.
class TaskRef {
 public:
  // Not for F = TaskRef: copying a non-const TaskRef would otherwise pick
  // this constructor over the copy constructor and wrap the reference itself
  // (one more indirect call, and a pointer to a TaskRef that may be gone).
  template <class F>
    requires(!std::is_same_v<std::remove_cvref_t<F>, TaskRef>)
  TaskRef(F& f) noexcept  // NOLINT: implicit by design
      : object_(static_cast<void*>(&f)), call_([](void* o, std::int64_t i) { (*static_cast<F*>(o))(i); }) {}
  void operator()(std::int64_t i) const { call_(object_, i); }

 private:
  void* object_;
  void (*call_)(void*, std::int64_t);
};

// The default thread count: `configured` (NDGC_NUM_THREADS) when positive,
// else `cores` divided by the local ranks (OMPI_COMM_WORLD_LOCAL_SIZE, may be
// null), at least 1.
int default_threads(int configured, unsigned cores, const char* local_ranks) noexcept;

// Runs task(0) ... task(count - 1), spread over the pool when it is free and
// this thread is not already inside a region; inline otherwise.
void run_tasks(std::int64_t count, TaskRef task);
// The threads a region may use now (1 inside a region or when set so).
int region_threads() noexcept;

template <class Body>
void parallel_for(std::int64_t n, std::int64_t grain, Body&& body) {
  if (n <= 0) return;
  const int threads = n > grain ? region_threads() : 1;
  std::int64_t pieces = grain > 0 ? n / grain : n;
  if (pieces > threads) pieces = threads;
  if (pieces <= 1) {
    body(std::int64_t{0}, n);
    return;
  }
  auto task = [&](std::int64_t i) { body(n * i / pieces, n * (i + 1) / pieces); };
  run_tasks(pieces, TaskRef(task));
}

// body(chunk_index, begin, end) for each fixed chunk of [0, n).
template <class Body>
void parallel_chunks(std::int64_t n, std::int64_t chunk, Body&& body) {
  if (n <= 0) return;
  const std::int64_t count = (n + chunk - 1) / chunk;
  auto task = [&](std::int64_t i) {
    const std::int64_t lo = i * chunk;
    body(i, lo, lo + chunk < n ? lo + chunk : n);
  };
  if (count == 1 || region_threads() == 1) {
    for (std::int64_t i = 0; i < count; ++i) task(i);
    return;
  }
  run_tasks(count, TaskRef(task));
}

// The fixed chunks' partials, partial(begin, end) each, combined in chunk
// order: combine(...combine(combine(partial_0, partial_1), partial_2)...).
// The same bits at every thread count. Up to 64 partials live on the stack.
template <class T, class Partial, class Combine>
T parallel_reduce(std::int64_t n, std::int64_t chunk, T identity, Partial&& partial, Combine&& combine) {
  if (n <= 0) return identity;
  const std::int64_t count = (n + chunk - 1) / chunk;
  if (count == 1) return partial(std::int64_t{0}, n);
  T local[64];
  std::vector<T> heap;
  T* parts = local;
  if (count > 64) {
    heap.resize(std::size_t(count));
    parts = heap.data();
  }
  parallel_chunks(n, chunk, [&](std::int64_t i, std::int64_t lo, std::int64_t hi) { parts[i] = partial(lo, hi); });
  T total = parts[0];
  for (std::int64_t i = 1; i < count; ++i) total = combine(total, parts[i]);
  return total;
}

}  // namespace ndgc::support

// Page faults per steady training step (Note [Large host blocks] in
// src/memory/large_block_cache.hpp): ndgc-train's three models at their
// shipped sizes, batch 32. A steady loop allocates the same buffers every
// step; once they are mapped, reusing them faults nothing in. Counted with
// getrusage (minor faults, every thread of the process), not timed.
//
// Skipped where the host allocator caches nothing (sanitizer builds give
// every buffer exact bounds, so every step maps and faults afresh).
#include <doctest/doctest.h>

#include <cstdint>
#include <string>

#include <sys/resource.h>

#include <ndgc/memory.hpp>

#include "malloc_counter.hpp"
#include "memory/large_block_cache.hpp"
#include "steady_steps.hpp"

namespace ndgc {
namespace {

std::uint64_t minor_faults() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return std::uint64_t(u.ru_minflt);
}

double faults_per_step(const Architecture& architecture) {
  test::SteadyRun run;
  run.architecture = architecture;
  run.autoclose = true;
  run.warmup = 5;
  run.measured = 50;
  // Faults also come from outside the program: the kernel migrating pages
  // (compaction for huge pages) while other processes churn memory. CI
  // counted 3.94 a CNN step once on a loaded machine, 0 on a quiet one. So
  // the bound applies to the best of five windows of ten steps: a fault of
  // every step still shows in each of them.
  run.windows = 5;
  return test::per_step(run, minor_faults);
}

// "Near zero": a steady step of the CNN touched ~1,500 fresh pages (6 MiB)
// before large blocks were cached; one fault in ten steps allows for the
// odd page of a thread stack or a lazily bound symbol.
constexpr double kAtMost = 0.1;

}  // namespace

TEST_CASE("a steady training step takes no page fault: mlp, cnn and lstm at their shipped sizes" *
          doctest::skip(!test::kCountsMalloc)) {
  for (const Architecture& a : {Architecture::mlp(784, 10, {128, 64}), Architecture::cnn(784, 10),
                                Architecture::lstm(784, 10)}) {
    CAPTURE(a.name);
    const double faults = faults_per_step(a);
    MESSAGE(a.name << ": " << faults << " minor page faults per steady step");
    CHECK(faults <= kAtMost);
  }
}

TEST_CASE("the fault counter sees faults (so the bound above can fail)" * doctest::skip(!test::kCountsMalloc)) {
  // With the large-block cache switched off, every step maps its large
  // buffers afresh and faults them in.
  memory::empty_cache(Device::cpu());
  const std::uint64_t budget = memory::large_cache_budget();
  memory::set_large_cache_budget(0);
  const double faults = faults_per_step(Architecture::cnn(784, 10));
  memory::set_large_cache_budget(budget);
  MESSAGE("cnn without the cache: " << faults << " minor page faults per steady step");
  CHECK(faults > 100);
}

}  // namespace ndgc

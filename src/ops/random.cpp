// The seed behind random_uniform and random_normal.
//
// A call draws `n` numbers from positions [offset, offset + n) of the stream
// named by the seed; the engines' generators are counter-based, so the same
// seed and the same sequence of calls give the same arrays on any thread.
#include "ops/random.hpp"

#include <atomic>

#include "ndgc/ndarray.hpp"

namespace ndgc {
namespace {
constexpr std::uint64_t kDefaultSeed = 0x6e6467632d736565ull;
std::atomic<std::uint64_t> g_seed{kDefaultSeed};
std::atomic<std::uint64_t> g_offset{0};
}  // namespace

void set_random_seed(std::uint64_t seed) {
  g_seed.store(seed, std::memory_order_relaxed);
  g_offset.store(0, std::memory_order_relaxed);
}

namespace ops {
RandomDraw reserve_random(std::uint64_t count) noexcept {
  return {g_seed.load(std::memory_order_relaxed), g_offset.fetch_add(count, std::memory_order_relaxed)};
}
}  // namespace ops

}  // namespace ndgc

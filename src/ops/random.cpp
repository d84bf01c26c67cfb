// The seed behind random_uniform, random_normal and dropout.
//
// A call draws `n` numbers from positions [offset, offset + n) of the stream
// named by the seed; the engines' generators are counter-based, so the same
// seed and the same sequence of calls give the same arrays on any thread.
//
// Note [Draws in a device graph]
// A replay repeats the kernels of its capture with the arguments they had,
// so a (seed, offset) chosen on the host during the capture would give every
// replay the same numbers. PyTorch's CUDA graphs solve this with a Philox
// seed and offset kept in device memory; ndgc does the same with its own
// counter-based stream (ops/random_stream.hpp), which keeps the CPU and the
// GPU drawing the same numbers for a seed:
//   - while a capture is open, a draw for the capturing device on the
//     capturing thread takes positions from the graph's own count, starting
//     at 0, and carries a pointer to the graph's state: two uint64 of device
//     memory holding (seed, base). Its kernels read them when they run;
//   - each replay first reserves span() positions of the current stream, as
//     the eager step would have, and writes that draw's seed and offset into
//     the state (a kernel queued before the graph's);
//   - the capture itself reserves nothing.
// So a replay draws exactly what the same work run eagerly would have drawn
// at that point of the stream, and the next replay draws the next numbers.
// A draw reserved before the capture, replayed inside it (the backward of an
// eager dropout), would repeat in every replay: the engines refuse it, as
// they refuse a graph's draw run outside its capture.
#include "ops/random.hpp"

#include <atomic>

#include "ndgc/ndarray.hpp"
#include "support/assert.hpp"

namespace ndgc {
namespace {
constexpr std::uint64_t kDefaultSeed = 0x6e6467632d736565ull;
std::atomic<std::uint64_t> g_seed{kDefaultSeed};
std::atomic<std::uint64_t> g_offset{0};

struct OpenGraph {
  bool open = false;
  Device device;
  const std::uint64_t* state = nullptr;
  std::uint64_t next = 0;  // positions the capture's draws took
};
thread_local OpenGraph t_graph;
}  // namespace

void set_random_seed(std::uint64_t seed) {
  g_seed.store(seed, std::memory_order_relaxed);
  g_offset.store(0, std::memory_order_relaxed);
}

namespace ops {
RandomDraw reserve_random(std::uint64_t count) noexcept {
  return {g_seed.load(std::memory_order_relaxed), g_offset.fetch_add(count, std::memory_order_relaxed), nullptr};
}

RandomDraw reserve_random(std::uint64_t count, Device device) noexcept {
  if (!t_graph.open || t_graph.device != device) return reserve_random(count);
  const std::uint64_t at = t_graph.next;
  t_graph.next += count;
  return {0, at, t_graph.state};
}

GraphDraws::GraphDraws(Device device, const std::uint64_t* state) noexcept {
  NDGC_ASSERT(!t_graph.open, "GraphDraws: this thread already captures a device graph");
  t_graph = {true, device, state, 0};
}

GraphDraws::~GraphDraws() { t_graph = {}; }

std::uint64_t GraphDraws::span() const noexcept { return t_graph.next; }
}  // namespace ops

}  // namespace ndgc

// DeviceGraph: a capture on the device's engine, memory from a private pool.
//
// Note [Device graphs]
// A capture runs the work with the engine recording instead of launching
// (the CUDA engine: stream capture on a stream of the capturing thread's,
// ordered after everything queued on the device's stream; a replay is
// queued on the device's stream) and the
// device's allocator serving every request from a pool opened for this
// graph (Note [Private pools] in memory/caching_allocator.cpp). The order
// matters at both ends: the pool opens before the first recorded kernel can
// ask for memory and closes after the last; the graph is destroyed before its
// pool is released, so no replay can run on memory someone else has been
// given. Pool keys are odd numbers with the top bit set, which no stream
// handle (a pointer, or 0) is.
// Random draws in the work read a state the graph keeps in device memory,
// which each replay sets first: Note [Draws in a device graph] in
// ops/random.cpp. The state is allocated before the pool opens and freed
// after the graph is destroyed.
#include "ndgc/device_graph.hpp"

#include <array>
#include <atomic>
#include <utility>

#include <fmt/format.h>

#include "core/reclaim_queue.hpp"
#include "memory/allocator.hpp"
#include "ndgc/error.hpp"
#include "ops/engine.hpp"
#include "ops/random.hpp"

namespace ndgc {
namespace {

std::uint64_t next_pool() noexcept {
  static std::atomic<std::uint64_t> next{0};
  return (std::uint64_t(1) << 63) | (next.fetch_add(1, std::memory_order_relaxed) * 2 + 1);
}

// One capture at a time per device: the allocator has one private pool open
// at a time, and every allocation on the device goes to it while it is.
std::array<std::atomic<bool>, kMaxGpus> g_capturing{};

struct CaptureSlot {
  explicit CaptureSlot(Device device) : flag(g_capturing[std::size_t(device.index)]) {
    if (flag.exchange(true, std::memory_order_acquire))
      throw InvalidArgument(fmt::format("DeviceGraph::capture: {} is already capturing a graph (one capture at a "
                                        "time per device: capture on one thread, or one after the other)",
                                        device.to_string()));
  }
  ~CaptureSlot() { flag.store(false, std::memory_order_release); }
  CaptureSlot(const CaptureSlot&) = delete;
  CaptureSlot& operator=(const CaptureSlot&) = delete;
  std::atomic<bool>& flag;
};

}  // namespace

// The replay's (seed, base) in device memory: two uint64.
class DrawState {
 public:
  static constexpr std::size_t kBytes = 2 * sizeof(std::uint64_t);
  explicit DrawState(Device device)
      : device_(device), data_(static_cast<std::uint64_t*>(memory::allocator(device).allocate(kBytes))) {}
  ~DrawState() {
    if (data_) memory::allocator(device_).deallocate(data_, kBytes);
  }
  DrawState(DrawState&& o) noexcept : device_(o.device_), data_(std::exchange(o.data_, nullptr)) {}
  DrawState(const DrawState&) = delete;
  DrawState& operator=(const DrawState&) = delete;
  DrawState& operator=(DrawState&&) = delete;

  const std::uint64_t* data() const noexcept { return data_; }
  // Queues the write of the next replay's draws: `span` positions of the current stream.
  void advance(std::uint64_t span) {
    const ops::RandomDraw at = ops::reserve_random(span);
    ops::engine(device_).set_draw_state(ops::contiguous_view(data_, DataType::int64, Shape{2}), at.seed, at.offset);
  }

 private:
  Device device_;
  std::uint64_t* data_;
};

struct DeviceGraph::Impl {
  Impl(Device d, std::uint64_t p, DrawState s, std::uint64_t n, std::unique_ptr<ops::CapturedGraph> g)
      : device(d), pool(p), draws(std::move(s)), span(n), graph(std::move(g)) {}
  ~Impl() {
    graph.reset();  // first: see Note [Device graphs]
    memory::allocator(device).release_private_pool(pool);
  }
  Device device;
  std::uint64_t pool;
  DrawState draws;
  std::uint64_t span;  // positions of the random stream a replay draws
  std::unique_ptr<ops::CapturedGraph> graph;
};

DeviceGraph::DeviceGraph(std::unique_ptr<Impl> impl) noexcept : impl_(std::move(impl)) {}
DeviceGraph::DeviceGraph(DeviceGraph&&) noexcept = default;
DeviceGraph& DeviceGraph::operator=(DeviceGraph&&) noexcept = default;
DeviceGraph::~DeviceGraph() = default;

DeviceGraph DeviceGraph::capture(Device device, const std::function<void()>& work) {
  detail::enter();
  if (device.is_cpu())
    throw InvalidArgument("DeviceGraph::capture: cpu() has no device graphs; capture work on a GPU (Device::gpu(i))");
  ops::Engine& engine = ops::engine(device);  // first: it checks the device
  memory::DeviceAllocator& allocator = memory::allocator(device);
  const CaptureSlot slot(device);
  DrawState draws(device);
  const std::uint64_t pool = next_pool();
  allocator.open_private_pool(pool);
  if (!engine.begin_capture(device)) {
    allocator.close_private_pool();
    throw InvalidArgument(fmt::format("DeviceGraph::capture: the engine of {} cannot capture graphs",
                                      device.to_string()));
  }
  std::uint64_t span = 0;
  try {
    const ops::GraphDraws graph_draws(device, draws.data());
    work();
    span = graph_draws.span();
  } catch (...) {
    try {
      (void)engine.end_capture(device);
    } catch (const Error&) {  // the work's error is the one to report
    }
    allocator.close_private_pool();
    allocator.release_private_pool(pool);
    throw;
  }
  allocator.close_private_pool();
  std::unique_ptr<ops::CapturedGraph> graph;
  try {
    graph = engine.end_capture(device);
  } catch (...) {
    allocator.release_private_pool(pool);
    throw;
  }
  return DeviceGraph(std::make_unique<Impl>(device, pool, std::move(draws), span, std::move(graph)));
}

void DeviceGraph::replay() {
  if (!impl_) throw InvalidArgument("DeviceGraph::replay: this graph was moved from");
  detail::enter();
  if (impl_->span > 0) impl_->draws.advance(impl_->span);
  impl_->graph->replay();
}

Device DeviceGraph::device() const noexcept { return impl_ ? impl_->device : Device::cpu(); }

}  // namespace ndgc

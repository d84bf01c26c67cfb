// Device graphs: GPU work recorded once and replayed (CUDA graphs), so a
// training step of ~40 small kernels costs the host one launch.
//
//   NDArray x = g.zeros({32, 784});           // an input: made before the capture
//   NDArray y;
//   DeviceGraph graph = DeviceGraph::capture(Device::gpu(0), [&] { y = x.matmul(w).relu(); });
//   for (...) {
//     x.assign_(next_batch);                  // new values, same memory
//     graph.replay();                         // y holds the result for them
//   }
//
// A replay repeats the kernels the capture launched, on the same memory and
// with the same scalar arguments; it does not run the host code again. So:
//   - arrays made during the capture are the ones every replay writes: keep
//     handles to those you read (y above), and refill inputs in place;
//   - a value the host computed during the capture (a learning rate, a step
//     count) is frozen in the graph; Trainer's cuda_graph mode and
//     Optimizer::set_capturable() keep such values in device memory;
//   - during the capture nothing reads an array on the host or copies to or
//     from it (item, to_vector, to_device(cpu()) throw InvalidArgument), and
//     no other thread may use the device;
//   - random draws in the capture (random_uniform, random_normal,
//     training-mode dropout) draw anew in each replay: a replay takes the
//     next positions of the random stream, as the same work run eagerly
//     would, so for a seed the eager and the replayed work draw the same
//     numbers. A dropout drawn before the capture cannot have its backward
//     inside it (InvalidArgument: every replay would repeat its mask).
// Memory: arrays made during the capture take their memory from a pool kept
// for the graph, so nothing allocated between replays can overlap what a
// replay writes; the pool goes back to the device's cache when the graph is
// destroyed. An exception thrown by the work ends the capture and is
// rethrown. Capturing needs an engine with graphs (the CUDA engine):
// InvalidArgument on cpu() or elsewhere.
// Thread-safety: one capture at a time per device (a second, from another
// thread or nested in the work, throws InvalidArgument); a graph replays on
// any thread, one replay at a time.
#pragma once

#include <functional>
#include <memory>

#include "ndgc/device.hpp"

namespace ndgc {

class DeviceGraph {
 public:
  static DeviceGraph capture(Device device, const std::function<void()>& work);

  DeviceGraph(DeviceGraph&&) noexcept;
  DeviceGraph& operator=(DeviceGraph&&) noexcept;
  ~DeviceGraph();

  // Runs the recorded kernels again, queued after everything queued before.
  void replay();
  Device device() const noexcept;

 private:
  struct Impl;
  explicit DeviceGraph(std::unique_ptr<Impl> impl) noexcept;
  std::unique_ptr<Impl> impl_;
};

}  // namespace ndgc

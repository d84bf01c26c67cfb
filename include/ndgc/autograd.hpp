// Automatic differentiation: record ops while a GradientCollector lives,
// then backward() from a result.
//
//   NDArray w = model.random_normal({784, 10}).set_requires_gradient(true);
//   {
//     GradientCollector collector;                // records this thread's ops
//     NDArray loss = x.matmul(w).square().mean();  // x: batch data
//     collector.backward(loss);                    // w.gradient() += d loss / d w
//   }                                              // the tape's handles are released
//   NDArray g = w.gradient();                      // the same array on every call
//   autograd::zero_gradients(NDList{w});           // gradients add up until zeroed
//   collector.backward(loss, NDList{w}, [](std::size_t i) { /* w's gradient is final */ });
//
// Recording. While a collector is alive, every differentiable op on its
// thread whose inputs reach an array that requires a gradient is put on the
// collector's tape, with handles to its inputs and output: auto-close never
// closes what backward() needs, and everything the tape held is released
// when the collector ends. One collector per thread at a time; other threads
// record on their own collectors, independently. In-place ops (add_, fill_,
// ...) are not recorded: they are how optimizers update parameters. Writing
// in place into an array the tape saved, between the op and backward(),
// makes the gradient wrong (there is no version check).
//
// Gradients. backward(target) seeds d target / d target = 1 (every element:
// for a non-scalar target this differentiates target.sum()) and adds the
// result into gradient() of every array that requires one. They accumulate
// over backward() calls, several per collector included, until zeroed.
// Intermediate gradients are private buffers of the device's allocator
// (counted in memory::stats), never arrays of a manager, and are freed before
// backward() returns; so a training step leaves no per-step gradient arrays
// anywhere. Only floating arrays carry gradients; integer and boolean
// results (comparisons, argmax, one_hot, casts to integers) cut the graph.
//
// Where gradients live: a gradient is created once, by
// set_requires_gradient(true), in the array's manager at that time (DJL's
// choice): parameters' gradients sit in the model's manager and close with
// it. Moving the array later does not move its gradient; closing the array
// alone drops its handle to the gradient (the manager or auto-close closes
// it). Devices: an op's inputs share one device, and x.to_device(d) is
// recorded like any op; backward copies its gradient back to x's device, so
// a host array that requires a gradient may feed a computation on a GPU (and
// the reverse), each crossing costing one transfer in backward as in forward.
//
// Thread-safety: a collector belongs to the thread that made it and must end
// there. Arrays that require gradients may be read by any thread; two
// backward() calls that accumulate into the same gradient at the same time
// race on its elements: give each thread its own arrays or serialise.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>

#include "ndgc/ndarray.hpp"
#include "ndgc/ndlist.hpp"

namespace ndgc {

namespace autograd::detail {
class Tape;
}

class GradientCollector {
 public:
  // Starts recording on this thread. InvalidArgument when another collector
  // is already recording here (DJL forbids nesting too).
  GradientCollector();
  ~GradientCollector();
  GradientCollector(const GradientCollector&) = delete;
  GradientCollector& operator=(const GradientCollector&) = delete;

  // Adds d target / d x into x.gradient() for every recorded x that requires
  // a gradient. InvalidArgument when `target` was not computed on this tape
  // from such an array; DTypeMismatch for a non-floating target; ArrayClosed
  // when an array the tape saved was closed (its manager closed) since.
  void backward(const NDArray& target);

  // backward(target), and `ready(i)` as soon as the gradient of watched[i]
  // will get nothing more from this pass: after the last tape node that
  // feeds it has added its part (PyTorch DDP's per-parameter autograd hook,
  // which launches a bucket's all-reduce while backward goes on). Called on
  // this thread, once per index, in the order the gradients complete; an
  // array the target does not depend on (or that is not on the tape) is
  // reported when the pass ends. Not called for any index when backward
  // throws first; an exception from `ready` ends the pass and propagates.
  // See Note [Gradient ready] in src/autograd/backward.cpp.
  void backward(const NDArray& target, const NDList& watched, const std::function<void(std::size_t)>& ready);

  // Ops on the tape (for tests and diagnostics).
  std::size_t recorded_ops() const noexcept;

 private:
  std::unique_ptr<autograd::detail::Tape> tape_;
};

namespace autograd {

// True while a collector records on this thread (and no NoGradient pauses it).
bool is_recording() noexcept;

// Pauses recording on this thread for its lifetime (PyTorch's no_grad):
// prediction, metrics and optimizer maths inside a training step.
class NoGradient {
 public:
  NoGradient() noexcept;
  ~NoGradient();
  NoGradient(const NoGradient&) = delete;
  NoGradient& operator=(const NoGradient&) = delete;

 private:
  bool was_paused_;
};

// Sets the gradient of each array of `arrays` that requires one to zero, in
// place. Touches those arrays only: cost O(their elements), whatever else
// their managers hold (no scan over a manager, DJL's defect).
void zero_gradients(const NDList& arrays);

}  // namespace autograd
}  // namespace ndgc

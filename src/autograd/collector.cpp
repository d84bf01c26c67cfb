// GradientCollector, NoGradient and is_recording: the public face of the tape.
// Semantics are documented in ndgc/autograd.hpp.
#include "autograd/tape.hpp"
#include "core/reclaim_queue.hpp"
#include "ndgc/autograd.hpp"

namespace ndgc {

GradientCollector::GradientCollector() : tape_(std::make_unique<autograd::detail::Tape>()) {}

GradientCollector::~GradientCollector() = default;

void GradientCollector::backward(const NDArray& target) { tape_->backward(target, nullptr); }

void GradientCollector::backward(const NDArray& target, const NDList& watched,
                                 const std::function<void(std::size_t)>& ready) {
  const autograd::detail::ReadyHook hook{&watched, &ready};
  tape_->backward(target, &hook);
}

std::size_t GradientCollector::recorded_ops() const noexcept { return tape_->size(); }

namespace autograd {

bool is_recording() noexcept { return detail::Tape::current() != nullptr; }

NoGradient::NoGradient() noexcept : was_paused_(detail::Tape::paused()) { detail::Tape::set_paused(true); }
NoGradient::~NoGradient() { detail::Tape::set_paused(was_paused_); }

}  // namespace autograd
}  // namespace ndgc

// Recording: the ops layer's recorder hook and the per-thread tape.
// See Note [Tracked arrays] in tape.hpp.
#include "autograd/tape.hpp"

#include <mutex>

#include <fmt/format.h>

#include "autograd/gradient_state.hpp"
#include "core/key.hpp"
#include "core/registry.hpp"
#include "ndgc/error.hpp"

namespace ndgc::autograd::detail {
namespace {

thread_local Tape* t_tape = nullptr;
thread_local bool t_paused = false;

void record_hook(const ops::OpRecord& op, std::span<const NDArray> inputs, const NDArray& output) {
  if (Tape* tape = t_tape; tape && !t_paused) tape->record(op, inputs, output);
}

}  // namespace

void install_recorder() {
  static std::once_flag once;
  std::call_once(once, [] { ops::set_recorder(&record_hook); });
}

Tape::Tape() {
  if (t_tape)
    throw InvalidArgument(
        "GradientCollector: another GradientCollector is already recording on this thread; end it first (one "
        "collector per thread at a time)");
  install_recorder();
  t_tape = this;
}

Tape::~Tape() { t_tape = nullptr; }

Tape* Tape::current() noexcept { return t_paused ? nullptr : t_tape; }
bool Tape::paused() noexcept { return t_paused; }
void Tape::set_paused(bool paused) noexcept { t_paused = paused; }

std::int32_t Tape::producer(const NDArray& array) const noexcept {
  auto it = producer_.find(array.key());
  return it == producer_.end() ? kNoGradient : it->second;
}

void Tape::record(const ops::OpRecord& op, std::span<const NDArray> inputs, const NDArray& output) {
  if (inputs.empty() || !output.defined()) return;
  // Integer and boolean results carry no gradient (Note [Tracked arrays]).
  // The output was just published by this thread, so reading it is safe.
  auto* key = ndgc::detail::key_of(output);
  auto& reg = ndgc::detail::Registry::instance();
  if (!reg.try_pin(key->slot, key->generation)) return;
  const bool floating = is_floating(reg.entry(key->slot).impl.load(std::memory_order_acquire)->dtype);
  reg.unpin(key->slot);
  if (!floating) return;

  std::int32_t sources_inline[4];
  std::vector<std::int32_t> sources_heap;
  std::int32_t* sources = sources_inline;
  if (inputs.size() > 4) {
    sources_heap.resize(inputs.size());
    sources = sources_heap.data();
  }
  bool tracked = false;
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    std::int32_t s = producer(inputs[i]);
    if (s == kNoGradient && gradient_of(inputs[i]).defined()) s = kLeaf;
    sources[i] = s;
    tracked |= s != kNoGradient;
  }
  if (!tracked) return;

  Node node{op, std::vector<NDArray>(inputs.begin(), inputs.end()),
            std::vector<std::int32_t>(sources, sources + inputs.size()), output};
  const auto index = std::int32_t(nodes_.size());
  producer_[output.key()] = index;
  try {
    nodes_.push_back(std::move(node));
  } catch (...) {
    producer_.erase(output.key());
    throw;
  }
}

}  // namespace ndgc::autograd::detail

// Recording: the ops layer's recorder hook and the per-thread tape.
// See Note [Tracked arrays] and Note [Recording cost] in tape.hpp.
#include "autograd/tape.hpp"

#include <algorithm>
#include <cstring>
#include <mutex>

#include "autograd/gradient_state.hpp"
#include "core/key.hpp"
#include "core/registry.hpp"
#include "ndgc/error.hpp"
#include "support/free_list.hpp"

namespace ndgc::autograd::detail {
namespace {

thread_local Tape* t_tape = nullptr;
thread_local bool t_paused = false;
// The last tape's buffers, emptied (Note [Recording cost]).
thread_local TapeBuffers t_spare;
using TapeFreeList = support::FreeList<sizeof(Tape), Tape>;

void record_hook(const ops::OpRecord& op, const ops::OpDetail* detail, std::span<const NDArray> inputs,
                 const NDArray& output) {
  if (Tape* tape = t_tape; tape && !t_paused) tape->record(op, detail, inputs, output);
}

std::size_t hash(const void* key) noexcept {
  auto x = reinterpret_cast<std::uintptr_t>(key);
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdull;
  x ^= x >> 33;
  return std::size_t(x);
}

// Whether the array of `array` is floating and open (read under a pin).
bool is_floating_array(const NDArray& array) noexcept {
  auto* key = ndgc::detail::key_of(array);
  auto& reg = ndgc::detail::Registry::instance();
  if (!reg.try_pin(key->slot, key->generation)) return false;
  const bool floating = is_floating(reg.entry(key->slot).impl.load(std::memory_order_acquire)->dtype);
  reg.unpin(key->slot);
  return floating;
}

}  // namespace

Node::Node(const ops::OpRecord& op_, std::span<const NDArray> inputs, const std::int32_t* sources,
           const NDArray& output_, std::int32_t detail)
    : op(op_), output(output_), detail_(detail), count_(std::uint32_t(inputs.size())) {
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    if (i < kInline) {
      inputs_[i] = inputs[i];
      sources_[i] = sources[i];
    } else {
      more_.push_back({inputs[i], sources[i]});
    }
  }
}

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
  buffers_ = std::move(t_spare);  // leaves t_spare's vectors empty
  if (nodes_.capacity() < 64) nodes_.reserve(64);
  if (producer_.size() < 128) producer_.resize(128);  // a kept table comes back all empty
  t_tape = this;
}

Tape::~Tape() {
  t_tape = nullptr;
  const std::size_t used = buffers_.nodes.size();
  buffers_.nodes.clear();  // releases the tape's handles, as destroying it did
  // The kept storage is scanned by the trace detector's collector (global
  // `new` memory): it must not go on showing the keys the nodes pointed at,
  // or a leaked handle to one of them would never look unreachable.
  if (used) std::memset(static_cast<void*>(buffers_.nodes.data()), 0, used * sizeof(Node));  // data() may be null
  buffers_.details.clear();
  buffers_.grads.clear();
  buffers_.inputs.clear();
  std::fill(buffers_.producer.begin(), buffers_.producer.end(), Slot{});
  if (buffers_.nodes.capacity() >= t_spare.nodes.capacity()) t_spare = std::move(buffers_);
}

void* Tape::operator new(std::size_t size) {
  return size == sizeof(Tape) ? TapeFreeList::allocate() : ::operator new(size);
}

void Tape::operator delete(void* p, std::size_t size) noexcept {
  if (size == sizeof(Tape)) TapeFreeList::free(p);
  else ::operator delete(p);
}

Tape* Tape::current() noexcept { return t_paused ? nullptr : t_tape; }
bool Tape::paused() noexcept { return t_paused; }
void Tape::set_paused(bool paused) noexcept { t_paused = paused; }

std::int32_t Tape::producer(const NDArray& array) const noexcept {
  const void* key = array.key();
  const std::size_t mask = producer_.size() - 1;
  for (std::size_t i = hash(key) & mask;; i = (i + 1) & mask) {
    if (producer_[i].key == key) return producer_[i].node;
    if (!producer_[i].key) return kNoGradient;
  }
}

void Tape::remember(const void* key, std::int32_t node) {
  if (2 * (producers_ + 1) > producer_.size()) {
    std::vector<Slot> old(producer_.size() * 2);
    old.swap(producer_);
    producers_ = 0;
    for (const Slot& s : old)
      if (s.key) remember(s.key, s.node);
  }
  const std::size_t mask = producer_.size() - 1;
  std::size_t i = hash(key) & mask;
  while (producer_[i].key && producer_[i].key != key) i = (i + 1) & mask;
  if (!producer_[i].key) ++producers_;
  producer_[i] = {key, node};
}

void Tape::record(const ops::OpRecord& op, const ops::OpDetail* detail, std::span<const NDArray> inputs,
                  const NDArray& output) {
  if (inputs.empty() || !output.defined()) return;
  std::int32_t sources_inline[Node::kInline];
  std::vector<std::int32_t> sources_heap;
  std::int32_t* sources = sources_inline;
  if (inputs.size() > Node::kInline) {
    sources_heap.resize(inputs.size());
    sources = sources_heap.data();
  }
  bool tracked = false;
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    std::int32_t s = producer(inputs[i]);
    if (s == kNoGradient && requires_gradient(inputs[i])) s = kLeaf;
    sources[i] = s;
    tracked |= s != kNoGradient;
  }
  // Integer and boolean results carry no gradient (Note [Tracked arrays]).
  if (!tracked || !is_floating_array(output)) return;
  const auto index = std::int32_t(nodes_.size());
  const std::size_t details = details_.size();
  try {
    if (detail) details_.push_back(*detail);
    nodes_.emplace_back(op, inputs, sources, output, detail ? std::int32_t(details) : Node::kNoDetail);
    remember(output.key(), index);
  } catch (...) {  // as if nothing was recorded
    if (nodes_.size() > std::size_t(index)) nodes_.pop_back();
    details_.erase(details_.begin() + std::ptrdiff_t(details), details_.end());
    throw;
  }
}

}  // namespace ndgc::autograd::detail

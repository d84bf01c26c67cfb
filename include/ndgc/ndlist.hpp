// NDList: a list of handles, with DJL's attach/detach calls over all of them.
//
//   NDList batch{images, labels};
//   batch.attach(step_manager);    // every array moves to step_manager
//   NDArray x = batch[0];  batch.size() == 2;
//   batch.manager();               // step_manager: the first array's
//   batch.close();                 // closes both arrays now
//
// An NDList holds handles, so the arrays in it are reachable: auto-close
// never closes them while the list lives.
#pragma once

#include <cstddef>
#include <initializer_list>
#include <span>
#include <vector>

#include "ndgc/manager.hpp"
#include "ndgc/ndarray.hpp"

namespace ndgc {

class NDList {
 public:
  NDList() = default;
  NDList(std::initializer_list<NDArray> arrays) {
    for (const NDArray& a : arrays) push_back(a);
  }
  explicit NDList(std::vector<NDArray> arrays) {
    for (NDArray& a : arrays) push_back(std::move(a));
  }
  explicit NDList(NDArray array) { push_back(std::move(array)); }
  NDList(const NDList&) = default;
  NDList& operator=(const NDList&) = default;
  NDList(NDList&& other) noexcept { take(other); }
  NDList& operator=(NDList&& other) noexcept {
    if (this != &other) {
      clear();
      take(other);
    }
    return *this;
  }
  ~NDList() = default;

  std::size_t size() const noexcept { return spilled_ ? heap_.size() : size_; }
  bool empty() const noexcept { return size() == 0; }
  NDArray& operator[](std::size_t i) { return data()[i]; }
  const NDArray& operator[](std::size_t i) const { return data()[i]; }
  // Like operator[], but throws InvalidArgument naming the index and size.
  const NDArray& at(std::size_t i) const;
  // The first array (InvalidArgument when empty), as DJL's singletonOrThrow/head.
  const NDArray& head() const;
  void push_back(NDArray array) {
    if (!spilled_ && size_ < kInline) {
      inline_[size_++] = std::move(array);
      return;
    }
    if (!spilled_) spill();
    heap_.push_back(std::move(array));
  }
  void clear() noexcept {
    for (std::size_t i = 0; i < size_; ++i) inline_[i] = NDArray();
    size_ = 0;
    heap_.clear();  // keeps its capacity for the next fill
  }
  NDArray* begin() noexcept { return data(); }
  NDArray* end() noexcept { return data() + size(); }
  const NDArray* begin() const noexcept { return data(); }
  const NDArray* end() const noexcept { return data() + size(); }
  std::span<const NDArray> arrays() const noexcept { return {data(), size()}; }

  // ManagerRef::attach_all / temp_attach_all (the manager is checked first).
  void attach(const ManagerRef& manager) const;
  void detach() const;
  void temp_attach(const ManagerRef& manager) const;
  // Closes every array in the list (DJL's NDList.close()); empty handles and
  // arrays closed already are skipped. The handles stay in the list.
  void close(Site site = Site::current()) const;
  // DJL's NDList.toDevice: each array on `device`: with copy false, arrays
  // already there are the same handles and the others are to_device copies
  // (each joining its source's manager, as to_device's output does); with
  // copy true, every array is copied.
  NDList to_device(Device device, bool copy = false, Site site = Site::current()) const;
  // The manager of the first array (DJL's NDList.getManager()):
  // InvalidArgument when the list is empty.
  ManagerRef manager() const;
  // Sum of the arrays' nbytes().
  std::size_t nbytes() const;

 private:
  // Note [Inline handles]: a layer's output list holds one to three handles
  // (an LSTM's {y, h, c}; a one-layer LSTM's weights), and a training step
  // makes several lists; kept inline they cost no heap allocation (issue 16
  // counts them). A fourth handle moves all of them to
  // heap_ (operator new, so the trace detector scans it), which serves the
  // list from then on, also after clear().
  static constexpr std::size_t kInline = 3;
  NDArray* data() noexcept { return spilled_ ? heap_.data() : inline_; }
  const NDArray* data() const noexcept { return spilled_ ? heap_.data() : inline_; }
  void spill() {
    heap_.reserve(2 * kInline);
    for (std::size_t i = 0; i < size_; ++i) heap_.push_back(std::move(inline_[i]));
    size_ = 0;
    spilled_ = true;
  }
  void take(NDList& other) noexcept {
    for (std::size_t i = 0; i < other.size_; ++i) inline_[i] = std::move(other.inline_[i]);
    size_ = other.size_;
    heap_ = std::move(other.heap_);
    spilled_ = other.spilled_;
    other.size_ = 0;
    other.heap_.clear();
    other.spilled_ = false;
  }

  NDArray inline_[kInline];
  std::size_t size_ = 0;  // handles in inline_ (while not spilled_)
  std::vector<NDArray> heap_;
  bool spilled_ = false;
};

}  // namespace ndgc

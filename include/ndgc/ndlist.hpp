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
#include <vector>

#include "ndgc/manager.hpp"
#include "ndgc/ndarray.hpp"

namespace ndgc {

class NDList {
 public:
  NDList() = default;
  NDList(std::initializer_list<NDArray> arrays) : arrays_(arrays) {}
  explicit NDList(std::vector<NDArray> arrays) : arrays_(std::move(arrays)) {}
  explicit NDList(NDArray array) { arrays_.push_back(std::move(array)); }

  std::size_t size() const noexcept { return arrays_.size(); }
  bool empty() const noexcept { return arrays_.empty(); }
  NDArray& operator[](std::size_t i) { return arrays_[i]; }
  const NDArray& operator[](std::size_t i) const { return arrays_[i]; }
  // Like operator[], but throws InvalidArgument naming the index and size.
  const NDArray& at(std::size_t i) const;
  // The first array (InvalidArgument when empty), as DJL's singletonOrThrow/head.
  const NDArray& head() const;
  void push_back(NDArray array) { arrays_.push_back(std::move(array)); }
  void clear() noexcept { arrays_.clear(); }
  auto begin() noexcept { return arrays_.begin(); }
  auto end() noexcept { return arrays_.end(); }
  auto begin() const noexcept { return arrays_.begin(); }
  auto end() const noexcept { return arrays_.end(); }
  const std::vector<NDArray>& arrays() const noexcept { return arrays_; }

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
  std::vector<NDArray> arrays_;
};

}  // namespace ndgc

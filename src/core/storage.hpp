// Storage: a reference-counted native buffer from its device's allocator.
//
// Views (reshape, transpose, slices) are separate arrays that share one
// Storage; the buffer goes back to the allocator when the last of them
// closes. StorageRef is the one owner type. While a workspace
// is open on the thread, the buffer is a lease of its arena: Note [Workspace
// storage] in workspace_arrays.cpp.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <utility>

#include "ndgc/device.hpp"

namespace ndgc::memory {
class Workspace;
struct Lease;
}

namespace ndgc::detail {

struct HostMirror;

class Storage {
 public:
  // Throws OutOfMemory (after draining the reclaim queue once).
  static Storage* allocate(Device device, std::size_t bytes);
  // The Storage object itself (not its buffer) comes from a per-thread free
  // list (Note [Object free lists] in support/free_list.hpp); a workspace
  // array's is built in its lease record instead (Note [Storage in its
  // lease] in storage.cpp).
  static void* operator new(std::size_t size);
  static void operator delete(void* p) noexcept;

  void retain() noexcept { refs_.fetch_add(1, std::memory_order_relaxed); }
  // Returns the bytes freed (0 while other views remain).
  std::uint64_t release() noexcept;

  void* data() const noexcept { return data_; }
  std::size_t bytes() const noexcept { return bytes_; }
  Device device() const noexcept { return device_; }
  std::uint32_t use_count() const noexcept { return refs_.load(std::memory_order_relaxed); }
  // The workspace lease the buffer is, or null (ordinary memory).
  memory::Lease* lease() const noexcept { return lease_; }
  // The host copy of a GPU buffer (core/host_mirror.hpp), made on first
  // call; freed with the buffer. std::bad_alloc.
  HostMirror& host_mirror();

 private:
  Storage(Device device, std::size_t bytes, void* data) noexcept : device_(device), bytes_(bytes), data_(data) {}
  [[gnu::always_inline]] static Storage* allocate_in(memory::Workspace& ws, std::size_t bytes);
  [[gnu::noinline]] static Storage* allocate_ordinary(Device device, std::size_t bytes);
  std::uint64_t release_to(memory::Lease* lease) noexcept;
  [[gnu::noinline]] std::uint64_t release_last() noexcept;
  std::atomic<std::uint32_t> refs_{1};
  Device device_;
  std::size_t bytes_;
  void* data_;
  memory::Lease* lease_ = nullptr;
  std::atomic<HostMirror*> mirror_{nullptr};
};

class StorageRef {
 public:
  StorageRef() noexcept = default;
  explicit StorageRef(Storage* adopted) noexcept : s_(adopted) {}
  StorageRef(const StorageRef& o) noexcept : s_(o.s_) {
    if (s_) s_->retain();
  }
  StorageRef(StorageRef&& o) noexcept : s_(std::exchange(o.s_, nullptr)) {}
  StorageRef& operator=(StorageRef o) noexcept {
    std::swap(s_, o.s_);
    return *this;
  }
  ~StorageRef() { reset(); }
  std::uint64_t reset() noexcept { return s_ ? std::exchange(s_, nullptr)->release() : 0; }
  Storage* get() const noexcept { return s_; }
  Storage* operator->() const noexcept { return s_; }

 private:
  Storage* s_ = nullptr;
};

}  // namespace ndgc::detail

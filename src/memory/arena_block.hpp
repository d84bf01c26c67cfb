// Arena blocks: the one buffer a workspace bump-allocates from.
//
// A block is RAM from the device allocator or a memory-mapped file (its
// bytes charged to the allocator's accounting and limits either way). It is
// reference counted: the workspace holds one unit while the block is its
// arena, and each storage that outlives its lease's recycling holds one, so
// a block that a workspace retires (resized, destroyed, or a storage still in
// use when its cycle ended) is freed only when the last storage in it goes.
// See Notes [Retired blocks] and [Block units] in workspace.cpp.
// Thread-safety: unref() from any thread; the rest from the owning thread.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>

#include "ndgc/device.hpp"
#include "ndgc/workspace.hpp"

namespace ndgc::memory {

class ArenaBlock {
 public:
  // Throws OutOfMemory (over a limit; the message names `owner`) or
  // WorkspaceError (the mmap file cannot be created).
  static ArenaBlock* create(std::size_t capacity, Device device, workspace::Location location,
                            const std::string& mmap_path, const std::string& owner);
  void ref() noexcept { refs_.fetch_add(1, std::memory_order_relaxed); }
  // Frees the block (and removes its file) with the last unit.
  void unref() noexcept;

  char* data() const noexcept { return data_; }
  std::size_t capacity() const noexcept { return capacity_; }
  const std::string& file() const noexcept { return file_; }  // mmap only

 private:
  ArenaBlock(std::size_t capacity, Device device) : capacity_(capacity), device_(device) {}
  ~ArenaBlock();
  std::atomic<std::uint64_t> refs_{1};
  std::size_t capacity_;
  Device device_;
  char* data_ = nullptr;
  bool mapped_ = false;
  std::string file_;
};

}  // namespace ndgc::memory

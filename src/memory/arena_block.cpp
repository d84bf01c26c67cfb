// Arena blocks: RAM from the device allocator, or a mapped file whose bytes
// are charged to the same accounting. See arena_block.hpp.
#include "memory/arena_block.hpp"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <fmt/format.h>

#include "memory/allocator.hpp"
#include "ndgc/error.hpp"

namespace ndgc::memory {
namespace {

std::atomic<std::uint64_t> g_file_counter{0};

// `path`: a file, a directory (a file is made in it) or empty (a temp file).
std::string mapped_file_name(const std::string& path, const std::string& owner) {
  namespace fs = std::filesystem;
  fs::path dir = path.empty() ? fs::temp_directory_path() : fs::path(path);
  std::error_code ec;
  if (!path.empty() && !fs::is_directory(dir, ec)) return path;
  std::string safe;
  for (char c : owner) safe += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  return (dir / fmt::format("ndgc-workspace-{}-{}-{}.bin", safe, ::getpid(),
                            g_file_counter.fetch_add(1, std::memory_order_relaxed)))
      .string();
}

}  // namespace

ArenaBlock* ArenaBlock::create(std::size_t capacity, Device device, workspace::Location location,
                               const std::string& mmap_path, const std::string& owner) {
  DeviceAllocator& alloc = allocator(device);
  auto* block = new ArenaBlock(capacity, device);
  if (location == workspace::Location::ram || !device.is_cpu()) {
    try {
      block->data_ = static_cast<char*>(alloc.allocate(capacity));
    } catch (OutOfMemory& e) {
      delete block;
      throw OutOfMemory(fmt::format("workspace '{}': its arena of {} cannot be allocated: {}", owner,
                                    format_bytes(capacity), e.what()),
                        e.requested(), e.limit(), e.in_use());
    }
    return block;
  }
  try {
    alloc.charge(capacity);
  } catch (OutOfMemory& e) {
    delete block;
    throw OutOfMemory(fmt::format("workspace '{}': its memory-mapped arena of {} would exceed a limit: {}",
                                  owner, format_bytes(capacity), e.what()),
                      e.requested(), e.limit(), e.in_use());
  }
  block->file_ = mapped_file_name(mmap_path, owner);
  block->mapped_ = true;
  int fd = ::open(block->file_.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  int err = errno;
  if (fd >= 0 && ::ftruncate(fd, off_t(capacity)) == 0) {
    void* p = ::mmap(nullptr, capacity, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    err = errno;
    ::close(fd);
    if (p != MAP_FAILED) {
      block->data_ = static_cast<char*>(p);
      return block;
    }
  } else if (fd >= 0) {
    err = errno;
    ::close(fd);
  }
  std::string file = block->file_;
  delete block;
  throw WorkspaceError(fmt::format("workspace '{}': cannot map {} of file '{}' for its arena: {}", owner,
                                   format_bytes(capacity), file, std::strerror(err)));
}

ArenaBlock::~ArenaBlock() {
  DeviceAllocator& alloc = allocator(device_);
  if (!mapped_) {
    if (data_) alloc.deallocate(data_, capacity_);
    return;
  }
  if (data_) ::munmap(data_, capacity_);
  ::unlink(file_.c_str());
  alloc.uncharge(capacity_);
}

void ArenaBlock::unref() noexcept {
  if (refs_.fetch_sub(1, std::memory_order_acq_rel) == 1) delete this;
}

}  // namespace ndgc::memory

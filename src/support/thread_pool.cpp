// Placeholder replaced by the pool in the next commit: runs every task inline.
#include "support/parallel.hpp"

#include <atomic>
#include <thread>

#include <fmt/format.h>

#include "ndgc/error.hpp"
#include "ndgc/parallel.hpp"

namespace ndgc {
namespace {
std::atomic<int> g_threads{0};
}
void set_num_threads(int n) {
  if (n < 1) throw InvalidArgument(fmt::format("set_num_threads: {} threads; the count must be at least 1", n));
  g_threads.store(n);
}
int num_threads() {
  int n = g_threads.load();
  return n > 0 ? n : int(std::max(1u, std::thread::hardware_concurrency()));
}
namespace support {
void run_tasks(std::int64_t count, TaskRef task) {
  for (std::int64_t i = 0; i < count; ++i) task(i);
}
int region_threads() noexcept { return 1; }
}  // namespace support
}  // namespace ndgc

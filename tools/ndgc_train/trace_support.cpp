// ndgc::trace calls for ndgc-train, compiled with NDGC_TRAIN_HAVE_TRACE=1
// only into a program that links ndgc::trace.
#include "trace_support.hpp"

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#if NDGC_TRAIN_HAVE_TRACE
#include <ndgc/trace.hpp>
#endif

namespace ndgc::train_tool {

#if NDGC_TRAIN_HAVE_TRACE

bool trace_linked() noexcept { return true; }
std::string trace_program() { return {}; }

std::vector<TraceLeak> collect_trace_leaks() {
  gc::collect();
  std::vector<TraceLeak> out;
  for (const trace::LeakSite& s : trace::leak_report()) out.push_back({s.file, s.line, s.arrays, s.bytes});
  return out;
}

std::uint64_t trace_heap_bytes() noexcept { return trace::stats().heap_bytes; }

#else

bool trace_linked() noexcept { return false; }

std::string trace_program() {
  std::error_code ec;
  const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) return {};
  const std::filesystem::path beside = self.parent_path() / "ndgc-train-trace";
  return ::access(beside.c_str(), X_OK) == 0 ? beside.string() : std::string();
}
std::vector<TraceLeak> collect_trace_leaks() { return {}; }
std::uint64_t trace_heap_bytes() noexcept { return 0; }

#endif

std::string exec_trace_program(char** argv) {
  const std::string program = trace_program();
  if (program.empty()) return "ndgc-train-trace is not beside this program";
  ::execv(program.c_str(), argv);
  return program + ": " + std::strerror(errno);
}

}  // namespace ndgc::train_tool

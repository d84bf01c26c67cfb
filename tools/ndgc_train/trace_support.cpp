// ndgc::trace calls for ndgc-train, compiled with NDGC_TRAIN_HAVE_TRACE=1
// only into a program that links ndgc::trace.
#include "trace_support.hpp"

#include "common/program_beside.hpp"

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

std::string trace_program() { return tools::program_beside("ndgc-train-trace"); }
std::vector<TraceLeak> collect_trace_leaks() { return {}; }
std::uint64_t trace_heap_bytes() noexcept { return 0; }

#endif

std::string exec_trace_program(char** argv) { return tools::exec_beside("ndgc-train-trace", argv); }

}  // namespace ndgc::train_tool

// Options: the table of NDGC_* environment variables and their parsing.
//
// One table, one parser (mimalloc's options.c is the model): adding a
// variable means one row here, one field in Options and one README line.
// Thread-safety: options() is a function-local static, initialised once.
#include "support/options.hpp"

#include <cstdlib>
#include <string_view>

#include <unistd.h>

#include <fmt/format.h>

#include "ndgc/error.hpp"
#include "ndgc/memory.hpp"

namespace ndgc::support {
namespace {

constexpr OptionInfo kTable[] = {
    {"NDGC_AUTOCLOSE", "off",
     "auto-close at start-up: off|on|trace (also 0|1). trace needs a program linked with ndgc::trace"},
    {"NDGC_TRACK_CLOSE", "0", "record where each array was closed; use-after-close errors name it"},
    {"NDGC_MAX_BYTES", "0", "host memory limit, e.g. 512m or 2g (0: none)"},
    {"NDGC_GPU_MAX_BYTES", "0", "per-GPU memory limit on bytes in use, applied when a GPU allocator registers (0: none)"},
    {"NDGC_MAX_PHYSICAL_BYTES", "0", "process resident-size limit (0: none)"},
    {"NDGC_HOST_CACHE_BYTES", "ram/4",
     "freed large host blocks kept mapped for reuse, e.g. 2g (default: a quarter of the machine's memory; 0: none)"},
    {"NDGC_DATA_DIR", "", "where datasets are read from (default /usr/share/datasets)"},
    {"NDGC_DIST_TIMEOUT", "600", "seconds a collective (ndgc::distributed) waits for the other ranks"},
    {"NDGC_NUM_THREADS", "cores",
     "intra-op threads, the caller included (default: the machine's cores, divided by the local ranks under mpirun)"},
    {"NDGC_CPU_GEMM", "onednn",
     "float32 products on the CPU: onednn (oneDNN's matmul, where the build found it and the CPU has AVX-512) or eigen"},
    {"NDGC_GPU_CONV", "cudnn", "convolutions on a GPU: cudnn (cuDNN's, where it takes the views) or im2col"},
};

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v ? std::string(v) : std::string();
}

std::uint64_t env_size(const char* name) {
  std::string v = env(name);
  return v.empty() ? 0 : memory::parse_size(v, name);
}

std::uint64_t quarter_of_memory() {
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  return pages > 0 && page > 0 ? std::uint64_t(pages) * std::uint64_t(page) / 4 : std::uint64_t(1) << 30;
}

Options parse() {
  Options o;
  std::string ac = env("NDGC_AUTOCLOSE");
  if (ac == "" || ac == "0" || ac == "off" || ac == "false") o.autoclose = "off";
  else if (ac == "1" || ac == "on" || ac == "true" || ac == "refcount") o.autoclose = "on";
  else if (ac == "trace") o.autoclose = "trace";
  else
    throw InvalidArgument(fmt::format(
        "NDGC_AUTOCLOSE='{}' is not understood: use off, on or trace (or 0, 1)", ac));
  std::string tc = env("NDGC_TRACK_CLOSE");
  o.track_close = !tc.empty() && parse_bool(tc, "NDGC_TRACK_CLOSE");
  o.max_bytes = env_size("NDGC_MAX_BYTES");
  o.gpu_max_bytes = env_size("NDGC_GPU_MAX_BYTES");
  o.max_physical_bytes = env_size("NDGC_MAX_PHYSICAL_BYTES");
  o.host_cache_bytes = env("NDGC_HOST_CACHE_BYTES").empty() ? quarter_of_memory() : env_size("NDGC_HOST_CACHE_BYTES");
  o.data_dir = env("NDGC_DATA_DIR");
  if (std::string t = env("NDGC_DIST_TIMEOUT"); !t.empty()) {
    char* end = nullptr;
    o.dist_timeout = std::strtod(t.c_str(), &end);
    if (end == t.c_str() || *end != '\0' || !(o.dist_timeout > 0))
      throw InvalidArgument(fmt::format("NDGC_DIST_TIMEOUT='{}' is not a positive number of seconds", t));
  }
  if (std::string t = env("NDGC_NUM_THREADS"); !t.empty()) {
    char* end = nullptr;
    const long n = std::strtol(t.c_str(), &end, 10);
    if (end == t.c_str() || *end != '\0' || n < 1 || n > 4096)
      throw InvalidArgument(fmt::format("NDGC_NUM_THREADS='{}' is not a thread count: use an integer from 1 to 4096", t));
    o.num_threads = int(n);
  }
  if (std::string g = env("NDGC_CPU_GEMM"); !g.empty()) {
    if (g != "onednn" && g != "eigen")
      throw InvalidArgument(fmt::format("NDGC_CPU_GEMM='{}' is not understood: use onednn or eigen", g));
    o.cpu_gemm = g;
  }
  if (std::string g = env("NDGC_GPU_CONV"); !g.empty()) {
    if (g != "cudnn" && g != "im2col")
      throw InvalidArgument(fmt::format("NDGC_GPU_CONV='{}' is not understood: use cudnn or im2col", g));
    o.gpu_conv = g;
  }
  return o;
}

}  // namespace

const Options& options() {
  static const Options parsed = parse();
  return parsed;
}

std::span<const OptionInfo> option_table() { return kTable; }

bool parse_bool(const std::string& text, const std::string& what) {
  if (text == "1" || text == "on" || text == "true" || text == "yes") return true;
  if (text == "0" || text == "off" || text == "false" || text == "no") return false;
  throw InvalidArgument(fmt::format("{}='{}' is not a boolean: use 1/0, on/off, true/false", what, text));
}

}  // namespace ndgc::support

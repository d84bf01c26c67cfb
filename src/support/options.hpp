// Options: every NDGC_* environment variable, read in one place.
//
// The table in options.cpp lists each variable, its default and what it does;
// README.md documents the same list. Values are parsed on first use; a bad
// value throws InvalidArgument naming the variable from every call that needs
// the options, so it cannot go unnoticed.
#pragma once

#include <cstdint>
#include <span>
#include <string>

namespace ndgc::support {

struct Options {
  std::string autoclose;                // "", "off", "on" or "trace" (NDGC_AUTOCLOSE)
  bool track_close = false;             // NDGC_TRACK_CLOSE
  std::uint64_t max_bytes = 0;          // NDGC_MAX_BYTES, 0 = no limit
  std::uint64_t gpu_max_bytes = 0;      // NDGC_GPU_MAX_BYTES
  std::uint64_t max_physical_bytes = 0; // NDGC_MAX_PHYSICAL_BYTES
  std::uint64_t host_cache_bytes = 0;   // NDGC_HOST_CACHE_BYTES, default a quarter of the machine's memory
  std::string data_dir;                 // NDGC_DATA_DIR, "" = the default location
  double dist_timeout = 600;            // NDGC_DIST_TIMEOUT, seconds
  int num_threads = 0;                  // NDGC_NUM_THREADS, 0 = the machine's cores
  std::string cpu_gemm = "onednn";     // NDGC_CPU_GEMM: "onednn" (products, convolutions) or "eigen"
  std::string gpu_conv = "cudnn";      // NDGC_GPU_CONV: "cudnn" or "im2col" (the CUDA engine's convolutions)
};

// Parsed once; throws InvalidArgument for a malformed value.
const Options& options();

struct OptionInfo {
  const char* name;
  const char* default_value;
  const char* description;
};
// The table itself, for --help output and tests.
std::span<const OptionInfo> option_table();

// Parsing helpers shared with the command-line tools.
bool parse_bool(const std::string& text, const std::string& what);

}  // namespace ndgc::support

// Shared by the libFuzzer targets of tests/fuzz/ (issue 5).
//
// Each target defines LLVMFuzzerTestOneInput. Built with clang and
// NDGC_BUILD_FUZZ=ON it links libFuzzer (tools/fuzz TARGET SECONDS); built
// otherwise it links replay_main.cpp and replays its corpus as a ctest, so
// every input that once crashed stays a regression test under gcc too.
//
// A violated expectation aborts (libFuzzer records the input as a crash);
// an expected error (a DataError for a malformed file, ArrayClosed after a
// manager close, ...) is part of the contract and simply ends the step.
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <unistd.h>

#include <ndgc/ndgc.hpp>

#include "core/registry.hpp"

namespace ndgc::fuzz {

[[noreturn]] inline void fail(const std::string& what) {
  std::fprintf(stderr, "fuzz: invariant broken: %s\n", what.c_str());
  std::fflush(stderr);
  std::abort();
}

inline void expect(bool ok, const std::string& what) {
  if (!ok) fail(what);
}

// A per-process scratch file on tmpfs when there is one (the readers under
// test take paths).
inline std::filesystem::path scratch_file(const char* stem) {
  const char* dir = std::getenv("TMPDIR");
  std::filesystem::path base = std::filesystem::exists("/dev/shm") ? "/dev/shm" : (dir ? dir : "/tmp");
  return base / (std::string("ndgc-fuzz-") + stem + "-" + std::to_string(::getpid()));
}

inline void write_file(const std::filesystem::path& path, const std::uint8_t* data, std::size_t size) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(data), std::streamsize(size));
}

inline std::uint64_t host_bytes() { return memory::stats(Device::cpu()).current_bytes; }
inline std::uint64_t open_arrays() { return detail::Registry::instance().open_arrays(); }

// Invariant 4 of docs/design.md §3 around one input: bytes in use and open
// arrays are back to where they were once the input's managers are closed.
class Balance {
 public:
  Balance() : bytes_(host_bytes()), arrays_(open_arrays()) {}
  void check(const char* target) const {
    gc::poll();
    if (host_bytes() != bytes_ || open_arrays() != arrays_)
      fail(std::string(target) + ": " + std::to_string(std::int64_t(host_bytes() - bytes_)) + " bytes and " +
           std::to_string(std::int64_t(open_arrays() - arrays_)) + " arrays left after the input's managers closed");
  }

 private:
  std::uint64_t bytes_, arrays_;
};

}  // namespace ndgc::fuzz

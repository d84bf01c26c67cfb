// Helpers for the data-layer tests: temporary directories, IDX files written
// byte by byte (plain or gzip'd with zlib), and memory checks.
#pragma once

#include <zlib.h>

#include <atomic>
#include <chrono>
#include <ctime>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <unistd.h>

#include <doctest/doctest.h>
#include <ndgc/ndgc.hpp>

namespace ndgc::data_test {

namespace fs = std::filesystem;
using Bytes = std::vector<unsigned char>;

// A fresh directory under the system's temp directory, removed with its contents.
class TempDir {
 public:
  TempDir() {
    static std::atomic<int> counter{0};
    path_ = fs::temp_directory_path() /
            ("ndgc-data-test-" + std::to_string(::getpid()) + "-" + std::to_string(counter++));
    fs::remove_all(path_);
    fs::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const fs::path& path() const { return path_; }
  fs::path operator/(const std::string& name) const { return path_ / name; }

 private:
  fs::path path_;
};

inline void append_be32(Bytes& out, std::uint32_t v) {
  for (int shift = 24; shift >= 0; shift -= 8) out.push_back(static_cast<unsigned char>(v >> shift));
}

// Values in IDX's big-endian byte order.
template <class T>
Bytes be_bytes(const std::vector<T>& values) {
  Bytes out;
  for (const T& v : values) {
    unsigned char raw[sizeof(T)];
    std::memcpy(raw, &v, sizeof(T));
    for (std::size_t i = 0; i < sizeof(T); ++i) out.push_back(raw[sizeof(T) - 1 - i]);  // little-endian host
  }
  return out;
}

// Header (00 00 type rank, big-endian dims) followed by `payload`.
inline Bytes idx_bytes(std::uint8_t type, const std::vector<std::uint32_t>& dims, const Bytes& payload) {
  Bytes out{0, 0, type, static_cast<unsigned char>(dims.size())};
  for (std::uint32_t d : dims) append_be32(out, d);
  out.insert(out.end(), payload.begin(), payload.end());
  return out;
}

inline void write_plain(const fs::path& path, const Bytes& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(bytes.data()), std::streamsize(bytes.size()));
  REQUIRE(out.good());
}

inline void write_gz(const fs::path& path, const Bytes& bytes) {
  gzFile f = gzopen(path.c_str(), "wb");
  REQUIRE(f != nullptr);
  if (!bytes.empty()) REQUIRE(gzwrite(f, bytes.data(), unsigned(bytes.size())) == int(bytes.size()));
  REQUIRE(gzclose(f) == Z_OK);
}

inline Bytes read_all(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return Bytes(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

inline std::uint64_t host_bytes() { return memory::stats(Device::cpu()).current_bytes; }

// Wall-clock and process CPU time (all threads), for the timings the tests
// print: on a shared machine the CPU figure is the one that means something.
struct Stopwatch {
  static double cpu_seconds() {
    timespec t{};
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return double(t.tv_sec) + double(t.tv_nsec) * 1e-9;
  }
  std::chrono::steady_clock::time_point wall0 = std::chrono::steady_clock::now();
  double cpu0 = cpu_seconds();
  double wall_ms() const {
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - wall0).count();
  }
  double cpu_ms() const { return (cpu_seconds() - cpu0) * 1e3; }
};

// Sets the auto-close switch for one test and restores it.
class AutoCloseSwitch {
 public:
  explicit AutoCloseSwitch(bool on) : was_(gc::enabled()) { on ? gc::enable() : gc::disable(); }
  ~AutoCloseSwitch() {
    gc::poll();
    was_ ? gc::enable() : gc::disable();
  }

 private:
  bool was_;
};

}  // namespace ndgc::data_test

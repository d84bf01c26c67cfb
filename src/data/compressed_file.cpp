// CompressedFile: zlib's gz* reader behind a RAII owner. See compressed_file.hpp.
#include "data/compressed_file.hpp"

#include <cerrno>
#include <climits>
#include <cstring>
#include <system_error>

#include <fmt/format.h>

#include "ndgc/error.hpp"

namespace ndgc::data::detail {
namespace {

constexpr unsigned kZlibBuffer = 128u << 10;
// gzread takes an unsigned count and returns an int: read at most this much per call.
constexpr std::size_t kMaxChunk = std::size_t(1) << 30;

}  // namespace

CompressedFile::CompressedFile(std::filesystem::path path, std::string op)
    : path_(std::move(path)), op_(std::move(op)) {
  std::error_code ec;
  std::filesystem::file_status st = std::filesystem::status(path_, ec);
  if (ec || !std::filesystem::exists(st)) {
    if (ec && ec != std::errc::no_such_file_or_directory) fail(fmt::format("cannot open it: {}", ec.message()));
    fail("no such file");
  }
  if (!std::filesystem::is_regular_file(st))
    fail(std::filesystem::is_directory(st) ? "is a directory, not a file" : "is not a regular file");
  file_bytes_ = std::filesystem::file_size(path_, ec);
  if (ec) fail(fmt::format("cannot read its size: {}", ec.message()));

  errno = 0;
  file_.reset(gzopen(path_.c_str(), "rb"));
  if (!file_) fail(fmt::format("cannot open it: {}", errno ? std::strerror(errno) : "zlib is out of memory"));
  gzbuffer(file_.get(), kZlibBuffer);
}

void CompressedFile::fail(const std::string& what) const {
  throw DataError(fmt::format("{}: '{}': {}", op_, path_.string(), what));
}

std::size_t CompressedFile::read(void* out, std::size_t count) {
  auto* dst = static_cast<unsigned char*>(out);
  std::size_t done = 0;
  while (done < count) {
    const auto chunk = unsigned(std::min(count - done, kMaxChunk));
    errno = 0;
    int n = gzread(file_.get(), dst + done, chunk);
    int code = Z_OK;
    const char* message = gzerror(file_.get(), &code);
    if (n < 0 || (code != Z_OK && code != Z_STREAM_END)) {
      if (code == Z_ERRNO) fail(fmt::format("read error: {}", std::strerror(errno)));
      if (code == Z_BUF_ERROR)  // zlib's word for a stream cut short
        fail(fmt::format("truncated gzip stream ({}) after {} bytes of data", message, done + std::size_t(n > 0 ? n : 0)));
      fail(fmt::format("corrupt gzip data ({})", message));
    }
    if (n == 0) break;
    done += std::size_t(n);
  }
  return done;
}

std::uint64_t CompressedFile::skip_rest() {
  unsigned char sink[16 << 10];
  std::uint64_t total = 0;
  for (std::size_t n; (n = read(sink, sizeof sink)) > 0;) total += n;
  return total;
}

bool CompressedFile::compressed() const noexcept { return gzdirect(file_.get()) == 0; }

}  // namespace ndgc::data::detail

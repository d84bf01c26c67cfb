// CompressedFile: a file read through zlib's gz* interface, gzip'd or plain.
//
// gzopen reads gzip members and plain files alike (zlib's "transparent"
// mode), so one reader serves `.gz` datasets and unpacked ones. zlib checks
// each member's CRC-32 and length when it reaches the member's end, so a
// reader that reads to the end of the file has verified the whole stream.
// Every failure is a DataError that names the operation and the path: a
// missing or unreadable file, a corrupt or truncated gzip stream.
//
// Thread-safety: none; one reader per thread (each load opens its own).
// Key numbers: 128 KiB zlib buffer (fewer read() calls than the 8 KiB default).
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>

#include <zlib.h>

namespace ndgc::data::detail {

class CompressedFile {
 public:
  // Opens `path`; DataError (naming `op` and the path) when it is missing,
  // not a regular file or cannot be opened.
  CompressedFile(std::filesystem::path path, std::string op);

  // Reads up to `count` bytes of (decompressed) data into `out`; fewer only
  // at the end of the data. DataError on a read error or a corrupt or
  // truncated gzip stream.
  std::size_t read(void* out, std::size_t count);

  // Reads and discards what is left; returns how many bytes that was.
  std::uint64_t skip_rest();

  // True for gzip data, false for a plain file (valid after the first read).
  bool compressed() const noexcept;
  // The file's size on disk.
  std::uint64_t file_bytes() const noexcept { return file_bytes_; }
  const std::filesystem::path& path() const noexcept { return path_; }
  const std::string& op() const noexcept { return op_; }

  // "op: 'path': what" as a DataError, for the parsers built on this reader.
  [[noreturn]] void fail(const std::string& what) const;

 private:
  struct Closer {
    void operator()(gzFile_s* file) const noexcept { gzclose(file); }
  };
  std::filesystem::path path_;
  std::string op_;
  std::uint64_t file_bytes_ = 0;
  std::unique_ptr<gzFile_s, Closer> file_;
};

}  // namespace ndgc::data::detail

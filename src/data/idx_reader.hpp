// The IDX parser shared by read_idx and the datasets built on IDX files.
//
// IDX (LeCun): two zero bytes, a type code, the rank, one big-endian 32-bit
// size per dimension, then the elements in row-major order, big-endian.
// IdxReader opens a file, reads and checks its header, then hands out the
// data either whole (read_all) or in chunks (read_chunks: a large dataset is
// converted straight into its array, with no copy of the raw bytes). Both
// end by checking that the data is exactly as long as the dimensions say.
//
// Thread-safety: one reader per thread. Key numbers: at most 1 TiB of data
// per file; read_all grows its buffer as data arrives (first 64 MiB), so a
// header that lies about its size cannot make it allocate that size;
// read_chunks goes through a 1 MiB buffer that stays in cache.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "data/compressed_file.hpp"
#include "ndgc/dtype.hpp"
#include "ndgc/manager.hpp"
#include "ndgc/shape.hpp"

namespace ndgc::data::detail {

enum class IdxType : std::uint8_t {
  uint8 = 0x08,
  int8 = 0x09,
  int16 = 0x0B,
  int32 = 0x0C,
  float32 = 0x0D,
  float64 = 0x0E,
};

// Bytes per element on disk; 0 for a code that is not an IDX type.
int idx_width(std::uint8_t code) noexcept;
// "uint8", "int16", ...
const char* idx_type_name(IdxType type) noexcept;
// The dtype an IDX type is read as: int8 and int16 widen to int32.
DataType idx_dtype(IdxType type) noexcept;

class IdxReader {
 public:
  // Opens `file` and checks its header. DataError "op: 'path': what was
  // wrong" for a missing file, bad magic, unknown type, rank 0 or above
  // kMaxRank, a size over 1 TiB, or more data declared than the file can hold.
  IdxReader(const std::filesystem::path& file, const std::string& op);

  IdxType type() const noexcept { return type_; }
  const Shape& shape() const noexcept { return shape_; }
  std::uint64_t data_bytes() const noexcept { return bytes_; }
  // "(60000, 28, 28) of uint8", for messages.
  std::string describe() const;
  [[noreturn]] void fail(const std::string& what) const { in_.fail(what); }

  // The whole data, big-endian as on disk. Call once (or read_chunks).
  std::vector<unsigned char> read_all();
  // Passes the data to `sink(bytes, count, offset)` in pieces of whole
  // elements, in order. Call once (or read_all).
  using Sink = std::function<void(const unsigned char* bytes, std::size_t count, std::uint64_t offset)>;
  void read_chunks(const Sink& sink);

 private:
  // DataError unless `got` is all the data and nothing follows it.
  void check_end(std::uint64_t got);

  CompressedFile in_;
  IdxType type_ = IdxType::uint8;
  Shape shape_;
  std::uint64_t bytes_ = 0;
};

struct IdxFile {
  IdxType type = IdxType::uint8;
  Shape shape;
  std::vector<unsigned char> payload;  // shape.size() * width bytes, big-endian as on disk
};

// Reads and checks one IDX file (plain or gzip'd) into memory.
IdxFile read_idx_file(const std::filesystem::path& file, const std::string& op);

// The file's data as a new array of `manager`, of dtype idx_dtype(file.type).
NDArray to_array(const IdxFile& file, const ManagerRef& manager, Site site, const char* op);

}  // namespace ndgc::data::detail

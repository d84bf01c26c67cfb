// IDX files: round trips of every type, plain and gzip'd, and every malformed case.
#include <cmath>
#include <limits>

#include "data_test_util.hpp"

using namespace ndgc;
using namespace ndgc::data_test;

namespace {

// read_idx must fail with a DataError naming the file and `problem`, and leave
// nothing behind: no array in the manager, no byte in use.
void check_rejected(const fs::path& file, const std::string& problem) {
  NDManager m = NDManager::new_base_manager("idx");
  NDArray keep = m.ones({3});
  const std::uint64_t bytes = host_bytes();
  const std::size_t arrays = m.array_count();
  CHECK_THROWS_WITH_AS(data::read_idx(m, file), doctest::Contains(problem.c_str()), DataError);
  CHECK_THROWS_WITH_AS(data::read_idx(m, file), doctest::Contains(("'" + file.string() + "'").c_str()), DataError);
  CHECK(m.array_count() == arrays);
  CHECK(host_bytes() == bytes);
}

// Writes `bytes` as name and name.gz; returns both paths.
std::vector<fs::path> write_both(const TempDir& dir, const std::string& name, const Bytes& bytes) {
  write_plain(dir / name, bytes);
  write_gz(dir / (name + ".gz"), bytes);
  return {dir / name, dir / (name + ".gz")};
}

}  // namespace

TEST_CASE("read_idx: uint8, plain and gzip'd, keeps its type, shape and values") {
  TempDir dir;
  NDManager m = NDManager::new_base_manager("idx");
  Bytes pixels{0, 1, 2, 127, 128, 255};
  for (const fs::path& file : write_both(dir, "u8-idx2", idx_bytes(0x08, {2, 3}, pixels))) {
    CAPTURE(file);
    const std::size_t before = m.array_count();
    NDArray a = data::read_idx(m, file);
    CHECK(a.dtype() == DataType::uint8);
    CHECK(a.shape() == Shape{2, 3});
    CHECK(a.to_vector<std::uint8_t>() == std::vector<std::uint8_t>(pixels.begin(), pixels.end()));
    CHECK(a.manager().same(m));
    CHECK(m.array_count() == before + 1);
  }
}

TEST_CASE("read_idx: int8 and int16 widen to int32, with their signs") {
  TempDir dir;
  NDManager m = NDManager::new_base_manager("idx");
  const std::vector<std::int32_t> i8{-128, -1, 0, 1, 127, 42};
  Bytes i8_payload;
  for (std::int32_t v : i8) i8_payload.push_back(static_cast<unsigned char>(static_cast<std::int8_t>(v)));
  for (const fs::path& file : write_both(dir, "i8", idx_bytes(0x09, {3, 2}, i8_payload))) {
    NDArray a = data::read_idx(m, file);
    CHECK(a.dtype() == DataType::int32);
    CHECK(a.shape() == Shape{3, 2});
    CHECK(a.to_vector<std::int32_t>() == i8);
  }
  const std::vector<std::int16_t> i16{-32768, -2, 0, 1234, 32767};
  for (const fs::path& file : write_both(dir, "i16", idx_bytes(0x0B, {5}, be_bytes(i16)))) {
    NDArray a = data::read_idx(m, file);
    CHECK(a.dtype() == DataType::int32);
    CHECK(a.to_vector<std::int32_t>() == std::vector<std::int32_t>(i16.begin(), i16.end()));
  }
}

TEST_CASE("read_idx: int32, float32 and float64 are byte-swapped exactly") {
  TempDir dir;
  NDManager m = NDManager::new_base_manager("idx");
  const std::vector<std::int32_t> i32{std::numeric_limits<std::int32_t>::min(), -1, 0, 123456789,
                                      std::numeric_limits<std::int32_t>::max(), 7, 8, 9};
  for (const fs::path& file : write_both(dir, "i32", idx_bytes(0x0C, {2, 2, 2}, be_bytes(i32)))) {
    NDArray a = data::read_idx(m, file);
    CHECK(a.dtype() == DataType::int32);
    CHECK(a.shape() == Shape{2, 2, 2});
    CHECK(a.to_vector<std::int32_t>() == i32);
  }
  const std::vector<float> f32{1.5f, -0.25f, 3.4028235e38f, 1e-45f, -0.0f, std::numeric_limits<float>::infinity()};
  for (const fs::path& file : write_both(dir, "f32", idx_bytes(0x0D, {1, 6}, be_bytes(f32)))) {
    NDArray a = data::read_idx(m, file);
    CHECK(a.dtype() == DataType::float32);
    std::vector<float> got = a.to_vector<float>();
    REQUIRE(got.size() == f32.size());
    CHECK(std::memcmp(got.data(), f32.data(), f32.size() * sizeof(float)) == 0);  // bit for bit
  }
  const std::vector<double> f64{3.141592653589793, -1e300, 2.2250738585072014e-308, 0.1};
  for (const fs::path& file : write_both(dir, "f64", idx_bytes(0x0E, {4}, be_bytes(f64)))) {
    NDArray a = data::read_idx(m, file);
    CHECK(a.dtype() == DataType::float64);
    CHECK(a.to_vector<double>() == f64);
  }
}

TEST_CASE("read_idx: empty dimensions, rank 8, and a payload larger than one read chunk") {
  TempDir dir;
  NDManager m = NDManager::new_base_manager("idx");
  NDArray empty = data::read_idx(m, write_both(dir, "empty", idx_bytes(0x0D, {0, 5}, {}))[1]);
  CHECK(empty.shape() == Shape{0, 5});
  CHECK(empty.size() == 0);

  Bytes eight(256);
  for (std::size_t i = 0; i < eight.size(); ++i) eight[i] = static_cast<unsigned char>(i);
  NDArray r8 = data::read_idx(m, write_both(dir, "rank8", idx_bytes(0x08, {2, 2, 2, 2, 2, 2, 2, 2}, eight))[0]);
  CHECK(r8.rank() == 8);
  CHECK(r8.to_vector<std::uint8_t>() == std::vector<std::uint8_t>(eight.begin(), eight.end()));

  // 80 MiB of gzip'd int32: more than the reader's first 64 MiB buffer, so it has to grow.
  const std::uint32_t n = 20u << 20;
  std::vector<std::int32_t> big(n);
  for (std::uint32_t i = 0; i < n; ++i) big[i] = std::int32_t(i * 2654435761u);
  write_gz(dir / "big.gz", idx_bytes(0x0C, {n}, be_bytes(big)));
  NDArray a = data::read_idx(m, dir / "big.gz");
  CHECK(a.size() == std::int64_t(n));
  CHECK(a.to_vector<std::int32_t>() == big);
}

TEST_CASE("read_idx: missing, unreadable and short files name the file and the problem") {
  TempDir dir;
  check_rejected(dir / "no-such-file-idx1-ubyte.gz", "no such file");
  check_rejected(dir.path(), "is a directory");
  for (const fs::path& file : write_both(dir, "empty", {})) check_rejected(file, "fewer than the 4-byte IDX magic");
  for (const fs::path& file : write_both(dir, "three", {0, 0, 8})) check_rejected(file, "truncated");
}

TEST_CASE("read_idx: malformed headers are rejected") {
  TempDir dir;
  for (const fs::path& file : write_both(dir, "magic", {1, 2, 8, 1, 0, 0, 0, 1, 7}))
    check_rejected(file, "bad magic number 01 02 08 01");
  for (const fs::path& file : write_both(dir, "type", idx_bytes(0x0A, {1}, {7})))
    check_rejected(file, "unknown IDX type code 0x0a");
  for (const fs::path& file : write_both(dir, "rank0", idx_bytes(0x08, {}, {7}))) check_rejected(file, "rank 0");
  for (const fs::path& file : write_both(dir, "rank9", idx_bytes(0x08, {1, 1, 1, 1, 1, 1, 1, 1, 1}, {7})))
    check_rejected(file, "rank 9 is above the 8 dimensions");
  Bytes short_dims{0, 0, 8, 3, 0, 0, 0, 2, 0, 0, 0, 2, 0, 0};  // rank 3, 1.5 dimensions
  for (const fs::path& file : write_both(dir, "dims", short_dims)) check_rejected(file, "truncated header");
  for (const fs::path& file : write_both(dir, "absurd", idx_bytes(0x0E, {0xFFFFFFFF, 0xFFFFFFFF, 0xFFFFFFFF}, {})))
    check_rejected(file, "absurd size");
}

TEST_CASE("read_idx: data shorter or longer than the dimensions declare") {
  TempDir dir;
  const std::vector<std::int32_t> values{1, 2, 3, 4, 5};
  Bytes short_data = idx_bytes(0x0C, {6}, be_bytes(values));  // 6 declared, 5 present
  for (const fs::path& file : write_both(dir, "short", short_data)) check_rejected(file, "truncated");
  check_rejected(dir / "short", "need 24 bytes of data after the 8-byte header, the file holds only 20");
  check_rejected(dir / "short.gz", "declare 24 bytes of data, the file holds only 20");

  Bytes long_data = idx_bytes(0x0C, {4}, be_bytes(values));  // 4 declared, 5 present
  for (const fs::path& file : write_both(dir, "long", long_data))
    check_rejected(file, "4 bytes of trailing data after the 16 bytes");

  // A small gzip file cannot hold the gigabyte its header claims.
  write_gz(dir / "claims.gz", idx_bytes(0x08, {1u << 30}, {1, 2, 3}));
  check_rejected(dir / "claims.gz", "more than a gzip file of");
  // The same claim in a plain file is caught from the file size, before any reading.
  write_plain(dir / "claims", idx_bytes(0x08, {1u << 30}, {1, 2, 3}));
  check_rejected(dir / "claims", "truncated");
}

TEST_CASE("read_idx: corrupt and truncated gzip streams") {
  TempDir dir;
  std::vector<std::int32_t> values(4096);
  for (std::size_t i = 0; i < values.size(); ++i) values[i] = std::int32_t(i * i);
  write_gz(dir / "good.gz", idx_bytes(0x0C, {4096}, be_bytes(values)));
  Bytes gz = read_all(dir / "good.gz");
  REQUIRE(gz.size() > 64);

  Bytes bad_crc = gz;  // the trailer: CRC-32, then the length
  bad_crc[bad_crc.size() - 8] ^= 0xFF;
  write_plain(dir / "crc.gz", bad_crc);
  check_rejected(dir / "crc.gz", "corrupt gzip data");

  Bytes cut(gz.begin(), gz.begin() + std::ptrdiff_t(gz.size() / 2));
  write_plain(dir / "cut.gz", cut);
  check_rejected(dir / "cut.gz", "truncated gzip stream");

  Bytes no_trailer(gz.begin(), gz.end() - 4);
  write_plain(dir / "no-trailer.gz", no_trailer);
  check_rejected(dir / "no-trailer.gz", "truncated gzip stream");
}

TEST_CASE("read_idx: manager errors come before reading") {
  TempDir dir;
  write_plain(dir / "ok", idx_bytes(0x08, {1}, {5}));
  CHECK_THROWS_AS(data::read_idx(ManagerRef(), dir / "ok"), InvalidArgument);
  NDManager m = NDManager::new_base_manager("closed");
  m.close();
  CHECK_THROWS_AS(data::read_idx(m, dir / "ok"), ManagerClosed);
  CHECK_THROWS_AS(data::read_idx(m, dir / "missing"), ManagerClosed);
}

// Sizes as people write them.
#include <doctest/doctest.h>

#include <ndgc/ndgc.hpp>

using namespace ndgc;

TEST_CASE("parse_size accepts k, m, g, t suffixes") {
  CHECK(memory::parse_size("0") == 0);
  CHECK(memory::parse_size("512") == 512);
  CHECK(memory::parse_size("64k") == 64 * 1024);
  CHECK(memory::parse_size("64m") == 64ull << 20);
  CHECK(memory::parse_size("2G") == 2ull << 30);
  CHECK(memory::parse_size("1.5g") == 3ull << 29);
  CHECK(memory::parse_size("1t") == 1ull << 40);
  CHECK(memory::parse_size("8MB") == 8ull << 20);
}

TEST_CASE("parse_size rejects anything else, naming the setting") {
  CHECK_THROWS_WITH_AS(memory::parse_size("", "NDGC_MAX_BYTES"), doctest::Contains("NDGC_MAX_BYTES"), InvalidArgument);
  CHECK_THROWS_AS(memory::parse_size("abc"), InvalidArgument);
  CHECK_THROWS_AS(memory::parse_size("-5m"), InvalidArgument);
  CHECK_THROWS_AS(memory::parse_size("5x"), InvalidArgument);
  CHECK_THROWS_AS(memory::parse_size("5mm"), InvalidArgument);
  CHECK_THROWS_AS(memory::parse_size("1e30t"), InvalidArgument);
}

TEST_CASE("format_bytes") {
  CHECK(memory::format_bytes(100) == "100 B");
  CHECK(memory::format_bytes(1536) == "1.5 KiB");
  CHECK(memory::format_bytes(64ull << 20) == "64.0 MiB");
}

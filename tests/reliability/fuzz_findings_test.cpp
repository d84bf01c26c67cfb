// What the fuzz targets found (issue 5), as plain tests through the public
// API; the inputs themselves replay from tests/fuzz/corpus/*/regress-*.
#include <doctest/doctest.h>

#include <cstdint>
#include <limits>
#include <vector>

#include "test_util.hpp"

using namespace ndgc;

TEST_CASE("fuzz finding: a signed integer sum that overflows wraps, without undefined behaviour") {
  NDManager m = NDManager::new_base_manager("fuzz-findings");
  const std::int32_t big = std::numeric_limits<std::int32_t>::max();
  NDArray a = m.create(std::vector<std::int32_t>{big, 1, big, 2}, Shape{2, 2});
  CHECK(a.sum().item<std::int32_t>() == std::int32_t(std::uint32_t(big) * 2u + 3u));
  CHECK(a.sum({0}).to_vector<std::int32_t>() == std::vector<std::int32_t>{std::int32_t(std::uint32_t(big) * 2u), 3});
  CHECK(a.sum({1}).to_vector<std::int32_t>() ==
        std::vector<std::int32_t>{std::numeric_limits<std::int32_t>::min(), std::numeric_limits<std::int32_t>::min() + 1});
}

TEST_CASE("fuzz finding: an empty shape beside huge dimensions is refused, not overflowed") {
  NDManager m = NDManager::new_base_manager("fuzz-findings");
  const std::int64_t huge = std::int64_t(1) << 40;
  CHECK_THROWS_AS(m.zeros({0, huge, huge}), InvalidArgument);
  CHECK(m.array_count() == 0);
  NDArray ok = m.zeros({0, huge});  // fits: an empty array with sane strides
  CHECK(ok.size() == 0);
  CHECK(Shape({huge, huge, 0}).size() == 0);
}

// ndgc::float16 and ndgc::bfloat16 conversions (include/ndgc/half.hpp), checked
// exhaustively against a reference written from IEEE 754's definitions: every
// one of the 65,536 bit patterns decoded, and every rounding interval between
// two neighbours probed at both ends, the midpoint and either side of it.
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include <doctest/doctest.h>

#include "ndgc/ndgc.hpp"

namespace ndgc {

namespace {

// A binary format with `exponent_bits` and `fraction_bits` (and a sign bit).
struct Format {
  int exponent_bits, fraction_bits;
  int bias() const { return (1 << (exponent_bits - 1)) - 1; }
  int max_exponent() const { return (1 << exponent_bits) - 1; }
};
constexpr Format kBinary16{5, 10}, kBfloat16{8, 7};

// IEEE 754 §3.4: the value of a bit pattern (NaN as a quiet NaN of its sign).
double reference_decode(Format f, std::uint16_t bits) {
  const bool negative = bits >> 15;
  const int e = (bits >> f.fraction_bits) & f.max_exponent();
  const std::uint32_t fraction = bits & ((1u << f.fraction_bits) - 1u);
  double magnitude;
  if (e == f.max_exponent())
    magnitude = fraction ? std::numeric_limits<double>::quiet_NaN() : std::numeric_limits<double>::infinity();
  else if (e == 0)
    magnitude = std::ldexp(double(fraction), 1 - f.bias() - f.fraction_bits);
  else
    magnitude = std::ldexp(double(fraction + (1u << f.fraction_bits)), e - f.bias() - f.fraction_bits);
  return negative ? -magnitude : magnitude;
}

// IEEE 754 §4.3.1, roundTiesToEven: the representable value nearest to x,
// the one with an even last bit on a tie; past the largest finite value,
// infinity counts as the next one up (2^(emax+1)), so overflow rounds as
// the standard says. `ladder` holds the non-negative values in order.
struct Ladder {
  Format format;
  std::vector<double> values;  // index == bit pattern, the last one +inf's stand-in
  explicit Ladder(Format f) : format(f) {
    const std::uint16_t inf = std::uint16_t(f.max_exponent() << f.fraction_bits);
    for (std::uint16_t b = 0; b < inf; ++b) values.push_back(reference_decode(f, b));
    values.push_back(std::ldexp(1.0, f.max_exponent() - f.bias()));  // where +inf sits for rounding
  }
  std::uint16_t encode(float x) const {
    const std::uint16_t sign = std::signbit(x) ? 0x8000 : 0;
    if (std::isnan(x)) return 0;  // not used: NaN is checked apart
    const double a = std::fabs(double(x));
    if (std::isinf(x) || a >= values.back()) return std::uint16_t(sign | (values.size() - 1));
    const auto above = std::upper_bound(values.begin(), values.end(), a);  // a < *above
    const std::size_t hi = std::size_t(above - values.begin()), lo = hi - 1;
    const double below_gap = a - values[lo], above_gap = values[hi] - a;
    std::size_t pick = below_gap < above_gap ? lo : above_gap < below_gap ? hi : (lo % 2 == 0 ? lo : hi);
    return std::uint16_t(sign | pick);
  }
};

template <class H>
std::uint16_t bits_from_float(float x) {
  return H(x).bits;
}

template <class H>
void check_format(Format f) {
  const Ladder ladder(f);
  // Every pattern decodes to the reference value, sign of zero and NaN included.
  for (std::uint32_t b = 0; b < 65536; ++b) {
    const float got = float(H::from_bits(std::uint16_t(b)));
    const double want = reference_decode(f, std::uint16_t(b));
    if (std::isnan(want)) {
      REQUIRE(std::isnan(got));
      REQUIRE(std::signbit(got) == bool(b >> 15));
      REQUIRE((std::bit_cast<std::uint32_t>(got) & 0x00400000u) != 0);  // quiet
    } else {
      REQUIRE(double(got) == want);
      REQUIRE(std::signbit(got) == std::signbit(want));
      REQUIRE(H(got).bits == b);  // and back: every finite pattern survives a round trip
    }
  }
  // Every rounding interval: its ends, its midpoint and the floats beside it, both signs.
  std::vector<float> probes;
  for (std::size_t i = 0; i + 1 < ladder.values.size(); ++i) {
    const float lo = float(ladder.values[i]), mid = float((ladder.values[i] + ladder.values[i + 1]) / 2);
    REQUIRE(double(mid) == (ladder.values[i] + ladder.values[i + 1]) / 2);  // exact in float32
    probes.insert(probes.end(), {lo, std::nextafter(lo, 1e30f), mid, std::nextafter(mid, 0.f),
                                 std::nextafter(mid, 1e30f)});
  }
  probes.insert(probes.end(), {std::numeric_limits<float>::infinity(), std::numeric_limits<float>::max(),
                               std::numeric_limits<float>::denorm_min(), std::numeric_limits<float>::min(), 1e30f});
  for (float p : probes)
    for (float x : {p, -p}) {
      CAPTURE(x);
      REQUIRE(bits_from_float<H>(x) == ladder.encode(x));
    }
  // NaN stays NaN, quiet, with its sign, whatever its payload.
  for (std::uint32_t pattern : {0x7f800001u, 0x7fc00000u, 0x7fbfffffu, 0xffc00001u, 0xff800001u}) {
    float nan;
    std::memcpy(&nan, &pattern, 4);
    const float back = float(H(nan));
    CHECK(std::isnan(back));
    CHECK(std::signbit(back) == bool(pattern >> 31));
    const std::uint16_t quiet_bit = std::uint16_t(1u << (f.fraction_bits - 1));
    CHECK((H(nan).bits & quiet_bit) != 0);
  }
}

}  // namespace

TEST_CASE("float16: every pattern and every rounding interval as IEEE 754 binary16") {
  check_format<float16>(kBinary16);
}

TEST_CASE("bfloat16: every pattern and every rounding interval as IEEE 754 (8-bit exponent, 7-bit fraction)") {
  check_format<bfloat16>(kBfloat16);
}

TEST_CASE("16-bit element types: constexpr, dtype_of, size_of, names") {
  static_assert(bfloat16(1.0f).bits == 0x3f80);
  static_assert(float16(1.0f).bits == 0x3c00);
  static_assert(float16(65520.0f).bits == 0x7c00);  // the tie above the largest finite value goes to inf
  static_assert(float(float16::from_bits(0x0001)) == 0x1p-24f);
  static_assert(dtype_of<ndgc::bfloat16> == DataType::bfloat16);
  static_assert(dtype_of<ndgc::float16> == DataType::float16);
  static_assert(size_of(DataType::float16) == 2 && size_of(DataType::bfloat16) == 2);
  static_assert(is_floating(DataType::float16) && is_floating(DataType::bfloat16));
  static_assert(is_half(DataType::bfloat16) && !is_half(DataType::float32));
  CHECK(to_string(DataType::float16) == "float16");
  CHECK(to_string(DataType::bfloat16) == "bfloat16");
  CHECK(float(bfloat16(-0.0f)) == 0.0f);
  CHECK(std::signbit(float(bfloat16(-0.0f))));
  CHECK(std::signbit(float(float16(-0.0f))));
}

}  // namespace ndgc

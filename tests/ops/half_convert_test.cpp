// The CPU engine's fast float32 ↔ 16-bit copies (ops/cpu/half_convert.cpp):
// F16C and the vectorised bfloat16 loops give the bits of the scalar
// conversions in ndgc/half.hpp, for every 16-bit pattern widened and for
// floats across the whole range narrowed, at any length (vector bodies and
// their tails) and thread count.
#include <doctest/doctest.h>

#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include <ndgc/ndgc.hpp>

#include "support/cpu_features.hpp"

namespace ndgc {
namespace {

std::vector<float> probe_floats() {
  std::vector<float> v;
  std::mt19937 gen(5);
  for (int i = 0; i < 200000; ++i) {
    std::uint32_t u = gen();
    float f;
    std::memcpy(&f, &u, 4);
    v.push_back(f);  // every exponent, NaNs and infinities among them
  }
  for (std::uint32_t b = 0; b < 65536; ++b) {  // every 16-bit value, and the float just above and below it
    const float h = float(float16::from_bits(std::uint16_t(b))), g = float(bfloat16::from_bits(std::uint16_t(b)));
    v.insert(v.end(), {h, std::nextafter(h, 1e30f), std::nextafter(h, -1e30f), g, std::nextafter(g, 0.f)});
  }
  return v;
}

template <class H>
void check_type(DataType t) {
  NDManager m = NDManager::new_base_manager("half-convert");
  const std::vector<float> x = probe_floats();
  for (int threads : {1, 3}) {
    set_num_threads(threads);
    for (std::size_t n : {std::size_t(1), std::size_t(7), std::size_t(9), x.size()}) {
      CAPTURE(n);
      const std::vector<float> part(x.begin(), x.begin() + std::ptrdiff_t(n));
      const std::vector<H> narrowed = m.create(part).to_type(t).template to_vector<H>();
      for (std::size_t i = 0; i < n; ++i) {
        CAPTURE(i);
        REQUIRE(narrowed[i].bits == H(part[i]).bits);
      }
    }
    std::vector<H> all;
    for (std::uint32_t b = 0; b < 65536; ++b) all.push_back(H::from_bits(std::uint16_t(b)));
    const std::vector<float> widened = m.create(all).to_type(DataType::float32).template to_vector<float>();
    for (std::uint32_t b = 0; b < 65536; ++b) {
      const float want = float(all[b]);
      REQUIRE(std::memcmp(&widened[b], &want, 4) == 0);
    }
  }
  set_num_threads(1);
}

}  // namespace

TEST_CASE("half copies: float16 (F16C where the CPU has it) gives the scalar conversion's bits") {
  MESSAGE("F16C: " << std::string(support::cpu_has_f16c() ? "yes" : "no, the portable loop"));
  check_type<float16>(DataType::float16);
}

TEST_CASE("half copies: bfloat16's vectorised loops give the scalar conversion's bits") {
  check_type<bfloat16>(DataType::bfloat16);
}

}  // namespace ndgc

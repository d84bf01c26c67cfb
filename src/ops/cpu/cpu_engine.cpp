// The CPU engine object and its generator kernels: arange, eye, random, one_hot.
//
// Random numbers are counter-based: element i of a call with (seed, offset)
// is a hash of (seed, offset + i) — splitmix64's finaliser, whose output
// passes BigCrush — turned into a double in [0, 1). Normals use Box-Muller
// on the pair (2i, 2i + 1). The result depends only on the seed and on how
// many numbers earlier calls drew, never on threads.
#include "ops/cpu/cpu_engine.hpp"

#include <cmath>
#include <limits>
#include <numbers>
#include <type_traits>

#include <fmt/format.h>

#include "memory/allocator.hpp"
#include "ndgc/error.hpp"
#include "ops/cpu/strided.hpp"

namespace ndgc::ops::cpu {
namespace {

std::uint64_t mix(std::uint64_t seed, std::uint64_t counter) noexcept {
  std::uint64_t z = seed + (counter + 1) * 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

double unit(std::uint64_t seed, std::uint64_t counter) noexcept {
  return double(mix(seed, counter) >> 11) * 0x1.0p-53;  // [0, 1)
}

// Writes f(i) into element i (row-major order) of `out`.
template <class F>
void generate(const TensorView& out, F&& f) {
  dispatch(out.dtype, [&](auto tag) {
    using T = decltype(tag);
    std::int64_t i = 0;
    for_each_row<1>({&out}, [&](auto& p, auto& s, std::int64_t n) {
      T* o = reinterpret_cast<T*>(p[0]);
      for (std::int64_t j = 0; j < n; ++j) o[j * s[0]] = convert<T>(f(i++));
    });
  });
}

}  // namespace

CpuEngine& cpu_engine() noexcept {
  static CpuEngine engine;
  return engine;
}

void CpuEngine::arange(const TensorView& out, double start, double step) {
  generate(out, [&](std::int64_t i) { return start + double(i) * step; });
}

void CpuEngine::eye(const TensorView& out) {
  const std::int64_t cols = out.shape[1];
  generate(out, [&](std::int64_t i) { return i / cols == i % cols ? 1.0 : 0.0; });
}

// Note [Uniform bounds]
// Values lie in [low, high). low + (high - low) * u, with u < 1, can still
// round up to high, in double or when narrowed to float32 (about half of all
// draws do for a range one float ulp wide); such a value becomes the largest
// element-type value below high. Integer dtypes take the floor, so that
// [-5, 5) gives each of -5..4 equally often (truncation would give 0 twice
// the share and -5 almost never).
void CpuEngine::random_uniform(const TensorView& out, double low, double high, std::uint64_t seed,
                               std::uint64_t offset) {
  dispatch(out.dtype, [&](auto tag) {
    using T = decltype(tag);
    std::int64_t i = 0;
    for_each_row<1>({&out}, [&](auto& p, auto& s, std::int64_t n) {
      T* o = reinterpret_cast<T*>(p[0]);
      for (std::int64_t j = 0; j < n; ++j) {
        double x = low + (high - low) * unit(seed, offset + std::uint64_t(i++));
        if (x >= high && low < high) x = std::nextafter(high, low);
        if constexpr (std::is_floating_point_v<T>) {
          T v = static_cast<T>(x);
          if (v >= static_cast<T>(high) && low < high) {
            T below = std::nextafter(static_cast<T>(high), -std::numeric_limits<T>::infinity());
            if (below >= static_cast<T>(low)) v = below;
          }
          o[j * s[0]] = v;
        } else {
          o[j * s[0]] = convert<T>(std::floor(x));
        }
      }
    });
  });
}

void CpuEngine::random_normal(const TensorView& out, double mean, double stddev, std::uint64_t seed,
                              std::uint64_t offset) {
  generate(out, [&](std::int64_t i) {
    std::uint64_t c = offset + 2 * std::uint64_t(i);
    double u1 = 1.0 - unit(seed, c);  // (0, 1]: log stays finite
    double u2 = unit(seed, c + 1);
    return mean + stddev * std::sqrt(-2.0 * std::log(u1)) * std::cos(2 * std::numbers::pi * u2);
  });
}

void CpuEngine::one_hot(const TensorView& indices, std::int64_t depth, const TensorView& out) {
  fill(out, 0);
  std::int64_t row = 0;
  dispatch(indices.dtype, [&](auto itag) {
    using I = decltype(itag);
    dispatch(out.dtype, [&](auto otag) {
      using T = decltype(otag);
      T* base = static_cast<T*>(out.data);  // contiguous (a fresh array): row r starts at r * depth
      for_each_row<1>({&indices}, [&](auto& p, auto& s, std::int64_t n) {
        const I* x = reinterpret_cast<const I*>(p[0]);
        for (std::int64_t j = 0; j < n; ++j, ++row) {
          std::int64_t k = std::int64_t(x[j * s[0]]);
          if (k < 0 || k >= depth)
            throw InvalidArgument(fmt::format("one_hot: index {} is outside [0, {})", k, depth));
          base[row * depth + k] = T(1);
        }
      });
    });
  });
}

Scratch::Scratch(const TensorView& like) {
  view_ = like;
  std::size_t bytes = std::size_t(like.size()) * size_of(like.dtype);
  view_.data = memory::host_allocator().allocate(bytes);
  std::int64_t stride = 1;
  for (int i = like.rank - 1; i >= 0; --i) {
    view_.strides[i] = stride;
    stride *= like.shape[i];
  }
}

Scratch::~Scratch() {
  memory::host_allocator().deallocate(view_.data, std::size_t(view_.size()) * size_of(view_.dtype));
}

const TensorView& contiguous_or_copy(const TensorView& in, std::unique_ptr<Scratch>& scratch) {
  if (in.is_contiguous()) return in;
  scratch = std::make_unique<Scratch>(in);
  cpu_engine().copy(in, scratch->view());
  return scratch->view();
}

}  // namespace ndgc::ops::cpu

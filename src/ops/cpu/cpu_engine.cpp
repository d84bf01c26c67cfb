// The CPU engine object and its generator kernels: arange, eye, random, one_hot.
//
// Random numbers are counter-based (ops/random_stream.hpp, shared with the
// CUDA engine): the result depends only on the seed and on how many numbers
// earlier calls drew, never on threads or on the device.
#include "ops/cpu/cpu_engine.hpp"

#include <cmath>
#include <limits>
#include <numbers>
#include <type_traits>

#include <fmt/format.h>

#include "memory/allocator.hpp"
#include "ndgc/error.hpp"
#include "ops/cpu/strided.hpp"
#include "ops/random_stream.hpp"

namespace ndgc::ops::cpu {
namespace {

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
// A draw's state is read here, when the kernel runs (host memory: the
// simulated GPU of the tests records CPU kernels into its graphs).
void CpuEngine::random_uniform(const TensorView& out, double low, double high, const RandomDraw& draw) {
  const RandomDraw at = random::start_of(draw);  // plain variables: clang 14 lambdas cannot capture bindings
  const std::uint64_t seed = at.seed, offset = at.offset;
  dispatch(out.dtype, [&](auto tag) {
    using T = decltype(tag);
    std::int64_t i = 0;
    for_each_row<1>({&out}, [&](auto& p, auto& s, std::int64_t n) {
      T* o = reinterpret_cast<T*>(p[0]);
      for (std::int64_t j = 0; j < n; ++j) o[j * s[0]] = random::uniform_at<T>(low, high, seed, offset + std::uint64_t(i++));
    });
  });
}

void CpuEngine::random_normal(const TensorView& out, double mean, double stddev, const RandomDraw& draw) {
  const RandomDraw at = random::start_of(draw);  // plain variables: clang 14 lambdas cannot capture bindings
  const std::uint64_t seed = at.seed, offset = at.offset;
  generate(out, [&](std::int64_t i) { return random::normal_at(mean, stddev, seed, offset, std::uint64_t(i)); });
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

const TensorView& contiguous_or_copy(const TensorView& in, std::optional<Scratch>& scratch) {
  if (in.is_contiguous()) return in;
  scratch.emplace(in);
  cpu_engine().copy(in, scratch->view());
  return scratch->view();
}

}  // namespace ndgc::ops::cpu

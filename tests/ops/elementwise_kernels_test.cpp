// The CPU engine's element-wise fast paths (issue 16) against plain loops:
// where, fill and the fused ReLU backward, on contiguous, strided,
// transposed, broadcast (row and scalar) and sliced operands, for every
// dtype each serves. The engine is called directly on views over test-owned
// buffers, so each layout reaches exactly the kernel path it names; expected
// values come from a loop over the same buffers in this file.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include "ops/engine.hpp"

namespace ndgc {
namespace {

using ops::TensorView;

constexpr std::int64_t kRows = 3, kCols = 17;  // 17: vector bodies and scalar tails

enum class Layout { contiguous, strided, transposed, row_broadcast, scalar, sliced };
const Layout kLayouts[] = {Layout::contiguous, Layout::strided,     Layout::transposed,
                           Layout::row_broadcast, Layout::scalar, Layout::sliced};

const char* name(Layout l) {
  switch (l) {
    case Layout::contiguous: return "contiguous";
    case Layout::strided: return "strided";
    case Layout::transposed: return "transposed";
    case Layout::row_broadcast: return "row broadcast";
    case Layout::scalar: return "scalar";
    case Layout::sliced: return "sliced";
  }
  return "?";
}


// A (kRows, kCols) operand laid out as `layout` over its own buffer.
template <class T>
struct Operand {
  // Booleans are held as bytes of 0 or 1 (std::vector<bool> has no data()).
  using Elem = std::conditional_t<std::is_same_v<T, bool>, std::uint8_t, T>;
  std::vector<Elem> buffer;
  std::int64_t offset = 0, s0 = 0, s1 = 0;
  TensorView view;

  Operand(Layout layout, std::mt19937& rng) {
    std::int64_t size = kRows * kCols;
    switch (layout) {
      case Layout::contiguous: s0 = kCols, s1 = 1; break;
      case Layout::strided: s0 = 2 * kCols, s1 = 2, size *= 2; break;
      case Layout::transposed: s0 = 1, s1 = kRows; break;
      case Layout::row_broadcast: s0 = 0, s1 = 1, size = kCols; break;
      case Layout::scalar: size = 1; break;
      case Layout::sliced: s0 = kCols + 3, s1 = 1, offset = kCols + 4, size = (kRows + 1) * (kCols + 3); break;
    }
    buffer.resize(std::size_t(size));
    std::uniform_int_distribution<int> u(-9, 9);
    for (Elem& v : buffer) {
      if constexpr (std::is_same_v<T, bool>) v = u(rng) > 0;
      else if constexpr (std::is_unsigned_v<T>) v = T(u(rng) + 9);
      else v = T(u(rng)) / T(std::is_floating_point_v<T> ? 4 : 1);
    }
    view.data = buffer.data() + offset;
    view.dtype = ndgc::dtype_of<T>;
    view.rank = 2;
    view.shape[0] = kRows, view.shape[1] = kCols;
    view.strides[0] = s0, view.strides[1] = s1;
  }
  Elem& at(std::int64_t i, std::int64_t j) { return buffer[std::size_t(offset + i * s0 + j * s1)]; }
};

ops::Engine& cpu() { return ops::engine(Device::cpu()); }

}  // namespace

TEST_CASE_TEMPLATE("where's contiguous and broadcast fast paths match a plain loop on every layout", T, float,
                   double, std::int32_t, std::int64_t, std::uint8_t) {
  std::mt19937 rng(1);
  for (Layout lc : kLayouts)
    for (Layout lx : kLayouts)
      for (Layout ly : kLayouts)
        for (Layout lo : {Layout::contiguous, Layout::sliced}) {
          CAPTURE(std::string(name(lc)) + " / " + name(lx) + " / " + name(ly) + " -> " + name(lo));
          Operand<bool> c(lc, rng);
          Operand<T> x(lx, rng), y(ly, rng), out(lo, rng);
          cpu().where(c.view, x.view, y.view, out.view);
          int wrong = 0;
          for (std::int64_t i = 0; i < kRows; ++i)
            for (std::int64_t j = 0; j < kCols; ++j)
              wrong += out.at(i, j) != (c.at(i, j) ? x.at(i, j) : y.at(i, j));
          CHECK(wrong == 0);
        }
}

TEST_CASE_TEMPLATE("fill by memset, fill_n and the strided loop writes exactly the view's elements", T, float,
                   double, std::int32_t, std::int64_t, std::uint8_t, bool) {
  std::mt19937 rng(2);
  for (Layout lo : {Layout::contiguous, Layout::strided, Layout::transposed, Layout::sliced}) {
    for (double value : {0.0, 3.0}) {
      CAPTURE(name(lo));
      CAPTURE(value);
      Operand<T> out(lo, rng);
      const auto before = out.buffer;
      cpu().fill(out.view, value);
      // Every element of the view holds the value; every other byte of the buffer is untouched.
      std::vector<bool> in_view(out.buffer.size());
      int wrong = 0;
      for (std::int64_t i = 0; i < kRows; ++i)
        for (std::int64_t j = 0; j < kCols; ++j) {
          in_view[std::size_t(out.offset + i * out.s0 + j * out.s1)] = true;
          wrong += out.at(i, j) != typename Operand<T>::Elem(T(value));
        }
      for (std::size_t k = 0; k < out.buffer.size(); ++k)
        if (!in_view[k]) wrong += out.buffer[k] != before[k];
      CHECK(wrong == 0);
    }
  }
}

TEST_CASE_TEMPLATE("fill with -0.0 keeps the sign bit (not the memset path)", T, float, double) {
  std::mt19937 rng(3);
  Operand<T> out(Layout::contiguous, rng);
  cpu().fill(out.view, -0.0);
  for (T v : out.buffer) CHECK(std::signbit(v));
}

TEST_CASE_TEMPLATE("relu_backward matches x > 0 ? g : 0 on every layout, in place and into another view", T, float,
                   double) {
  std::mt19937 rng(4);
  for (Layout lx : kLayouts)
    for (Layout lg : kLayouts)
      for (bool in_place : {false, true}) {
        if (in_place && (lg == Layout::row_broadcast || lg == Layout::scalar)) continue;  // out is never broadcast
        CAPTURE(std::string(name(lx)) + " / " + name(lg) + (in_place ? " in place" : " -> contiguous"));
        Operand<T> x(lx, rng), g(lg, rng), separate(Layout::contiguous, rng);
        x.at(0, 0) = T(NAN);  // NaN > 0 is false: its gradient is 0
        Operand<T> gref = g;  // its own buffer: the expected values survive an in-place call
        Operand<T>& out = in_place ? g : separate;
        REQUIRE(cpu().relu_backward(x.view, g.view, out.view));
        int wrong = 0;
        for (std::int64_t i = 0; i < kRows; ++i)
          for (std::int64_t j = 0; j < kCols; ++j)
            wrong += out.at(i, j) != (x.at(i, j) > T(0) ? gref.at(i, j) : T(0));
        CHECK(wrong == 0);
      }
}

TEST_CASE("relu_backward declines integer and mixed dtypes (autograd then takes the general path)") {
  std::mt19937 rng(5);
  Operand<std::int32_t> xi(Layout::contiguous, rng), gi(Layout::contiguous, rng);
  const std::vector<std::int32_t> before = gi.buffer;
  CHECK_FALSE(cpu().relu_backward(xi.view, gi.view, gi.view));
  CHECK(gi.buffer == before);
  Operand<double> xd(Layout::contiguous, rng);
  Operand<float> gf(Layout::contiguous, rng);
  CHECK_FALSE(cpu().relu_backward(xd.view, gf.view, gf.view));
}

}  // namespace ndgc

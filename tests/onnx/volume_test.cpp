// Convolutions and pools over three spatial axes (Note [Volumes as slices of
// depth]): outputs and gradients against a direct loop over each window, with
// strides, dilations, uneven pads and groups on every axis. ONNX's
// conformance cases check the outputs only.
#include <doctest/doctest.h>

#include <array>
#include <cmath>
#include <limits>

#include <ndgc/ndgc.hpp>
#include <ndgc/onnx.hpp>

#include "graph_builder.hpp"

namespace ndgc {
namespace {

using test::GraphBuilder;
using Ints = std::vector<std::int64_t>;

// Distinct values in (-1, 1), so that a max window has one winner.
std::vector<double> distinct_values(std::size_t n, std::uint64_t seed) {
  std::vector<double> v(n);
  for (std::size_t i = 0; i < n; ++i) {
    seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
    v[i] = (double(seed >> 11) / double(1ULL << 53)) * 2.0 - 1.0 + 1e-9 * double(i);
  }
  return v;
}

std::int64_t product(const Ints& dims) {
  std::int64_t n = 1;
  for (auto d : dims) n *= d;
  return n;
}

// A window over three axes; pads as ONNX orders them (begins, then ends).
struct Box {
  Ints kernel, strides, dilations, pads;
  std::int64_t out(int a, std::int64_t in) const {
    const auto i = std::size_t(a);
    return (in + pads[i] + pads[i + 3] - (kernel[i] - 1) * dilations[i] - 1) / strides[i] + 1;
  }
  // The input position of output position o's tap k on axis a (may lie in the padding).
  std::int64_t at(int a, std::int64_t o, std::int64_t k) const {
    const auto i = std::size_t(a);
    return o * strides[i] - pads[i] + k * dilations[i];
  }
  void set(::onnx::NodeProto& n, bool with_kernel_shape) const {
    if (with_kernel_shape) GraphBuilder::attr(n, "kernel_shape", kernel);
    GraphBuilder::attr(n, "strides", strides);
    if (dilations != Ints{1, 1, 1}) GraphBuilder::attr(n, "dilations", dilations);
    GraphBuilder::attr(n, "pads", pads);
  }
};

// Row-major offsets of [a, b, c, d, e] in `dims`.
std::size_t offset(const Ints& dims, std::int64_t a, std::int64_t b, std::int64_t c, std::int64_t d, std::int64_t e) {
  return std::size_t((((a * dims[1] + b) * dims[2] + c) * dims[3] + d) * dims[4] + e);
}

// Visits every (output position, tap) of a window over x's three spatial
// axes that lands inside x: f(n, c, output offset's spatial part, input's).
template <typename F>
void each_tap(const Ints& x_dims, const Ints& y_dims, const Box& box, F f) {
  for (std::int64_t od = 0; od < y_dims[2]; ++od)
    for (std::int64_t oh = 0; oh < y_dims[3]; ++oh)
      for (std::int64_t ow = 0; ow < y_dims[4]; ++ow)
        for (std::int64_t kd = 0; kd < box.kernel[0]; ++kd)
          for (std::int64_t kh = 0; kh < box.kernel[1]; ++kh)
            for (std::int64_t kw = 0; kw < box.kernel[2]; ++kw) {
              const std::int64_t id = box.at(0, od, kd), ih = box.at(1, oh, kh), iw = box.at(2, ow, kw);
              if (id < 0 || id >= x_dims[2] || ih < 0 || ih >= x_dims[3] || iw < 0 || iw >= x_dims[4]) continue;
              f(std::array<std::int64_t, 3>{od, oh, ow}, std::array<std::int64_t, 3>{id, ih, iw},
                std::array<std::int64_t, 3>{kd, kh, kw});
            }
}

NDArray doubles(NDManager& m, const std::vector<double>& v, const Ints& dims) {
  return m.create<double>(v, Shape(std::vector<std::int64_t>(dims)));
}

void check_close(const NDArray& got, const std::vector<double>& want) {
  const std::vector<double> g = got.to_vector<double>();
  REQUIRE(g.size() == want.size());
  for (std::size_t i = 0; i < g.size(); ++i) CHECK(g[i] == doctest::Approx(want[i]).epsilon(1e-9));
}

// The graph's output, and the gradients of sum(y · weights) to each input.
NDArray forward_backward(onnx::Imported& net, const NDList& inputs, const NDArray& weights) {
  GradientCollector collector;
  NDArray y = net.model.block().forward(inputs, true).head();
  collector.backward(y.mul(weights).sum());
  return y;
}

}  // namespace

TEST_CASE("onnx Conv over three axes: strides, dilations, uneven pads and groups, with both gradients") {
  const Ints x_dims{2, 4, 5, 6, 5}, w_dims{6, 2, 2, 3, 2};
  const std::int64_t groups = 2;
  const Box box{{2, 3, 2}, {2, 1, 2}, {2, 1, 1}, {1, 0, 1, 0, 2, 1}};
  const Ints y_dims{2, 6, box.out(0, 5), box.out(1, 6), box.out(2, 5)};
  test::TempFolder dir("conv3d");
  GraphBuilder g;
  g.input("x", x_dims, ::onnx::TensorProto::DOUBLE)
      .input("w", w_dims, ::onnx::TensorProto::DOUBLE)
      .output("y", y_dims, ::onnx::TensorProto::DOUBLE);
  auto& n = g.node("Conv", {"x", "w"}, {"y"}, "volume");
  box.set(n, false);
  GraphBuilder::attr(n, "group", groups);
  onnx::Imported net = onnx::load(g.write(dir / "conv3d.onnx"), "conv3d");

  const std::vector<double> xv = distinct_values(std::size_t(product(x_dims)), 1);
  const std::vector<double> wv = distinct_values(std::size_t(product(w_dims)), 2);
  const std::vector<double> gv = distinct_values(std::size_t(product(y_dims)), 3);
  std::vector<double> y(gv.size()), dx(xv.size()), dw(wv.size());
  const std::int64_t per_group_in = x_dims[1] / groups, per_group_out = w_dims[0] / groups;
  for (std::int64_t b = 0; b < x_dims[0]; ++b)
    for (std::int64_t o = 0; o < w_dims[0]; ++o)
      for (std::int64_t ci = 0; ci < per_group_in; ++ci) {
        const std::int64_t c = o / per_group_out * per_group_in + ci;
        each_tap(x_dims, y_dims, box, [&](auto out, auto in, auto k) {
          const std::size_t yi = offset(y_dims, b, o, out[0], out[1], out[2]);
          const std::size_t xi = offset(x_dims, b, c, in[0], in[1], in[2]);
          const std::size_t wi = offset(w_dims, o, ci, k[0], k[1], k[2]);
          y[yi] += xv[xi] * wv[wi];
          dx[xi] += gv[yi] * wv[wi];
          dw[wi] += gv[yi] * xv[xi];
        });
      }

  NDManager batch = NDManager::new_base_manager("batch");
  NDArray x = doubles(batch, xv, x_dims), w = doubles(batch, wv, w_dims);
  x.set_requires_gradient(true);
  w.set_requires_gradient(true);
  const NDArray out = forward_backward(net, NDList{x, w}, doubles(batch, gv, y_dims));
  CHECK(out.shape() == Shape(std::vector<std::int64_t>(y_dims)));
  check_close(out, y);
  check_close(x.gradient(), dx);
  check_close(w.gradient(), dw);
}

TEST_CASE("onnx MaxPool and AveragePool over three axes: each box's max or mean of real elements, with gradients") {
  const Ints x_dims{2, 3, 6, 5, 7};
  const Box box{{3, 2, 3}, {2, 2, 2}, {1, 1, 1}, {1, 0, 1, 1, 1, 0}};
  const Ints y_dims{2, 3, box.out(0, 6), box.out(1, 5), box.out(2, 7)};
  const std::vector<double> xv = distinct_values(std::size_t(product(x_dims)), 4);
  const std::vector<double> gv = distinct_values(std::size_t(product(y_dims)), 5);

  for (const std::string op : {"MaxPool", "AveragePool"}) {
    CAPTURE(op);
    std::vector<double> y(gv.size()), dx(xv.size());
    std::vector<std::int64_t> winners(gv.size());
    for (std::int64_t b = 0; b < x_dims[0]; ++b)
      for (std::int64_t c = 0; c < x_dims[1]; ++c) {
        std::vector<double> best(y.size(), -std::numeric_limits<double>::infinity()), count(y.size());
        std::vector<std::size_t> winner(y.size());
        each_tap(x_dims, y_dims, box, [&](auto out, auto in, auto) {
          const std::size_t yi = offset(y_dims, b, c, out[0], out[1], out[2]);
          const std::size_t xi = offset(x_dims, b, c, in[0], in[1], in[2]);
          if (xv[xi] > best[yi]) best[yi] = xv[xi], winner[yi] = xi;
          y[yi] += xv[xi], count[yi] += 1;  // the sum, divided below
        });
        for (std::int64_t i = 0; i < product(y_dims) / (x_dims[0] * x_dims[1]); ++i) {
          const std::size_t yi = std::size_t((b * x_dims[1] + c) * (product(y_dims) / (x_dims[0] * x_dims[1])) + i);
          if (op == "MaxPool") {
            y[yi] = best[yi], dx[winner[yi]] += gv[yi], winners[yi] = std::int64_t(winner[yi]);
          } else {
            y[yi] /= count[yi];
            each_tap(x_dims, y_dims, box, [&](auto out, auto in, auto) {
              if (offset(y_dims, b, c, out[0], out[1], out[2]) == yi)
                dx[offset(x_dims, b, c, in[0], in[1], in[2])] += gv[yi] / count[yi];
            });
          }
        }
      }

    test::TempFolder dir("pool3d");
    GraphBuilder g;
    const bool max = op == "MaxPool";
    g.input("x", x_dims, ::onnx::TensorProto::DOUBLE).output("y", y_dims, ::onnx::TensorProto::DOUBLE);
    if (max) g.output("at", y_dims, ::onnx::TensorProto::INT64);  // where each maximum came from
    box.set(g.node(op, {"x"}, max ? std::vector<std::string>{"y", "at"} : std::vector<std::string>{"y"}, "box"),
            true);
    onnx::Imported net = onnx::load(g.write(dir / "pool3d.onnx"), "pool3d");
    NDManager batch = NDManager::new_base_manager("batch");
    NDArray x = doubles(batch, xv, x_dims);
    x.set_requires_gradient(true);
    const NDArray out = forward_backward(net, NDList{x}, doubles(batch, gv, y_dims));
    check_close(out, y);
    check_close(x.gradient(), dx);
    if (max) CHECK(net.model.block().forward(NDList{x}, false)[1].to_vector<std::int64_t>() == winners);
  }
}

TEST_CASE("onnx 3-D windows: an input without five axes, or too shallow for the window, is an error naming the node") {
  test::TempFolder dir("volume_rank");
  auto pool_of_rank = [&](std::size_t rank) {
    GraphBuilder g;
    g.input("x", Ints(rank, -1)).output("y", Ints(rank, -1));
    GraphBuilder::attr(g.node("MaxPool", {"x"}, {"y"}, "cube"), "kernel_shape", Ints{2, 2, 2});
    return onnx::load(g.write(dir / "rank.onnx"), "rank");
  };
  onnx::Imported flat = pool_of_rank(4), volume = pool_of_rank(5);
  NDManager batch = NDManager::new_base_manager("batch");
  CHECK_THROWS_WITH_AS(flat.model.block().forward(NDList{batch.zeros(Shape{1, 1, 4, 4})}, false),
                       doctest::Contains("MaxPool 'cube': input (1, 1, 4, 4) does not have the batch, channel and 3"),
                       ShapeMismatch);
  CHECK_THROWS_WITH_AS(volume.model.block().forward(NDList{batch.zeros(Shape{1, 1, 1, 4, 4})}, false),
                       doctest::Contains("a depth of 1 is shorter than the window's span of 2"), ShapeMismatch);
}

}  // namespace ndgc

// lstm (src/ops/lstm.cpp) against a step-by-step composition of matmul,
// sigmoid and tanh: one and two layers, with and without h0/c0, float32;
// the same bits at 1, 2 and 3 threads through the backward pass; each
// error path, and no array left behind by a call that fails its checks.
#include <cstring>

#include "ops_test_util.hpp"
#include "test_util.hpp"

namespace ops_test {
namespace {

std::vector<double> lstm_ramp(std::int64_t n, double scale, double shift) {
  std::vector<double> v(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) v[std::size_t(i)] = 0.8 * std::sin(double(i) * scale + shift);
  return v;
}

NDArray block(const NDArray& gates, std::int64_t k, std::int64_t h) {
  return gates.get(NDIndex().add_all().add_slice(k * h, (k + 1) * h));
}

// The LSTM written out: gates = x_t W_ih + h W_hh + b, then the cell with the library's element-wise ops.
NDList reference(const NDArray& x, const NDList& w, const NDArray& h0, const NDArray& c0) {
  const std::int64_t b = x.shape()[0], steps = x.shape()[1], hidden = w[1].shape()[0];
  const std::size_t layers = w.size() / 3;
  NDArray input = x;
  NDList hs, cs;
  for (std::size_t l = 0; l < layers; ++l) {
    NDArray h = h0.defined() ? h0.get(NDIndex().add_index(std::int64_t(l)))
                             : x.manager().zeros({b, hidden}, x.dtype());
    NDArray c = c0.defined() ? c0.get(NDIndex().add_index(std::int64_t(l)))
                             : x.manager().zeros({b, hidden}, x.dtype());
    NDList outs;
    for (std::int64_t t = 0; t < steps; ++t) {
      NDArray xt = input.get(NDIndex().add_all().add_index(t));
      NDArray gates = xt.matmul(w[3 * l]).add(h.matmul(w[3 * l + 1])).add(w[3 * l + 2]);
      NDArray i = block(gates, 0, hidden).sigmoid(), f = block(gates, 1, hidden).sigmoid();
      NDArray g = block(gates, 2, hidden).tanh(), o = block(gates, 3, hidden).sigmoid();
      c = f.mul(c).add(i.mul(g));
      h = o.mul(c.tanh());
      outs.push_back(h);
    }
    input = stack(outs, 1);
    hs.push_back(h);
    cs.push_back(c);
  }
  return NDList{input, stack(hs, 0), stack(cs, 0)};
}

struct Case {
  std::int64_t b, t, f, h, layers;
  bool state;
};

struct Arrays {
  NDArray x, h0, c0;
  NDList w;
};

Arrays make(const ManagerRef& m, const Case& k, DataType dt) {
  Arrays a;
  a.x = m.create(lstm_ramp(k.b * k.t * k.f, 0.37, 0.1), {k.b, k.t, k.f}).to_type(dt);
  for (std::int64_t l = 0; l < k.layers; ++l) {
    const std::int64_t in = l == 0 ? k.f : k.h;
    a.w.push_back(m.create(lstm_ramp(in * 4 * k.h, 0.71, 0.3 + double(l)), {in, 4 * k.h}).to_type(dt));
    a.w.push_back(m.create(lstm_ramp(k.h * 4 * k.h, 0.53, 0.9 + double(l)), {k.h, 4 * k.h}).to_type(dt));
    a.w.push_back(m.create(lstm_ramp(4 * k.h, 1.1, 0.2 + double(l)), {4 * k.h}).to_type(dt));
  }
  if (k.state) {
    a.h0 = m.create(lstm_ramp(k.layers * k.b * k.h, 0.61, 0.5), {k.layers, k.b, k.h}).to_type(dt);
    a.c0 = m.create(lstm_ramp(k.layers * k.b * k.h, 0.43, 1.5), {k.layers, k.b, k.h}).to_type(dt);
  }
  return a;
}

using test::Threads;

}  // namespace

TEST_CASE("lstm: against a step-by-step composition, 1 and 2 layers, with and without h0/c0") {
  const std::vector<Case> cases = {
      {2, 3, 4, 3, 1, false}, {2, 3, 4, 3, 1, true}, {3, 4, 2, 5, 2, false}, {3, 4, 2, 5, 2, true},
      {1, 1, 3, 2, 3, true},
  };
  NDManager m = fresh();
  for (const Case& k : cases) {
    CAPTURE(k.layers);
    CAPTURE(k.state);
    for (DataType dt : {DataType::float64, DataType::float32}) {
      const Arrays a = make(m, k, dt);
      const NDList got = lstm(a.x, a.w, a.h0, a.c0);
      const NDList want = reference(a.x, a.w, a.h0, a.c0);
      REQUIRE(got.size() == 3);
      check_shape(got[0], {k.b, k.t, k.h});
      check_shape(got[1], {k.layers, k.b, k.h});
      check_shape(got[2], {k.layers, k.b, k.h});
      const double tol = dt == DataType::float32 ? 1e-5 : 1e-13;
      for (std::size_t i = 0; i < 3; ++i) {
        CHECK(got[i].dtype() == dt);
        check_values(got[i], values(want[i]), tol);
      }
      // y's last step is the last layer's h
      check_values(got[0].get(NDIndex().add_all().add_index(k.t - 1)),
                   values(got[1].get(NDIndex().add_index(k.layers - 1))), 0);
    }
  }
}

TEST_CASE("lstm: only c0, and x a view") {
  NDManager m = fresh();
  const Case k{2, 3, 4, 3, 1, true};
  const Arrays a = make(m, k, DataType::float64);
  NDArray xt = a.x.transpose({1, 0, 2}).contiguous().transpose({1, 0, 2});  // stored [T, B, F]
  CHECK_FALSE(xt.is_contiguous());
  const NDList got = lstm(xt, a.w, NDArray{}, a.c0), want = reference(a.x, a.w, NDArray{}, a.c0);
  for (std::size_t i = 0; i < 3; ++i) check_values(got[i], values(want[i]), 1e-13);
}

TEST_CASE("lstm: the same bits at 1, 2 and 3 threads, forward and backward") {
  const Case k{300, 3, 5, 8, 2, true};
  std::vector<std::vector<char>> first;
  for (int threads : {1, 2, 3}) {
    Threads keep(threads);
    NDManager m = fresh();
    Arrays a = make(m, k, DataType::float32);
    a.x.set_requires_gradient(true);
    a.h0.set_requires_gradient(true);
    for (std::size_t i = 0; i < a.w.size(); ++i) a.w[i].set_requires_gradient(true);
    std::vector<std::vector<char>> got;
    {
      GradientCollector collector;
      const NDList out = lstm(a.x, a.w, a.h0, a.c0);
      collector.backward(out[0].sum().add(out[1].mul(out[2]).sum()));
      got = {bits(out[0]), bits(out[1]), bits(out[2]), bits(a.x.gradient()), bits(a.h0.gradient())};
      for (std::size_t i = 0; i < a.w.size(); ++i) got.push_back(bits(a.w[i].gradient()));
    }
    INFO("threads " << threads);
    if (threads == 1) first = got;
    else CHECK(got == first);
  }
}

TEST_CASE("lstm: errors name what is wrong, and a failed call leaves no array behind") {
  NDManager m = fresh();
  const Case k{2, 3, 4, 3, 2, true};
  const Arrays a = make(m, k, DataType::float32);
  const std::size_t before = m.array_count();
  CHECK_THROWS_WITH_AS(lstm(m.ones({2, 4}), a.w), doctest::Contains("lstm: x"), ShapeMismatch);
  CHECK_THROWS_WITH_AS(lstm(m.ones({2, 4}), a.w), doctest::Contains("has rank 2, but must be [B, T, F]"),
                       ShapeMismatch);
  CHECK_THROWS_WITH_AS(lstm(m.ones({2, 3, 5}), a.w),
                       doctest::Contains("has F = 5 features, but layer 0's weight_ih"), ShapeMismatch);
  CHECK_THROWS_WITH_AS(lstm(m.ones({2, 3, 5}), a.w), doctest::Contains("must be [F, 4H] = [5, 12]"),
                       ShapeMismatch);
  CHECK_THROWS_WITH_AS(lstm(m.ones({2, 0, 4}), a.w), doctest::Contains("no time steps"), InvalidArgument);
  CHECK_THROWS_WITH_AS(lstm(a.x, NDList{a.w[0], a.w[1]}),
                       doctest::Contains("weights holds 2 arrays, but needs 3 per layer"), InvalidArgument);
  CHECK_THROWS_WITH_AS(lstm(a.x, NDList{}), doctest::Contains("weights holds 0 arrays"), InvalidArgument);
  CHECK_THROWS_WITH_AS(lstm(a.x, NDList{a.w[0], m.ones({3, 8}), a.w[2]}),
                       doctest::Contains("layer 0's weight_hh"), ShapeMismatch);
  CHECK_THROWS_WITH_AS(lstm(a.x, NDList{a.w[0], a.w[1], m.ones({3, 4})}),
                       doctest::Contains("layer 0's bias"), ShapeMismatch);
  CHECK_THROWS_WITH_AS(lstm(a.x, NDList{a.w[0], a.w[1], a.w[2], a.w[0], a.w[4], a.w[5]}),
                       doctest::Contains("layer 1's weight_ih"), ShapeMismatch);
  CHECK_THROWS_WITH_AS(lstm(a.x, NDList{a.w[0], a.w[1], a.w[2], a.w[3], m.ones({4, 16}), a.w[5]}),
                       doctest::Contains("layer 1's weight_hh"), ShapeMismatch);
  CHECK_THROWS_WITH_AS(lstm(a.x, a.w, m.ones({1, 2, 3}), a.c0), doctest::Contains("h0"), ShapeMismatch);
  CHECK_THROWS_WITH_AS(lstm(a.x, a.w, m.ones({1, 2, 3}), a.c0), doctest::Contains("must be [L, B, H] = [2, 2, 3]"),
                       ShapeMismatch);
  CHECK_THROWS_WITH_AS(lstm(a.x, a.w, a.h0, m.ones({2, 3, 3})), doctest::Contains("c0"), ShapeMismatch);
  CHECK_THROWS_WITH_AS(lstm(a.x, a.w, a.h0, m.ones({2, 2, 3}, DataType::float64)),
                       doctest::Contains("dtypes differ"), DTypeMismatch);
  CHECK_THROWS_WITH_AS(lstm(a.x.to_type(DataType::float64), a.w), doctest::Contains("dtypes differ"), DTypeMismatch);
  CHECK_THROWS_WITH_AS(lstm(m.ones({2, 3, 4}, DataType::int32), a.w), doctest::Contains("needs a floating dtype"),
                       DTypeMismatch);
  // the calls above made 14 arguments between them, and nothing else
  CHECK(m.array_count() == before + 14);
  const std::size_t again = m.array_count();
  CHECK_THROWS_AS(lstm(a.x, a.w, a.h0, a.c0.get("0:1")), ShapeMismatch);
  CHECK(m.array_count() == again + 1);  // the view made for the call
}

}  // namespace ops_test

// lstm_cell (src/ops/lstm_cell.cpp, ops/cpu/lstm_kernels.cpp): values by hand
// and against a loop over the definition, views, float32; the same bits at
// 1, 2 and 3 threads forward and backward; each error path.
#include <cstring>

#include "ops_test_util.hpp"
#include "test_util.hpp"

namespace ops_test {
namespace {

double sigmoid(double x) { return 1 / (1 + std::exp(-x)); }

// {h' [B, H], c' [B, H]} from gates [B, 4H] (i, f, g, o blocks) = ig + hg and c [B, H].
std::vector<double> ref_cell(const std::vector<double>& ig, const std::vector<double>& hg,
                             const std::vector<double>& c, std::int64_t b, std::int64_t h) {
  std::vector<double> out(std::size_t(2 * b * h));
  for (std::int64_t r = 0; r < b; ++r)
    for (std::int64_t j = 0; j < h; ++j) {
      auto pre = [&](int k) { return ig[std::size_t(r * 4 * h + k * h + j)] + hg[std::size_t(r * 4 * h + k * h + j)]; };
      const double i = sigmoid(pre(0)), f = sigmoid(pre(1)), g = std::tanh(pre(2)), o = sigmoid(pre(3));
      const double cn = f * c[std::size_t(r * h + j)] + i * g;
      out[std::size_t(r * h + j)] = o * std::tanh(cn);
      out[std::size_t(b * h + r * h + j)] = cn;
    }
  return out;
}

std::vector<double> ramp(std::int64_t n, double scale, double shift) {
  std::vector<double> v(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) v[std::size_t(i)] = std::sin(double(i) * scale + shift);
  return v;
}

using test::Threads;

}  // namespace

TEST_CASE("lstm_cell: one unit by hand") {
  NDManager m = fresh();
  NDArray ig = m.create(std::vector<double>{0.5, -0.3, 0.8, 0.1}, {1, 4});
  NDArray hg = m.create(std::vector<double>{0.1, 0.2, -0.4, 0.3}, {1, 4});
  NDArray c = m.create(std::vector<double>{0.7}, {1, 1});
  NDArray out = lstm_cell(ig, hg, c);
  check_shape(out, {2, 1, 1});
  // i = σ(0.6), f = σ(-0.1), g = tanh(0.4), o = σ(0.4)
  const double cn = sigmoid(-0.1) * 0.7 + sigmoid(0.6) * std::tanh(0.4);
  check_values(out, {sigmoid(0.4) * std::tanh(cn), cn}, 1e-15);
  check_values(out.get("0"), {sigmoid(0.4) * std::tanh(cn)}, 1e-15);  // h' is out[0], c' out[1]
}

TEST_CASE("lstm_cell: against the definition, float32 and float64, views as inputs") {
  NDManager m = fresh();
  const std::int64_t b = 3, h = 5;
  const auto igv = ramp(b * 4 * h, 0.37, 0.1), hgv = ramp(b * 4 * h, 0.91, 0.7), cv = ramp(b * h, 1.3, 0.2);
  const auto want = ref_cell(igv, hgv, cv, b, h);
  for (DataType dt : {DataType::float64, DataType::float32}) {
    NDArray out = lstm_cell(m.create(igv, {b, 4 * h}).to_type(dt), m.create(hgv, {b, 4 * h}).to_type(dt),
                            m.create(cv, {b, h}).to_type(dt));
    CHECK(out.dtype() == dt);
    check_shape(out, {2, b, h});
    check_values(out, want, dt == DataType::float32 ? 1e-6 : 1e-14);
  }
  // input_gates a step of a [B, T, 4H] projection (strided rows), hidden_gates
  // stored transposed (strided columns), c every other column
  std::vector<double> seq(std::size_t(b * 2 * 4 * h), 9.0), cpad(std::size_t(b * 2 * h), 9.0);
  for (std::int64_t r = 0; r < b; ++r) {
    for (std::int64_t k = 0; k < 4 * h; ++k)
      seq[std::size_t((r * 2 + 1) * 4 * h + k)] = igv[std::size_t(r * 4 * h + k)];
    for (std::int64_t j = 0; j < h; ++j) cpad[std::size_t(r * 2 * h + 2 * j)] = cv[std::size_t(r * h + j)];
  }
  NDArray ig = m.create(seq, {b, 2, 4 * h}).get(":, 1, :");
  NDArray hg = m.create(hgv, {b, 4 * h}).transpose().contiguous().transpose();
  NDArray c = m.create(cpad, {b, 2 * h}).get(":, ::2");
  CHECK_FALSE(ig.is_contiguous());
  CHECK_FALSE(hg.is_contiguous());
  CHECK_FALSE(c.is_contiguous());
  check_values(lstm_cell(ig, hg, c), want, 1e-14);
}

TEST_CASE("lstm_cell: the same bits at 1, 2 and 3 threads, forward and backward") {
  // 400 rows of 8 units: several pieces of the kernels' parallel_for at 3 threads
  const std::int64_t b = 400, h = 8;
  const auto igv = ramp(b * 4 * h, 0.37, 0.1), hgv = ramp(b * 4 * h, 0.91, 0.7), cv = ramp(b * h, 1.3, 0.2);
  const auto wv = ramp(2 * b * h, 0.53, 0.4);
  std::vector<std::vector<char>> first;
  for (int threads : {1, 2, 3}) {
    Threads keep(threads);
    NDManager m = fresh();
    NDArray ig = m.create(igv, {b, 4 * h}).to_type(DataType::float32);
    NDArray hg = m.create(hgv, {b, 4 * h}).to_type(DataType::float32);
    NDArray c = m.create(cv, {b, h}).to_type(DataType::float32);
    for (NDArray* a : {&ig, &hg, &c}) a->set_requires_gradient(true);
    std::vector<std::vector<char>> got;
    {
      GradientCollector collector;
      NDArray out = lstm_cell(ig, hg, c);
      collector.backward(out.mul(m.create(wv, {2, b, h}).to_type(DataType::float32)).sum());
      got = {bits(out), bits(ig.gradient()), bits(hg.gradient()), bits(c.gradient())};
    }
    INFO("threads " << threads);
    if (threads == 1) first = got;
    else CHECK(got == first);
  }
}

TEST_CASE("lstm_cell: makes one array, and a failed call none") {
  NDManager m = fresh();
  NDArray ig = m.ones({2, 12}), hg = m.ones({2, 12}), c = m.zeros({2, 3});
  const std::size_t before = m.array_count();
  NDArray out = lstm_cell(ig, hg, c);
  CHECK(m.array_count() == before + 1);
  CHECK_THROWS_AS(lstm_cell(ig, hg, m.zeros({2, 4})), ShapeMismatch);
  CHECK(m.array_count() == before + 2);  // the c made for the call
}

TEST_CASE("lstm_cell: errors name what is wrong") {
  NDManager m = fresh();
  NDArray ig = m.ones({2, 12}), hg = m.ones({2, 12}), c = m.zeros({2, 3});
  CHECK_THROWS_WITH_AS(lstm_cell(ig, hg, m.zeros({2, 3, 1})), doctest::Contains("c "), ShapeMismatch);
  CHECK_THROWS_WITH_AS(lstm_cell(ig, hg, m.zeros({2, 3, 1})), doctest::Contains("has rank 3, but must be [B, H]"),
                       ShapeMismatch);
  CHECK_THROWS_WITH_AS(lstm_cell(m.ones({24}), hg, c), doctest::Contains("input_gates"), ShapeMismatch);
  CHECK_THROWS_WITH_AS(lstm_cell(m.ones({2, 8}), hg, c), doctest::Contains("lstm_cell: input_gates"), ShapeMismatch);
  CHECK_THROWS_WITH_AS(lstm_cell(m.ones({2, 8}), hg, c),
                       doctest::Contains("must be [B, 4H] = [2, 12] for the cell state"), ShapeMismatch);
  CHECK_THROWS_WITH_AS(lstm_cell(ig, m.ones({3, 12}), c), doctest::Contains("hidden_gates"), ShapeMismatch);
  CHECK_THROWS_WITH_AS(lstm_cell(ig, m.ones({3, 12}), c), doctest::Contains("must be [B, 4H] = [2, 12]"),
                       ShapeMismatch);
  CHECK_THROWS_WITH_AS(lstm_cell(ig, hg, m.zeros({2, 3}, DataType::float64)), doctest::Contains("dtypes differ"),
                       DTypeMismatch);
  CHECK_THROWS_WITH_AS(lstm_cell(m.ones({2, 12}, DataType::int32), m.ones({2, 12}, DataType::int32),
                                 m.zeros({2, 3}, DataType::int32)),
                       doctest::Contains("needs a floating dtype"), DTypeMismatch);
  const std::size_t before = m.array_count();
  CHECK_THROWS_AS(lstm_cell(ig, m.ones({3, 12}), c), ShapeMismatch);
  CHECK(m.array_count() == before + 1);  // the hidden_gates made for the call
}

}  // namespace ops_test

// Tests src/ops/linalg.cpp and src/ops/cpu/matmul_kernel.cpp: 2-D products,
// NumPy's rules for 1-D operands, batched products with broadcast batch
// axes, and operands in every layout the kernel maps without a copy
// (row-major, transposed) or copies (strided, broadcast), all against a naive
// triple loop on random inputs.
#include <cstdint>

#include "ops_test_util.hpp"

using namespace ndgc;
using namespace ops_test;

namespace {

template <class T>
double tolerance() {
  return std::is_same_v<T, float> ? 1e-5 : std::is_same_v<T, double> ? 1e-12 : 0;
}

// Inputs exact in every dtype: small integers for integer dtypes.
template <class T>
std::vector<double> inputs(std::size_t n, std::uint64_t seed) {
  std::vector<double> v = test_data(n, seed, -4, 4);
  for (double& x : v) x = std::is_integral_v<T> ? std::round(x) : static_cast<double>(static_cast<T>(x));
  return v;
}

}  // namespace

TEST_CASE_TEMPLATE("matmul of 2-D matrices: known values", T, float, double, std::int32_t, std::int64_t) {
  NDManager m = fresh();
  NDArray a = make<T>(m, {1, 2, 3, 4}, {2, 2});
  NDArray b = make<T>(m, {5, 6, 7, 8}, {2, 2});
  NDArray c = a.matmul(b);
  CHECK(c.dtype() == dtype_of<T>);
  check_shape(c, {2, 2});
  check_values(c, {19, 22, 43, 50});
  check_values(matmul(b, a), {23, 34, 31, 46});
  NDArray r = make<T>(m, {1, 2, 3, 4, 5, 6}, {2, 3});
  NDArray s = make<T>(m, {1, 0, -1, 2, 3, 1}, {3, 2});
  check_shape(r.matmul(s), {2, 2});
  check_values(r.matmul(s), {8, 7, 17, 16});
  check_shape(s.matmul(r), {3, 3});
  check_values(s.matmul(r), {1, 2, 3, 7, 8, 9, 7, 11, 15});
  check_values(a.matmul(m.eye(2, dtype_of<T>)), {1, 2, 3, 4});
}

TEST_CASE_TEMPLATE("matmul matches a triple loop on random matrices of many shapes", T, float, double, std::int32_t) {
  NDManager m = fresh();
  const std::int64_t dims[][3] = {{1, 1, 1}, {1, 5, 1}, {3, 1, 4}, {7, 5, 3}, {16, 16, 16},
                                  {33, 17, 9}, {1, 64, 8}, {8, 64, 1}, {40, 3, 50}};
  std::uint64_t seed = 100;
  for (const auto& d : dims) {
    const std::int64_t M = d[0], K = d[1], N = d[2];
    INFO("(" << M << "x" << K << ") x (" << K << "x" << N << ")");
    std::vector<double> x = inputs<T>(std::size_t(M * K), seed++), y = inputs<T>(std::size_t(K * N), seed++);
    NDArray a = make<T>(m, x, {M, K}), b = make<T>(m, y, {K, N});
    std::vector<double> want = ref_matmul(x, y, M, K, N);
    check_shape(a.matmul(b), {M, N});
    check_values(a.matmul(b), want, tolerance<T>());
    // The same product from transposed (column-major) operands: (b^T a^T)^T.
    NDArray at = make<T>(m, x, {M, K}).transpose().dup().transpose();  // (M, K) with strides (1, M)
    NDArray bt = make<T>(m, y, {K, N}).transpose().dup().transpose();
    if (M > 1 && K > 1) CHECK_FALSE(at.is_contiguous());
    check_values(at.matmul(b), want, tolerance<T>());
    check_values(a.matmul(bt), want, tolerance<T>());
    check_values(at.matmul(bt), want, tolerance<T>());
    check_values(bt.transpose().matmul(at.transpose()).transpose(), want, tolerance<T>());
  }
}

TEST_CASE_TEMPLATE("matmul of strided and broadcast operands (copied by the kernel)", T, float, double,
                   std::int64_t) {
  NDManager m = fresh();
  // Every other row and column of an (8, 10): strides (20, 2).
  std::vector<double> x = inputs<T>(80, 7), y = inputs<T>(15, 8);
  NDArray big = make<T>(m, x, {8, 10});
  NDArray a = big.get("::2, ::2");  // (4, 5)
  std::vector<double> xa;
  for (int i = 0; i < 8; i += 2)
    for (int j = 0; j < 10; j += 2) xa.push_back(x[std::size_t(i * 10 + j)]);
  NDArray b = make<T>(m, y, {5, 3});
  check_values(a.matmul(b), ref_matmul(xa, y, 4, 5, 3), tolerance<T>());
  // A column slice: rows stride 10, unit column stride.
  NDArray cols = big.get(":, 2:7");  // (8, 5)
  std::vector<double> xc;
  for (int i = 0; i < 8; ++i)
    for (int j = 2; j < 7; ++j) xc.push_back(x[std::size_t(i * 10 + j)]);
  check_values(cols.matmul(b), ref_matmul(xc, y, 8, 5, 3), tolerance<T>());
  // A broadcast row repeated: strides (0, 1).
  NDArray row = make<T>(m, {1, 2, 3, 4, 5}, {5}).broadcast_to({3, 5});
  std::vector<double> xr = {1, 2, 3, 4, 5, 1, 2, 3, 4, 5, 1, 2, 3, 4, 5};
  check_values(row.matmul(b), ref_matmul(xr, y, 3, 5, 3), tolerance<T>());
  // A broadcast column on the right: strides (1, 0).
  NDArray bc = make<T>(m, {1, -1, 2, 0, 1}, {5, 1}).broadcast_to({5, 2});
  check_values(a.matmul(bc), ref_matmul(xa, {1, 1, -1, -1, 2, 2, 0, 0, 1, 1}, 4, 5, 2), tolerance<T>());
}

TEST_CASE_TEMPLATE("matmul with 1-D operands follows NumPy", T, float, double, std::int32_t) {
  NDManager m = fresh();
  NDArray v = make<T>(m, {1, 2, 3}, {3});
  NDArray w = make<T>(m, {4, -5, 6}, {3});
  NDArray dot = v.matmul(w);
  check_shape(dot, Shape{});
  CHECK(dot.template item<double>() == 12);
  NDArray mat = make<T>(m, {1, 2, 3, 4, 5, 6}, {3, 2});
  check_shape(v.matmul(mat), {2});  // (3) x (3, 2) → (2)
  check_values(v.matmul(mat), {22, 28});
  NDArray mt = make<T>(m, {1, 2, 3, 4, 5, 6}, {2, 3});
  check_shape(mt.matmul(v), {2});  // (2, 3) x (3) → (2)
  check_values(mt.matmul(v), {14, 32});
  // Batched against a vector on either side.
  std::vector<double> bx = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};  // (2, 3, 2) and (2, 2, 3)
  check_shape(v.matmul(make<T>(m, bx, {2, 3, 2})), {2, 2});
  check_values(v.matmul(make<T>(m, bx, {2, 3, 2})), {22, 28, 58, 64});
  check_shape(make<T>(m, bx, {2, 2, 3}).matmul(v), {2, 2});
  check_values(make<T>(m, bx, {2, 2, 3}).matmul(v), {14, 32, 50, 68});
  // Strided vectors.
  NDArray sv = make<T>(m, {1, 0, 2, 0, 3, 0}, {6}).get("::2");
  check_values(sv.matmul(w), {12});
  check_values(sv.matmul(mat), {22, 28});
  check_values(mt.matmul(sv), {14, 32});
  // Length 0: the empty sum is 0.
  check_values(make<T>(m, {}, {0}).matmul(make<T>(m, {}, {0})), {0});
}

TEST_CASE_TEMPLATE("batched matmul broadcasts the batch axes", T, float, double) {
  NDManager m = fresh();
  auto check_batched = [&](const Shape& as, const Shape& bs, const Shape& out) {
    INFO(as.to_string() << " x " << bs.to_string());
    std::vector<double> x = inputs<T>(std::size_t(as.size()), std::uint64_t(as.size() * 31 + bs.size()));
    std::vector<double> y = inputs<T>(std::size_t(bs.size()), std::uint64_t(bs.size() * 17 + 5));
    NDArray a = make<T>(m, x, as), b = make<T>(m, y, bs);
    NDArray c = a.matmul(b);
    check_shape(c, out);
    const std::int64_t M = as[as.rank() - 2], K = as[as.rank() - 1], N = bs[bs.rank() - 1];
    Shape batch;
    for (int i = 0; i < out.rank() - 2; ++i) batch.push_back(out[i]);
    Shape ab, bb;
    for (int i = 0; i < as.rank() - 2; ++i) ab.push_back(as[i]);
    for (int i = 0; i < bs.rank() - 2; ++i) bb.push_back(bs[i]);
    std::vector<double> want;
    for (std::int64_t t = 0; t < std::max<std::int64_t>(batch.size(), 1); ++t) {
      auto idx = unravel(t, batch);
      std::int64_t oa = broadcast_offset(idx, ab), ob = broadcast_offset(idx, bb);
      std::vector<double> xa(x.begin() + oa * M * K, x.begin() + (oa + 1) * M * K);
      std::vector<double> yb(y.begin() + ob * K * N, y.begin() + (ob + 1) * K * N);
      for (double r : ref_matmul(xa, yb, M, K, N)) want.push_back(r);
    }
    check_values(c, want, tolerance<T>());
  };
  check_batched({2, 3, 4}, {2, 4, 5}, {2, 3, 5});
  check_batched({3, 4}, {2, 4, 5}, {2, 3, 5});
  check_batched({2, 3, 4}, {4, 5}, {2, 3, 5});
  check_batched({2, 1, 3, 4}, {5, 4, 2}, {2, 5, 3, 2});
  check_batched({1, 3, 2, 2}, {4, 1, 2, 3}, {4, 3, 2, 3});
  check_batched({2, 2, 2, 3, 4}, {2, 1, 4, 1}, {2, 2, 2, 3, 1});
  // A transposed batch: (4, 2, 3) viewed as (2, 4, 3)... and the matrices transposed too.
  std::vector<double> x = inputs<T>(24, 3), y = inputs<T>(24, 4);
  NDArray a = make<T>(m, x, {2, 4, 3}).transpose({0, 2, 1});  // (2, 3, 4), matrices column-major
  NDArray b = make<T>(m, y, {4, 2, 3}).permute({1, 0, 2});    // (2, 4, 3), batch axis strided
  NDArray c = a.matmul(b);
  check_shape(c, {2, 3, 3});
  std::vector<double> want;
  for (int t = 0; t < 2; ++t) {
    std::vector<double> at(12), bt(12);
    for (int i = 0; i < 3; ++i)
      for (int k = 0; k < 4; ++k) at[std::size_t(i * 4 + k)] = x[std::size_t(t * 12 + k * 3 + i)];
    for (int k = 0; k < 4; ++k)
      for (int j = 0; j < 3; ++j) bt[std::size_t(k * 3 + j)] = y[std::size_t(k * 6 + t * 3 + j)];
    for (double r : ref_matmul(at, bt, 3, 4, 3)) want.push_back(r);
  }
  check_values(c, want, tolerance<T>());
}

TEST_CASE("matmul with empty dimensions") {
  NDManager m = fresh();
  NDArray c = m.ones({2, 0}).matmul(m.ones({0, 3}));
  check_shape(c, {2, 3});
  check_values(c, std::vector<double>(6, 0.0));
  check_shape(m.ones({0, 4}).matmul(m.ones({4, 3})), {0, 3});
  check_shape(m.ones({2, 4}).matmul(m.ones({4, 0})), {2, 0});
  check_shape(m.ones({0, 2, 4}).matmul(m.ones({4, 3})), {0, 2, 3});
  check_shape(m.ones({5, 0, 3}, DataType::float64).matmul(m.ones({5, 3, 4}, DataType::float64)), {5, 0, 4});
  check_shape(m.ones({5, 2, 3}).matmul(m.ones({5, 3, 0})), {5, 2, 0});
  check_values(m.ones({2, 2, 0}).matmul(m.ones({2, 0, 2})), std::vector<double>(8, 0.0));
}

TEST_CASE("matmul errors name the op and the shapes") {
  NDManager m = fresh();
  NDArray a = m.ones({2, 3}), b = m.ones({4, 2}), s = m.create_scalar(1.0f);
  NDArray d = m.ones({3, 2}, DataType::float64), flag = m.ones({2, 2}, DataType::boolean);
  NDArray ba = m.ones({2, 2, 3}), bb = m.ones({3, 3, 2}), v3 = m.ones({3}), v4 = m.ones({4});
  Footprint before(m);
  CHECK_THROWS_WITH_AS(a.matmul(b), doctest::Contains("matmul"), ShapeMismatch);
  CHECK_THROWS_WITH_AS(a.matmul(b), doctest::Contains("inner dimensions 3 and 4 differ"), ShapeMismatch);
  CHECK_THROWS_WITH_AS(a.matmul(b), doctest::Contains("(4, 2)"), ShapeMismatch);
  CHECK_THROWS_WITH_AS(v3.matmul(v4), doctest::Contains("inner dimensions"), ShapeMismatch);
  CHECK_THROWS_WITH_AS(ba.matmul(bb), doctest::Contains("batch axes"), ShapeMismatch);
  CHECK_THROWS_WITH_AS(s.matmul(a), doctest::Contains("scalars have no matrix product"), InvalidArgument);
  CHECK_THROWS_AS(a.matmul(s), InvalidArgument);
  CHECK_THROWS_WITH_AS(a.matmul(d), doctest::Contains("matmul: dtypes differ"), DTypeMismatch);
  CHECK_THROWS_WITH_AS(flag.matmul(flag), doctest::Contains("boolean"), DTypeMismatch);
  CHECK_THROWS_WITH_AS(matmul(a, NDArray()), doctest::Contains("matmul"), InvalidArgument);
  before.check_unchanged();
}

TEST_CASE("matmul's output joins the first operand's manager") {
  NDManager m1 = fresh("first"), m2 = fresh("second");
  NDArray a = m1.ones({2, 2}), b = m2.ones({2, 2});
  CHECK(a.matmul(b).manager().uid() == m1.uid());
  CHECK(b.matmul(a).manager().uid() == m2.uid());
  CHECK(matmul(b, a).manager().uid() == m2.uid());
}

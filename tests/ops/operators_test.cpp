// Tests src/ops/operators.cpp: the C++ operators compute what the named ops
// compute, compound assignment writes in place and returns the same handle,
// and every operator records the line of the expression that uses it (the
// caller's, not operators.cpp's) as the creation site.
#include <cstdint>
#include <string>

#include "ops_test_util.hpp"

using namespace ndgc;
using namespace ops_test;

namespace {

bool from_this_file(const NDArray& a) {
  return std::string(a.creation_site().file_name()).find("operators_test.cpp") != std::string::npos;
}

}  // namespace

TEST_CASE_TEMPLATE("arithmetic operators on arrays and scalars", T, float, double, std::int32_t) {
  NDManager m = fresh();
  NDArray a = make<T>(m, {2, 4, 6}, {3});
  NDArray b = make<T>(m, {1, 2, 3}, {3});
  check_values(a + b, {3, 6, 9});
  check_values(a - b, {1, 2, 3});
  check_values(a * b, {2, 8, 18});
  check_values(a / b, {2, 2, 2});
  check_values(a + 1.0, {3, 5, 7});
  check_values(a - 1.0, {1, 3, 5});
  check_values(a * 0.5, std::is_integral_v<T> ? std::vector<double>{0, 0, 0} : std::vector<double>{1, 2, 3});
  check_values(a / 2.0, {1, 2, 3});
  check_values(1.0 + a, {3, 5, 7});
  check_values(10.0 - a, {8, 6, 4});
  check_values(3.0 * a, {6, 12, 18});
  check_values(12.0 / a, {6, 3, 2});
  check_values(-a, {-2, -4, -6});
  check_values(-(-a), {2, 4, 6});
  // Precedence and broadcasting as in the named ops.
  check_values(a + b * 2.0, {4, 8, 12});
  check_values((a + b) * 2.0, {6, 12, 18});
  NDArray col = make<T>(m, {10, 20}, {2, 1});
  check_shape(col + b, {2, 3});
  check_values(col + b, {11, 12, 13, 21, 22, 23});
  check_values(col - m.create_scalar(T(1)), {9, 19});
  CHECK((a + b).dtype() == dtype_of<T>);
}

TEST_CASE("operators throw what the named ops throw") {
  NDManager m = fresh();
  NDArray a = m.ones({2, 3}), b = m.ones({4}), d = m.ones({2, 3}, DataType::float64);
  CHECK_THROWS_WITH_AS(a + b, doctest::Contains("add"), ShapeMismatch);
  CHECK_THROWS_WITH_AS(a - b, doctest::Contains("sub"), ShapeMismatch);
  CHECK_THROWS_WITH_AS(a * d, doctest::Contains("mul"), DTypeMismatch);
  CHECK_THROWS_WITH_AS(a / d, doctest::Contains("div"), DTypeMismatch);
  CHECK_THROWS_AS(a += b, ShapeMismatch);
  CHECK_THROWS_AS(a *= d, DTypeMismatch);
  NDArray flag = m.ones({2}, DataType::boolean);
  CHECK_THROWS_AS(-flag, DTypeMismatch);
  CHECK_THROWS_AS(2.0 - flag, DTypeMismatch);
  NDArray empty;
  CHECK_THROWS_AS(empty + a, InvalidArgument);
  CHECK_THROWS_AS(a + empty, InvalidArgument);
  CHECK_THROWS_AS(empty += 1.0, InvalidArgument);
}

TEST_CASE("compound assignment writes in place and returns the same handle") {
  NDManager m = fresh();
  NDArray a = m.create(std::vector<float>{1, 2, 3});
  NDArray alias = a;
  NDArray b = m.create(std::vector<float>{1, 1, 1});
  CHECK(&(a += b) == &a);
  check_values(alias, {2, 3, 4});
  CHECK(&(a -= b) == &a);
  check_values(alias, {1, 2, 3});
  CHECK(&(a *= b.mul(3.0)) == &a);
  check_values(alias, {3, 6, 9});
  CHECK(&(a /= m.create(std::vector<float>{3, 2, 1})) == &a);
  check_values(alias, {1, 3, 9});
  CHECK(&(a += 1.0) == &a);
  CHECK(&(a -= 2.0) == &a);
  CHECK(&(a *= 4.0) == &a);
  CHECK(&(a /= 2.0) == &a);
  check_values(alias, {0, 4, 16});
  CHECK(a.same(alias));
  // Into a view: the base sees it.
  NDArray base = m.zeros({2, 2});
  NDArray row = base.get("1");
  row += m.create(std::vector<float>{5, 6});
  row *= 2.0;
  check_values(base, {0, 0, 10, 12});
  // Chained.
  NDArray c = m.ones({2});
  (c += 1.0) *= 3.0;
  check_values(c, {6, 6});
  // Compound assignment creates no array.
  const std::size_t before = m.array_count();
  c += c;
  c /= 2.0;
  CHECK(m.array_count() == before);
}

TEST_CASE("operators record the caller's line as the creation site") {
  NDManager m = fresh();
  NDArray a = m.ones({2}), b = m.ones({2});
  NDArray add = a + b; const int l_add = __LINE__;
  NDArray sub = a - b; const int l_sub = __LINE__;
  NDArray mul = a * b; const int l_mul = __LINE__;
  NDArray div = a / b; const int l_div = __LINE__;
  NDArray adds = a + 1.0; const int l_adds = __LINE__;
  NDArray subs = a - 1.0; const int l_subs = __LINE__;
  NDArray muls = a * 2.0; const int l_muls = __LINE__;
  NDArray divs = a / 2.0; const int l_divs = __LINE__;
  NDArray radd = 1.0 + a; const int l_radd = __LINE__;
  NDArray rsub = 1.0 - a; const int l_rsub = __LINE__;
  NDArray rmul = 2.0 * a; const int l_rmul = __LINE__;
  NDArray rdiv = 2.0 / a; const int l_rdiv = __LINE__;
  NDArray neg = -a; const int l_neg = __LINE__;
  const std::pair<const NDArray*, int> cases[] = {{&add, l_add},   {&sub, l_sub},   {&mul, l_mul},   {&div, l_div},
                                                  {&adds, l_adds}, {&subs, l_subs}, {&muls, l_muls}, {&divs, l_divs},
                                                  {&radd, l_radd}, {&rsub, l_rsub}, {&rmul, l_rmul}, {&rdiv, l_rdiv},
                                                  {&neg, l_neg}};
  for (const auto& entry : cases) {  // not a structured binding: INFO captures it
    const NDArray* array = entry.first;
    const int line = entry.second;
    INFO("expected line " << line);
    CHECK(int(array->creation_site().line()) == line);
    CHECK(from_this_file(*array));
  }
  // In a longer expression every intermediate gets the expression's line.
  NDArray chain = (a + b) * 2.0 - b; const int l_chain = __LINE__;
  CHECK(int(chain.creation_site().line()) == l_chain);
}

TEST_CASE("named ops record the caller's line as the creation site") {
  NDManager m = fresh();
  NDArray a = m.ones({2, 2});
  NDArray r1 = a.add(a); const int l1 = __LINE__;
  NDArray r2 = a.exp(); const int l2 = __LINE__;
  NDArray r3 = a.sum({0}); const int l3 = __LINE__;
  NDArray r4 = a.matmul(a); const int l4 = __LINE__;
  NDArray r5 = a.reshape({4}); const int l5 = __LINE__;
  NDArray r6 = a.get("0"); const int l6 = __LINE__;
  NDArray r7 = a.transpose(); const int l7 = __LINE__;
  NDArray r8 = a.softmax(); const int l8 = __LINE__;
  NDArray r9 = a.to_type(DataType::int32); const int l9 = __LINE__;
  NDArray r10 = a.concat(a); const int l10 = __LINE__;
  NDArray r11 = where(a.gt(0), a, a); const int l11 = __LINE__;
  NDArray r12 = a.argmax(); const int l12 = __LINE__;
  NDArray r13 = a.dup(); const int l13 = __LINE__;
  NDArray r14 = a.gt(0.5); const int l14 = __LINE__;
  NDArray r15 = a.rsub(1); const int l15 = __LINE__;
  NDArray r16 = a.to_type(DataType::int32).one_hot(2); const int l16 = __LINE__;
  NDArray r17 = a.broadcast_to({3, 2, 2}); const int l17 = __LINE__;
  NDArray r18 = a.mean(); const int l18 = __LINE__;
  const std::pair<const NDArray*, int> cases[] = {{&r1, l1},   {&r2, l2},   {&r3, l3},   {&r4, l4},   {&r5, l5},
                                                  {&r6, l6},   {&r7, l7},   {&r8, l8},   {&r9, l9},   {&r10, l10},
                                                  {&r11, l11}, {&r12, l12}, {&r13, l13}, {&r14, l14}, {&r15, l15},
                                                  {&r16, l16}, {&r17, l17}, {&r18, l18}};
  for (const auto& entry : cases) {  // not a structured binding: INFO captures it
    const NDArray* array = entry.first;
    const int line = entry.second;
    INFO("expected line " << line);
    CHECK(int(array->creation_site().line()) == line);
    CHECK(from_this_file(*array));
  }
}

TEST_CASE("operator outputs join the first operand's manager") {
  NDManager m1 = fresh("first"), m2 = fresh("second");
  NDArray a = m1.ones({2}), b = m2.ones({2});
  CHECK((a + b).manager().uid() == m1.uid());
  CHECK((b + a).manager().uid() == m2.uid());
  CHECK((b * 2.0).manager().uid() == m2.uid());
  CHECK((2.0 - b).manager().uid() == m2.uid());
  CHECK((-a).manager().uid() == m1.uid());
}

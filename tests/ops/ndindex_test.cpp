// Tests src/ops/ndindex.cpp (DJL's index strings and the NDIndex builder)
// and NDArray::get in src/ops/views.cpp: integer indices drop their axis,
// slices keep it, negative indices count from the end, slice bounds clamp
// as in NumPy, "..." fills the remaining axes, results are views.
#include <cstdint>
#include <limits>

#include "ops_test_util.hpp"

using namespace ndgc;
using namespace ops_test;
using Kind = NDIndex::Item::Kind;

namespace {

// a = arange(60).reshape(4, 3, 5): a[i, j, k] == 15 i + 5 j + k.
double at(std::int64_t i, std::int64_t j, std::int64_t k) { return double(15 * i + 5 * j + k); }

}  // namespace

TEST_CASE("NDIndex parses DJL's index strings") {
  NDIndex idx("1:3, :, -1");
  REQUIRE(idx.items().size() == 3);
  const auto& s = idx.items()[0];
  CHECK(s.kind == Kind::slice);
  CHECK(s.start == 1);
  CHECK(s.stop == 3);
  CHECK(s.step == 1);
  CHECK(idx.items()[1].kind == Kind::all);
  CHECK(idx.items()[2].kind == Kind::index);
  CHECK(idx.items()[2].index == -1);

  NDIndex e("..., 0");
  REQUIRE(e.items().size() == 2);
  CHECK(e.items()[0].kind == Kind::ellipsis);
  CHECK(e.items()[1].index == 0);

  NDIndex st("::2");
  REQUIRE(st.items().size() == 1);
  CHECK(st.items()[0].kind == Kind::slice);
  CHECK_FALSE(st.items()[0].start.has_value());
  CHECK_FALSE(st.items()[0].stop.has_value());
  CHECK(st.items()[0].step == 2);

  NDIndex open(" -2: , :4 , 1:7:3 , 2::, :: ");
  REQUIRE(open.items().size() == 5);
  CHECK(open.items()[0].start == -2);
  CHECK_FALSE(open.items()[0].stop.has_value());
  CHECK_FALSE(open.items()[1].start.has_value());
  CHECK(open.items()[1].stop == 4);
  CHECK(open.items()[2].start == 1);
  CHECK(open.items()[2].stop == 7);
  CHECK(open.items()[2].step == 3);
  CHECK(open.items()[3].start == 2);
  CHECK(open.items()[3].step == 1);
  CHECK(open.items()[4].kind == Kind::all);

  CHECK(NDIndex("").items().empty());
  CHECK(NDIndex("   ").items().empty());
  CHECK(NDIndex("42").items()[0].index == 42);
}

TEST_CASE("NDIndex rejects malformed strings, naming the bad part") {
  CHECK_THROWS_WITH_AS(NDIndex("1:2:3:4"), doctest::Contains("too many ':'"), InvalidArgument);
  CHECK_THROWS_WITH_AS(NDIndex("a"), doctest::Contains("'a'"), InvalidArgument);
  CHECK_THROWS_WITH_AS(NDIndex("a"), doctest::Contains("not an integer"), InvalidArgument);
  CHECK_THROWS_WITH_AS(NDIndex("1:x"), doctest::Contains("'x'"), InvalidArgument);
  CHECK_THROWS_WITH_AS(NDIndex("1,,2"), doctest::Contains("empty index"), InvalidArgument);
  CHECK_THROWS_WITH_AS(NDIndex("1, 2.5"), doctest::Contains("2.5"), InvalidArgument);
  CHECK_THROWS_WITH_AS(NDIndex("1 2"), doctest::Contains("\"1 2\""), InvalidArgument);
  CHECK_THROWS_AS(NDIndex("::z"), InvalidArgument);
  CHECK_THROWS_AS(NDIndex("99999999999999999999"), InvalidArgument);
}

TEST_CASE("the NDIndex builder") {
  NDIndex idx = NDIndex().add_slice(1, 3).add_all().add_index(-1);
  REQUIRE(idx.items().size() == 3);
  CHECK(idx.items()[0].kind == Kind::slice);
  CHECK(idx.items()[0].start == 1);
  CHECK(idx.items()[0].stop == 3);
  CHECK(idx.items()[1].kind == Kind::all);
  CHECK(idx.items()[2].index == -1);
  NDIndex b = NDIndex().add_ellipsis().add_slice(std::nullopt, std::nullopt, 2);
  CHECK(b.items()[0].kind == Kind::ellipsis);
  CHECK(b.items()[1].step == 2);
}

TEST_CASE("an NDIndex holds one item per axis of the largest rank and an ellipsis; more is an error naming the limit") {
  NDIndex idx;
  idx.add_ellipsis();
  for (int i = 0; i < kMaxRank; ++i) idx.add_index(0);
  CHECK(idx.items().size() == NDIndex::kMaxItems);
  const NDIndex copy = idx;  // copies in place
  CHECK(copy.items().size() == NDIndex::kMaxItems);
  CHECK(copy.items()[1].kind == Kind::index);
  CHECK_THROWS_WITH_AS(idx.add_all(), doctest::Contains("more than 9 items"), InvalidArgument);
  CHECK_THROWS_WITH_AS(NDIndex("0, 0, 0, 0, 0, 0, 0, 0, 0, 0"), doctest::Contains("more than 9 items"), InvalidArgument);
  NDManager m = NDManager::new_base_manager("deep");
  NDArray a = m.zeros({1, 1, 1, 1, 1, 1, 1, 2});
  CHECK(a.get(NDIndex("0, 0, 0, 0, 0, 0, 0, 1")).shape().rank() == 0);
}

TEST_CASE_TEMPLATE("get with index strings selects the NumPy elements", T, float, double, std::int32_t,
                   std::int64_t) {
  NDManager m = fresh();
  std::vector<double> x(60);
  for (int i = 0; i < 60; ++i) x[std::size_t(i)] = i;
  NDArray a = make<T>(m, x, {4, 3, 5});

  NDArray r = a.get("1:3, :, -1");
  check_shape(r, {2, 3});
  CHECK(r.dtype() == dtype_of<T>);
  check_values(r, {at(1, 0, 4), at(1, 1, 4), at(1, 2, 4), at(2, 0, 4), at(2, 1, 4), at(2, 2, 4)});
  CHECK(r.shares_storage(a));

  check_shape(a.get("1"), {3, 5});
  check_values(a.get("1").get("0"), {15, 16, 17, 18, 19});
  check_shape(a.get("..."), {4, 3, 5});
  check_values(a.get("..."), x);
  check_shape(a.get(""), {4, 3, 5});
  check_shape(a.get("..., 0"), {4, 3});
  check_values(a.get("..., 0"), {0, 5, 10, 15, 20, 25, 30, 35, 40, 45, 50, 55});
  check_shape(a.get("0, ..., 2"), {3});
  check_values(a.get("0, ..., 2"), {2, 7, 12});
  check_shape(a.get("1, ..."), {3, 5});
  check_shape(a.get("1, 2, 3, ..."), Shape{});
  check_shape(a.get("::2"), {2, 3, 5});
  check_values(a.get("::2, 0, 0"), {0, 30});
  check_values(a.get("1::2, 0, 0"), {15, 45});
  check_values(a.get("0, 0, ::2"), {0, 2, 4});
  check_values(a.get("0, 0, 1::3"), {1, 4});
  check_values(a.get("0, 0, ::10"), {0});
  check_values(a.get("-1, -1, -1"), {59});
  check_shape(a.get("0, 1, 2"), Shape{});
  CHECK(a.get("0, 1, 2").template item<T>() == T(7));
  check_values(a.get("-2:, 0, 0"), {30, 45});
  check_values(a.get(":-1, 0, 0"), {0, 15, 30});
  check_values(a.get("0, 0, -3:-1"), {2, 3});
  // Bounds clamp; reversed or out-of-range slices are empty, not errors.
  check_values(a.get("1:100, 0, 0"), {15, 30, 45});
  check_values(a.get("-100:2, 0, 0"), {0, 15});
  check_shape(a.get("5:"), {0, 3, 5});
  check_shape(a.get("3:1"), {0, 3, 5});
  check_shape(a.get("0, 0, 4:4"), {0});
  check_shape(a.get("-1:-3"), {0, 3, 5});
  // The builder selects the same elements.
  check_values(a.get(NDIndex().add_slice(1, 3).add_all().add_index(-1)), values(r));
  check_values(a.get(NDIndex().add_ellipsis().add_slice(std::nullopt, std::nullopt, 2).add_index(0).add_index(0)),
               {0, 30});
}

TEST_CASE("get results are views: writes reach the base") {
  NDManager m = fresh();
  NDArray a = m.zeros({3, 4});
  a.get("1, 1:3").fill_(5);
  a.get(":, -1").add_(m.create(std::vector<float>{1, 2, 3}));
  a.get("::2, 0").assign_(m.create_scalar(9.0f));
  check_values(a, {9, 0, 0, 1, 0, 5, 5, 2, 9, 0, 0, 3});
  // get of a transposed view, and a view of a slice with an offset.
  NDArray t = a.transpose();
  check_values(t.get("-1"), {1, 2, 3});
  check_values(a.get("1:").get("0"), {0, 5, 5, 2});
  check_values(a.get("1:, 1:").get("1, ::2"), {0, 3});
  CHECK(a.get("1:, 1:").get("1, ::2").shares_storage(a));
}

TEST_CASE("get on scalars, empty arrays and broadcast views") {
  NDManager m = fresh();
  NDArray s = m.create_scalar(3.0);
  check_shape(s.get(""), Shape{});
  check_shape(s.get("..."), Shape{});
  CHECK(s.get("...").item<double>() == 3.0);
  NDArray e = m.zeros({0, 2});
  check_shape(e.get(":, 1"), {0});
  check_shape(e.get("1:"), {0, 2});
  // A slice of an empty batch along another axis advances the offset over a buffer with no address;
  // ops on it must not form that address (UBSan's pointer-overflow check fails here otherwise).
  NDArray batch = m.zeros({0, 5, 3});
  NDArray window = batch.get(":, 2:4");
  check_shape(window, {0, 2, 3});
  check_shape(window.add(window), {0, 2, 3});
  CHECK(window.sum().item<float>() == 0.0f);
  check_shape(window.exp(), {0, 2, 3});
  NDArray b = m.create(std::vector<float>{1, 2, 3}).broadcast_to({4, 3});
  check_values(b.get("2"), {1, 2, 3});
  check_values(b.get(":, 1"), {2, 2, 2, 2});
}

TEST_CASE("get rejects bad indices, naming the array and the axis") {
  NDManager m = fresh();
  NDArray a = m.zeros({4, 3, 5}), s = m.create_scalar(1.0f);
  Footprint before(m);
  CHECK_THROWS_WITH_AS(a.get("4"), doctest::Contains("get: index 4 is out of range for axis 0 (length 4)"),
                       InvalidArgument);
  CHECK_THROWS_WITH_AS(a.get("4"), doctest::Contains("(4, 3, 5)"), InvalidArgument);
  CHECK_THROWS_WITH_AS(a.get("0, -4"), doctest::Contains("index -4 is out of range for axis 1"), InvalidArgument);
  CHECK_THROWS_WITH_AS(a.get("0, 0, 0, 0"), doctest::Contains("get: 4 indices"), InvalidArgument);
  CHECK_THROWS_WITH_AS(a.get("0, 0, 0, ..., 0"), doctest::Contains("rank 3"), InvalidArgument);
  CHECK_THROWS_WITH_AS(a.get("..., 0, ..."), doctest::Contains("more than one '...'"), InvalidArgument);
  CHECK_THROWS_WITH_AS(a.get("::0"), doctest::Contains("slice step 0"), InvalidArgument);
  CHECK_THROWS_WITH_AS(a.get(":, ::-1"), doctest::Contains("must be positive"), InvalidArgument);
  CHECK_THROWS_WITH_AS(s.get("0"), doctest::Contains("rank 0"), InvalidArgument);
  CHECK_THROWS_AS(a.get(NDIndex().add_index(std::numeric_limits<std::int64_t>::min())), InvalidArgument);
  CHECK_THROWS_AS(a.get(NDIndex().add_slice(0, 2, 0)), InvalidArgument);
  before.check_unchanged();
}

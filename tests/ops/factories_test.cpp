// Tests src/ops/factories.cpp: zeros, ones, full, arange, linspace, eye and
// create (from vectors, spans, scalars) in every dtype; that each array joins
// the manager that made it and records the caller's line; and every error:
// bad arguments, closed, capped and empty managers, shapes too large to
// allocate, none of which may leave anything behind. Random factories are in
// random_test.cpp.
#include <cmath>
#include <cstdint>
#include <limits>
#include <span>

#include "ops_test_util.hpp"

using namespace ndgc;
using namespace ops_test;

TEST_CASE_TEMPLATE("zeros, ones and full in every dtype", T, float, double, std::int32_t, std::int64_t, std::uint8_t,
                   bool) {
  NDManager m = fresh();
  const DataType t = dtype_of<T>;
  NDArray z = m.zeros({2, 3}, t);
  CHECK(z.dtype() == t);
  check_shape(z, {2, 3});
  CHECK(z.is_contiguous());
  CHECK(z.nbytes() == 6 * sizeof(T));
  check_values(z, std::vector<double>(6, 0.0));
  check_values(m.ones({4}, t), std::vector<double>(4, 1.0));
  check_values(m.full({2, 2}, 1, t), std::vector<double>(4, 1.0));
  check_shape(m.zeros(Shape{}, t), Shape{});
  check_values(m.ones(Shape{}, t), {1});
  check_shape(m.ones({0, 5}, t), {0, 5});
  CHECK(m.ones({0, 5}, t).nbytes() == 0);
}

TEST_CASE("full converts the value to the dtype") {
  NDManager m = fresh();
  check_values(m.full({3}, 2.5), {2.5, 2.5, 2.5});
  CHECK(m.full({2}, 2.5).dtype() == DataType::float32);
  check_values(m.full({2}, 0.1, DataType::float64), {0.1, 0.1}, 0);
  check_values(m.full({2}, -3.7, DataType::int32), {-3, -3});
  check_values(m.full({2}, 300, DataType::uint8), {255, 255});  // saturates
  check_values(m.full({2}, -1, DataType::uint8), {0, 0});
  check_values(m.full({2}, std::nan(""), DataType::int64), {0, 0});
  check_values(m.full({2}, 0.25, DataType::boolean), {1, 1});
  check_values(m.full({2}, std::numeric_limits<double>::infinity()),
               {std::numeric_limits<double>::infinity(), std::numeric_limits<double>::infinity()});
  CHECK(std::isnan(m.full({1}, std::nan("")).item<float>()));
}

TEST_CASE("arange: [start, stop) in steps") {
  NDManager m = fresh();
  NDArray a = m.arange(0, 5);
  CHECK(a.dtype() == DataType::float32);
  check_shape(a, {5});
  check_values(a, {0, 1, 2, 3, 4});
  check_values(m.arange(1, 2, 0.25), {1, 1.25, 1.5, 1.75});
  check_values(m.arange(5, 0, -2), {5, 3, 1});
  check_values(m.arange(-1, 1, 0.5, DataType::float64), {-1, -0.5, 0, 0.5});
  check_values(m.arange(0, 10, 3, DataType::int64), {0, 3, 6, 9});
  CHECK(m.arange(0, 10, 3, DataType::int64).dtype() == DataType::int64);
  check_values(m.arange(0, 5, 1, DataType::int32), {0, 1, 2, 3, 4});
  check_values(m.arange(0.5, 3, 1, DataType::float64), {0.5, 1.5, 2.5});
  check_shape(m.arange(0, 1, 0.1, DataType::float64), {10});
  check_shape(m.arange(0, 0), {0});
  check_shape(m.arange(3, 0), {0});
  check_shape(m.arange(0, 3, -1), {0});
  check_shape(m.arange(0, 2.5), {3});
}

TEST_CASE("linspace: num values from start to stop inclusive, the end point exact") {
  NDManager m = fresh();
  check_values(m.linspace(0, 1, 5), {0, 0.25, 0.5, 0.75, 1});
  CHECK(m.linspace(0, 1, 5).dtype() == DataType::float32);
  check_values(m.linspace(1, 0, 3, DataType::float64), {1, 0.5, 0});
  check_values(m.linspace(2, 2, 3), {2, 2, 2});
  check_values(m.linspace(3, 7, 1), {3});
  check_shape(m.linspace(3, 7, 0), {0});
  check_values(m.linspace(-1, 1, 5, DataType::int32), {-1, 0, 0, 0, 1});
  for (double stop : {0.3, 0.7, 1.1, 2.2, 3.3, 1e-3, -5.9}) {
    INFO("stop " << stop);
    std::vector<double> v = m.linspace(0.1, stop, 7, DataType::float64).to_vector<double>();
    CHECK(v.back() == stop);  // bit-exact, as NumPy's
    CHECK(v.front() == 0.1);
    for (int i = 0; i < 7; ++i) CHECK(v[std::size_t(i)] == doctest::Approx(0.1 + (stop - 0.1) * i / 6));
  }
  CHECK(m.linspace(0.1, 1.1, 3).to_vector<float>().back() == 1.1f);
}

TEST_CASE_TEMPLATE("eye: ones on the main diagonal", T, float, double, std::int32_t, std::int64_t, std::uint8_t) {
  NDManager m = fresh();
  NDArray i3 = m.eye(3, dtype_of<T>);
  CHECK(i3.dtype() == dtype_of<T>);
  check_shape(i3, {3, 3});
  check_values(i3, {1, 0, 0, 0, 1, 0, 0, 0, 1});
  check_values(m.eye(2, 3, dtype_of<T>), {1, 0, 0, 0, 1, 0});
  check_values(m.eye(3, 2, dtype_of<T>), {1, 0, 0, 1, 0, 0});
  check_values(m.eye(1, dtype_of<T>), {1});
  check_shape(m.eye(0, dtype_of<T>), {0, 0});
  check_shape(m.eye(3, 0, dtype_of<T>), {3, 0});
  check_shape(m.eye(0, 3, dtype_of<T>), {0, 3});
  CHECK(m.eye(3).dtype() == DataType::float32);
}

TEST_CASE("create from vectors, spans and scalars with a shape") {
  NDManager m = fresh();
  NDArray a = m.create(std::vector<float>{1, 2, 3, 4, 5, 6}, {2, 3});
  CHECK(a.dtype() == DataType::float32);
  check_shape(a, {2, 3});
  check_values(a, {1, 2, 3, 4, 5, 6});
  NDArray v = m.create(std::vector<double>{1, 2});
  check_shape(v, {2});
  CHECK(v.dtype() == DataType::float64);
  const std::int32_t raw[] = {5, 6, 7, 8};
  NDArray s = m.create(std::span<const std::int32_t>(raw), {2, 2});
  CHECK(s.dtype() == DataType::int32);
  check_values(s, {5, 6, 7, 8});
  check_shape(m.create(std::span<const std::int32_t>(raw)), {4});
  const bool flags[] = {true, false, true};
  NDArray b = m.create(std::span<const bool>(flags), {3});
  CHECK(b.dtype() == DataType::boolean);
  check_values(b, {1, 0, 1});
  NDArray u = m.create(std::vector<std::uint8_t>{0, 255});
  CHECK(u.dtype() == DataType::uint8);
  check_values(u, {0, 255});
  NDArray l = m.create(std::vector<std::int64_t>{std::numeric_limits<std::int64_t>::max()});
  CHECK(l.item<std::int64_t>() == std::numeric_limits<std::int64_t>::max());
  NDArray sc = m.create_scalar(2.5f);
  check_shape(sc, Shape{});
  CHECK(sc.dtype() == DataType::float32);
  CHECK(sc.item<float>() == 2.5f);
  check_shape(m.create(std::vector<float>{}, {0, 4}), {0, 4});
  check_shape(m.create(std::vector<float>{7}, Shape{}), Shape{});
  // The array owns a copy: changing the source afterwards changes nothing.
  std::vector<float> src{1, 2};
  NDArray c = m.create(src);
  src[0] = 100;
  check_values(c, {1, 2});
  // The raw form converts nothing: bytes are read as the dtype.
  const double d[] = {0.5, 1.5};
  check_values(m.create_raw(d, DataType::float64, 2, {2}), {0.5, 1.5});
}

TEST_CASE("factories join their manager and record the caller's line") {
  NDManager m = fresh("factories");
  NDManager sub = m.new_sub_manager("inner");
  NDArray a = m.zeros({2});
  const int line_a = __LINE__ - 1;
  NDArray b = sub.arange(0, 3); const int line_b = __LINE__;
  CHECK(a.manager().uid() == m.uid());
  CHECK(b.manager().uid() == sub.uid());
  CHECK(a.manager().name() == "factories");
  CHECK(int(a.creation_site().line()) == line_a);
  CHECK(int(b.creation_site().line()) == line_b);
  CHECK(std::string(b.creation_site().file_name()).find("factories_test.cpp") != std::string::npos);
  NDArray c = m.create(std::vector<float>{1}); const int line_c = __LINE__;
  CHECK(int(c.creation_site().line()) == line_c);
  NDArray r = m.random_normal({2}); const int line_r = __LINE__;
  CHECK(int(r.creation_site().line()) == line_r);
  CHECK(m.array_count() == 3);
  CHECK(sub.array_count() == 1);
  CHECK(a.device() == Device::cpu());
}

TEST_CASE("factories reject bad arguments, naming the factory, and leave nothing behind") {
  NDManager m = fresh();
  Footprint before(m);
  const double nan = std::nan(""), inf = std::numeric_limits<double>::infinity();
  CHECK_THROWS_WITH_AS(m.zeros({2, -1}), doctest::Contains("zeros: shape (2, -1) has a negative dimension"),
                       InvalidArgument);
  CHECK_THROWS_WITH_AS(m.ones({-3}), doctest::Contains("ones"), InvalidArgument);
  CHECK_THROWS_WITH_AS(m.full({-3}, 1), doctest::Contains("full"), InvalidArgument);
  CHECK_THROWS_WITH_AS(m.arange(0, 1, 0), doctest::Contains("arange(0, 1, 0)"), InvalidArgument);
  CHECK_THROWS_WITH_AS(m.arange(0, 1, 0), doctest::Contains("step non-zero"), InvalidArgument);
  CHECK_THROWS_AS(m.arange(0, inf), InvalidArgument);
  CHECK_THROWS_AS(m.arange(nan, 1), InvalidArgument);
  CHECK_THROWS_AS(m.arange(0, 1, nan), InvalidArgument);
  CHECK_THROWS_WITH_AS(m.linspace(0, 1, -1), doctest::Contains("linspace: num -1"), InvalidArgument);
  CHECK_THROWS_WITH_AS(m.eye(-1), doctest::Contains("eye"), InvalidArgument);
  CHECK_THROWS_WITH_AS(m.eye(2, -2), doctest::Contains("(2, -2)"), InvalidArgument);
  CHECK_THROWS_WITH_AS(m.create(std::vector<float>{1, 2, 3}, {2, 2}),
                       doctest::Contains("create: 3 values do not fill shape (2, 2) (4 elements)"), InvalidArgument);
  CHECK_THROWS_AS(m.create(std::vector<float>{1, 2}, {-1, -2}), InvalidArgument);
  CHECK_THROWS_AS(m.create(std::vector<float>{}, {-1, 0}), InvalidArgument);
  before.check_unchanged();
}

TEST_CASE("shapes too large to allocate throw instead of overflowing") {
  NDManager m = fresh();
  Footprint before(m);
  const std::int64_t huge = std::int64_t(1) << 62;
  CHECK_THROWS_WITH_AS(m.zeros({huge}, DataType::float64), doctest::Contains("zeros"), InvalidArgument);
  CHECK_THROWS_WITH_AS(m.zeros({huge}, DataType::float64), doctest::Contains("more elements than memory can hold"),
                       InvalidArgument);
  CHECK_THROWS_AS(m.ones({std::int64_t(1) << 32, std::int64_t(1) << 32}), InvalidArgument);
  CHECK_THROWS_AS(m.full({3, std::int64_t(1) << 61, 5}, 1.0), InvalidArgument);
  CHECK_THROWS_AS(m.eye(std::int64_t(1) << 40), InvalidArgument);
  CHECK_THROWS_WITH_AS(m.arange(0, 1e30), doctest::Contains("arange"), InvalidArgument);
  CHECK_THROWS_AS(m.arange(-1e308, 1e308, 1e-300), InvalidArgument);
  CHECK_THROWS_AS(m.linspace(0, 1, huge), InvalidArgument);
  CHECK_THROWS_AS(m.random_uniform({huge, 4}), InvalidArgument);
  // A representable request over the memory limit is the allocator's to refuse (a limit
  // rather than malloc failing: sanitizers abort on huge mallocs, Linux may overcommit).
  {
    const std::uint64_t old_limit = memory::limit(Device::cpu());
    memory::set_limit(Device::cpu(), memory::stats(Device::cpu()).current_bytes + (1 << 20));
    CHECK_THROWS_AS(m.zeros({1 << 20}), OutOfMemory);
    CHECK_THROWS_AS(m.random_normal({1 << 20}), OutOfMemory);
    memory::set_limit(Device::cpu(), old_limit);
  }
  before.check_unchanged();
  // Zero-length shapes are fine however large the other dimension.
  check_shape(m.zeros({0, huge}), {0, huge});
  // Views and op outputs are checked too: element counts that would wrap around.
  NDArray one = m.ones({1, 1}), none = m.zeros({0});
  NDArray wide = one.broadcast_to({1, std::int64_t(1) << 31}), tall = one.broadcast_to({std::int64_t(1) << 31, 1});
  Footprint with_views(m);
  CHECK_THROWS_WITH_AS(one.broadcast_to({std::int64_t(1) << 32, std::int64_t(1) << 32}),
                       doctest::Contains("broadcast_to"), InvalidArgument);
  CHECK_THROWS_WITH_AS(wide.add(tall), doctest::Contains("add"), InvalidArgument);  // 2^62 float32 elements
  CHECK_THROWS_WITH_AS(none.reshape({std::int64_t(1) << 32, std::int64_t(1) << 32}), doctest::Contains("reshape"),
                       InvalidArgument);
  with_views.check_unchanged();
}

TEST_CASE("factories of a closed, capped or empty manager throw and leave nothing behind") {
  NDManager base = fresh();
  NDManager closed = base.new_sub_manager("gone");
  ManagerRef closed_ref = closed;
  closed.close();
  const auto bytes = memory::stats(Device::cpu()).current_bytes;
  CHECK_THROWS_WITH_AS(closed_ref.zeros({2}), doctest::Contains("zeros"), ManagerClosed);
  CHECK_THROWS_WITH_AS(closed_ref.ones({2}), doctest::Contains("gone"), ManagerClosed);
  CHECK_THROWS_AS(closed_ref.full({2}, 1), ManagerClosed);
  CHECK_THROWS_AS(closed_ref.arange(0, 3), ManagerClosed);
  CHECK_THROWS_AS(closed_ref.linspace(0, 1, 3), ManagerClosed);
  CHECK_THROWS_AS(closed_ref.eye(2), ManagerClosed);
  CHECK_THROWS_AS(closed_ref.random_uniform({2}), ManagerClosed);
  CHECK_THROWS_AS(closed_ref.random_normal({2}), ManagerClosed);
  CHECK_THROWS_AS(closed_ref.create(std::vector<float>{1}), ManagerClosed);
  CHECK_THROWS_AS(closed_ref.create_scalar(1.0), ManagerClosed);
  CHECK(memory::stats(Device::cpu()).current_bytes == bytes);

  NDManager capped = base.new_sub_manager("capped");
  capped.cap();
  Footprint before(capped);
  CHECK_THROWS_WITH_AS(capped.zeros({2}), doctest::Contains("zeros"), ManagerCapped);
  CHECK_THROWS_WITH_AS(capped.ones({1000}), doctest::Contains("capped"), ManagerCapped);
  CHECK_THROWS_AS(capped.arange(0, 3), ManagerCapped);
  CHECK_THROWS_AS(capped.eye(3), ManagerCapped);
  CHECK_THROWS_AS(capped.random_normal({4}), ManagerCapped);
  CHECK_THROWS_AS(capped.create(std::vector<double>{1, 2}), ManagerCapped);
  before.check_unchanged();

  ManagerRef empty;
  CHECK_THROWS_WITH_AS(empty.zeros({2}), doctest::Contains("zeros: the ManagerRef is empty"), InvalidArgument);
  CHECK_THROWS_AS(empty.arange(0, 2), InvalidArgument);
  CHECK_THROWS_AS(empty.create(std::vector<float>{1}), InvalidArgument);
  CHECK(memory::stats(Device::cpu()).current_bytes == bytes);
}

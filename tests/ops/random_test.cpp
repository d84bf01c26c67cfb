// Tests src/ops/random.cpp (the seed) and the random factories behind it
// (src/ops/factories.cpp, src/ops/cpu/cpu_engine.cpp): the same seed gives
// the same arrays on any thread, uniform values stay in [low, high) in every
// dtype, and 100k draws have the moments they should.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <thread>

#include "ops/random.hpp"
#include "ops_test_util.hpp"

using namespace ndgc;
using namespace ops_test;

namespace {

struct Moments {
  double mean = 0, stddev = 0, min = 0, max = 0;
};

Moments moments(const std::vector<double>& v) {
  Moments r;
  double sum = 0, sq = 0;
  r.min = *std::min_element(v.begin(), v.end());
  r.max = *std::max_element(v.begin(), v.end());
  for (double x : v) sum += x;
  r.mean = sum / double(v.size());
  for (double x : v) sq += (x - r.mean) * (x - r.mean);
  r.stddev = std::sqrt(sq / double(v.size()));
  return r;
}

}  // namespace

TEST_CASE("the same seed gives the same arrays; later draws differ") {
  NDManager m = fresh();
  set_random_seed(1234);
  std::vector<double> u1 = values(m.random_uniform({50}));
  std::vector<double> n1 = values(m.random_normal({7, 3}, 0, 1, DataType::float64));
  std::vector<double> u1b = values(m.random_uniform({50}));
  CHECK(u1 != u1b);  // the stream moves on
  set_random_seed(1234);
  CHECK(values(m.random_uniform({50})) == u1);
  CHECK(values(m.random_normal({7, 3}, 0, 1, DataType::float64)) == n1);
  CHECK(values(m.random_uniform({50})) == u1b);
  set_random_seed(1235);
  CHECK(values(m.random_uniform({50})) != u1);
  // The shape does not change which numbers are drawn, only how they are laid out.
  set_random_seed(99);
  std::vector<double> flat = values(m.random_uniform({12}, 0, 1, DataType::float64));
  set_random_seed(99);
  CHECK(values(m.random_uniform({3, 4}, 0, 1, DataType::float64)) == flat);
}

TEST_CASE("the seed gives the same arrays whatever thread draws them") {
  NDManager m = fresh();
  set_random_seed(77);
  std::vector<double> here = values(m.random_normal({1000}));
  std::vector<double> there;
  set_random_seed(77);
  std::thread t([&] { there = values(m.random_normal({1000})); });
  t.join();
  CHECK(here == there);
}

TEST_CASE_TEMPLATE("random_uniform stays in [low, high)", T, float, double) {
  NDManager m = fresh();
  set_random_seed(5);
  NDArray a = m.random_uniform({100000}, -2, 3, dtype_of<T>);
  CHECK(a.dtype() == dtype_of<T>);
  check_shape(a, {100000});
  Moments s = moments(values(a));
  CHECK(s.min >= -2);
  CHECK(s.max < 3);
  CHECK(s.mean == doctest::Approx(0.5).epsilon(0.02));
  CHECK(s.stddev == doctest::Approx(5 / std::sqrt(12.0)).epsilon(0.02));
  Moments d = moments(values(m.random_uniform({100000})));  // defaults: [0, 1), float32
  CHECK(d.min >= 0);
  CHECK(d.max < 1);
  CHECK(d.mean == doctest::Approx(0.5).epsilon(0.02));
  // Equal bounds give the bound.
  check_values(m.random_uniform({3}, 4, 4, dtype_of<T>), {4, 4, 4});
}

TEST_CASE_TEMPLATE("random_uniform never returns high, even where rounding would", T, float, double) {
  // A range one ulp wide holds one value of T: every draw must be low.
  NDManager m = fresh();
  const T low = T(1), high = std::nextafter(low, T(2));
  std::vector<double> v = values(m.random_uniform({10000}, low, high, dtype_of<T>));
  for (double x : v) {
    CHECK(x >= double(low));
    CHECK(x < double(high));
  }
  CHECK(std::count(v.begin(), v.end(), double(low)) == 10000);
}

TEST_CASE_TEMPLATE("random_uniform on integers draws every value of [low, high) equally", T, std::int32_t,
                   std::int64_t) {
  NDManager m = fresh();
  set_random_seed(11);
  std::vector<double> v = values(m.random_uniform({100000}, -5, 5, dtype_of<T>));
  std::map<double, int> counts;
  for (double x : v) ++counts[x];
  CHECK(counts.size() == 10);
  CHECK(counts.begin()->first == -5);
  CHECK(counts.rbegin()->first == 4);
  for (const auto& entry : counts) {  // not a structured binding: INFO captures it
    const auto value = entry.first;
    const auto n = entry.second;
    INFO("value " << value);
    CHECK(n == doctest::Approx(10000).epsilon(0.05));
  }
  std::vector<double> w = values(m.random_uniform({1000}, 0, 3, DataType::uint8));
  CHECK(*std::max_element(w.begin(), w.end()) == 2);
  CHECK(*std::min_element(w.begin(), w.end()) == 0);
}

TEST_CASE_TEMPLATE("random_normal: 100k draws have the mean and deviation asked for", T, float, double) {
  NDManager m = fresh();
  set_random_seed(2024);
  NDArray a = m.random_normal({100, 1000}, 0, 1, dtype_of<T>);
  CHECK(a.dtype() == dtype_of<T>);
  check_shape(a, {100, 1000});
  Moments s = moments(values(a));
  CHECK(std::abs(s.mean) < 0.02);
  CHECK(s.stddev == doctest::Approx(1).epsilon(0.02));
  CHECK(s.min < -3.5);  // the tails are there
  CHECK(s.max > 3.5);
  std::vector<double> v = values(a);
  for (double x : v) REQUIRE(std::isfinite(x));
  // About 68.3% within one deviation.
  double within = double(std::count_if(v.begin(), v.end(), [](double x) { return std::abs(x) < 1; })) / 1e5;
  CHECK(within == doctest::Approx(0.6827).epsilon(0.02));
  Moments t = moments(values(m.random_normal({100000}, 3, 2, dtype_of<T>)));
  CHECK(t.mean == doctest::Approx(3).epsilon(0.02));
  CHECK(t.stddev == doctest::Approx(2).epsilon(0.02));
  check_values(m.random_normal({4}, 1.5, 0, dtype_of<T>), {1.5, 1.5, 1.5, 1.5});
  CHECK(m.random_normal({}).dtype() == DataType::float32);
}

TEST_CASE("random factories reject bad arguments, naming the factory") {
  NDManager m = fresh();
  Footprint before(m);
  CHECK_THROWS_WITH_AS(m.random_uniform({2}, 1, 0), doctest::Contains("random_uniform: low 1 is above high 0"),
                       InvalidArgument);
  CHECK_THROWS_AS(m.random_uniform({2}, std::nan(""), 1), InvalidArgument);
  CHECK_THROWS_WITH_AS(m.random_normal({2}, 0, -1), doctest::Contains("random_normal: stddev -1"), InvalidArgument);
  CHECK_THROWS_AS(m.random_normal({2}, 0, std::nan("")), InvalidArgument);
  CHECK_THROWS_WITH_AS(m.random_uniform({-2}), doctest::Contains("random_uniform"), InvalidArgument);
  CHECK_THROWS_WITH_AS(m.random_normal({2, -2}), doctest::Contains("negative dimension"), InvalidArgument);
  before.check_unchanged();
  check_shape(m.random_normal({0, 3}), {0, 3});
}

TEST_CASE("GraphDraws: a capture's draws on its device count from 0 and leave the stream alone; others draw as ever") {
  set_random_seed(3);
  const std::uint64_t start = ops::reserve_random(0).offset;
  std::uint64_t state[2] = {};
  ops::RandomDraw other_thread;
  {
    const ops::GraphDraws draws(Device::gpu(0), state);
    const ops::RandomDraw a = ops::reserve_random(10, Device::gpu(0)), b = ops::reserve_random(5, Device::gpu(0));
    CHECK((a.graph_state == state && a.offset == 0));
    CHECK((b.graph_state == state && b.offset == 10));
    const ops::RandomDraw host = ops::reserve_random(7, Device::cpu());  // another device: the stream
    CHECK((host.graph_state == nullptr && host.offset == start && host.seed == 3));
    std::thread([&] { other_thread = ops::reserve_random(4, Device::gpu(0)); }).join();
    CHECK(draws.span() == 15);
  }
  CHECK((other_thread.graph_state == nullptr && other_thread.offset == start + 7));
  const ops::RandomDraw after = ops::reserve_random(1, Device::gpu(0));  // closed: the stream again
  CHECK((after.graph_state == nullptr && after.offset == start + 11));

  state[0] = 99, state[1] = 1000;  // what a replay writes: its seed and base
  const ops::RandomDraw at = ops::random::start_of({0, 10, state});
  CHECK((at.seed == 99 && at.offset == 1010 && at.graph_state == nullptr));
  const ops::RandomDraw plain = ops::random::start_of({5, 10, nullptr});
  CHECK((plain.seed == 5 && plain.offset == 10));
}

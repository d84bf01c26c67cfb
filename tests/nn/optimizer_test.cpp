// Optimizers: the update formulas against hand computations, state placement
// and the composed path for strided parameters.
#include <doctest/doctest.h>

#include <cmath>

#include <ndgc/autograd.hpp>
#include <ndgc/ndgc.hpp>
#include <ndgc/optimizer.hpp>

namespace ndgc {
namespace {

// A block with one parameter whose gradient we set by hand.
struct One : nn::Block {
  nn::Parameter* p;
  One() { p = &add_parameter("w", nn::Parameter::Kind::weight); }
  NDList forward(const NDList& in) override { return in; }
  Shape output_shape(const Shape& s) const override { return s; }
  std::string describe() const override { return "One"; }

 protected:
  void initialize_self(const ManagerRef& m, const Shape& s, DataType dtype) override {
    p->initialize(m, s, dtype, nn::ConstantInitializer(1));
  }
};

}  // namespace

TEST_CASE("Sgd: plain, momentum and weight decay") {
  NDManager m = NDManager::new_base_manager("sgd");
  for (DataType dtype : {DataType::float32, DataType::float64}) {
    One block;
    block.initialize(m, Shape{3}, dtype);
    NDArray w = block.p->array();
    w.gradient().assign_(m.create(std::vector<double>{1, 2, 3}).to_type(dtype));
    nn::Sgd(0.1).update(block.parameters());
    std::vector<double> v = w.to_type(DataType::float64).to_vector<double>();
    CHECK(v[0] == doctest::Approx(0.9));
    CHECK(v[2] == doctest::Approx(0.7));
    // momentum 0.5, weight decay 0.1: g' = g + 0.1 w; m = 0.5 m + g'; w -= lr m.
    w.fill_(1);
    nn::Sgd sgd(0.1, 0.5, 0.1);
    sgd.update(block.parameters());  // g' = 1.1, m = 1.1, w = 0.89
    sgd.update(block.parameters());  // g' = 1 + 0.089, m = 0.55 + 1.089, w = 0.89 - 0.1639
    CHECK(w.to_type(DataType::float64).to_vector<double>()[0] == doctest::Approx(0.89 - 0.1639));
    CHECK(sgd.update_count() == 2);
  }
}

TEST_CASE("Adam: bias-corrected steps as in PyTorch") {
  NDManager m = NDManager::new_base_manager("adam");
  One block;
  block.initialize(m, Shape{2}, DataType::float64);
  NDArray w = block.p->array();
  nn::Adam adam(0.01, 0.9, 0.999, 1e-8);
  double mean = 0, var = 0, x0 = 1, x1 = 1;
  for (int t = 1; t <= 5; ++t) {
    const double g = 0.5 * t;
    w.gradient().fill_(g);
    adam.update(block.parameters());
    mean = 0.9 * mean + 0.1 * g;
    var = 0.999 * var + 0.001 * g * g;
    const double step = 0.01 / (1 - std::pow(0.9, t)) * mean / (std::sqrt(var / (1 - std::pow(0.999, t))) + 1e-8);
    x0 -= step;
    x1 -= step;
  }
  std::vector<double> v = w.to_vector<double>();
  CHECK(v[0] == doctest::Approx(x0).epsilon(1e-12));
  CHECK(v[1] == doctest::Approx(x1).epsilon(1e-12));
}

TEST_CASE("Adam: each parameter is bias-corrected by its own step count, also when the counts differ") {
  NDManager m = NDManager::new_base_manager("adam_counts");
  One early, late;
  early.initialize(m, Shape{1}, DataType::float64);
  late.initialize(m, Shape{1}, DataType::float64);
  nn::Adam adam(0.01, 0.9, 0.999, 1e-8);
  struct Reference {
    double mean = 0, var = 0, x = 1;
    int t = 0;
    void step(double g) {
      ++t;
      mean = 0.9 * mean + 0.1 * g;
      var = 0.999 * var + 0.001 * g * g;
      x -= 0.01 / (1 - std::pow(0.9, t)) * mean / (std::sqrt(var) / std::sqrt(1 - std::pow(0.999, t)) + 1e-8);
    }
  } a, b;
  for (int s = 1; s <= 3; ++s) {  // `early` alone
    early.p->array().gradient().fill_(0.5 * s);
    adam.update(early.parameters());
    a.step(0.5 * s);
  }
  nn::ParameterList both = early.parameters();
  for (const auto& p : late.parameters()) both.push_back(p);
  for (int s = 1; s <= 3; ++s) {  // together: t = 4, 5, 6 for `early` and 1, 2, 3 for `late`, in one update
    early.p->array().gradient().fill_(0.25 * s);
    late.p->array().gradient().fill_(-0.75 * s);
    adam.update(both);
    a.step(0.25 * s);
    b.step(-0.75 * s);
  }
  CHECK(early.p->array().item<double>() == doctest::Approx(a.x).epsilon(1e-12));
  CHECK(late.p->array().item<double>() == doctest::Approx(b.x).epsilon(1e-12));
}

TEST_CASE("optimizer state lives in the parameters' manager, made once") {
  NDManager m = NDManager::new_base_manager("state");
  One block;
  block.initialize(m, Shape{4}, DataType::float32);
  nn::Adam adam;
  const std::size_t before = m.array_count();  // w and its gradient
  adam.prepare(block.parameters());
  CHECK(m.array_count() == before + 2);  // mean and variance
  for (int i = 0; i < 10; ++i) adam.update(block.parameters());
  CHECK(m.array_count() == before + 2);
  nn::Sgd sgd(0.1, 0.9);
  sgd.update(block.parameters());
  CHECK(m.array_count() == before + 3);  // velocity
}

TEST_CASE("optimizer arguments are checked") {
  CHECK_THROWS_WITH_AS(nn::Sgd(-1), doctest::Contains("learning rate"), InvalidArgument);
  CHECK_THROWS_WITH_AS(nn::Sgd(0.1, 1.5), doctest::Contains("momentum"), InvalidArgument);
  CHECK_THROWS_WITH_AS(nn::Adam(1e-3, 1.0), doctest::Contains("beta1"), InvalidArgument);
  CHECK_THROWS_WITH_AS(nn::Adam(1e-3, 0.9, 0.999, 0), doctest::Contains("epsilon"), InvalidArgument);
}

}  // namespace ndgc

#include "ops/optimizer_update.hpp"

namespace ndgc {

TEST_CASE("fused and composed updates agree (strided views take the composed path)") {
  NDManager m = NDManager::new_base_manager("paths");
  auto make = [&](std::vector<float> values) { return m.create(values, Shape{3, 2}); };
  const std::vector<float> w0 = {0.5f, -1, 2, 0.25f, -0.75f, 1.5f}, g0 = {0.1f, -0.2f, 0.3f, 0.05f, -0.5f, 1};
  const ops::AdamHyper adam{0.01, 0.9, 0.999, 1e-8, 0.01, 1 - 0.9, 1 - 0.999};
  const ops::SgdHyper sgd{0.1, 0.9, 0.01};
  // Contiguous (fused kernel).
  NDArray w = make(w0), g = make(g0), mean = m.full({3, 2}, 0.2), var = m.full({3, 2}, 0.3), mom = m.full({3, 2}, 0.4);
  ops::adam_update(w, g, mean, var, adam);
  ops::sgd_update(w, g, mom, sgd);
  // Transposed views of [2, 3] arrays holding the same values (composed path).
  auto transposed = [&](const std::vector<float>& v) {
    return m.create(v, Shape{3, 2}).transpose().dup().transpose();  // [3, 2] view with strides (1, 3)
  };
  NDArray ws = transposed(w0), gs = transposed(g0), ms = m.full({2, 3}, 0.2).transpose(),
          vs = m.full({2, 3}, 0.3).transpose(), moms = m.full({2, 3}, 0.4).transpose();
  REQUIRE_FALSE(ws.is_contiguous());
  ops::adam_update(ws, gs, ms, vs, adam);
  ops::sgd_update(ws, gs, moms, sgd);
  std::vector<float> a = w.to_vector<float>(), b = ws.to_vector<float>();
  for (std::size_t i = 0; i < a.size(); ++i) CHECK(a[i] == doctest::Approx(b[i]).epsilon(1e-6));
  std::vector<float> ma = mean.to_vector<float>(), mb = ms.to_vector<float>();
  for (std::size_t i = 0; i < ma.size(); ++i) CHECK(ma[i] == doctest::Approx(mb[i]).epsilon(1e-6));
  NDArray none;
  NDArray w2 = make(w0), w3 = transposed(w0);
  ops::sgd_update(w2, g, none, {0.1, 0, 0});
  ops::sgd_update(w3, gs, none, {0.1, 0, 0});
  CHECK(w2.to_vector<float>() == w3.to_vector<float>());
  CHECK_THROWS_WITH_AS(ops::adam_update(w, m.zeros({2, 3}), mean, var, adam), doctest::Contains("does not have the shape"),
                       ShapeMismatch);
  CHECK_THROWS_AS(ops::sgd_update(m.zeros({2}, DataType::int32), m.zeros({2}, DataType::int32), none, sgd),
                  DTypeMismatch);
}

}  // namespace ndgc

namespace ndgc {

// Note [Capturable optimizers]: the step count in device memory gives the
// host count's bits, and the host takes the count back when the mode goes off.
TEST_CASE("capturable Adam: the same bits as the host's step count, before and after the switch") {
  NDManager m = NDManager::new_base_manager("capturable");
  One plain_block, captured_block;
  plain_block.initialize(m, Shape{3}, DataType::float32);
  captured_block.initialize(m, Shape{3}, DataType::float32);
  nn::Adam plain(0.01, 0.9, 0.999, 1e-8, 0.001), captured(0.01, 0.9, 0.999, 1e-8, 0.001);
  CHECK_FALSE(captured.capturable());
  auto step = [](One& block, nn::Adam& adam, int t) {
    block.p->array().gradient().fill_(0.25 * t - 1);
    adam.update(block.parameters());
  };
  for (int t = 1; t <= 9; ++t) {
    if (t == 3) captured.set_capturable(true);   // from the host's count 2
    if (t == 7) captured.set_capturable(false);  // back to the host, at 6
    step(plain_block, plain, t);
    step(captured_block, captured, t);
    CHECK(captured_block.p->array().to_vector<float>() == plain_block.p->array().to_vector<float>());
  }
  CHECK(captured.update_count() == 9);
}

TEST_CASE("capturable Adam keeps its count in '<parameter>.adam_steps', made once") {
  NDManager m = NDManager::new_base_manager("steps");
  One block;
  block.initialize(m, Shape{4}, DataType::float32);
  nn::Adam adam;
  adam.prepare(block.parameters());  // the moments
  adam.set_capturable(true);
  const std::size_t before = m.array_count();
  for (int i = 0; i < 3; ++i) adam.update(block.parameters());
  CHECK(m.array_count() == before + 1);
  bool found = false;
  for (const NDArray& a : m.managed_arrays())
    if (a.name() == "w.adam_steps") {
      found = true;
      CHECK(a.dtype() == DataType::float64);
      CHECK(a.item<double>() == 3);
    }
  CHECK(found);
  adam.set_capturable(false);  // the count goes back to the host; the array is closed
  CHECK(m.array_count() == before);
}

TEST_CASE("a step count in device memory: a 0-d float64 array, and only for the fused kernel") {
  NDManager m = NDManager::new_base_manager("bad steps");
  NDArray w = m.ones({3, 2}), g = m.ones({3, 2}), mean = m.zeros({3, 2}), var = m.zeros({3, 2});
  const ops::AdamHyper h{0.01, 0.9, 0.999, 1e-8, 0, 1, 1};
  CHECK_THROWS_WITH_AS(ops::adam_update(w, g, mean, var, h, m.ones({1}, DataType::float64)),
                       doctest::Contains("must be a 0-d float64 array"), InvalidArgument);
  CHECK_THROWS_WITH_AS(ops::adam_update(w, g, mean, var, h, m.full({}, 1, DataType::float32)),
                       doctest::Contains("must be a 0-d float64 array"), InvalidArgument);
  NDArray strided = m.ones({2, 3}).transpose();
  CHECK_THROWS_WITH_AS(ops::adam_update(strided, g, mean, var, h, m.full({}, 1, DataType::float64)),
                       doctest::Contains("needs contiguous weight"), InvalidArgument);
}

}  // namespace ndgc

namespace ndgc {

TEST_CASE("Sgd and Adam update float16 and bfloat16 parameters (the composed path), near float32's steps") {
  NDManager m = NDManager::new_base_manager("half-optimizers");
  for (DataType dtype : {DataType::float16, DataType::bfloat16}) {
    CAPTURE(to_string(dtype));
    One half, single;
    half.initialize(m, Shape{3}, dtype);
    single.initialize(m, Shape{3}, DataType::float32);
    nn::Adam adam_half(0.05), adam_single(0.05);
    for (int t = 1; t <= 4; ++t) {
      half.p->array().gradient().assign_(m.create(std::vector<float>{0.5f, -1.f, 2.f}).to_type(dtype));
      single.p->array().gradient().assign_(m.create(std::vector<float>{0.5f, -1.f, 2.f}));
      adam_half.update(half.parameters());
      adam_single.update(single.parameters());
    }
    CHECK(half.p->array().dtype() == dtype);
    const std::vector<float> h = half.p->array().to_vector<float>(), s = single.p->array().to_vector<float>();
    for (std::size_t i = 0; i < 3; ++i) CHECK(std::fabs(h[i] - s[i]) <= 0x1p-6);
    nn::Sgd(0.25).update(half.parameters());
    CHECK(half.p->array().to_vector<float>()[2] == doctest::Approx(h[2] - 0.5f).epsilon(0x1p-7));
  }
}

}  // namespace ndgc

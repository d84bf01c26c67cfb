// Autocast regions (ops/autocast.cpp): which ops run in 16 bits, which in
// float32, promotion of mixed operands, where the 16-bit copies of
// parameters live, and the gradients of float32 parameters.
#include <doctest/doctest.h>

#include <ndgc/autocast.hpp>
#include <ndgc/layers.hpp>
#include <ndgc/lstm.hpp>
#include <ndgc/ndgc.hpp>

namespace ndgc {

TEST_CASE("autocast: matmul, linear, conv2d and lstm run in the region's dtype; softmax, losses, sums in float32") {
  NDManager model = NDManager::new_base_manager("autocast-model");
  NDManager batch = NDManager::new_base_manager("autocast-batch");
  NDArray w = model.random_normal({8, 4}), b = model.zeros({4});
  NDArray k = model.random_normal({2, 3, 3, 3}), x = batch.random_normal({5, 8});
  NDArray img = batch.random_normal({1, 3, 5, 5});
  for (DataType t : {DataType::bfloat16, DataType::float16}) {
    CAPTURE(to_string(t));
    Autocast region(t);
    CHECK(Autocast::active() == t);
    const NDArray logits = linear(x, w, b);
    CHECK(logits.dtype() == t);
    CHECK(x.matmul(w).dtype() == t);
    CHECK(conv2d(img, k, NDArray{}).dtype() == t);
    CHECK(lstm(batch.random_normal({2, 3, 4}), NDList{model.random_normal({4, 8}), model.random_normal({2, 8}),
                                                       model.zeros({8})})[0]
              .dtype() == t);
    CHECK(logits.softmax(1).dtype() == DataType::float32);
    CHECK(logits.log_softmax(1).dtype() == DataType::float32);
    CHECK(logits.sum().dtype() == DataType::float32);
    CHECK(logits.mean({0}).dtype() == DataType::float32);
    CHECK(logits.exp().dtype() == DataType::float32);
    CHECK(sparse_softmax_cross_entropy(logits, batch.zeros({5}, DataType::int64)).dtype() == DataType::float32);
    CHECK(layer_norm(logits, model.ones({4}), model.zeros({4})).dtype() == DataType::float32);
    CHECK(logits.relu().dtype() == t);          // the rest keeps its operands' dtype
    CHECK(logits.max({1}).dtype() == t);
    CHECK(logits.add(b).dtype() == DataType::float32);  // mixed: promoted to the wider
    CHECK(logits.to_type(DataType::float16).add(logits.to_type(DataType::bfloat16)).dtype() == DataType::float32);
  }
  CHECK(Autocast::active() == DataType::float32);
  CHECK(linear(x, w, b).dtype() == DataType::float32);
}

TEST_CASE("autocast: regions nest and end with their scope; a bad dtype is InvalidArgument") {
  {
    Autocast outer(DataType::bfloat16);
    {
      Autocast inner(DataType::float32);  // off inside
      CHECK(Autocast::active() == DataType::float32);
    }
    CHECK(Autocast::active() == DataType::bfloat16);
  }
  CHECK(Autocast::active() == DataType::float32);
  CHECK_THROWS_WITH_AS(Autocast{DataType::int32}, doctest::Contains("int32"), InvalidArgument);
}

TEST_CASE("autocast: outside a region mixed dtypes are a DTypeMismatch, not a silent conversion") {
  NDManager m = NDManager::new_base_manager("autocast-off");
  NDArray a = m.ones({2}, DataType::bfloat16), b = m.ones({2});
  CHECK_THROWS_AS(a.add(b), DTypeMismatch);
  CHECK_THROWS_AS(linear(m.ones({1, 2}), m.ones({2, 2}, DataType::bfloat16), m.zeros({2})), DTypeMismatch);
}

TEST_CASE("autocast: the 16-bit copies of parameters join the data's manager; float32 parameters get float32 "
          "gradients") {
  NDManager model = NDManager::new_base_manager("autocast-params");
  NDArray w = model.random_normal({8, 4}).set_requires_gradient(true);
  NDArray b = model.zeros({4}).set_requires_gradient(true);
  NDArray gw_single, gw_half;
  for (DataType t : {DataType::float32, DataType::bfloat16}) {
    const std::size_t params_before = model.array_count();
    NDManager batch = NDManager::new_base_manager("autocast-step");
    set_random_seed(4);
    NDArray x = batch.random_normal({16, 8});
    autograd::zero_gradients(NDList{w, b});
    {
      GradientCollector c;
      NDArray loss;
      {
        Autocast region(t);
        loss = sparse_softmax_cross_entropy(linear(x, w, b), batch.zeros({16}, DataType::int64));
      }
      CHECK(loss.dtype() == DataType::float32);
      c.backward(loss);
    }
    CHECK(model.array_count() == params_before);  // the copies are in the step's manager
    CHECK(w.gradient().dtype() == DataType::float32);
    (t == DataType::float32 ? gw_single : gw_half) = w.gradient().dup();
  }
  const std::vector<float> s = gw_single.to_vector<float>(), h = gw_half.to_vector<float>();
  double scale = 0;
  for (float v : s) scale = std::max(scale, double(std::fabs(v)));
  for (std::size_t i = 0; i < s.size(); ++i) CHECK(std::fabs(h[i] - s[i]) <= 0.05 * scale);
}

}  // namespace ndgc

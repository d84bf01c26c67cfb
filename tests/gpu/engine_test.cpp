// Tests gpu/cuda_engine.cpp and the kernels: every op on the GPU against the
// CPU engine on the same inputs — random shapes, broadcast, transposed and
// sliced views, every dtype — plus transfers, random streams, gradients,
// optimizer updates, manager close returning device bytes, and threads.
// Runs only where gpu_main.cpp found a usable device.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <ndgc/ndgc.hpp>

#include "gpu/check_same.hpp"

#include "ops/optimizer_update.hpp"

using namespace ndgc;

namespace {

const std::vector<DataType> kAll = {DataType::float32, DataType::float64, DataType::int32,
                                    DataType::int64,   DataType::uint8,   DataType::boolean};
const std::vector<DataType> kNumeric = {DataType::float32, DataType::float64, DataType::int32, DataType::int64,
                                        DataType::uint8};
const std::vector<DataType> kFloating = {DataType::float32, DataType::float64};

double tolerance(DataType t) { return t == DataType::float32 ? 2e-5 : t == DataType::float64 ? 1e-12 : 0.0; }

// The same random values (uniform in [low, high)) on a CPU and a GPU manager.
struct Inputs {
  NDArray cpu, gpu;
};

struct Devices {
  NDManager cpu = NDManager::new_base_manager("cpu-side");
  NDManager gpu = NDManager::new_base_manager("gpu-side", Device::gpu(0));
  std::mt19937_64 rng{12345};

  Inputs make(const Shape& shape, DataType dtype, double low = -4, double high = 4) {
    std::vector<double> values(std::size_t(shape.size()));
    std::uniform_real_distribution<double> u(low, high);
    for (double& v : values) v = dtype == DataType::float32 || dtype == DataType::float64 ? u(rng) : std::floor(u(rng));
    NDArray c = cpu.create(values, shape).to_type(dtype);
    NDArray g = gpu.create(values, shape).to_type(dtype);
    return {c, g};
  }
};

using gpu_test::check_same;

// Runs `op` on both devices' inputs and compares.
void compare(const Inputs& in, const std::function<NDArray(const NDArray&)>& op, double tol, const std::string& what) {
  check_same(op(in.cpu), op(in.gpu), tol, what);
}

// The views a kernel must handle: contiguous, transposed, sliced (step 2), broadcast.
std::vector<std::pair<std::string, std::function<NDArray(const NDArray&)>>> views() {
  return {{"contiguous", [](const NDArray& x) { return x; }},
          {"transposed", [](const NDArray& x) { return x.transpose(); }},
          {"sliced", [](const NDArray& x) { return x.get("::2, 1:"); }},
          {"broadcast", [](const NDArray& x) { return x.get("1").broadcast_to({3, x.shape()[1]}); }}};
}

}  // namespace

TEST_CASE("factories, copies and conversions match the CPU for every dtype") {
  Devices d;
  for (DataType t : kAll) {
    INFO(to_string(t));
    check_same(d.cpu.zeros({3, 5}, t), d.gpu.zeros({3, 5}, t), 0, "zeros");
    check_same(d.cpu.ones({4}, t), d.gpu.ones({4}, t), 0, "ones");
    check_same(d.cpu.eye(4, 3, t), d.gpu.eye(4, 3, t), 0, "eye");
    if (t != DataType::boolean) check_same(d.cpu.arange(1, 9, 2, t), d.gpu.arange(1, 9, 2, t), 0, "arange");
    Inputs in = d.make({6, 7}, t);
    for (auto& [name, view] : views())
      for (DataType to : kAll) compare(in, [&](const NDArray& x) { return view(x).to_type(to); }, 0, name);
  }
}

TEST_CASE("unary ops match the CPU on every view") {
  Devices d;
  for (DataType t : kNumeric) {
    Inputs in = d.make({6, 7}, t, t == DataType::uint8 ? 0 : -4, 4);
    for (auto& [name, view] : views()) {
      compare(in, [&](const NDArray& x) { return view(x).neg(); }, 0, name + " neg");
      compare(in, [&](const NDArray& x) { return view(x).abs(); }, 0, name + " abs");
      compare(in, [&](const NDArray& x) { return view(x).square(); }, 0, name + " square");
      compare(in, [&](const NDArray& x) { return view(x).relu(); }, 0, name + " relu");
    }
  }
  for (DataType t : kFloating) {
    Inputs in = d.make({6, 7}, t, 0.1, 3);
    const double tol = 4 * tolerance(t);
    for (auto& [name, view] : views()) {
      compare(in, [&](const NDArray& x) { return view(x).exp(); }, tol, name + " exp");
      compare(in, [&](const NDArray& x) { return view(x).log(); }, tol, name + " log");
      compare(in, [&](const NDArray& x) { return view(x).sqrt(); }, tol, name + " sqrt");
      compare(in, [&](const NDArray& x) { return view(x).sigmoid(); }, tol, name + " sigmoid");
      compare(in, [&](const NDArray& x) { return view(x).tanh(); }, tol, name + " tanh");
      // The functions ONNX needs; inputs in (0.1, 3): asin, acos and atanh read them scaled into (0, 1).
      compare(in, [&](const NDArray& x) { return view(x).floor(); }, 0, name + " floor");
      compare(in, [&](const NDArray& x) { return view(x).ceil(); }, 0, name + " ceil");
      compare(in, [&](const NDArray& x) { return view(x).round(); }, 0, name + " round");
      compare(in, [&](const NDArray& x) { return view(x).sin(); }, tol, name + " sin");
      compare(in, [&](const NDArray& x) { return view(x).cos(); }, tol, name + " cos");
      compare(in, [&](const NDArray& x) { return view(x).atan(); }, tol, name + " atan");
      compare(in, [&](const NDArray& x) { return view(x).sinh(); }, tol, name + " sinh");
      compare(in, [&](const NDArray& x) { return view(x).cosh(); }, tol, name + " cosh");
      compare(in, [&](const NDArray& x) { return view(x).asinh(); }, tol, name + " asinh");
      compare(in, [&](const NDArray& x) { return view(x).add(1.0).acosh(); }, tol, name + " acosh");
      compare(in, [&](const NDArray& x) { return view(x).div(3.5).asin(); }, tol, name + " asin");
      compare(in, [&](const NDArray& x) { return view(x).div(3.5).acos(); }, tol, name + " acos");
      compare(in, [&](const NDArray& x) { return view(x).div(3.5).atanh(); }, tol, name + " atanh");
      compare(in, [&](const NDArray& x) { return view(x).div(2.0).tan(); }, tol, name + " tan");
      compare(in, [&](const NDArray& x) { return view(x).erf(); }, tol, name + " erf");
    }
  }
}

TEST_CASE("binary, scalar and comparison ops match the CPU with broadcasting") {
  Devices d;
  for (DataType t : kAll) {
    INFO(to_string(t));
    const bool ints = !is_floating(t);
    Inputs a = d.make({5, 4}, t, 0, 6), b = d.make({4}, t, 1, 6), col = d.make({5, 1}, t, 1, 6);
    const double tol = tolerance(t);
    using F = std::function<NDArray(const NDArray&, const NDArray&)>;
    std::vector<std::pair<std::string, F>> ops = {
        {"eq", [](auto& x, auto& y) { return x.eq(y); }}, {"ne", [](auto& x, auto& y) { return x.ne(y); }},
        {"gt", [](auto& x, auto& y) { return x.gt(y); }}, {"ge", [](auto& x, auto& y) { return x.ge(y); }},
        {"lt", [](auto& x, auto& y) { return x.lt(y); }}, {"le", [](auto& x, auto& y) { return x.le(y); }}};
    if (t != DataType::boolean) {
      ops.push_back({"add", [](auto& x, auto& y) { return x.add(y); }});
      ops.push_back({"sub", [](auto& x, auto& y) { return x.sub(y); }});
      ops.push_back({"mul", [](auto& x, auto& y) { return x.mul(y); }});
      ops.push_back({"div", [](auto& x, auto& y) { return x.div(y); }});
      ops.push_back({"pow", [](auto& x, auto& y) { return x.pow(y); }});
      ops.push_back({"maximum", [](auto& x, auto& y) { return x.maximum(y); }});
      ops.push_back({"minimum", [](auto& x, auto& y) { return x.minimum(y); }});
    }
    for (auto& [name, f] : ops) {
      INFO(name);
      check_same(f(a.cpu, b.cpu), f(a.gpu, b.gpu), 4 * tol, name + " row broadcast");
      check_same(f(col.cpu, b.cpu), f(col.gpu, b.gpu), 4 * tol, name + " outer broadcast");
      check_same(f(a.cpu.transpose(), col.cpu.transpose()), f(a.gpu.transpose(), col.gpu.transpose()), 4 * tol,
                 name + " transposed");
    }
    if (t == DataType::boolean) continue;
    compare(a, [](const NDArray& x) { return x.add(2.0); }, tol, "add scalar");
    compare(a, [](const NDArray& x) { return x.rsub(3.0); }, tol, "rsub scalar");
    compare(a, [](const NDArray& x) { return x.mul(3.0); }, tol, "mul scalar");
    compare(a, [](const NDArray& x) { return x.gt(2.0); }, 0, "gt scalar");
    if (ints) {
      CHECK_THROWS_WITH_AS(a.gpu.div(d.gpu.zeros({4}, t)), doctest::Contains("division by zero"), InvalidArgument);
      CHECK_THROWS_WITH_AS(a.gpu.div(0.0), doctest::Contains("division by zero"), InvalidArgument);
    }
    Inputs c = d.make({5, 4}, DataType::float32);
    check_same(where(c.cpu.gt(0.0), a.cpu, b.cpu), where(c.gpu.gt(0.0), a.gpu, b.gpu), 0, "where");
  }
}

TEST_CASE("reductions and arg-reductions over any axes match the CPU") {
  Devices d;
  const std::vector<std::vector<int>> axes_sets = {{}, {0}, {1}, {2}, {0, 2}, {1, 2}};
  for (DataType t : kNumeric) {
    INFO(to_string(t));
    Inputs in = d.make({4, 5, 6}, t, t == DataType::uint8 ? 0 : -9, 9);
    const double tol = 8 * tolerance(t);
    for (const auto& axes : axes_sets) {
      INFO("axes " << axes.size());
      compare(in, [&](const NDArray& x) { return x.sum(axes); }, tol, "sum");
      compare(in, [&](const NDArray& x) { return x.mean(axes, true); }, tol, "mean");
      compare(in, [&](const NDArray& x) { return x.max(axes); }, 0, "max");
      compare(in, [&](const NDArray& x) { return x.transpose().min(axes); }, 0, "min of transposed");
    }
    for (int axis = 0; axis < 3; ++axis) {
      compare(in, [&](const NDArray& x) { return x.argmax(axis); }, 0, "argmax");
      compare(in, [&](const NDArray& x) { return x.transpose().argmin(axis); }, 0, "argmin");
    }
  }
  // NaN propagates through max and wins argmax, as on the CPU.
  std::vector<float> v = {1, NAN, 3, 2};
  NDArray c = d.cpu.create(v), g = d.gpu.create(v);
  check_same(c.max(), g.max(), 0, "max with NaN");
  check_same(c.argmax(0), g.argmax(0), 0, "argmax with NaN");
  // A large sum: many threads per row.
  Inputs big = d.make({3, 100000}, DataType::float64);
  compare(big, [](const NDArray& x) { return x.sum({1}); }, 1e-9, "long rows");
}

TEST_CASE("few long rows are split across blocks and still match the CPU (Note [Split rows])") {
  Devices d;
  for (DataType t : kNumeric) {
    INFO(to_string(t));
    Inputs in = d.make({3, 1 << 18}, t, t == DataType::uint8 ? 0 : -9, 9);
    const double tol = 1e3 * tolerance(t);  // a float32 sum over 2^18 elements rounds in another order
    compare(in, [](const NDArray& x) { return x.sum(); }, tol, "full sum");
    compare(in, [](const NDArray& x) { return x.sum({1}); }, tol, "row sums");
    const double mean_tol = 1e3 * tolerance(is_floating(t) ? t : DataType::float32);  // integers: in float32
    compare(in, [](const NDArray& x) { return x.mean({1}); }, mean_tol, "row means");
    compare(in, [](const NDArray& x) { return x.max({1}); }, 0, "row max");
    compare(in, [](const NDArray& x) { return x.transpose().min({0}); }, 0, "column min of the transposed");
    compare(in, [](const NDArray& x) { return x.get(":, ::3").max(); }, 0, "strided max");
    compare(in, [](const NDArray& x) { return x.argmax(1); }, 0, "argmax (integers: many ties)");
    compare(in, [](const NDArray& x) { return x.flatten().argmin(0); }, 0, "argmin of all");
  }
  // The first NaN wins argmax wherever the chunks fall; NaN propagates.
  std::vector<float> v(1 << 20, 1.0f);
  v[700000] = NAN;
  v[300001] = NAN;
  NDArray c = d.cpu.create(v), g = d.gpu.create(v);
  check_same(c.argmax(0), g.argmax(0), 0, "argmax with NaN");
  check_same(c.max(), g.max(), 0, "max with NaN");
  CHECK(g.argmax(0).item<std::int64_t>() == 300001);
}

TEST_CASE("matmul and batched matmul match the CPU, transposed operands included") {
  Devices d;
  for (DataType t : {DataType::float32, DataType::float64, DataType::int32, DataType::int64}) {
    INFO(to_string(t));
    const double tol = t == DataType::float32 ? 1e-4 : 1e-10;
    Inputs a = d.make({5, 7}, t), b = d.make({7, 3}, t), bt = d.make({3, 7}, t);
    Inputs batch = d.make({2, 5, 7}, t), big_a = d.make({64, 96}, t), big_b = d.make({96, 33}, t);
    check_same(a.cpu.matmul(b.cpu), a.gpu.matmul(b.gpu), tol, "2-D");
    check_same(a.cpu.matmul(bt.cpu.transpose()), a.gpu.matmul(bt.gpu.transpose()), tol, "transposed b");
    check_same(bt.cpu.matmul(a.cpu.transpose()), bt.gpu.matmul(a.gpu.transpose()), tol, "transposed a");
    check_same(batch.cpu.matmul(b.cpu), batch.gpu.matmul(b.gpu), tol, "batched");
    check_same(a.cpu.get("::2").matmul(b.cpu), a.gpu.get("::2").matmul(b.gpu), tol, "sliced rows");
    check_same(big_a.cpu.matmul(big_b.cpu), big_a.gpu.matmul(big_b.gpu), 10 * tol, "64x96x33");
  }
}

TEST_CASE("softmax, log-softmax and one_hot match the CPU") {
  Devices d;
  for (DataType t : kFloating) {
    Inputs in = d.make({4, 9}, t);
    const double tol = 8 * tolerance(t);
    for (int axis : {0, 1}) {
      compare(in, [&](const NDArray& x) { return x.softmax(axis); }, tol, "softmax");
      compare(in, [&](const NDArray& x) { return x.transpose().log_softmax(axis); }, tol, "log_softmax");
    }
  }
  std::vector<std::int64_t> idx = {0, 3, 1, 2, 3};
  check_same(d.cpu.create(idx).one_hot(4), d.gpu.create(idx).one_hot(4), 0, "one_hot");
  std::vector<std::int32_t> bad = {1, 7, 0};
  CHECK_THROWS_WITH_AS(d.gpu.create(bad).one_hot(4), doctest::Contains("index 7 is outside [0, 4)"),
                       InvalidArgument);
}

TEST_CASE("a seed gives the same random numbers on both devices") {
  Devices d;
  for (DataType t : kNumeric) {
    set_random_seed(99);
    NDArray c = d.cpu.random_uniform({257}, -3, 5, t);
    set_random_seed(99);
    NDArray g = d.gpu.random_uniform({257}, -3, 5, t);
    check_same(c, g, 0, "uniform: bit for bit");
  }
  set_random_seed(5);
  NDArray c = d.cpu.random_normal({1000}, 1, 2, DataType::float64);
  set_random_seed(5);
  NDArray g = d.gpu.random_normal({1000}, 1, 2, DataType::float64);
  check_same(c, g, 1e-13, "normal: log and cos may differ in the last bit");
}

TEST_CASE("transfers: to_device both ways, item, copy_to, views") {
  Devices d;
  Inputs in = d.make({6, 7}, DataType::float32);
  NDArray up = in.cpu.transpose().to_device(Device::gpu(0));
  CHECK(up.device() == Device::gpu(0));
  CHECK(up.manager().uid() == in.cpu.manager().uid());  // joins the source's manager
  check_same(in.cpu.transpose(), up, 0, "cpu → gpu");
  NDArray down = in.gpu.get("::2, 1:").to_device(Device::cpu());
  CHECK(down.device() == Device::cpu());
  check_same(in.cpu.get("::2, 1:"), in.gpu.get("::2, 1:"), 0, "strided read");
  CHECK(down.to_vector<float>() == in.cpu.get("::2, 1:").to_vector<float>());
  CHECK(in.gpu.sum().item<float>() == doctest::Approx(in.cpu.sum().item<float>()).epsilon(1e-5));
  std::vector<double> out(42);
  in.gpu.copy_to(out.data(), DataType::float64, out.size());
  CHECK(out == in.cpu.to_vector<double>());
  CHECK_THROWS_WITH_AS(in.gpu.to_device(Device::gpu(gpu_count())), doctest::Contains("out of range"),
                       InvalidArgument);
}

TEST_CASE("host mirror: repeated reads reuse the host copy; every kind of GPU write invalidates it") {
  Devices d;
  Inputs in = d.make({40, 25}, DataType::float32);
  const std::vector<float> want = in.cpu.to_vector<float>();
  const std::uint64_t before = memory::stats(Device::gpu(0)).host_mirror_bytes;
  CHECK(in.gpu.to_vector<float>() == want);
  CHECK(memory::stats(Device::gpu(0)).host_mirror_bytes == before + 4000);
  for (int i = 0; i < 40; ++i)  // views of the mirrored storage, strided ones included
    CHECK(in.gpu.get(NDIndex().add_index(i).add_slice(std::nullopt, std::nullopt, 3)).to_vector<float>() ==
          in.cpu.get(NDIndex().add_index(i).add_slice(std::nullopt, std::nullopt, 3)).to_vector<float>());
  in.gpu.add_(1);  // a kernel
  in.cpu.add_(1);
  CHECK(in.gpu.get("7, 3").item<float>() == in.cpu.get("7, 3").item<float>());
  in.gpu.assign_(in.cpu.to_device(Device::gpu(0)));  // a device copy
  in.gpu.get("0").fill_(5);
  in.cpu.get("0").fill_(5);
  CHECK(in.gpu.to_vector<float>() == in.cpu.to_vector<float>());
  in.gpu.close();  // the views taken above still hold the storage, and its copy with it
  CHECK(memory::stats(Device::gpu(0)).host_mirror_bytes == before + 4000);
  d.gpu.close();  // the last view goes: the copy is freed with the storage
  CHECK(memory::stats(Device::gpu(0)).host_mirror_bytes == before);
}

TEST_CASE("gradients through GradientCollector equal the CPU's") {
  Devices d;
  Inputs x = d.make({8, 5}, DataType::float32), w = d.make({5, 3}, DataType::float32), bias = d.make({3}, DataType::float32);
  auto grads = [](const NDArray& xs, NDArray ws, NDArray bs) {
    ws.set_requires_gradient(true);
    bs.set_requires_gradient(true);
    GradientCollector gc;
    NDArray loss = xs.matmul(ws).add(bs).relu().log_softmax(1).mean();
    gc.backward(loss);
    return std::pair{ws.gradient(), bs.gradient()};
  };
  auto [wc, bc] = grads(x.cpu, w.cpu, bias.cpu);
  auto [wg, bg] = grads(x.gpu, w.gpu, bias.gpu);
  check_same(wc, wg, 1e-4, "weight gradient");
  check_same(bc, bg, 1e-4, "bias gradient");
}

TEST_CASE("fused Adam and SGD updates match the CPU") {
  Devices d;
  for (DataType t : kFloating) {
    Inputs w = d.make({33}, t), g = d.make({33}, t), m = d.make({33}, t), v = d.make({33}, t, 0, 1);
    const ops::AdamHyper adam{1e-2, 0.9, 0.999, 1e-8, 1e-3, 0.1, 0.01};
    ops::adam_update(w.cpu, g.cpu, m.cpu, v.cpu, adam);
    ops::adam_update(w.gpu, g.gpu, m.gpu, v.gpu, adam);
    check_same(w.cpu, w.gpu, 8 * tolerance(t), "adam weight");
    check_same(v.cpu, v.gpu, 8 * tolerance(t), "adam variance");
    const ops::SgdHyper sgd{0.1, 0.9, 1e-3};
    ops::sgd_update(w.cpu, g.cpu, m.cpu, sgd);
    ops::sgd_update(w.gpu, g.gpu, m.gpu, sgd);
    check_same(w.cpu, w.gpu, 8 * tolerance(t), "sgd weight");
  }
}

TEST_CASE("fused updates store denormal state as zero on the GPU as on the CPU") {
  Devices d;
  const float tiny = std::numeric_limits<float>::min(), ulp = std::numeric_limits<float>::denorm_min();
  const std::vector<float> state = {tiny, 4 * ulp, 2 * tiny, 0.01f};  // the first two decay to denormals
  for (const NDManager* mm : {&d.cpu, &d.gpu}) {
    NDArray w = mm->create(std::vector<float>(4, 0.5f)), g = mm->zeros({4}, DataType::float32);
    NDArray m = mm->create(state), v = mm->create(state), sm = mm->create(state);
    ops::adam_update(w, g, m, v, {1e-3, 0.9, 0.999, 1e-8, 0, 0.1, 0.001});
    ops::sgd_update(w, g, sm, {0.1, 0.9, 0});
    INFO(w.device().to_string());
    CHECK(m.to_vector<float>() == std::vector<float>{0, 0, 0.9f * (2 * tiny), 0.9f * 0.01f});
    CHECK(v.to_vector<float>()[0] == 0);
    CHECK(v.to_vector<float>()[1] == 0);
    CHECK(sm.to_vector<float>() == std::vector<float>{0, 0, 0.9f * (2 * tiny), 0.9f * 0.01f});
  }
}

TEST_CASE("closing a manager and auto-close return the device bytes") {
  const auto before = memory::stats(Device::gpu(0)).current_bytes;
  {
    NDManager g = NDManager::new_base_manager("closing", Device::gpu(0));
    NDArray a = g.ones({256, 256});
    NDArray b = a.add(a).matmul(a);
    CHECK(memory::stats(Device::gpu(0)).current_bytes >= before + 3 * 256 * 256 * 4);
  }
  CHECK(memory::stats(Device::gpu(0)).current_bytes == before);
  NDManager g = NDManager::new_base_manager("auto", Device::gpu(0));
  gc::enable();
  const auto held = memory::stats(Device::gpu(0)).current_bytes;
  for (int i = 0; i < 10; ++i) g.ones({1024}).add(1.0).sum();  // orphans each time
  gc::poll();
  CHECK(memory::stats(Device::gpu(0)).current_bytes == held);
  gc::disable();
}

TEST_CASE("threads run GPU ops side by side and hand arrays to each other") {
  NDManager g = NDManager::new_base_manager("threads", Device::gpu(0));
  NDArray shared = g.arange(0, 1000, 1, DataType::float64);
  std::vector<double> sums(4);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      NDManager mine = NDManager::new_base_manager("worker", Device::gpu(0));
      double total = 0;
      for (int i = 0; i < 20; ++i) total += shared.mul(double(t + 1)).add(mine.ones({1000}, DataType::float64)).sum().item<double>();
      sums[std::size_t(t)] = total;
    });
  for (auto& th : threads) th.join();
  for (int t = 0; t < 4; ++t) CHECK(sums[std::size_t(t)] == doctest::Approx(20 * ((t + 1) * 499500.0 + 1000)));
}

TEST_CASE("float16 and bfloat16: conversions to the bit, ops and GemmEx products near the CPU's") {
  Devices d;
  for (DataType t : {DataType::float16, DataType::bfloat16}) {
    INFO(to_string(t));
    const double unit = t == DataType::float16 ? 0x1p-11 : 0x1p-8;
    Inputs in = d.make({6, 7}, DataType::float32, -4, 4);
    for (auto& [name, view] : views()) compare(in, [&](const NDArray& x) { return view(x).to_type(t); }, 0, name);
    Inputs h{in.cpu.to_type(t), in.gpu.to_type(t)};
    compare(h, [](const NDArray& x) { return x.to_type(DataType::float32); }, 0, "widened");
    compare(h, [](const NDArray& x) { return x.tanh().add(x.mul(0.5)); }, 4 * unit, "element-wise");
    compare(h, [](const NDArray& x) { return x.sum({1}); }, 4 * unit, "sum");
    compare(h, [](const NDArray& x) { return x.softmax(1); }, 4 * unit, "softmax");
    Inputs a = d.make({64, 96}, DataType::float32, -1, 1), b = d.make({96, 33}, DataType::float32, -1, 1);
    check_same(a.cpu.to_type(t).matmul(b.cpu.to_type(t)), a.gpu.to_type(t).matmul(b.gpu.to_type(t)), 16 * unit,
               "GemmEx 64x96x33");
    check_same(a.cpu.to_type(t).transpose().matmul(a.cpu.to_type(t)), a.gpu.to_type(t).transpose().matmul(a.gpu.to_type(t)),
               16 * unit, "GemmEx transposed");
  }
}

// Tests src/ops/op_support.cpp, the plumbing every op shares: closed arrays
// and empty handles are refused with the op's name; an op's output joins
// its first input's manager; an op whose output cannot join (capped manager)
// or cannot be computed throws and leaves no array and no bytes behind;
// a GPU without an engine is InvalidArgument; mixing devices is DeviceMismatch.
#include <functional>
#include <string>
#include <vector>

#include "memory/allocator.hpp"
#include "ops/cpu/cpu_engine.hpp"
#include "ops/engine.hpp"
#include "ops_test_util.hpp"
#include "sim_gpu.hpp"
#include "support/gpu_probe.hpp"

using namespace ndgc;
using namespace ops_test;

namespace {

struct Op {
  std::string name;  // what the error message must name
  // x: the first input; y: a second (1-D, length 2); c: a boolean condition like y.
  std::function<void(const NDArray& x, const NDArray& y, const NDArray& c)> run;
};

// Every op of the layer, each called with `x` as its first array input.
std::vector<Op> every_op() {
  return {
      {"add", [](auto& x, auto& y, auto&) { x.add(y); }},
      {"sub", [](auto& x, auto& y, auto&) { x.sub(y); }},
      {"mul", [](auto& x, auto& y, auto&) { x.mul(y); }},
      {"div", [](auto& x, auto& y, auto&) { x.div(y); }},
      {"pow", [](auto& x, auto& y, auto&) { x.pow(y); }},
      {"maximum", [](auto& x, auto& y, auto&) { x.maximum(y); }},
      {"minimum", [](auto& x, auto& y, auto&) { x.minimum(y); }},
      {"eq", [](auto& x, auto& y, auto&) { x.eq(y); }},
      {"lt", [](auto& x, auto& y, auto&) { x.lt(y); }},
      {"add", [](auto& x, auto&, auto&) { x.add(1.0); }},
      {"sub", [](auto& x, auto&, auto&) { x.rsub(1.0); }},
      {"div", [](auto& x, auto&, auto&) { x.rdiv(1.0); }},
      {"ge", [](auto& x, auto&, auto&) { x.ge(1.0); }},
      {"neg", [](auto& x, auto&, auto&) { x.neg(); }},
      {"exp", [](auto& x, auto&, auto&) { x.exp(); }},
      {"relu", [](auto& x, auto&, auto&) { x.relu(); }},
      {"tanh", [](auto& x, auto&, auto&) { x.tanh(); }},
      {"add_", [](auto& x, auto& y, auto&) { NDArray(x).add_(y); }},
      {"mul_", [](auto& x, auto&, auto&) { NDArray(x).mul_(2.0); }},
      {"exp", [](auto& x, auto&, auto&) { NDArray(x).exp_(); }},
      {"fill_", [](auto& x, auto&, auto&) { NDArray(x).fill_(1.0); }},
      {"assign_", [](auto& x, auto& y, auto&) { NDArray(x).assign_(y); }},
      {"sum", [](auto& x, auto&, auto&) { x.sum(); }},
      {"mean", [](auto& x, auto&, auto&) { x.mean({0}); }},
      {"max", [](auto& x, auto&, auto&) { x.max({1}, true); }},
      {"min", [](auto& x, auto&, auto&) { x.min(); }},
      {"argmax", [](auto& x, auto&, auto&) { x.argmax(); }},
      {"argmin", [](auto& x, auto&, auto&) { x.argmin(0); }},
      {"matmul", [](auto& x, auto& y, auto&) { x.matmul(y); }},
      {"transpose", [](auto& x, auto&, auto&) { x.transpose(); }},
      {"permute", [](auto& x, auto&, auto&) { x.permute({1, 0}); }},
      {"swap_axes", [](auto& x, auto&, auto&) { x.swap_axes(0, 1); }},
      {"reshape", [](auto& x, auto&, auto&) { x.reshape({4}); }},
      {"flatten", [](auto& x, auto&, auto&) { x.flatten(); }},
      {"squeeze", [](auto& x, auto&, auto&) { x.squeeze(); }},
      {"expand_dims", [](auto& x, auto&, auto&) { x.expand_dims(0); }},
      {"broadcast_to", [](auto& x, auto&, auto&) { x.broadcast_to({3, 2, 2}); }},
      {"get", [](auto& x, auto&, auto&) { x.get("0"); }},
      {"concat", [](auto& x, auto&, auto&) { x.concat(x); }},
      {"stack", [](auto& x, auto&, auto&) { stack(NDList{x, x}); }},
      {"softmax", [](auto& x, auto&, auto&) { x.softmax(); }},
      {"log_softmax", [](auto& x, auto&, auto&) { x.log_softmax(0); }},
      {"to_type", [](auto& x, auto&, auto&) { x.to_type(DataType::float64); }},
      {"dup", [](auto& x, auto&, auto&) { x.dup(); }},
      {"contiguous", [](auto& x, auto&, auto&) { x.contiguous(); }},
      {"where", [](auto& x, auto& y, auto& c) { where(c, x, y); }},
      {"to_vector", [](auto& x, auto&, auto&) { std::vector<float> v(4); x.copy_to(v.data(), DataType::float32, 4); }},
      {"item", [](auto& x, auto&, auto&) { (void)x.template item<float>(); }},
      {"to_string", [](auto& x, auto&, auto&) { (void)x.to_string(); }},
  };
}

}  // namespace

TEST_CASE("every op on a closed array throws ArrayClosed naming the op") {
  NDManager m = fresh();
  NDArray y = m.ones({2}), c = m.ones({2}, DataType::boolean);
  for (const Op& op : every_op()) {
    INFO(op.name);
    NDArray x = m.ones({2, 2});
    x.close();
    std::string message;
    try {
      op.run(x, y, c);
    } catch (const ArrayClosed& e) {
      message = e.what();
    } catch (const std::exception& e) {
      FAIL_CHECK("threw something else: " << e.what());
    }
    CHECK(message.find(op.name) != std::string::npos);
    CHECK(message.find("closed") != std::string::npos);
  }
}

TEST_CASE("a closed second input throws ArrayClosed too") {
  NDManager m = fresh();
  NDArray x = m.ones({2, 2}), y = m.ones({2});
  y.close();
  CHECK_THROWS_WITH_AS(x.add(y), doctest::Contains("add"), ArrayClosed);
  CHECK_THROWS_AS(x.matmul(y), ArrayClosed);
  CHECK_THROWS_AS(x.add_(y), ArrayClosed);
  CHECK_THROWS_AS(x.concat(y), ArrayClosed);
  CHECK_THROWS_AS(where(m.ones({2}, DataType::boolean), y, y), ArrayClosed);
  CHECK_THROWS_AS(stack(NDList{x.get("0"), y}), ArrayClosed);
  // The message names the closed array by UUID.
  CHECK_THROWS_WITH_AS(x.mul(y), doctest::Contains(y.uid().to_string().c_str()), ArrayClosed);
}

TEST_CASE("arrays of a closed manager throw ArrayClosed") {
  NDManager m = fresh();
  NDManager sub = m.new_sub_manager("short");
  NDArray a = sub.ones({2, 2});
  NDArray keep = m.ones({2}), c = m.ones({2}, DataType::boolean);
  sub.close();
  const auto bytes = memory::stats(Device::cpu()).current_bytes;
  for (const Op& op : every_op()) {
    INFO(op.name);
    CHECK_THROWS_AS(op.run(a, keep, c), ArrayClosed);
  }
  CHECK_THROWS_WITH_AS(a.add(keep), doctest::Contains("because its manager closed"), ArrayClosed);
  CHECK(memory::stats(Device::cpu()).current_bytes == bytes);
}

TEST_CASE("every op on an empty handle throws InvalidArgument naming the op") {
  NDManager m = fresh();
  NDArray y = m.ones({2}), c = m.ones({2}, DataType::boolean);
  NDArray x;
  for (const Op& op : every_op()) {
    INFO(op.name);
    std::string message;
    try {
      op.run(x, y, c);
    } catch (const InvalidArgument& e) {
      message = e.what();
    } catch (const std::exception& e) {
      FAIL_CHECK("threw something else: " << e.what());
    }
    CHECK(message.find("empty") != std::string::npos);
  }
  CHECK_THROWS_WITH_AS(x.add(y), doctest::Contains("add: the NDArray handle is empty"), InvalidArgument);
  CHECK_THROWS_WITH_AS(y.add(x), doctest::Contains("add"), InvalidArgument);
  CHECK_THROWS_WITH_AS(x.reshape({2}), doctest::Contains("reshape"), InvalidArgument);
  CHECK_THROWS_WITH_AS(x.transpose(), doctest::Contains("transpose"), InvalidArgument);
  CHECK_THROWS_WITH_AS(x.contiguous(), doctest::Contains("contiguous"), InvalidArgument);
}

TEST_CASE("an op whose first input's manager is capped throws and leaves nothing behind") {
  NDManager m = fresh();
  NDManager capped = m.new_sub_manager("capped");
  NDArray x = capped.ones({2, 2});
  NDArray y = m.ones({2}), c = m.ones({2}, DataType::boolean);
  capped.cap();
  Footprint in_capped(capped), in_m(m);
  for (const Op& op : every_op()) {
    if (op.name == "add_" || op.name == "mul_" || op.name == "fill_" || op.name == "assign_" ||
        op.name == "to_vector" || op.name == "to_string" || op.name == "exp" || op.name == "item" ||
        op.name == "contiguous")
      continue;  // in-place ops and data access create nothing (exp is also exp_)
    INFO(op.name);
    std::string message;
    try {
      op.run(x, y, c);
    } catch (const ManagerCapped& e) {
      message = e.what();
    } catch (const std::exception& e) {
      FAIL_CHECK("threw something else: " << e.what());
    }
    CHECK(message.find(op.name) != std::string::npos);
    CHECK(message.find("capped") != std::string::npos);
  }
  CHECK_THROWS_AS(x.exp(), ManagerCapped);
  in_capped.check_unchanged();
  in_m.check_unchanged();
  // In-place ops and reads still work: they create nothing.
  NDArray(x).add_(1.0);
  check_values(x, {2, 2, 2, 2});
  // Only the first input's manager matters.
  NDArray z = y.add(x);
  CHECK(z.manager().uid() == m.uid());
  check_values(z, {3, 3, 3, 3});
}

TEST_CASE("an op that fails in its kernel leaves nothing behind") {
  NDManager m = fresh();
  NDArray i = m.create(std::vector<std::int32_t>{1, 2, 3, 4}, {2, 2});
  NDArray zero = m.create(std::vector<std::int32_t>{1, 0});
  NDArray idx = m.create(std::vector<std::int32_t>{0, 9});
  Footprint before(m);
  CHECK_THROWS_AS(i.div(zero), InvalidArgument);
  CHECK_THROWS_AS(idx.one_hot(3), InvalidArgument);
  CHECK_THROWS_AS(i.sum({5}), InvalidArgument);
  before.check_unchanged();
}

TEST_CASE("outputs join the manager of the first array input") {
  NDManager m1 = fresh("one"), m2 = fresh("two");
  NDArray a = m1.ones({2, 2}), b = m2.ones({2});
  CHECK(a.add(b).manager().uid() == m1.uid());
  CHECK(b.add(a).manager().uid() == m2.uid());
  CHECK(b.sum().manager().uid() == m2.uid());
  CHECK(a.transpose().manager().uid() == m1.uid());
  CHECK(a.get("1").manager().uid() == m1.uid());
  CHECK(b.concat(a.get("0")).manager().uid() == m2.uid());
  CHECK(stack(NDList{a.get("0"), b}).manager().uid() == m1.uid());
  CHECK(concat(NDList{b, a.get("1")}).manager().uid() == m2.uid());
  CHECK(a.matmul(b).manager().uid() == m1.uid());
  CHECK(b.matmul(a).manager().uid() == m2.uid());
  CHECK(b.softmax().manager().uid() == m2.uid());
  CHECK(b.to_type(DataType::int32).one_hot(2).manager().uid() == m2.uid());
  CHECK(a.argmax().manager().uid() == m1.uid());
  // where: the first value operand's manager, as DJL's NDArrays.where(condition, a, b) does.
  NDArray cond = m2.ones({2}, DataType::boolean);
  CHECK(where(cond, a, b).manager().uid() == m1.uid());
  // An array moved to another manager takes its ops' outputs with it.
  NDArray c = m1.ones({2});
  c.attach(m2);
  CHECK(c.neg().manager().uid() == m2.uid());
}

TEST_CASE("error messages describe the arrays: name, UUID, shape, dtype, manager") {
  NDManager m = fresh("described");
  NDArray a = m.ones({2, 3});
  a.set_name("weights");
  NDArray b = m.ones({4}, DataType::float64);
  std::string message;
  try {
    a.add(b);
  } catch (const DTypeMismatch& e) {
    message = e.what();
  }
  CHECK(message.find("add") != std::string::npos);
  CHECK(message.find("'weights'") != std::string::npos);
  CHECK(message.find(a.uid().to_string()) != std::string::npos);
  CHECK(message.find(b.uid().to_string()) != std::string::npos);
  CHECK(message.find("(2, 3)") != std::string::npos);
  CHECK(message.find("float64") != std::string::npos);
  CHECK(message.find("described") != std::string::npos);
  CHECK(message.find("to_type") != std::string::npos);  // what to do about it
}

TEST_CASE("a GPU without the CUDA engine is refused with InvalidArgument, before any array") {
  const auto bytes = memory::stats(Device::cpu()).current_bytes;
  CHECK_THROWS_WITH_AS((void)NDManager::new_base_manager("gpu", Device::gpu(0)), doctest::Contains("gpu(0)"),
                       InvalidArgument);
  CHECK_THROWS_WITH_AS(ops::engine(Device::gpu(0)), doctest::Contains("not linked"), InvalidArgument);
  CHECK(memory::stats(Device::cpu()).current_bytes == bytes);
}

TEST_CASE("an op whose inputs sit on different devices throws DeviceMismatch naming both") {
  test::SimGpu fake;  // a stand-in gpu(0) (tests/sim_gpu.hpp)
  NDManager cpu = fresh();
  NDArray c = cpu.zeros({2});
  {
    NDManager gpu = NDManager::new_base_manager("gpu", Device::gpu(0));
    NDArray g = gpu.zeros({2});
    CHECK(g.device() == Device::gpu(0));
    std::string message;
    try {
      c.add(g);
    } catch (const DeviceMismatch& e) {
      message = e.what();
    }
    CHECK(message.find("add") != std::string::npos);
    CHECK(message.find("cpu()") != std::string::npos);
    CHECK(message.find("gpu(0)") != std::string::npos);
    CHECK_THROWS_AS(g.reshape({2, 1}).matmul(c.reshape({1, 2})), DeviceMismatch);
    CHECK_THROWS_AS(concat(NDList{c, g}), DeviceMismatch);
    CHECK_THROWS_AS(c.add_(g), DeviceMismatch);
    CHECK_THROWS_AS(where(c.gt(0.0), c, g), DeviceMismatch);
    CHECK(g.add(g).device() == Device::gpu(0));
  }
  CHECK(memory::stats(Device::gpu(0)).current_bytes == 0);  // the manager's close returned them
}

TEST_CASE("to_device copies between devices and joins the source's manager") {
  test::SimGpu fake;  // a stand-in gpu(0) (tests/sim_gpu.hpp)
  NDManager cpu = fresh();
  NDArray c = cpu.arange(0.0, 6.0, 1.0).reshape({2, 3}).transpose();  // a strided source
  NDArray g = c.to_device(Device::gpu(0));
  CHECK(fake.from_host_calls() == 1);
  CHECK(fake.to_host_calls() == 0);
  CHECK(g.device() == Device::gpu(0));
  CHECK(g.manager().uid() == c.manager().uid());
  CHECK(g.shape() == Shape{3, 2});
  CHECK(g.to_vector<float>() == std::vector<float>{0, 3, 1, 4, 2, 5});
  CHECK(fake.to_host_calls() == 1);
  CHECK(g.to_device(Device::gpu(0)).to_vector<float>() == g.to_vector<float>());  // a device copy: no transfer in
  CHECK(fake.from_host_calls() == 1);
  NDArray back = g.to_device(Device::cpu());
  CHECK(back.device() == Device::cpu());
  CHECK(back.to_vector<float>() == g.to_vector<float>());
  CHECK(c.to_device(Device::cpu()).to_vector<float>() == back.to_vector<float>());
  CHECK_THROWS_WITH_AS(c.to_device(Device::gpu(1)), doctest::Contains("out of range"), InvalidArgument);
}

TEST_CASE("to_device to a GPU without the engine is InvalidArgument and leaves nothing behind") {
  NDManager cpu = fresh();
  NDArray c = cpu.zeros({4});
  const auto arrays = cpu.array_count();
  CHECK_THROWS_WITH_AS(c.to_device(Device::gpu(0)), doctest::Contains("to_device"), InvalidArgument);
  CHECK(cpu.array_count() == arrays);
}

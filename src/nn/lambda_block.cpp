// LambdaBlock and the parameterless blocks built on it: activations and
// batch flattening.
#include <fmt/format.h>

#include "ndgc/error.hpp"
#include "ndgc/nn.hpp"

namespace ndgc::nn {

LambdaBlock::LambdaBlock(std::string name, Function function, ShapeFunction shape_function)
    : name_(std::move(name)), function_(std::move(function)), shape_function_(std::move(shape_function)) {
  if (!function_) throw InvalidArgument(fmt::format("LambdaBlock '{}': the function is empty", name_));
}

NDList LambdaBlock::forward(const NDList& inputs) { return function_(inputs); }

Shape LambdaBlock::output_shape(const Shape& input_shape) const {
  return shape_function_ ? shape_function_(input_shape) : input_shape;
}

namespace {

template <class F>
std::unique_ptr<Block> elementwise(std::string name, F f) {
  return std::make_unique<LambdaBlock>(std::move(name), [f](const NDList& in) {
    NDList out;
    for (const NDArray& x : in) out.push_back(f(x));
    return out;
  });
}

}  // namespace

std::unique_ptr<Block> relu_block() {
  return elementwise("ReLU", [](const NDArray& x) { return x.relu(); });
}
std::unique_ptr<Block> sigmoid_block() {
  return elementwise("Sigmoid", [](const NDArray& x) { return x.sigmoid(); });
}
std::unique_ptr<Block> tanh_block() {
  return elementwise("Tanh", [](const NDArray& x) { return x.tanh(); });
}

std::unique_ptr<Block> batch_flatten_block() {
  auto flat = [](const Shape& s) {
    if (s.rank() == 0) throw InvalidArgument("batch_flatten: a scalar has no batch axis");
    std::int64_t rest = 1;
    for (int i = 1; i < s.rank(); ++i) rest *= s[i];
    return Shape{s[0], rest};
  };
  return std::make_unique<LambdaBlock>(
      "BatchFlatten",
      [flat](const NDList& in) {
        const NDArray& x = in.head();
        const Shape shape = x.shape();
        if (shape.rank() == 2) return in;  // nothing to do: no extra op per step
        NDList out{x.reshape(flat(shape))};
        for (std::size_t i = 1; i < in.size(); ++i) out.push_back(in[i]);
        return out;
      },
      flat);
}

}  // namespace ndgc::nn

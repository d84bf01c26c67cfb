// Neural-network building blocks (DJL's Block, Parameter and initializers).
//
//   auto net = std::make_unique<nn::Mlp>(784, 10, std::vector<std::int64_t>{128, 64});
//   net->initialize(model_manager, Shape{32, 784});     // parameters join model_manager
//   NDArray logits = net->forward(NDList{x}).head();    // x [32, 784] -> [32, 10]
//   for (auto& [name, p] : net->parameters()) { ... }   // "0.weight", "0.bias", ...
//
// A Block maps an NDList to an NDList. Its parameters are created by
// initialize(manager, input shape), in that manager, and require gradients
// from then on (their gradients sit in the same manager: see
// ndgc/autograd.hpp). forward() creates nothing in the parameters' manager:
// every op puts its result in its first input's manager, and blocks always
// put the input first (x.matmul(w), not w...), so a forward pass on batch
// data lives in the batch's manager.
//
// Names: a parameter's full name is the path of child names from the block
// it is listed from, joined with '.' ("1.weight" for the weight of the
// second child of a SequentialBlock). Model::save() stores parameters under
// these names.
//
// Initializers fill an array in place. Seeded ones (a seed given to the
// constructor) draw from their own counter-based stream, so the same seed
// gives the same parameters whatever else drew random numbers; unseeded ones
// draw from the stream of ndgc::set_random_seed. Fans of a shape: rank 2
// [in, out] (as used by x.matmul(w)) gives fan_in = in and fan_out = out;
// rank 1 gives both the length; higher ranks [out, in, k...] (convolution
// kernels) give fan_in = in * k..., fan_out = out * k....
//
// Thread-safety: forward() of an initialized block may run on several threads
// at once (it only reads parameters). initialize(), set_initializer() and
// adding children are not thread-safe.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "ndgc/manager.hpp"
#include "ndgc/ndarray.hpp"
#include "ndgc/ndlist.hpp"
#include "ndgc/shape.hpp"

namespace ndgc::nn {

// ---- initializers -------------------------------------------------------------

class Initializer {
 public:
  virtual ~Initializer() = default;
  // Overwrites every element of `array` (floating, contiguous or not).
  virtual void initialize(const NDArray& array) const = 0;
};

class ConstantInitializer : public Initializer {
 public:
  explicit ConstantInitializer(double value) : value_(value) {}
  void initialize(const NDArray& array) const override;

 private:
  double value_;
};

// Base of the random initializers: the stream they draw from.
class RandomInitializer : public Initializer {
 public:
  // No seed: ndgc::set_random_seed's stream. A seed: a stream of its own.
  explicit RandomInitializer(std::optional<std::uint64_t> seed = std::nullopt) : seed_(seed) {}

 protected:
  // Fills `array` with N(mean, stddev) or U[low, high) draws.
  void fill_normal(const NDArray& array, double mean, double stddev) const;
  void fill_uniform(const NDArray& array, double low, double high) const;

 private:
  std::optional<std::uint64_t> seed_;
  mutable std::uint64_t offset_ = 0;  // positions used from the own stream
};

// N(0, sigma²).
class NormalInitializer : public RandomInitializer {
 public:
  explicit NormalInitializer(double sigma = 0.01, std::optional<std::uint64_t> seed = std::nullopt)
      : RandomInitializer(seed), sigma_(sigma) {}
  void initialize(const NDArray& array) const override;

 private:
  double sigma_;
};

// Glorot & Bengio: uniform in ±gain·sqrt(6 / (fan_in + fan_out)), or normal
// with stddev gain·sqrt(2 / (fan_in + fan_out)).
class XavierInitializer : public RandomInitializer {
 public:
  enum class Distribution { uniform, normal };
  explicit XavierInitializer(Distribution distribution = Distribution::uniform, double gain = 1.0,
                             std::optional<std::uint64_t> seed = std::nullopt)
      : RandomInitializer(seed), distribution_(distribution), gain_(gain) {}
  void initialize(const NDArray& array) const override;

 private:
  Distribution distribution_;
  double gain_;
};

// He et al. (Kaiming), for ReLU networks: normal with stddev sqrt(2 / fan_in).
class HeInitializer : public RandomInitializer {
 public:
  explicit HeInitializer(std::optional<std::uint64_t> seed = std::nullopt) : RandomInitializer(seed) {}
  void initialize(const NDArray& array) const override;
};

// fan_in and fan_out of a parameter shape (see the top of this file).
std::pair<std::int64_t, std::int64_t> fans(const Shape& shape);

// ---- parameters ---------------------------------------------------------------

class Parameter {
 public:
  // running: a statistic its block updates itself (BatchNorm's running mean
  // and variance). Model::save stores it and Model::load restores it, but it
  // has no gradient and no optimizer or gradient reducer touches it.
  enum class Kind : std::uint8_t { weight, bias, other, running };

  Parameter(std::string name, Kind kind = Kind::weight) : name_(std::move(name)), kind_(kind) {}
  Parameter(const Parameter&) = delete;
  Parameter& operator=(const Parameter&) = delete;

  const std::string& name() const noexcept { return name_; }
  Kind kind() const noexcept { return kind_; }
  // Whether training updates it through its gradient (every kind but running).
  bool trainable() const noexcept { return kind_ != Kind::running; }
  bool is_initialized() const noexcept { return array_.defined(); }
  // The array (InvalidArgument naming the parameter before initialization).
  const NDArray& array() const;
  // Its gradient: array().gradient().
  NDArray gradient() const;

  // Creates the array in `manager` (filled by the parameter's initializer, or
  // `fallback`) and makes it require a gradient if it is trainable.
  // InvalidArgument when it is initialized already.
  void initialize(const ManagerRef& manager, const Shape& shape, DataType dtype, const Initializer& fallback);
  // Uses `array` as the parameter (Model::load for uninitialized blocks).
  void set_array(NDArray array);
  // The initializer initialize() uses instead of the block's default.
  void set_initializer(std::shared_ptr<const Initializer> initializer) { initializer_ = std::move(initializer); }

 private:
  std::string name_;
  Kind kind_;
  NDArray array_;
  std::shared_ptr<const Initializer> initializer_;
};

// A parameter with its full name.
struct NamedParameter {
  std::string name;
  Parameter* parameter;
};
using ParameterList = std::vector<NamedParameter>;

// ---- blocks -------------------------------------------------------------------

class Block {
 public:
  virtual ~Block() = default;
  Block() = default;
  Block(const Block&) = delete;
  Block& operator=(const Block&) = delete;

  // The block's computation. Results join the first input's manager.
  // `training` is the mode of blocks that act differently when training
  // (Dropout, BatchNorm); Trainer passes true, Predictor, evaluation and the
  // server false. A block overrides one of the two forms: this one if it, or a
  // child, cares about the mode. The default calls forward(inputs).
  virtual NDList forward(const NDList& inputs, bool training);
  // forward(inputs, autograd::is_recording()): training exactly when a
  // GradientCollector records on this thread. The default calls the
  // two-argument form; a block that overrides neither gets InvalidArgument
  // naming it.
  virtual NDList forward(const NDList& inputs);

  // Creates the parameters of this block and its children in `manager`, for
  // inputs of `input_shape` (the batch axis included); returns the output
  // shape. Weights use the initializer set for them (default Xavier uniform),
  // biases zeros.
  virtual Shape initialize(const ManagerRef& manager, const Shape& input_shape,
                           DataType dtype = DataType::float32);
  // The output shape for an input shape, without creating anything.
  virtual Shape output_shape(const Shape& input_shape) const = 0;
  bool is_initialized() const;

  // This block's and its children's parameters, depth first, with full names:
  // everything Model::save stores, running statistics included.
  ParameterList parameters();
  // Only those training updates (Parameter::trainable()), in the same order.
  ParameterList trainable_parameters();
  // The trainable parameters' arrays (for zero_gradients and the like).
  NDList parameter_arrays();
  // Sets the initializer of every parameter of `kind` here and below.
  void set_initializer(std::shared_ptr<const Initializer> initializer, Parameter::Kind kind = Parameter::Kind::weight);

  const std::vector<std::pair<std::string, std::unique_ptr<Block>>>& children() const noexcept { return children_; }
  // A one-line description ("Linear(784 -> 128)").
  virtual std::string describe() const = 0;

 protected:
  // Creates this block's own parameters (children are initialized by the
  // block that knows their input shapes). The default has none.
  virtual void initialize_self(const ManagerRef& manager, const Shape& input_shape, DataType dtype);
  Parameter& add_parameter(std::string name, Parameter::Kind kind);
  Block& add_child(std::string name, std::unique_ptr<Block> child);

 private:
  void collect(const std::string& prefix, ParameterList& out);
  std::vector<std::unique_ptr<Parameter>> parameters_;
  std::vector<std::pair<std::string, std::unique_ptr<Block>>> children_;
};

// x [..., in] -> x.matmul(weight [in, units]) + bias [units].
class Linear : public Block {
 public:
  explicit Linear(std::int64_t units, bool bias = true);
  using Block::forward;
  NDList forward(const NDList& inputs) override;
  Shape output_shape(const Shape& input_shape) const override;
  std::string describe() const override;
  Parameter& weight() noexcept { return *weight_; }
  Parameter* bias() noexcept { return bias_; }

 protected:
  void initialize_self(const ManagerRef& manager, const Shape& input_shape, DataType dtype) override;

 private:
  std::int64_t units_;
  std::int64_t in_ = 0;
  Parameter* weight_;
  Parameter* bias_ = nullptr;
};

// Children applied in order, each to the previous one's output; children are
// named "0", "1", ....
class SequentialBlock : public Block {
 public:
  SequentialBlock& add(std::unique_ptr<Block> block);
  using Block::forward;
  // Passes `training` to every child.
  NDList forward(const NDList& inputs, bool training) override;
  Shape initialize(const ManagerRef& manager, const Shape& input_shape, DataType dtype = DataType::float32) override;
  Shape output_shape(const Shape& input_shape) const override;
  std::string describe() const override;
};

// A parameterless function of the inputs, with the shape it keeps or computes.
class LambdaBlock : public Block {
 public:
  using Function = std::function<NDList(const NDList&)>;
  using ShapeFunction = std::function<Shape(const Shape&)>;
  // `shape_function`: the output shape; default: the input's.
  LambdaBlock(std::string name, Function function, ShapeFunction shape_function = {});
  using Block::forward;
  NDList forward(const NDList& inputs) override;
  Shape output_shape(const Shape& input_shape) const override;
  std::string describe() const override { return name_; }

 private:
  std::string name_;
  Function function_;
  ShapeFunction shape_function_;
};

// Activations as blocks (element-wise on every input).
std::unique_ptr<Block> relu_block();
std::unique_ptr<Block> sigmoid_block();
std::unique_ptr<Block> tanh_block();
// [B, d1, d2, ...] -> [B, d1 * d2 * ...]; a rank-2 input passes unchanged.
std::unique_ptr<Block> batch_flatten_block();

// A multilayer perceptron: batch flatten, then Linear + activation for each
// hidden size, then a Linear to `out` units (DJL's Mlp).
class Mlp : public SequentialBlock {
 public:
  Mlp(std::int64_t in, std::int64_t out, const std::vector<std::int64_t>& hidden,
      std::function<std::unique_ptr<Block>()> activation = relu_block);
  std::string describe() const override;

 private:
  std::int64_t in_, out_;
};

}  // namespace ndgc::nn

// The blocks of the layer ops (ndgc/layers.hpp, ndgc/lstm.hpp): convolution,
// pooling, normalisation, dropout, embedding and the LSTM, as PyTorch's and
// DJL's modules.
//
//   nn::SequentialBlock net;
//   net.add(std::make_unique<nn::Conv2d>(32, Pair{3, 3}, Pair{1, 1}, Pair{1, 1}))
//       .add(std::make_unique<nn::BatchNorm>())
//       .add(nn::relu_block())
//       .add(std::make_unique<nn::MaxPool2d>(Pair{2, 2}, Pair{2, 2}));
//   net.initialize(model_manager, Shape{32, 1, 28, 28});
//   NDArray y = net.forward(NDList{x}, /*training=*/true).head();
//
// Every block checks its input shape at initialize() and output_shape(),
// with an InvalidArgument or ShapeMismatch whose message starts with the
// block's describe() ("Conv2d(? -> 32, 3x3)"). Parameter names are what
// Model::save stores. Dropout and BatchNorm act on forward's `training`;
// BatchNorm's running statistics are parameters of Kind::running: saved and
// loaded, never trained.
//
// Thread-safety: as ndgc/nn.hpp, except that a BatchNorm forward with
// training = true writes its running statistics: run those on one thread.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ndgc/layers.hpp"
#include "ndgc/nn.hpp"

namespace ndgc::nn {

// x [N, C, H, W] → conv2d(x, weight, bias, ...) [N, O, H', W'].
// "weight" [O, C / groups, kH, kW] (the block's weight initializer, default
// Xavier uniform over fans C/groups·kH·kW and O·kH·kW), "bias" [O] (zeros).
class Conv2d : public Block {
 public:
  Conv2d(std::int64_t out_channels, Pair kernel, Pair stride = {1, 1}, Pair padding = {0, 0},
         Pair dilation = {1, 1}, std::int64_t groups = 1, bool bias = true);
  using Block::forward;
  NDList forward(const NDList& inputs) override;
  Shape output_shape(const Shape& input_shape) const override;
  std::string describe() const override;
  Parameter& weight() noexcept { return *weight_; }
  Parameter* bias() noexcept { return bias_; }

 protected:
  void initialize_self(const ManagerRef& manager, const Shape& input_shape, DataType dtype) override;

 private:
  std::int64_t out_channels_, groups_, in_channels_ = 0;
  Pair kernel_, stride_, padding_, dilation_;
  Parameter* weight_;
  Parameter* bias_ = nullptr;
};

namespace detail {
// What MaxPool2d and AvgPool2d share: the window, checked when built (errors
// name the block, as describe() does), the output shape and the description.
class Pool2d : public Block {
 public:
  using Block::forward;
  NDList forward(const NDList& inputs) override;
  Shape output_shape(const Shape& input_shape) const override;
  std::string describe() const override;

 protected:
  Pool2d(const char* name, Pair kernel, Pair stride, Pair padding);
  // The op over x with this block's window.
  virtual NDArray pool(const NDArray& x, Pair kernel, Pair stride, Pair padding) const = 0;

 private:
  const char* name_;
  Pair kernel_, stride_, padding_;
};
}  // namespace detail

// max_pool2d / avg_pool2d over x [N, C, H, W]; no parameters.
class MaxPool2d : public detail::Pool2d {
 public:
  MaxPool2d(Pair kernel, Pair stride, Pair padding = {0, 0});

 private:
  NDArray pool(const NDArray& x, Pair kernel, Pair stride, Pair padding) const override;
};

class AvgPool2d : public detail::Pool2d {
 public:
  AvgPool2d(Pair kernel, Pair stride, Pair padding = {0, 0});

 private:
  NDArray pool(const NDArray& x, Pair kernel, Pair stride, Pair padding) const override;
};

// batch_norm over channel axis 1 of x [N, C, ...]. "gamma" [C] (ones) and
// "beta" [C] (zeros) are trained; "running_mean" [C] (zeros) and
// "running_var" [C] (ones) are Kind::running. Kinds: gamma and beta are
// Kind::other, so a weight initializer set on the network leaves them alone.
class BatchNorm : public Block {
 public:
  explicit BatchNorm(double momentum = 0.1, double eps = 1e-5);
  NDList forward(const NDList& inputs, bool training) override;
  using Block::forward;
  Shape output_shape(const Shape& input_shape) const override;
  std::string describe() const override;
  Parameter& gamma() noexcept { return *gamma_; }
  Parameter& beta() noexcept { return *beta_; }
  Parameter& running_mean() noexcept { return *running_mean_; }
  Parameter& running_var() noexcept { return *running_var_; }

 protected:
  void initialize_self(const ManagerRef& manager, const Shape& input_shape, DataType dtype) override;

 private:
  double momentum_, eps_;
  std::int64_t channels_ = 0;
  Parameter *gamma_, *beta_, *running_mean_, *running_var_;
};

// layer_norm over the last axis of x [..., D]: "gamma" [D] (ones), "beta" [D] (zeros).
class LayerNorm : public Block {
 public:
  explicit LayerNorm(double eps = 1e-5);
  using Block::forward;
  NDList forward(const NDList& inputs) override;
  Shape output_shape(const Shape& input_shape) const override;
  std::string describe() const override;

 protected:
  void initialize_self(const ManagerRef& manager, const Shape& input_shape, DataType dtype) override;

 private:
  double eps_;
  std::int64_t features_ = 0;
  Parameter *gamma_, *beta_;
};

// dropout(x, p, training); p in [0, 1) (InvalidArgument at construction).
class Dropout : public Block {
 public:
  explicit Dropout(double p = 0.5);
  NDList forward(const NDList& inputs, bool training) override;
  using Block::forward;
  Shape output_shape(const Shape& input_shape) const override { return input_shape; }
  std::string describe() const override;

 private:
  double p_;
};

// indices, integer [...] → embedding(indices, weight) [..., dim].
// "weight" [num_embeddings, dim], N(0, 1) as PyTorch's (unless an initializer
// is set for it). initialize()'s dtype is the weight's, not the indices'.
class Embedding : public Block {
 public:
  Embedding(std::int64_t num_embeddings, std::int64_t dim);
  using Block::forward;
  NDList forward(const NDList& inputs) override;
  Shape output_shape(const Shape& input_shape) const override;
  std::string describe() const override;
  Parameter& weight() noexcept { return *weight_; }

 protected:
  void initialize_self(const ManagerRef& manager, const Shape& input_shape, DataType dtype) override;

 private:
  std::int64_t num_embeddings_, dim_;
  Parameter* weight_;
};

// A multi-layer LSTM (ndgc::lstm, PyTorch's arithmetic). Inputs {x [B, T, F]}
// or {x, h0 [L, B, H], c0 [L, B, H]}; outputs {y [B, T, H], h [L, B, H],
// c [L, B, H]}. Layer l holds "l<l>.weight_ih" [F_l, 4H] (F_0 = F, then H),
// "l<l>.weight_hh" [H, 4H] and "l<l>.bias" [4H], used as x.matmul(w), the
// gate blocks in the order i, f, g, o.
class LSTM : public Block {
 public:
  explicit LSTM(std::int64_t hidden_size, std::int64_t num_layers = 1);
  using Block::forward;
  NDList forward(const NDList& inputs) override;
  Shape output_shape(const Shape& input_shape) const override;  // y's: [B, T, H]
  std::string describe() const override;
  std::int64_t hidden_size() const noexcept { return hidden_; }
  std::int64_t num_layers() const noexcept { return layers_; }

 protected:
  void initialize_self(const ManagerRef& manager, const Shape& input_shape, DataType dtype) override;

 private:
  std::int64_t hidden_, layers_;
  std::int64_t in_ = 0;
  std::vector<Parameter*> weights_;  // weight_ih, weight_hh, bias of each layer in turn
};

}  // namespace ndgc::nn

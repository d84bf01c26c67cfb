// The architectures of model files (ndgc/model_file.hpp): the blocks
// ndgc-train trains, rebuilt from their names and sizes.
#include <cmath>

#include <fmt/format.h>

#include "ndgc/error.hpp"
#include "ndgc/model_file.hpp"
#include "ndgc/nn_layers.hpp"

namespace ndgc {
namespace {

// The side of a square image of `pixels`; InvalidArgument unless there is one.
std::int64_t image_side(const std::string& name, std::int64_t pixels) {
  std::int64_t side = std::llround(std::sqrt(double(pixels)));
  if (pixels <= 0 || side * side != pixels)
    throw InvalidArgument(fmt::format("architecture {}: inputs = {} is not the pixel count of a square image "
                                      "(side x side)",
                                      name, pixels));
  return side;
}

// Flat rows [B, side²] (or any shape with B rows of side² values) as `tail`.
std::unique_ptr<nn::Block> reshape_rows(std::string name, std::vector<std::int64_t> tail) {
  auto shape_of = [name, tail](const Shape& in) {
    if (in.rank() == 0) throw InvalidArgument(fmt::format("{}: a scalar input has no batch axis", name));
    Shape out{in[0]};
    std::int64_t want = 1, have = 1;
    for (std::int64_t d : tail) out.push_back(d), want *= d;
    for (int i = 1; i < in.rank(); ++i) have *= in[i];
    if (have != want)
      throw InvalidArgument(fmt::format("{}: rows of {} values cannot be reshaped; the input {} has {} per row",
                                        name, want, in.to_string(), have));
    return out;
  };
  return std::make_unique<nn::LambdaBlock>(
      std::move(name), [shape_of](const NDList& in) { return NDList{in.head().reshape(shape_of(in.head().shape()))}; },
      shape_of);
}

std::unique_ptr<nn::Block> conv_stage(std::int64_t channels) {
  auto stage = std::make_unique<nn::SequentialBlock>();
  stage->add(std::make_unique<nn::Conv2d>(channels, Pair{3, 3}, Pair{1, 1}, Pair{1, 1}))
      .add(std::make_unique<nn::BatchNorm>())
      .add(nn::relu_block())
      .add(std::make_unique<nn::MaxPool2d>(Pair{2, 2}, Pair{2, 2}));
  return stage;
}

std::unique_ptr<nn::Block> make_cnn(const Architecture& a) {
  const std::int64_t side = image_side(a.name, a.inputs);
  if (a.hidden.size() != 3)
    throw InvalidArgument(fmt::format("architecture cnn: hidden must be three sizes (conv 1, conv 2, linear), "
                                      "not {}",
                                      a.hidden.size()));
  auto net = std::make_unique<nn::SequentialBlock>();
  net->add(reshape_rows(fmt::format("Image[1, {}, {}]", side, side), {1, side, side}))
      .add(conv_stage(a.hidden[0]))
      .add(conv_stage(a.hidden[1]))
      .add(nn::batch_flatten_block())
      .add(std::make_unique<nn::Dropout>(0.25))
      .add(std::make_unique<nn::Linear>(a.hidden[2]))
      .add(nn::relu_block())
      .add(std::make_unique<nn::Linear>(a.outputs));
  return net;
}

// The image's rows as steps, LSTM(hidden[0]), the last step's output.
std::unique_ptr<nn::Block> make_lstm(const Architecture& a) {
  const std::int64_t side = image_side(a.name, a.inputs);
  if (a.hidden.size() != 1)
    throw InvalidArgument(fmt::format("architecture lstm: hidden must be one size (the LSTM's), not {}", a.hidden.size()));
  auto last_step = [](const Shape& s) {
    if (s.rank() != 3) throw InvalidArgument(fmt::format("LastStep: the input must be [B, T, H], not {}", s.to_string()));
    return Shape{s[0], s[2]};
  };
  auto net = std::make_unique<nn::SequentialBlock>();
  net->add(reshape_rows(fmt::format("Steps[{}, {}]", side, side), {side, side}))
      .add(std::make_unique<nn::LSTM>(a.hidden[0]))
      .add(std::make_unique<nn::LambdaBlock>(
          "LastStep", [](const NDList& in) { return NDList{in.head().get(":, -1, :")}; }, last_step))
      .add(std::make_unique<nn::Linear>(a.outputs));
  return net;
}

}  // namespace

Architecture Architecture::mlp(std::int64_t inputs, std::int64_t outputs, std::vector<std::int64_t> hidden) {
  Architecture a;
  a.inputs = inputs;
  a.outputs = outputs;
  a.hidden = std::move(hidden);
  return a;
}

Architecture Architecture::cnn(std::int64_t inputs, std::int64_t outputs, std::vector<std::int64_t> hidden) {
  Architecture a = mlp(inputs, outputs, std::move(hidden));
  a.name = "cnn";
  return a;
}

Architecture Architecture::lstm(std::int64_t inputs, std::int64_t outputs, std::int64_t hidden_size) {
  Architecture a = mlp(inputs, outputs, {hidden_size});
  a.name = "lstm";
  return a;
}

std::unique_ptr<nn::Block> Architecture::make_block() const {
  if (name == "mlp") return std::make_unique<nn::Mlp>(inputs, outputs, hidden);
  if (name == "cnn") return make_cnn(*this);
  if (name == "lstm") return make_lstm(*this);
  throw InvalidArgument(fmt::format("unknown architecture '{}' (known: mlp, cnn, lstm)", name));
}

}  // namespace ndgc

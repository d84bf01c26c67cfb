// Mlp: DJL's multilayer perceptron as a SequentialBlock.
#include <fmt/format.h>

#include "ndgc/error.hpp"
#include "ndgc/nn.hpp"

namespace ndgc::nn {

Mlp::Mlp(std::int64_t in, std::int64_t out, const std::vector<std::int64_t>& hidden,
         std::function<std::unique_ptr<Block>()> activation)
    : in_(in), out_(out) {
  if (in <= 0 || out <= 0) throw InvalidArgument(fmt::format("Mlp: sizes must be positive ({} -> {})", in, out));
  if (!activation) throw InvalidArgument("Mlp: the activation factory is empty");
  add(batch_flatten_block());
  for (std::int64_t units : hidden) {
    add(std::make_unique<Linear>(units));
    add(activation());
  }
  add(std::make_unique<Linear>(out));
}

std::string Mlp::describe() const {
  return fmt::format("Mlp({} -> {}: {})", in_, out_, SequentialBlock::describe());
}

}  // namespace ndgc::nn

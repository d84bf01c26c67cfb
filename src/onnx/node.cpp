// See node.hpp.
#include "onnx/node.hpp"

#include <cstring>

#include <fmt/format.h>

#include "ndgc/error.hpp"

namespace ndgc::onnx::detail {

std::string Node::label() const {
  if (!proto_->name().empty()) return fmt::format("{} '{}'", op_type(), proto_->name());
  return fmt::format("{} #{}", op_type(), index_);
}

const ::onnx::AttributeProto* Node::find(const char* attribute) const {
  for (const auto& a : proto_->attribute())
    if (a.name() == attribute) return &a;
  return nullptr;
}

std::int64_t Node::i(const char* attribute, std::int64_t fallback) const {
  const auto* a = find(attribute);
  return a ? a->i() : fallback;
}

float Node::f(const char* attribute, float fallback) const {
  const auto* a = find(attribute);
  return a ? a->f() : fallback;
}

std::string Node::s(const char* attribute, std::string fallback) const {
  const auto* a = find(attribute);
  return a ? a->s() : std::move(fallback);
}

std::vector<std::int64_t> Node::ints(const char* attribute, std::vector<std::int64_t> fallback) const {
  const auto* a = find(attribute);
  if (!a) return fallback;
  return {a->ints().begin(), a->ints().end()};
}

std::vector<float> Node::floats(const char* attribute) const {
  const auto* a = find(attribute);
  if (!a) return {};
  return {a->floats().begin(), a->floats().end()};
}

const ::onnx::TensorProto* Node::t(const char* attribute) const {
  const auto* a = find(attribute);
  return a && a->has_t() ? &a->t() : nullptr;
}

}  // namespace ndgc::onnx::detail

// A graph node as the kernels read it: op type, name and typed attributes.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "onnx/proto.hpp"

namespace ndgc::onnx::detail {

class Node {
 public:
  explicit Node(const ::onnx::NodeProto& proto) : proto_(&proto) {}
  const ::onnx::NodeProto& proto() const noexcept { return *proto_; }
  const std::string& op_type() const noexcept { return proto_->op_type(); }
  // "Conv 'conv1'" (or "Conv #3" for an unnamed node): how errors name it.
  std::string label() const;

  bool has(const char* attribute) const { return find(attribute) != nullptr; }
  std::int64_t i(const char* attribute, std::int64_t fallback) const;
  float f(const char* attribute, float fallback) const;
  std::string s(const char* attribute, std::string fallback) const;
  std::vector<std::int64_t> ints(const char* attribute, std::vector<std::int64_t> fallback = {}) const;
  std::vector<float> floats(const char* attribute) const;
  const ::onnx::TensorProto* t(const char* attribute) const;
  const ::onnx::AttributeProto* find(const char* attribute) const;

  // Names of the inputs and outputs ("" for an omitted optional one).
  std::size_t input_count() const { return static_cast<std::size_t>(proto_->input_size()); }
  std::size_t output_count() const { return static_cast<std::size_t>(proto_->output_size()); }
  bool input_given(std::size_t k) const { return k < input_count() && !proto_->input(int(k)).empty(); }
  bool output_wanted(std::size_t k) const { return k < output_count() && !proto_->output(int(k)).empty(); }

  void set_index(int index) noexcept { index_ = index; }

 private:
  const ::onnx::NodeProto* proto_;
  int index_ = -1;
};

}  // namespace ndgc::onnx::detail

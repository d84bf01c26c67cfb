// Block: parameters, children, full names and the default initialization.
// Thread-safety: see ndgc/nn.hpp.
#include <utility>

#include <fmt/format.h>

#include "ndgc/autograd.hpp"
#include "ndgc/error.hpp"
#include "ndgc/nn.hpp"
#include "support/scope_exit.hpp"

namespace ndgc::nn {
namespace {

// The block whose default two-argument forward is calling its one-argument
// form on this thread: met again, the block overrides neither.
thread_local const Block* t_defaulting = nullptr;

}  // namespace

NDList Block::forward(const NDList& inputs, bool) {
  if (t_defaulting == this)
    throw InvalidArgument(fmt::format("{}: the block overrides neither forward(inputs) nor forward(inputs, training)",
                                     describe()));
  const Block* outer = std::exchange(t_defaulting, this);
  support::ScopeExit restore{[outer] { t_defaulting = outer; }};
  return forward(inputs);
}

NDList Block::forward(const NDList& inputs) { return forward(inputs, autograd::is_recording()); }

Shape Block::initialize(const ManagerRef& manager, const Shape& input_shape, DataType dtype) {
  initialize_self(manager, input_shape, dtype);
  return output_shape(input_shape);
}

void Block::initialize_self(const ManagerRef&, const Shape&, DataType) {}

bool Block::is_initialized() const {
  for (const auto& p : parameters_)
    if (!p->is_initialized()) return false;
  for (const auto& [name, child] : children_)
    if (!child->is_initialized()) return false;
  return true;
}

void Block::collect(const std::string& prefix, ParameterList& out) {
  for (const auto& p : parameters_) out.push_back({prefix + p->name(), p.get()});
  for (const auto& [name, child] : children_) child->collect(prefix + name + ".", out);
}

ParameterList Block::parameters() {
  ParameterList out;
  collect("", out);
  return out;
}

ParameterList Block::trainable_parameters() {
  ParameterList out;
  for (const NamedParameter& p : parameters())
    if (p.parameter->trainable()) out.push_back(p);
  return out;
}

NDList Block::parameter_arrays() {
  NDList out;
  for (const NamedParameter& p : trainable_parameters()) out.push_back(p.parameter->array());
  return out;
}

void Block::set_initializer(std::shared_ptr<const Initializer> initializer, Parameter::Kind kind) {
  for (const NamedParameter& p : parameters())
    if (p.parameter->kind() == kind) p.parameter->set_initializer(initializer);
}

Parameter& Block::add_parameter(std::string name, Parameter::Kind kind) {
  parameters_.push_back(std::make_unique<Parameter>(std::move(name), kind));
  return *parameters_.back();
}

Block& Block::add_child(std::string name, std::unique_ptr<Block> child) {
  if (!child) throw InvalidArgument(fmt::format("add_child: child '{}' is null", name));
  children_.emplace_back(std::move(name), std::move(child));
  return *children_.back().second;
}

}  // namespace ndgc::nn

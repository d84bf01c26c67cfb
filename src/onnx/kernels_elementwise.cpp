// Element-wise kernels: arithmetic, comparisons, activations, Clip, Cast and
// Where, each one ndgc op or a short composition of them (so each has the
// ops' autograd and device kernels).
#include <fmt/format.h>

#include "ndgc/error.hpp"
#include "onnx/kernel_support.hpp"
#include "onnx/tensors.hpp"

namespace ndgc::onnx::detail {
namespace {

// Folds a variadic op (Max, Min, Sum) over every input.
template <NDArray (NDArray::*Op)(const NDArray&, Site) const>
void fold_inputs(RunContext& c) {
  NDArray acc = c.in(0);
  for (std::size_t k = 1; k < c.inputs.size(); ++k) acc = (acc.*Op)(c.in(k), Site::current());
  c.outputs.push_back(acc);
}

// Before opset 7, `broadcast` 1 with an `axis` lines B up with A from that
// axis (not from the end, as NumPy does): B gains trailing axes of length 1.
NDArray legacy_aligned(const RunContext& c, const NDArray& a, const NDArray& b) {
  if (c.opset >= 7 || c.node.i("broadcast", 0) == 0 || !c.node.has("axis")) return b;
  const int axis = axis_in(c.node.i("axis", 0), a.rank(), c.node);
  const Shape bs = b.shape();
  std::vector<std::int64_t> dims(bs.begin(), bs.end());
  dims.resize(std::size_t(std::max(a.rank() - axis, b.rank())), 1);
  return b.reshape(to_shape(dims));
}

template <NDArray (NDArray::*Op)(const NDArray&, Site) const>
void binary(RunContext& c) {
  const NDArray& a = c.in(0);
  c.outputs.push_back((a.*Op)(legacy_aligned(c, a, c.in(1)), Site::current()));
}

template <NDArray (NDArray::*Op)(Site) const>
void unary(RunContext& c) {
  c.outputs.push_back((c.in(0).*Op)(Site::current()));
}

std::string no_boolean(const CheckContext& c) { return same_numeric(c); }

// Pow's result has the base's dtype; an exponent of another dtype is cast to
// the base's (floating base), or both go through float64 (integer base).
void run_pow(RunContext& c) {
  const NDArray& base = c.in(0);
  const NDArray& exponent = legacy_aligned(c, base, c.in(1));
  if (exponent.dtype() == base.dtype() && is_floating(base.dtype())) {
    c.outputs.push_back(base.pow(exponent));
    return;
  }
  if (is_floating(base.dtype())) {
    c.outputs.push_back(base.pow(exponent.to_type(base.dtype())));
    return;
  }
  const NDArray wide = base.to_type(DataType::float64).pow(exponent.to_type(DataType::float64));
  c.outputs.push_back(wide.to_type(base.dtype()));
}

std::string pow_check(const CheckContext& c) { return numeric_data(c); }

// x where x > 0, alpha (e^x - 1) elsewhere.
NDArray elu(const NDArray& x, double alpha) { return where(x.gt(0.0), x, x.exp().sub(1.0).mul(alpha)); }

void add_activations(KernelTable& t) {
  t.add("Relu", {unary<&NDArray::relu>, no_boolean});
  t.add("Sigmoid", {unary<&NDArray::sigmoid>, floats_only});
  t.add("Tanh", {unary<&NDArray::tanh>, floats_only});
  t.add("LeakyRelu", {[](RunContext& c) {
                        const NDArray& x = c.in(0);
                        c.outputs.push_back(where(x.lt(0.0), x.mul(c.node.f("alpha", 0.01f)), x));
                      }, floats_only});
  t.add("PRelu", {[](RunContext& c) {
                    const NDArray& x = c.in(0);
                    NDArray slope = c.in(1);
                    // Before opset 7 a slope of [C] is per channel (axis 1), not per last axis.
                    if (c.opset < 7 && slope.rank() == 1 && x.rank() > 2 && slope.shape()[0] == x.shape()[1]) {
                      Shape s(std::vector<std::int64_t>(std::size_t(x.rank() - 1), 1));
                      s[0] = slope.shape()[0];
                      slope = slope.reshape(s);
                    }
                    c.outputs.push_back(where(x.lt(0.0), x.mul(slope), x));
                  }, floats_only});
  t.add("Elu", {[](RunContext& c) { c.outputs.push_back(elu(c.in(0), c.node.f("alpha", 1.0f))); }, floats_only});
  // max(0, x) + min(0, alpha (e^(x/alpha) - 1)): Elu of x/alpha, times alpha.
  t.add("Celu", {[](RunContext& c) {
                   const double alpha = c.node.f("alpha", 1.0f);
                   c.outputs.push_back(elu(c.in(0).div(alpha), 1.0).mul(alpha));
                 }, floats_only});
  t.add("Selu", {[](RunContext& c) {
                   const double alpha = c.node.f("alpha", 1.67326319217681884765625f);
                   const double gamma = c.node.f("gamma", 1.05070102214813232421875f);
                   c.outputs.push_back(elu(c.in(0), alpha).mul(gamma));
                 }, floats_only});
  t.add("Softplus", {[](RunContext& c) { c.outputs.push_back(c.in(0).exp().add(1.0).log()); }, floats_only, 1, false, 1});
  t.add("Softsign", {[](RunContext& c) {
                       const NDArray& x = c.in(0);
                       c.outputs.push_back(x.div(x.abs().add(1.0)));
                     }, floats_only, 1, false, 1});
  t.add("HardSigmoid", {[](RunContext& c) {
                          const NDArray& x = c.in(0);
                          NDArray y = x.mul(c.node.f("alpha", 0.2f)).add(c.node.f("beta", 0.5f));
                          c.outputs.push_back(y.maximum(0.0).minimum(1.0));
                        }, floats_only});
  t.add("HardSwish", {[](RunContext& c) {
                        const NDArray& x = c.in(0);
                        c.outputs.push_back(x.mul(x.mul(1.0 / 6).add(0.5).maximum(0.0).minimum(1.0)));
                      }, floats_only});
  t.add("ThresholdedRelu", {[](RunContext& c) {
                              const NDArray& x = c.in(0);
                              c.outputs.push_back(where(x.gt(double(c.node.f("alpha", 1.0f))), x, x.mul(0.0)));
                            }, floats_only});
}

// Mod: fmod 1 keeps the dividend's sign (C's fmod), fmod 0 the divisor's
// (Python's %, integers only); integer division truncates, so the second
// adds the divisor back where the signs differ.
void run_mod(RunContext& c) {
  const NDArray& a = c.in(0);
  const NDArray& b = c.in(1);
  if (is_floating(a.dtype())) {
    const NDArray q = a.div(b);
    const NDArray truncated = where(q.lt(0.0), q.ceil(), q.floor());
    c.outputs.push_back(a.sub(b.mul(truncated)));
    return;
  }
  NDArray r = a.sub(b.mul(a.div(b)));
  if (c.node.i("fmod", 0) == 0) {
    const NDArray nonzero = r.ne(0.0), differ = r.lt(0.0).ne(b.lt(0.0));
    r = where(where(nonzero, differ, nonzero), r.add(b), r);  // nonzero and differ
  }
  c.outputs.push_back(r);
}

std::string mod_check(const CheckContext& c) {
  if (std::string why = same_numeric(c); !why.empty()) return why;
  if (!c.input_dtypes.empty() && c.input_dtypes[0] && is_floating(*c.input_dtypes[0]) && c.node.i("fmod", 0) == 0)
    return "fmod 0 on floating inputs is not an ONNX model";
  return "";
}

void add_math(KernelTable& t) {
  t.add("Floor", {unary<&NDArray::floor>, floats_only});
  t.add("Ceil", {unary<&NDArray::ceil>, floats_only});
  t.add("Round", {unary<&NDArray::round>, floats_only});
  t.add("Sin", {unary<&NDArray::sin>, floats_only});
  t.add("Cos", {unary<&NDArray::cos>, floats_only});
  t.add("Tan", {unary<&NDArray::tan>, floats_only});
  t.add("Asin", {unary<&NDArray::asin>, floats_only});
  t.add("Acos", {unary<&NDArray::acos>, floats_only});
  t.add("Atan", {unary<&NDArray::atan>, floats_only});
  t.add("Sinh", {unary<&NDArray::sinh>, floats_only});
  t.add("Cosh", {unary<&NDArray::cosh>, floats_only});
  t.add("Asinh", {unary<&NDArray::asinh>, floats_only});
  t.add("Acosh", {unary<&NDArray::acosh>, floats_only});
  t.add("Atanh", {unary<&NDArray::atanh>, floats_only});
  t.add("Erf", {unary<&NDArray::erf>, floats_only});
  t.add("Mod", {run_mod, mod_check});
  t.add("Abs", {unary<&NDArray::abs>, no_boolean});
  t.add("Neg", {unary<&NDArray::neg>, no_boolean});
  t.add("Exp", {unary<&NDArray::exp>, floats_only});
  t.add("Log", {unary<&NDArray::log>, floats_only});
  t.add("Sqrt", {unary<&NDArray::sqrt>, floats_only});
  t.add("Reciprocal", {[](RunContext& c) { c.outputs.push_back(c.in(0).rdiv(1.0)); }, floats_only});
  t.add("Add", {binary<&NDArray::add>, no_boolean});
  t.add("Sub", {binary<&NDArray::sub>, no_boolean});
  t.add("Mul", {binary<&NDArray::mul>, no_boolean});
  t.add("Div", {binary<&NDArray::div>, no_boolean});  // integers truncate, as C++ and ONNX Runtime
  t.add("Pow", {run_pow, pow_check});
  t.add("Max", {fold_inputs<&NDArray::maximum>, no_boolean});
  t.add("Min", {fold_inputs<&NDArray::minimum>, no_boolean});
  t.add("Sum", {fold_inputs<&NDArray::add>, no_boolean});
  t.add("Mean", {[](RunContext& c) {
                   fold_inputs<&NDArray::add>(c);
                   c.outputs[0] = c.outputs[0].div(double(c.inputs.size()));
                 }, floats_only});
}

void add_logic(KernelTable& t) {
  t.add("Equal", {binary<&NDArray::eq>});
  t.add("Greater", {binary<&NDArray::gt>});
  t.add("Less", {binary<&NDArray::lt>});
  t.add("GreaterOrEqual", {binary<&NDArray::ge>});
  t.add("LessOrEqual", {binary<&NDArray::le>});
  t.add("Not", {[](RunContext& c) { c.outputs.push_back(c.in(0).eq(0.0)); }, nullptr, 1, false, 1});
  // On booleans: a and b = (a ? b : a), a or b = (a ? a : b), a xor b = (a != b).
  t.add("And", {[](RunContext& c) { c.outputs.push_back(where(c.in(0), c.in(1), c.in(0))); }});
  t.add("Or", {[](RunContext& c) { c.outputs.push_back(where(c.in(0), c.in(0), c.in(1))); }});
  t.add("Xor", {[](RunContext& c) { c.outputs.push_back(c.in(0).ne(c.in(1))); }});
  t.add("Where", {[](RunContext& c) { c.outputs.push_back(where(c.in(0), c.in(1), c.in(2))); }});
}

void run_clip(RunContext& c) {
  NDArray y = c.in(0);
  if (c.opset < 11) {
    if (c.node.has("min")) y = y.maximum(double(c.node.f("min", 0)));
    if (c.node.has("max")) y = y.minimum(double(c.node.f("max", 0)));
  } else {
    if (c.has(1)) y = y.maximum(c.in(1).reshape(Shape{}));
    if (c.has(2)) y = y.minimum(c.in(2).reshape(Shape{}));
  }
  c.outputs.push_back(y);  // unclipped: the input itself
}

std::string cast_check(const CheckContext& c) {
  const std::int64_t to = c.node.i("to", 0);
  if (!dtype_of_elem(static_cast<std::int32_t>(to)))
    return fmt::format("it casts to {}, which ndgc has no dtype for", elem_name(static_cast<std::int32_t>(to)));
  return "";
}

}  // namespace

void add_elementwise_kernels(KernelTable& t) {
  add_activations(t);
  add_math(t);
  add_logic(t);
  t.add("Clip", {run_clip, no_boolean});
  t.add("CastLike", {[](RunContext& c) {
                       const NDArray& x = c.in(0);
                       const DataType to = c.in(1).dtype();
                       c.outputs.push_back(x.dtype() == to ? x : x.to_type(to));
                     }});
  t.add("Cast", {[](RunContext& c) {
                   const DataType to = *dtype_of_elem(static_cast<std::int32_t>(c.node.i("to", 0)));
                   const NDArray& x = c.in(0);
                   c.outputs.push_back(x.dtype() == to ? x : x.to_type(to));
                 }, cast_check});
}

}  // namespace ndgc::onnx::detail

// Helpers the kernel families share.
//
// Kernels read small integer arguments (Reshape's shape, Slice's bounds, the
// axes of Squeeze and the reductions) on the host, through RunContext::ints:
// on a GPU the pass keeps them there (Note [Shape arithmetic on the host] in
// graph_host.cpp).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "ndgc/ndarray.hpp"
#include "ndgc/shape.hpp"
#include "onnx/kernels.hpp"

namespace ndgc::onnx::detail {

// The elements of a small integer (or floating) array, as int64, on the host.
std::vector<std::int64_t> read_ints(const NDArray& array);
// The elements of an array, as double, row-major, on the host.
std::vector<double> read_doubles(const NDArray& array);
// One element, as double.
double read_scalar(const NDArray& array);
// `axis` in [-rank, rank) made non-negative; InvalidArgument naming the node otherwise.
int axis_in(std::int64_t axis, int rank, const Node& node);
Shape to_shape(std::span<const std::int64_t> dims);
// An int64 array of `values` in the run's manager.
NDArray make_ints(const RunContext& c, const std::vector<std::int64_t>& values, const Shape& shape);
// x with `before` and `after` elements of `value` added at the two ends of
// `axis` (a negative count crops that end instead): concat of full arrays and
// x, so x keeps its gradient. Pad, ConvTranspose and the windows' explicit
// padding all use it.
NDArray pad_constant(const RunContext& c, NDArray x, int axis, std::int64_t before, std::int64_t after, double value);
// Elements of floating x along `axis` at `indices` (any integer dtype, each
// in [0, n), on x's device): an embedding lookup into x with `axis` moved
// first, so it has a gradient. The caller has checked the indices, so the
// engine is told they are in range (ops::embedding_in_range): on a GPU
// neither pass reads a check back.
NDArray gather_floating(const NDArray& x, NDArray indices, int axis);
// The elements of x at positions `at` (in [0, n), shaped `index_shape`) along
// `axis`: an embedding lookup for floating x (it has a gradient), a host
// gather for integer x (shape arithmetic).
NDArray gather_along(const RunContext& c, const NDArray& x, const std::vector<std::int64_t>& at, const Shape& index_shape,
                     int axis);

// Checks: "" when the node can run, the reason otherwise.
std::string floats_only(const CheckContext& c);          // every known input dtype floating
std::string same_numeric(const CheckContext& c);          // known inputs share one dtype, not boolean
std::string numeric_data(const CheckContext& c);          // input 0, if known, is not boolean
// The value of a constant integer input, if it is one.
std::optional<std::vector<std::int64_t>> constant_ints(const CheckContext& c, std::size_t k);

}  // namespace ndgc::onnx::detail

// Reductions (ReduceSum, ReduceMean, ReduceMax, ReduceMin and the composed
// ReduceSumSquare, ReduceL1, ReduceL2, ReduceLogSum, ReduceLogSumExp,
// ReduceProd) and
// ArgMax / ArgMin.
#include <numbers>

#include <fmt/format.h>

#include "ndgc/error.hpp"
#include "onnx/kernel_support.hpp"

namespace ndgc::onnx::detail {
namespace {

enum class Reduce { sum, mean, max, min, sum_square, l1, l2, log_sum, log_sum_exp, prod };

// The axes a node reduces: the attribute, or (ReduceSum from opset 13) the
// input; none given means every axis, unless noop_with_empty_axes.
std::vector<int> reduced_axes(const RunContext& c, bool& noop) {
  std::vector<std::int64_t> given;
  if (c.node.op_type() == "ReduceSum" && c.opset >= 13) {
    if (c.has(1)) given = c.ints(1);
  } else {
    given = c.node.ints("axes");
  }
  const int rank = c.in(0).rank();
  std::vector<int> axes;
  noop = given.empty() && c.node.i("noop_with_empty_axes", 0) != 0;
  if (given.empty())
    for (int k = 0; k < rank; ++k) axes.push_back(k);
  for (std::int64_t a : given) axes.push_back(axis_in(a, rank, c.node));
  return axes;
}

// The product as sign · exp(Σ log|x|), 0 where a factor is 0: the sign from
// the count of negative factors, cos(π n) = ±1. Its gradient, through the
// composition, is product / x away from zeros.
NDArray product(const NDArray& x, const std::vector<int>& axes, bool keep) {
  const NDArray magnitude = x.abs().log().sum(axes, keep).exp();
  const NDArray sign = x.lt(0.0).to_type(x.dtype()).sum(axes, keep).mul(std::numbers::pi).cos();
  const NDArray has_zero = x.eq(0.0).to_type(x.dtype()).max(axes, keep).gt(0.0);
  return where(has_zero, x.mul(0.0).sum(axes, keep), magnitude.mul(sign));
}

template <Reduce R>
void run_reduce(RunContext& c) {
  const NDArray& x = c.in(0);
  bool noop = false;
  const std::vector<int> axes = reduced_axes(c, noop);
  if (noop || axes.empty()) {
    c.outputs.push_back(x);
    return;
  }
  const bool keep = c.node.i("keepdims", 1) != 0;
  NDArray y;
  switch (R) {
    case Reduce::sum: y = x.sum(axes, keep); break;
    case Reduce::mean: y = x.mean(axes, keep); break;
    case Reduce::max: y = x.max(axes, keep); break;
    case Reduce::min: y = x.min(axes, keep); break;
    case Reduce::sum_square: y = x.mul(x).sum(axes, keep); break;
    case Reduce::l1: y = x.abs().sum(axes, keep); break;
    case Reduce::l2: y = x.mul(x).sum(axes, keep).sqrt(); break;
    case Reduce::log_sum: y = x.sum(axes, keep).log(); break;
    case Reduce::log_sum_exp: y = x.exp().sum(axes, keep).log(); break;
    case Reduce::prod: y = product(x, axes, keep); break;
  }
  c.outputs.push_back(y);
}

// select_last_index: the first extreme of the reversed axis, counted from the end.
template <bool Max>
void run_arg(RunContext& c) {
  const NDArray& x = c.in(0);
  const int axis = axis_in(c.node.i("axis", 0), x.rank(), c.node);
  const bool keep = c.node.i("keepdims", 1) != 0;
  if (c.node.i("select_last_index", 0) == 0) {
    c.outputs.push_back(Max ? x.argmax(axis, keep) : x.argmin(axis, keep));
    return;
  }
  const std::int64_t n = x.shape()[axis];
  std::vector<std::int64_t> reversed(static_cast<std::size_t>(n));
  for (std::int64_t k = 0; k < n; ++k) reversed[std::size_t(k)] = n - 1 - k;
  NDArray r = gather_along(c, x, reversed, Shape{n}, axis);
  c.outputs.push_back((Max ? r.argmax(axis, keep) : r.argmin(axis, keep)).rsub(double(n - 1)));
}

}  // namespace

void add_reduce_kernels(KernelTable& t) {
  t.add("ReduceSum", {run_reduce<Reduce::sum>, numeric_data});
  t.add("ReduceMean", {run_reduce<Reduce::mean>, floats_only});
  t.add("ReduceMax", {run_reduce<Reduce::max>, numeric_data});
  t.add("ReduceMin", {run_reduce<Reduce::min>, numeric_data});
  t.add("ReduceSumSquare", {run_reduce<Reduce::sum_square>, floats_only});
  t.add("ReduceL1", {run_reduce<Reduce::l1>, floats_only});
  t.add("ReduceL2", {run_reduce<Reduce::l2>, floats_only});
  t.add("ReduceLogSum", {run_reduce<Reduce::log_sum>, floats_only});
  t.add("ReduceLogSumExp", {run_reduce<Reduce::log_sum_exp>, floats_only});
  t.add("ReduceProd", {run_reduce<Reduce::prod>, floats_only});
  t.add("ArgMax", {run_arg<true>, numeric_data});
  t.add("ArgMin", {run_arg<false>, numeric_data});
}

}  // namespace ndgc::onnx::detail

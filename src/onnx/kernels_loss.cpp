// NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss, composed of one_hot,
// mul and sum so that they have a gradient for the scores.
//
//   loss[n, d...] = -input[n, target[n, d...], d...] · weight[target[n, d...]]
// zeroed where target == ignore_index; reduction "none" keeps it, "sum" sums
// it, "mean" divides the sum by the summed weights of the counted elements.
#include <fmt/format.h>

#include "ndgc/error.hpp"
#include "onnx/kernel_support.hpp"

namespace ndgc::onnx::detail {
namespace {

// `input` [N, C, d...] (log-probabilities), `target` [N, d...] of class indices.
NDArray nll(const RunContext& c, const NDArray& input, const NDArray& target, const NDArray& weight) {
  if (input.rank() < 2 || target.rank() != input.rank() - 1)
    throw ShapeMismatch(fmt::format("onnx: {}: input {} and target {} do not match", c.node.label(),
                                    input.shape().to_string(), target.shape().to_string()));
  const std::int64_t classes = input.shape()[1];
  NDArray t = target.to_type(DataType::int64);
  NDArray counted;
  if (c.node.has("ignore_index")) {
    counted = t.ne(double(c.node.i("ignore_index", 0)));
    t = t.mul(counted.to_type(DataType::int64));  // an ignored element picks class 0, then weighs 0
  }
  NDArray hot = t.one_hot(classes, input.dtype());  // [N, d..., C]
  std::vector<int> to_nc{0, hot.rank() - 1};
  for (int k = 1; k < hot.rank() - 1; ++k) to_nc.push_back(k);
  hot = hot.permute(to_nc);  // [N, C, d...]
  NDArray picked = input.mul(hot).sum({1});
  NDArray w;
  if (weight.defined()) {
    Shape ws(std::vector<std::int64_t>(std::size_t(input.rank()), 1));
    ws[1] = classes;
    w = hot.mul(weight.reshape(ws)).sum({1});
  } else {
    w = hot.sum({1});
  }
  if (counted.defined()) w = w.mul(counted.to_type(input.dtype()));
  NDArray loss = picked.mul(w).neg();
  const std::string reduction = c.node.s("reduction", "mean");
  if (reduction == "none") return loss;
  if (reduction == "sum") return loss.sum();
  return loss.sum().div(w.sum());
}

std::string loss_check(const CheckContext& c) {
  const std::string reduction = c.node.s("reduction", "mean");
  if (reduction != "none" && reduction != "sum" && reduction != "mean")
    return fmt::format("reduction '{}' is not an ONNX value", reduction);
  return floats_only(c);
}

}  // namespace

void add_loss_kernels(KernelTable& t) {
  t.add("NegativeLogLikelihoodLoss", {[](RunContext& c) {
                                        c.outputs.push_back(nll(c, c.in(0), c.in(1), c.has(2) ? c.in(2) : NDArray{}));
                                      }, loss_check});
  t.add("SoftmaxCrossEntropyLoss", {[](RunContext& c) {
                                      NDArray log_prob = c.in(0).log_softmax(1);
                                      c.outputs.push_back(nll(c, log_prob, c.in(1), c.has(2) ? c.in(2) : NDArray{}));
                                      c.outputs.push_back(log_prob);
                                    }, loss_check, 2});
}

}  // namespace ndgc::onnx::detail

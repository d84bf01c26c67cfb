// See window.hpp.
#include "onnx/window.hpp"

#include <algorithm>

#include <fmt/format.h>

namespace ndgc::onnx::detail {
namespace {

// SAME padding: the output is ceil(in / stride); the total pad is split with
// the odd element at the end (SAME_UPPER) or the start (SAME_LOWER).
std::string same_pads(const std::vector<std::int64_t>& kernel, const std::vector<std::int64_t>& strides,
                      const std::vector<std::int64_t>& dilations, const std::vector<std::int64_t>& input, bool upper,
                      std::vector<std::int64_t>& begin, std::vector<std::int64_t>& end) {
  begin.clear(), end.clear();
  for (std::size_t a = 0; a < kernel.size(); ++a) {
    const std::int64_t in = a < input.size() ? input[a] : -1;
    if (in < 0) return "auto_pad SAME needs the input's spatial size, which the graph does not fix";
    const std::int64_t s = strides[a], k = (kernel[a] - 1) * dilations[a] + 1;
    const std::int64_t out = (in + s - 1) / s;
    const std::int64_t total = std::max<std::int64_t>((out - 1) * s + k - in, 0);
    begin.push_back(upper ? total / 2 : total - total / 2);
    end.push_back(total - begin.back());
  }
  return "";
}

// Where spatial axis `a` of a `spatial`-axis window goes in the 2-D pairs: a
// 1-D window is the width of a 2-D one; a 3-D one keeps its last two there.
std::size_t pair_axis(int spatial, std::size_t a) { return spatial == 1 ? 1 : spatial == 3 ? a - 1 : a; }

}  // namespace

Window window_of(const Node& node, const std::vector<std::int64_t>& kernel, const std::vector<std::int64_t>& input) {
  Window w;
  w.spatial = int(kernel.size());
  if (w.spatial < 1 || w.spatial > 3) {
    w.problem = fmt::format("{} spatial axes; ndgc runs 1, 2 and 3", kernel.size());
    return w;
  }
  const auto n = std::size_t(w.spatial);
  const std::vector<std::int64_t> strides = node.ints("strides", std::vector<std::int64_t>(n, 1));
  const std::vector<std::int64_t> dilations = node.ints("dilations", std::vector<std::int64_t>(n, 1));
  std::vector<std::int64_t> pads = node.ints("pads", std::vector<std::int64_t>(2 * n, 0));
  if (strides.size() != n || dilations.size() != n || pads.size() != 2 * n) {
    w.problem = "strides, dilations or pads do not match the kernel's rank";
    return w;
  }
  for (std::size_t a = 0; a < n; ++a) {
    if (w.spatial == 3 && a == 0) {
      w.depth.kernel = kernel[a], w.depth.stride = strides[a], w.depth.dilation = dilations[a];
      continue;
    }
    const std::size_t to = pair_axis(w.spatial, a);
    w.kernel[to] = kernel[a], w.stride[to] = strides[a], w.dilation[to] = dilations[a];
  }
  for (std::size_t a = 0; a < n; ++a)
    if (kernel[a] < 1 || strides[a] < 1 || dilations[a] < 1) {
      w.problem = fmt::format("kernel {}, stride {} and dilation {} must be positive", kernel[a], strides[a], dilations[a]);
      return w;
    }
  const std::string auto_pad = node.s("auto_pad", "NOTSET");
  std::vector<std::int64_t> begin(pads.begin(), pads.begin() + long(n)), end(pads.begin() + long(n), pads.end());
  if (auto_pad == "VALID") {
    begin.assign(n, 0), end.assign(n, 0);
  } else if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
    w.problem = same_pads(kernel, strides, dilations, input, auto_pad == "SAME_UPPER", begin, end);
    if (!w.problem.empty()) return w;
  } else if (auto_pad != "NOTSET") {
    w.problem = fmt::format("auto_pad '{}' is not an ONNX value", auto_pad);
    return w;
  }
  for (std::size_t a = 0; a < n; ++a) {
    if (begin[a] < 0 || end[a] < 0) {
      w.problem = fmt::format("pads ({} and {}) are negative", begin[a], end[a]);
      return w;
    }
    if (w.spatial == 3 && a == 0) {
      w.depth.begin = begin[a], w.depth.end = end[a];
      continue;
    }
    const std::size_t to = pair_axis(w.spatial, a);
    w.begin[to] = begin[a], w.end[to] = end[a];
    w.padding[to] = begin[a] == end[a] ? begin[a] : 0;
  }
  return w;
}

}  // namespace ndgc::onnx::detail

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

}  // namespace

Window window_of(const Node& node, const std::vector<std::int64_t>& kernel, const std::vector<std::int64_t>& input) {
  Window w;
  w.spatial = int(kernel.size());
  if (w.spatial != 1 && w.spatial != 2) {
    w.problem = fmt::format("{} spatial axes; ndgc runs 1 and 2", kernel.size());
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
    const std::size_t to = w.spatial == 1 ? 1 : a;  // a 1-D window is the width of a 2-D one
    w.kernel[to] = kernel[a], w.stride[to] = strides[a], w.dilation[to] = dilations[a];
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
    const std::size_t to = w.spatial == 1 ? 1 : a;
    if (begin[a] < 0 || end[a] < 0) {
      w.problem = fmt::format("pads ({} and {}) are negative", begin[a], end[a]);
      return w;
    }
    w.begin[to] = begin[a], w.end[to] = end[a];
    w.padding[to] = begin[a] == end[a] ? begin[a] : 0;
  }
  return w;
}

}  // namespace ndgc::onnx::detail

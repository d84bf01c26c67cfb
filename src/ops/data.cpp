// Getting data out: copy_to / to_vector, item, to_string.
#include <sstream>

#include <fmt/format.h>

#include "ndgc/error.hpp"
#include "ndgc/ndarray.hpp"
#include "ops/op_support.hpp"

namespace ndgc {

using namespace ndgc::ops;

void NDArray::copy_to(void* out, DataType as, std::size_t count) const {
  detail::enter();
  Pinned a(*this, "to_vector");
  if (count != std::size_t(a->size()))
    throw InvalidArgument(fmt::format("copy_to: room for {} elements, but {} has {}", count, describe(*a), a->size()));
  engine(a->device).to_host(view_of(*a), contiguous_view(out, as, a->shape));
}

void NDArray::copy_item(void* out, DataType as) const {
  detail::enter();
  Pinned a(*this, "item");
  if (a->size() != 1)
    throw InvalidArgument(fmt::format("item: {} has {} elements; item() needs exactly one", describe(*a), a->size()));
  engine(a->device).to_host(view_of(*a), contiguous_view(out, as, a->shape));
}

namespace {

constexpr std::int64_t kSummarizeOver = 1000;  // elements; larger arrays print their edges
constexpr std::int64_t kEdge = 3;

void print(std::ostream& out, const std::vector<double>& v, const Shape& shape, int axis, std::int64_t offset,
           std::int64_t stride, bool summarize, bool integral, int indent) {
  if (axis == shape.rank()) {
    double x = v[std::size_t(offset)];
    out << (integral ? fmt::format("{}", std::int64_t(x)) : fmt::format("{:.6g}", x));
    return;
  }
  const std::int64_t n = shape[axis], inner = stride / std::max<std::int64_t>(n, 1);
  out << '[';
  for (std::int64_t i = 0; i < n; ++i) {
    if (summarize && n > 2 * kEdge && i == kEdge) {
      out << "..., ";
      if (axis + 1 < shape.rank()) out << "\n" << std::string(std::size_t(indent + 1), ' ');
      i = n - kEdge;
    }
    print(out, v, shape, axis + 1, offset + i * inner, inner, summarize, integral, indent + 1);
    if (i + 1 < n) {
      out << ", ";
      if (axis + 1 < shape.rank()) out << "\n" << std::string(std::size_t(indent + 1), ' ');
    }
  }
  out << ']';
}

}  // namespace

std::string NDArray::to_string() const {
  Shape s = shape();
  DataType t = dtype();
  std::ostringstream out;
  out << "ND: " << s.to_string() << ' ' << device().to_string() << ' ' << ndgc::to_string(t) << '\n';
  std::vector<double> v = to_vector<double>();
  print(out, v, s, 0, 0, std::max<std::int64_t>(s.size(), 1), s.size() > kSummarizeOver, !is_floating(t), 0);
  return out.str();
}

}  // namespace ndgc

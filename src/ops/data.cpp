// Getting data out: copy_to / to_vector, item, to_string.
#include <algorithm>
#include <sstream>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "ndgc/error.hpp"
#include "ndgc/ndarray.hpp"
#include "ops/host_read.hpp"
#include "ops/op_support.hpp"

namespace ndgc {

using namespace ndgc::ops;

void NDArray::copy_to(void* out, DataType as, std::size_t count) const {
  detail::enter();
  Pinned a(*this, "to_vector");
  if (count != std::size_t(a->size()))
    throw InvalidArgument(fmt::format("copy_to: room for {} elements, but {} has {}", count, describe(*a), a->size()));
  read_to_host(*a, contiguous_view(out, as, a->shape));
}

void NDArray::copy_item(void* out, DataType as) const {
  detail::enter();
  Pinned a(*this, "item");
  if (a->size() != 1)
    throw InvalidArgument(fmt::format("item: {} has {} elements; item() needs exactly one", describe(*a), a->size()));
  read_to_host(*a, contiguous_view(out, as, a->shape));
}

namespace {

constexpr std::int64_t kSummarizeOver = 1000;  // elements; larger arrays print their edges
constexpr std::int64_t kEdge = 3;

// Prints the block at `offset` (row-major, `stride` elements) of an array of
// `shape` from axis `axis` on; cell(i) formats element i. Rows of a nested
// block line up under the first one; there is no space before a line break.
template <class Cell>
void print(std::ostream& out, const Cell& cell, const Shape& shape, int axis, std::int64_t offset,
           std::int64_t stride, bool summarize, int indent) {
  if (axis == shape.rank()) {
    out << cell(offset);
    return;
  }
  const std::int64_t n = shape[axis], inner = stride / std::max<std::int64_t>(n, 1);
  const std::string sep = axis + 1 < shape.rank() ? ",\n" + std::string(std::size_t(indent + 1), ' ') : ", ";
  out << '[';
  for (std::int64_t i = 0; i < n; ++i) {
    if (summarize && n > 2 * kEdge && i == kEdge) {
      out << "..." << sep;
      i = n - kEdge;
    }
    print(out, cell, shape, axis + 1, offset + i * inner, inner, summarize, indent + 1);
    if (i + 1 < n) out << sep;
  }
  out << ']';
}

// The elements of `a` as host values of type T, row-major.
template <class T>
std::vector<T> host_values(const ArrayImpl& a) {
  std::vector<T> v(static_cast<std::size_t>(a.size()));
  read_to_host(a, contiguous_view(v.data(), dtype_of<T>, a.shape));
  return v;
}

}  // namespace

// Floats with six significant digits, integers exactly (int64 past 2^53
// included), booleans as true/false, as DJL prints them.
std::string NDArray::to_string() const {
  detail::enter();
  Pinned a(*this, "to_string");
  const Shape& s = a->shape;
  const DataType t = a->dtype;
  std::ostringstream out;
  out << "ND: " << s.to_string() << ' ' << a->device.to_string() << ' ' << ndgc::to_string(t) << '\n';
  const bool summarize = s.size() > kSummarizeOver;
  const std::int64_t stride = std::max<std::int64_t>(s.size(), 1);
  if (is_floating(t)) {
    std::vector<double> v = host_values<double>(*a);
    print(out, [&](std::int64_t i) { return fmt::format("{:.6g}", v[std::size_t(i)]); }, s, 0, 0, stride, summarize, 0);
  } else if (t == DataType::boolean) {
    std::vector<std::uint8_t> v = host_values<std::uint8_t>(*a);
    print(out, [&](std::int64_t i) { return std::string(v[std::size_t(i)] ? "true" : "false"); }, s, 0, 0, stride,
          summarize, 0);
  } else {
    std::vector<std::int64_t> v = host_values<std::int64_t>(*a);
    print(out, [&](std::int64_t i) { return fmt::format("{}", v[std::size_t(i)]); }, s, 0, 0, stride, summarize, 0);
  }
  return out.str();
}

}  // namespace ndgc

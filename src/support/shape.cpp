// Shape, Device and DataType helpers: plain values, no state.
#include <fmt/format.h>

#include "ndgc/device.hpp"
#include "ndgc/error.hpp"
#include "ndgc/shape.hpp"

namespace ndgc {
namespace {
[[noreturn]] void too_many(std::size_t rank) {
  throw InvalidArgument(fmt::format("Shape: {} dimensions requested; at most {} are supported", rank, kMaxRank));
}
}  // namespace

Shape::Shape(std::initializer_list<std::int64_t> dims) : Shape(std::span<const std::int64_t>(dims.begin(), dims.size())) {}

Shape::Shape(std::span<const std::int64_t> dims) {
  if (dims.size() > std::size_t(kMaxRank)) too_many(dims.size());
  rank_ = static_cast<std::int8_t>(dims.size());
  for (std::size_t i = 0; i < dims.size(); ++i) dims_[i] = dims[i];
}

std::int64_t Shape::size() const noexcept {
  // A zero first: the product of the other dimensions may overflow (an empty
  // IDX file's header, found by tests/fuzz/idx_reader_fuzz.cpp).
  for (int i = 0; i < rank_; ++i)
    if (dims_[i] == 0) return 0;
  std::int64_t n = 1;
  for (int i = 0; i < rank_; ++i) n *= dims_[i];
  return n;
}

std::int64_t Shape::get(int axis) const {
  int a = axis < 0 ? axis + rank_ : axis;
  if (a < 0 || a >= rank_)
    throw InvalidArgument(fmt::format("Shape::get: axis {} is out of range for shape {}", axis, to_string()));
  return dims_[a];
}

void Shape::push_back(std::int64_t dim) {
  if (rank_ == kMaxRank) too_many(std::size_t(rank_) + 1);
  dims_[rank_++] = dim;
}

void Shape::insert(int axis, std::int64_t dim) {
  if (rank_ == kMaxRank) too_many(std::size_t(rank_) + 1);
  for (int i = rank_; i > axis; --i) dims_[i] = dims_[i - 1];
  dims_[axis] = dim;
  ++rank_;
}

void Shape::erase(int axis) noexcept {
  for (int i = axis; i + 1 < rank_; ++i) dims_[i] = dims_[i + 1];
  dims_[--rank_] = 0;
}

std::string Shape::to_string() const {
  if (rank_ == 1) return fmt::format("({},)", dims_[0]);
  return fmt::format("({})", fmt::join(begin(), end(), ", "));
}

bool operator==(const Shape& a, const Shape& b) noexcept {
  if (a.rank_ != b.rank_) return false;
  for (int i = 0; i < a.rank_; ++i)
    if (a.dims_[i] != b.dims_[i]) return false;
  return true;
}

std::string Device::to_string() const {
  return type == DeviceType::cpu ? std::string("cpu()") : fmt::format("gpu({})", index);
}

std::optional<Device> parse_device(std::string_view text) {
  if (text == "cpu") return Device::cpu();
  if (text == "gpu") return Device::gpu(0);
  if (!text.starts_with("gpu:") || text.size() == 4 || text.size() > 6) return std::nullopt;
  int index = 0;
  for (char c : text.substr(4)) {
    if (c < '0' || c > '9') return std::nullopt;
    index = index * 10 + (c - '0');
  }
  if (index >= kMaxGpus) return std::nullopt;
  return Device::gpu(index);
}

std::string device_argument(Device device) { return device.is_cpu() ? "cpu" : fmt::format("gpu:{}", device.index); }

}  // namespace ndgc

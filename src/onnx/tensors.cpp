// See tensors.hpp.
#include "onnx/tensors.hpp"

#include <bit>
#include <cstring>
#include <vector>

#include <fmt/format.h>

#include "ndgc/error.hpp"

namespace ndgc::onnx::detail {
namespace {

static_assert(std::endian::native == std::endian::little, "ONNX's raw_data is little-endian");
using P = ::onnx::TensorProto;

[[noreturn]] void bad_data(const std::string& label, const P& tensor, const std::string& problem) {
  throw DataError(fmt::format("onnx::load: {}: tensor '{}': {}", label, tensor.name(), problem));
}

// The element count of `tensor`'s dims, checked.
std::size_t element_count(const P& tensor, const std::string& label) {
  for (std::int64_t d : tensor.dims())
    if (d < 0) bad_data(label, tensor, fmt::format("dimension {} is negative", d));
  const auto count = checked_element_count({tensor.dims().data(), std::size_t(tensor.dims().size())});
  if (!count) bad_data(label, tensor, fmt::format("its dims {} hold more than 2^40 elements", fmt::join(tensor.dims(), "x")));
  return static_cast<std::size_t>(*count);
}

// Copies `field` (a repeated protobuf field) converted to T, after checking its length.
template <class T, class Field>
std::vector<T> typed(const Field& field, std::size_t count, const std::string& label, const P& tensor) {
  if (static_cast<std::size_t>(field.size()) != count)
    bad_data(label, tensor, fmt::format("its shape holds {} elements but its data has {}", count, field.size()));
  std::vector<T> out(count);
  for (std::size_t i = 0; i < count; ++i) out[i] = static_cast<T>(field.Get(static_cast<int>(i)));
  return out;
}

template <class T>
NDArray from_fields(const P& tensor, std::size_t count, const ManagerRef& manager, const Shape& shape,
                    const std::string& label) {
  using Stored = std::conditional_t<std::is_same_v<T, bool>, std::uint8_t, T>;  // vector<bool> has no data()
  std::vector<Stored> values;
  if constexpr (std::is_same_v<T, float16> || std::is_same_v<T, bfloat16>) {
    // int32_data holds the 16-bit patterns, one per entry (onnx.proto).
    const std::vector<std::uint16_t> bits = typed<std::uint16_t>(tensor.int32_data(), count, label, tensor);
    return manager.create_raw(bits.data(), dtype_of<T>, count, shape);
  } else if constexpr (std::is_same_v<T, float>) values = typed<T>(tensor.float_data(), count, label, tensor);
  else if constexpr (std::is_same_v<T, double>) values = typed<T>(tensor.double_data(), count, label, tensor);
  else if constexpr (std::is_same_v<T, std::int64_t>) values = typed<T>(tensor.int64_data(), count, label, tensor);
  else values = typed<Stored>(tensor.int32_data(), count, label, tensor);  // int32, uint8 and bool
  if constexpr (std::is_same_v<T, bool>)
    for (auto& v : values) v = v != 0;
  return manager.create_raw(values.data(), dtype_of<T>, count, shape);
}

}  // namespace

std::optional<DataType> dtype_of_elem(std::int32_t elem_type) noexcept {
  switch (elem_type) {
    case P::FLOAT: return DataType::float32;
    case P::DOUBLE: return DataType::float64;
    case P::INT32: return DataType::int32;
    case P::INT64: return DataType::int64;
    case P::UINT8: return DataType::uint8;
    case P::BOOL: return DataType::boolean;
    case P::FLOAT16: return DataType::float16;
    case P::BFLOAT16: return DataType::bfloat16;
    default: return std::nullopt;
  }
}

std::int32_t elem_of_dtype(DataType dtype) noexcept {
  switch (dtype) {
    case DataType::float32: return P::FLOAT;
    case DataType::float64: return P::DOUBLE;
    case DataType::int32: return P::INT32;
    case DataType::int64: return P::INT64;
    case DataType::uint8: return P::UINT8;
    case DataType::boolean: return P::BOOL;
    case DataType::float16: return P::FLOAT16;
    case DataType::bfloat16: return P::BFLOAT16;
  }
  return P::UNDEFINED;
}

std::string elem_name(std::int32_t elem_type) {
  if (::onnx::TensorProto_DataType_IsValid(elem_type))
    return ::onnx::TensorProto_DataType_Name(static_cast<P::DataType>(elem_type));
  return fmt::format("element type {}", elem_type);
}

NDArray to_array(const P& tensor, const ManagerRef& manager, const std::string& label) {
  const std::optional<DataType> dtype = dtype_of_elem(tensor.data_type());
  if (!dtype)
    throw InvalidArgument(fmt::format("onnx::load: {}: tensor '{}' has element type {}, which ndgc does not run",
                                      label, tensor.name(), elem_name(tensor.data_type())));
  const std::size_t count = element_count(tensor, label);
  const Shape shape(std::vector<std::int64_t>(tensor.dims().begin(), tensor.dims().end()));
  if (tensor.has_raw_data()) {
    const std::size_t bytes = count * size_of(*dtype);
    if (tensor.raw_data().size() != bytes)
      bad_data(label, tensor, fmt::format("its shape needs {} bytes of data but it has {}", bytes, tensor.raw_data().size()));
    return manager.create_raw(tensor.raw_data().data(), *dtype, count, shape);
  }
  switch (*dtype) {
    case DataType::float32: return from_fields<float>(tensor, count, manager, shape, label);
    case DataType::float64: return from_fields<double>(tensor, count, manager, shape, label);
    case DataType::int32: return from_fields<std::int32_t>(tensor, count, manager, shape, label);
    case DataType::int64: return from_fields<std::int64_t>(tensor, count, manager, shape, label);
    case DataType::uint8: return from_fields<std::uint8_t>(tensor, count, manager, shape, label);
    case DataType::boolean: return from_fields<bool>(tensor, count, manager, shape, label);
    case DataType::float16: return from_fields<float16>(tensor, count, manager, shape, label);
    case DataType::bfloat16: return from_fields<bfloat16>(tensor, count, manager, shape, label);
  }
  bad_data(label, tensor, "unknown dtype");
}

void to_tensor(const NDArray& array, P& tensor) {
  tensor.clear_dims();
  const Shape shape = array.shape();  // dims() is a view into it: it must outlive the loop
  for (std::int64_t d : shape.dims()) tensor.add_dims(d);
  tensor.set_data_type(elem_of_dtype(array.dtype()));
  tensor.clear_float_data();
  tensor.clear_double_data();
  tensor.clear_int32_data();
  tensor.clear_int64_data();
  tensor.clear_external_data();
  tensor.set_data_location(P::DEFAULT);
  std::string bytes(array.nbytes(), '\0');
  array.copy_to(bytes.data(), array.dtype(), static_cast<std::size_t>(array.size()));
  tensor.set_raw_data(std::move(bytes));
}

std::optional<std::int64_t> checked_element_count(std::span<const std::int64_t> dims) noexcept {
  std::int64_t count = 1;
  for (std::int64_t d : dims)
    if (d < 0 || __builtin_mul_overflow(count, d, &count) || count > (std::int64_t(1) << 40)) return std::nullopt;
  return count;
}

}  // namespace ndgc::onnx::detail

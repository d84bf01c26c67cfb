// ONNX tensors and element types as ndgc arrays and dtypes.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>

#include "ndgc/manager.hpp"
#include "ndgc/ndarray.hpp"
#include "onnx/proto.hpp"

namespace ndgc::onnx::detail {

// The ndgc dtype of an ONNX element type (TensorProto::DataType), if ndgc has one.
std::optional<DataType> dtype_of_elem(std::int32_t elem_type) noexcept;
std::int32_t elem_of_dtype(DataType dtype) noexcept;
// "FLOAT16", "STRING", ...: the element type as ONNX names it.
std::string elem_name(std::int32_t elem_type);

// The product of `dims`, unless one is negative or the product passes 2^40
// elements (hostile dims: it would overflow, or ask for terabytes).
std::optional<std::int64_t> checked_element_count(std::span<const std::int64_t> dims) noexcept;

// The tensor as an array in `manager`. DataError names `label` and the tensor
// when its dims are negative, their product overflows, or its data is not
// exactly as long as its shape says; InvalidArgument for an element type
// ndgc has no dtype for.
NDArray to_array(const ::onnx::TensorProto& tensor, const ManagerRef& manager, const std::string& label);
// Writes the array's dims, element type and data (raw, little-endian) into `tensor`.
void to_tensor(const NDArray& array, ::onnx::TensorProto& tensor);

}  // namespace ndgc::onnx::detail

// Element types.
//
//   NDArray a = m.zeros({2, 2}, DataType::float64);
//   a.dtype() == DataType::float64;  size_of(DataType::int32) == 4;
//
// Binary ops require equal dtypes (DTypeMismatch otherwise; convert with
// to_type). boolean is stored as one byte per element, 0 or 1. float16 and
// bfloat16 are storage types (ndgc/half.hpp): kernels compute in float32.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <type_traits>

#include "ndgc/half.hpp"

namespace ndgc {

// New dtypes go at the end: model files and the C ABI store these numbers.
enum class DataType : std::uint8_t { float32, float64, int32, int64, uint8, boolean, float16, bfloat16 };

constexpr std::size_t size_of(DataType t) noexcept {
  switch (t) {
    case DataType::float32: return 4;
    case DataType::float64: return 8;
    case DataType::int32: return 4;
    case DataType::int64: return 8;
    case DataType::uint8: return 1;
    case DataType::boolean: return 1;
    case DataType::float16: return 2;
    case DataType::bfloat16: return 2;
  }
  return 0;
}

constexpr std::string_view to_string(DataType t) noexcept {
  switch (t) {
    case DataType::float32: return "float32";
    case DataType::float64: return "float64";
    case DataType::int32: return "int32";
    case DataType::int64: return "int64";
    case DataType::uint8: return "uint8";
    case DataType::boolean: return "boolean";
    case DataType::float16: return "float16";
    case DataType::bfloat16: return "bfloat16";
  }
  return "?";
}

constexpr bool is_floating(DataType t) noexcept {
  return t == DataType::float32 || t == DataType::float64 || t == DataType::float16 || t == DataType::bfloat16;
}

// float16 and bfloat16: stored in 2 bytes, computed in float32.
constexpr bool is_half(DataType t) noexcept { return t == DataType::float16 || t == DataType::bfloat16; }

// The dtype of a C++ element type: dtype_of<float> == DataType::float32.
template <class T> inline constexpr bool kIsElement = false;
template <> inline constexpr bool kIsElement<float> = true;
template <> inline constexpr bool kIsElement<double> = true;
template <> inline constexpr bool kIsElement<std::int32_t> = true;
template <> inline constexpr bool kIsElement<std::int64_t> = true;
template <> inline constexpr bool kIsElement<std::uint8_t> = true;
template <> inline constexpr bool kIsElement<bool> = true;
template <> inline constexpr bool kIsElement<float16> = true;
template <> inline constexpr bool kIsElement<bfloat16> = true;

template <class T>
inline constexpr DataType dtype_of = [] {
  static_assert(kIsElement<T>, "not an ndgc element type");
  if constexpr (std::is_same_v<T, float>) return DataType::float32;
  else if constexpr (std::is_same_v<T, double>) return DataType::float64;
  else if constexpr (std::is_same_v<T, std::int32_t>) return DataType::int32;
  else if constexpr (std::is_same_v<T, std::int64_t>) return DataType::int64;
  else if constexpr (std::is_same_v<T, std::uint8_t>) return DataType::uint8;
  else if constexpr (std::is_same_v<T, float16>) return DataType::float16;
  else if constexpr (std::is_same_v<T, bfloat16>) return DataType::bfloat16;
  else return DataType::boolean;
}();

}  // namespace ndgc

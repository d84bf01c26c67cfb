// Shapes: up to kMaxRank dimensions, stored inline (no heap allocation).
//
//   Shape s{2, 3};
//   s.rank() == 2;  s[1] == 3;  s.size() == 6;   // size(): element count, as in DJL
//   s.to_string() == "(2, 3)";
//
// A Shape is a plain value; it does not validate its dimensions. Factories
// and ops reject negative ones with InvalidArgument; reshape() reads -1 as
// "infer this dimension".
#pragma once

#include <cstdint>
#include <initializer_list>
#include <span>
#include <string>

namespace ndgc {

inline constexpr int kMaxRank = 8;

class Shape {
 public:
  Shape() = default;
  Shape(std::initializer_list<std::int64_t> dims);  // throws InvalidArgument past kMaxRank
  explicit Shape(std::span<const std::int64_t> dims);

  int rank() const noexcept { return rank_; }
  int dimension() const noexcept { return rank_; }  // DJL's name for rank
  bool is_scalar() const noexcept { return rank_ == 0; }
  // Number of elements: the product of the dimensions (1 for a scalar).
  std::int64_t size() const noexcept;
  std::int64_t operator[](int axis) const noexcept { return dims_[axis]; }
  std::int64_t& operator[](int axis) noexcept { return dims_[axis]; }
  // Like operator[], but negative axes count from the end and a bad axis throws.
  std::int64_t get(int axis) const;

  const std::int64_t* begin() const noexcept { return dims_; }
  const std::int64_t* end() const noexcept { return dims_ + rank_; }
  std::span<const std::int64_t> dims() const noexcept { return {dims_, std::size_t(rank_)}; }

  void push_back(std::int64_t dim);  // throws InvalidArgument past kMaxRank
  void insert(int axis, std::int64_t dim);
  void erase(int axis) noexcept;

  std::string to_string() const;
  friend bool operator==(const Shape& a, const Shape& b) noexcept;

 private:
  std::int64_t dims_[kMaxRank] = {};
  std::int8_t rank_ = 0;
};

}  // namespace ndgc

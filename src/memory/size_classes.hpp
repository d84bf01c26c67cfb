// The size classes of the host's block caches (Note [Host block cache],
// Note [Large host blocks]): PerPower classes for each power of two above
// 2^MinShift, each class the top of its range, so a block of a class serves
// any request of it with at most 1/PerPower slack. Callers check the range.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>

namespace ndgc::memory {

template <int MinShift, int PerPower>
struct SizeClasses {
  static constexpr std::size_t size(int c) noexcept {
    const std::size_t base = std::size_t(1) << (MinShift + c / PerPower);
    return base + base / PerPower * std::size_t(c % PerPower + 1);
  }
  // The smallest class whose size is at least `bytes` (> 2^MinShift).
  static constexpr int of(std::size_t bytes) noexcept {
    const int e = 63 - std::countl_zero(std::uint64_t(bytes - 1));  // 2^e < bytes <= 2^(e+1)
    const std::size_t base = std::size_t(1) << e, step = base / PerPower;
    const int q = int((bytes - base + step - 1) / step);  // 1..PerPower
    return (e - MinShift) * PerPower + q - 1;
  }
};

}  // namespace ndgc::memory

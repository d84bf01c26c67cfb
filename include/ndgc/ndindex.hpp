// Indices for NDArray::get: DJL's string syntax or a builder.
//
//   a.get("1:3, :, -1")             // rows 1-2, every column, last of axis 2
//   a.get("::2")                     // every other row
//   a.get("..., 0")                  // first element of the last axis
//   a.get(NDIndex().add_slice(1, 3).add_all().add_index(-1))
//
// Basic indexing only: results are views that share the array's storage.
// An integer index removes its axis; a slice keeps it. Negative indices count
// from the end; slice bounds are clamped as in NumPy. An index holds its items
// in place (at most one per axis of the largest rank, plus an ellipsis), so
// making, copying and recording one never touches the heap: a step that
// slices inside a training loop (an LSTM's time steps) allocates nothing for it.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

#include "ndgc/shape.hpp"

namespace ndgc {

class NDIndex {
 public:
  struct Item {
    enum class Kind : std::uint8_t { index, slice, all, ellipsis } kind = Kind::all;
    std::int64_t index = 0;
    std::optional<std::int64_t> start, stop;
    std::int64_t step = 1;
  };

  NDIndex() = default;
  // Parses "1:3, :, -1"; throws InvalidArgument naming the bad part.
  NDIndex(std::string_view text);  // NOLINT: implicit, so a.get("1:3") reads well
  NDIndex(const char* text) : NDIndex(std::string_view(text)) {}

  NDIndex& add_index(std::int64_t i);
  NDIndex& add_slice(std::optional<std::int64_t> start, std::optional<std::int64_t> stop,
                     std::int64_t step = 1);
  NDIndex& add_all();
  NDIndex& add_ellipsis();

  // More items than this is an InvalidArgument when added.
  static constexpr std::size_t kMaxItems = std::size_t(kMaxRank) + 1;
  std::span<const Item> items() const noexcept { return {items_.data(), count_}; }

 private:
  NDIndex& push(const Item& item);
  std::array<Item, kMaxItems> items_{};
  std::size_t count_ = 0;
};

}  // namespace ndgc

// Identity of arrays and managers in dumps, errors and JSON: random (v4) UUIDs.
//
//   Uuid id = a.uid();  std::string s = id.to_string();  // "1b4e28ba-2fa1-4d3b-..."
#pragma once

#include <cstdint>
#include <string>

namespace ndgc {

struct Uuid {
  std::uint64_t hi = 0, lo = 0;

  // A fresh version-4 UUID (122 random bits). Thread-safe, lock-free.
  static Uuid random() noexcept;
  // Parses the 36-character form; throws InvalidArgument otherwise.
  static Uuid parse(const std::string& text);
  std::string to_string() const;
  bool is_nil() const noexcept { return hi == 0 && lo == 0; }
  friend constexpr bool operator==(const Uuid&, const Uuid&) noexcept = default;
  friend constexpr auto operator<=>(const Uuid&, const Uuid&) noexcept = default;
};

}  // namespace ndgc

// Byte sizes as people write them: "512m", "2G", "1.5g" ↔ bytes.
#include <cctype>
#include <cmath>
#include <cstdlib>

#include <fmt/format.h>

#include "ndgc/error.hpp"
#include "ndgc/memory.hpp"

namespace ndgc::memory {

std::uint64_t parse_size(const std::string& text, const std::string& what) {
  auto bad = [&] {
    return InvalidArgument(fmt::format(
        "{}='{}' is not a size: write a number with an optional k, m, g or t suffix (e.g. 512m)", what, text));
  };
  if (text.empty()) throw bad();
  char* end = nullptr;
  double value = std::strtod(text.c_str(), &end);
  if (end == text.c_str() || !std::isfinite(value) || value < 0) throw bad();
  std::string suffix(end);
  if (!suffix.empty() && (suffix.back() == 'b' || suffix.back() == 'B')) suffix.pop_back();
  if (suffix.size() > 1) throw bad();
  double scale = 1;
  if (!suffix.empty()) {
    switch (std::tolower(static_cast<unsigned char>(suffix[0]))) {
      case 'k': scale = 1024.0; break;
      case 'm': scale = 1024.0 * 1024; break;
      case 'g': scale = 1024.0 * 1024 * 1024; break;
      case 't': scale = 1024.0 * 1024 * 1024 * 1024; break;
      default: throw bad();
    }
  }
  double bytes = value * scale;
  if (bytes >= 18446744073709551615.0) throw bad();
  return static_cast<std::uint64_t>(bytes);
}

std::string format_bytes(std::uint64_t bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = double(bytes);
  int u = 0;
  while (v >= 1024 && u < 4) {
    v /= 1024;
    ++u;
  }
  return u == 0 ? fmt::format("{} B", bytes) : fmt::format("{:.1f} {}", v, units[u]);
}

}  // namespace ndgc::memory

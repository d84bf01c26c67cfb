// NDIndex: DJL's index strings ("1:3, :, -1", "...", "::2") and the builder.
#include <charconv>

#include <fmt/format.h>

#include "ndgc/error.hpp"
#include "ndgc/ndindex.hpp"

namespace ndgc {
namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
  while (!s.empty() && s.back() == ' ') s.remove_suffix(1);
  return s;
}

std::optional<std::int64_t> parse_int(std::string_view whole, std::string_view part, bool optional) {
  part = trim(part);
  if (part.empty()) {
    if (optional) return std::nullopt;
    throw InvalidArgument(fmt::format("NDIndex: empty index in \"{}\"", whole));
  }
  std::int64_t v = 0;
  auto [end, ec] = std::from_chars(part.data(), part.data() + part.size(), v);
  if (ec != std::errc() || end != part.data() + part.size())
    throw InvalidArgument(fmt::format("NDIndex: '{}' in \"{}\" is not an integer", part, whole));
  return v;
}

}  // namespace

NDIndex::NDIndex(std::string_view text) {
  if (trim(text).empty()) return;
  std::size_t pos = 0;
  while (pos <= text.size()) {
    std::size_t comma = text.find(',', pos);
    std::string_view part = trim(text.substr(pos, comma == std::string_view::npos ? text.npos : comma - pos));
    if (part == "...") {
      add_ellipsis();
    } else if (part == ":" || part == "::") {
      add_all();
    } else if (part.find(':') == std::string_view::npos) {
      add_index(*parse_int(text, part, false));
    } else {
      std::size_t c1 = part.find(':');
      std::size_t c2 = part.find(':', c1 + 1);
      auto start = parse_int(text, part.substr(0, c1), true);
      auto stop = parse_int(text, part.substr(c1 + 1, c2 == part.npos ? part.npos : c2 - c1 - 1), true);
      std::int64_t step = 1;
      if (c2 != part.npos) {
        if (part.find(':', c2 + 1) != part.npos)
          throw InvalidArgument(fmt::format("NDIndex: '{}' in \"{}\" has too many ':'", part, text));
        step = parse_int(text, part.substr(c2 + 1), true).value_or(1);
      }
      add_slice(start, stop, step);
    }
    if (comma == std::string_view::npos) break;
    pos = comma + 1;
  }
}

NDIndex& NDIndex::push(const Item& item) {
  if (count_ == kMaxItems)
    throw InvalidArgument(fmt::format("NDIndex: more than {} items (one per axis of the largest rank, {}, and an "
                                      "ellipsis)",
                                      kMaxItems, kMaxRank));
  items_[count_++] = item;
  return *this;
}

NDIndex& NDIndex::add_index(std::int64_t i) { return push({Item::Kind::index, i, std::nullopt, std::nullopt, 1}); }

NDIndex& NDIndex::add_slice(std::optional<std::int64_t> start, std::optional<std::int64_t> stop, std::int64_t step) {
  return push({Item::Kind::slice, 0, start, stop, step});
}

NDIndex& NDIndex::add_all() { return push({Item::Kind::all, 0, std::nullopt, std::nullopt, 1}); }

NDIndex& NDIndex::add_ellipsis() { return push({Item::Kind::ellipsis, 0, std::nullopt, std::nullopt, 1}); }

}  // namespace ndgc

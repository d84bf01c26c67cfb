// Helpers shared by the debug-layer tests.
#pragma once

#include <algorithm>
#include <set>
#include <string>

#include <ndgc/ndgc.hpp>

namespace ndgc::test {

inline bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

// "file.cpp:42" as reports print it: the file as the compiler gave it, so
// match the end.
inline std::string site_text(const char* file, int line) {
  std::string f = file;
  return f.substr(f.find_last_of('/') + 1) + ":" + std::to_string(line);
}

inline std::set<Uuid> uuids_of(const debug::Snapshot& s) {
  std::set<Uuid> out;
  for (const debug::ArrayRecord& a : s.arrays) out.insert(a.uuid);
  return out;
}

// The records of `s` created at `line` of a file ending in `file`.
inline std::size_t count_at(const debug::Snapshot& s, const std::string& file, int line) {
  return std::size_t(std::count_if(s.arrays.begin(), s.arrays.end(), [&](const debug::ArrayRecord& a) {
    const debug::SiteInfo& site = s.site_of(a);
    return site.line == std::uint32_t(line) && ends_with(site.file, file);
  }));
}

}  // namespace ndgc::test

#include <sstream>
#include <vector>

namespace ndgc::test {

// The whitespace-separated words of the first line of `text` that contains
// `needle` (empty if none): checks columns without depending on padding.
inline std::vector<std::string> words_of_line(const std::string& text, const std::string& needle) {
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.find(needle) == std::string::npos) continue;
    std::istringstream in(line);
    std::vector<std::string> words;
    for (std::string w; in >> w;) words.push_back(w);
    return words;
  }
  return {};
}

}  // namespace ndgc::test

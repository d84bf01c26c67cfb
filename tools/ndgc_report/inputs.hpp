// What ndgc-report reads: snapshots (debug::Snapshot::to_json) and dumps
// (debug::dump with Format::json) that a program saved, checked before they
// are trusted, and the report document made of them.
//
//   std::vector<Input> in = {read_input("a.json"), read_input("b.json")};
//   report::write_page("report.html", document_of(in, "my run"));
//
// Bad input is a DataError naming the file and the place: the byte offset or
// line and column of a syntax error, the path of a bad field
// ("arrays[3].uuid"), or the size of a file too large to read. Nothing is
// read past kMaxInputBytes. Deep nesting needs no check here: nlohmann's
// parser and destructor do not recurse, and the one reader that does
// (Dump::from_json, per sub-manager) bounds its own depth.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <ndgc/debug.hpp>

namespace ndgc::report_tool {

inline constexpr std::uint64_t kMaxInputBytes = 256ull << 20;

struct Input {
  std::string label;  // the file's name without its extension
  std::optional<debug::Snapshot> snapshot;
  std::optional<debug::Dump> dump;
};

// DataError naming `file` and what is wrong with it.
Input read_input(const std::filesystem::path& file);
// The same, from text already read (`name` is used in messages).
Input parse_input(const std::string& text, const std::string& name);

// One document: the snapshots, in the order given, as one run (its timeline,
// leak table and diffs), then one run per dump. `inputs` is not empty.
std::string document_of(const std::vector<Input>& inputs, const std::string& title);

}  // namespace ndgc::report_tool

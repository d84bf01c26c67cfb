// read_input(): a saved snapshot or dump, refused with a DataError that names
// the file and the place when it is not one (see inputs.hpp).
#include "inputs.hpp"

#include <fstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <ndgc/error.hpp>
#include <ndgc/report.hpp>

namespace ndgc::report_tool {
namespace {

std::string read_text(const std::filesystem::path& file) {
  std::error_code ec;
  const std::uintmax_t size = std::filesystem::file_size(file, ec);
  if (ec) throw DataError(fmt::format("ndgc-report: {}: cannot read it: {}", file.string(), ec.message()));
  if (size > kMaxInputBytes)
    throw DataError(fmt::format("ndgc-report: {}: {} bytes, more than the {} MiB ndgc-report reads", file.string(),
                                size, kMaxInputBytes >> 20));
  std::ifstream in(file, std::ios::binary);
  std::string text(size, '\0');
  if (!in.read(text.data(), std::streamsize(size)))
    throw DataError(fmt::format("ndgc-report: {}: cannot read it", file.string()));
  return text;
}

}  // namespace

Input parse_input(const std::string& text, const std::string& name) {
  nlohmann::json doc;
  try {
    doc = nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    throw DataError(fmt::format("ndgc-report: {}: not valid JSON at byte {}: {}", name, e.byte, e.what()));
  }
  const std::string format = doc.is_object() && doc.contains("format") && doc["format"].is_string()
                                 ? doc["format"].get<std::string>() : std::string();
  Input input;
  input.label = std::filesystem::path(name).stem().string();
  try {
    if (format == "ndgc.snapshot") input.snapshot = debug::Snapshot::from_json(text);
    else if (format == "ndgc.dump") input.dump = debug::Dump::from_json(text);
    else
      throw DataError(fmt::format("the document's \"format\" is {}; expected \"ndgc.snapshot\" "
                                  "(debug::Snapshot::to_json) or \"ndgc.dump\" (debug::dump, Format::json)",
                                  format.empty() ? std::string("missing") : '"' + format + '"'));
  } catch (const DataError& e) {
    throw DataError(fmt::format("ndgc-report: {}: {}", name, e.what()));
  }
  return input;
}

Input read_input(const std::filesystem::path& file) { return parse_input(read_text(file), file.string()); }

std::string document_of(const std::vector<Input>& inputs, const std::string& title) {
  std::vector<debug::Snapshot> snapshots;
  std::vector<std::string> labels;
  for (const Input& i : inputs)
    if (i.snapshot) {
      snapshots.push_back(*i.snapshot);
      labels.push_back(i.label);
    }
  nlohmann::json doc;
  if (!snapshots.empty()) doc = nlohmann::json::parse(report::document_from_snapshots(snapshots, labels, title));
  for (const Input& i : inputs) {
    if (!i.dump) continue;
    nlohmann::json one = nlohmann::json::parse(report::document_from_dump(*i.dump, i.label, title));
    if (doc.is_null()) doc = std::move(one);
    else doc["runs"].push_back(std::move(one["runs"][0]));
  }
  return doc.dump();
}

}  // namespace ndgc::report_tool

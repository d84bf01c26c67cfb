// Model files (ndgc/model_file.hpp): an architecture header in front of the
// parameter file, so a program that has only the file can rebuild the block.
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "support/atomic_write.hpp"
#include "ndgc/error.hpp"
#include "ndgc/model_file.hpp"
#include "nn/parameter_bytes.hpp"

namespace ndgc {
namespace {

constexpr std::string_view kMagicLine = "NDGCMODEL 1";
constexpr std::size_t kMaxHeader = 4096;  // a header is a few lines; anything longer is not one

[[noreturn]] void fail(const std::filesystem::path& file, const std::string& problem) {
  throw DataError(fmt::format("model file {}: {}", file.string(), problem));
}

std::vector<unsigned char> read_all(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) fail(file, fmt::format("cannot open: {}", std::strerror(errno)));
  std::vector<unsigned char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) fail(file, "read error");
  return bytes;
}

std::int64_t parse_size(const std::filesystem::path& file, const std::string& key, const std::string& text) {
  std::size_t used = 0;
  long long v = 0;
  try {
    v = std::stoll(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != text.size() || v <= 0 || v > (1LL << 32))
    fail(file, fmt::format("'{}' must be a positive size, not '{}'", key, text));
  return v;
}

// The header and where the parameter image starts.
Architecture parse_header(const std::filesystem::path& file, const std::vector<unsigned char>& bytes,
                          std::size_t& body) {
  const std::size_t limit = std::min(bytes.size(), kMaxHeader);
  const std::string_view head(reinterpret_cast<const char*>(bytes.data()), limit);
  const std::size_t end = head.find("\n\n");
  if (!head.starts_with(kMagicLine) || end == std::string_view::npos)
    fail(file, fmt::format("not a model file (it must start with '{}' and a header ending in an empty line)",
                           kMagicLine));
  body = end + 2;
  std::istringstream lines{std::string(head.substr(0, end))};
  std::string line;
  std::getline(lines, line);
  if (line != kMagicLine) fail(file, fmt::format("unknown version line '{}'", line));
  Architecture a;
  bool seen_arch = false, seen_in = false, seen_out = false;
  while (std::getline(lines, line)) {
    const std::size_t space = line.find(' ');
    const std::string key = line.substr(0, space);
    const std::string value = space == std::string::npos ? "" : line.substr(space + 1);
    if (key == "architecture") {
      a.name = value;
      seen_arch = true;
    } else if (key == "inputs") {
      a.inputs = parse_size(file, key, value);
      seen_in = true;
    } else if (key == "outputs") {
      a.outputs = parse_size(file, key, value);
      seen_out = true;
    } else if (key == "hidden") {
      std::istringstream sizes(value);
      std::string s;
      while (sizes >> s) a.hidden.push_back(parse_size(file, key, s));
    } else if (key == "dtype") {
      if (value != "float32") fail(file, fmt::format("unsupported dtype '{}' (float32)", value));
    } else {
      fail(file, fmt::format("unknown header key '{}'", key));
    }
  }
  if (!seen_arch || !seen_in || !seen_out) fail(file, "the header needs architecture, inputs and outputs");
  try {
    (void)a.make_block();  // a known name with sizes that fit it
  } catch (const InvalidArgument& e) {
    fail(file, e.what());
  }
  return a;
}

}  // namespace

void save_model_file(Model& model, const Architecture& a, const std::filesystem::path& file) {
  std::string header = fmt::format("{}\narchitecture {}\ninputs {}\noutputs {}\nhidden", kMagicLine, a.name,
                                   a.inputs, a.outputs);
  for (std::int64_t h : a.hidden) header += fmt::format(" {}", h);
  header += fmt::format("\ndtype {}\n\n", to_string(a.dtype));
  const std::vector<unsigned char> params = detail::parameter_bytes(model);
  support::write_atomically(file, "save_model_file", [&](std::ostream& f) {
    f.write(header.data(), std::streamsize(header.size()));
    return bool(f.write(reinterpret_cast<const char*>(params.data()), std::streamsize(params.size())));
  });
}

Architecture read_architecture(const std::filesystem::path& file) {
  std::size_t body = 0;
  return parse_header(file, read_all(file), body);
}

LoadedModel load_model_file(const std::filesystem::path& file, std::string name, Device device) {
  const std::vector<unsigned char> bytes = read_all(file);
  std::size_t body = 0;
  Architecture a = parse_header(file, bytes, body);
  LoadedModel loaded{a, Model(std::move(name), a.make_block(), device)};
  loaded.model.initialize(Shape{1, a.inputs}, a.dtype);
  detail::load_parameter_bytes(loaded.model, std::vector<unsigned char>(bytes.begin() + std::ptrdiff_t(body), bytes.end()),
                               file);
  return loaded;
}

}  // namespace ndgc

// Model::save and Model::load: the parameter file format of ndgc/model.hpp.
//
// Loading parses the whole file into a plan (name, dtype, shape, where the
// data is) and checks it against the model before a single parameter is
// touched; see the format and guarantees in model.hpp.
#include <bit>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <map>
#include <vector>

#include <fmt/format.h>
#include <zlib.h>

#include "support/atomic_write.hpp"
#include "ndgc/error.hpp"
#include "ndgc/model.hpp"
#include "nn/parameter_bytes.hpp"

namespace ndgc {
namespace {

static_assert(std::endian::native == std::endian::little, "the parameter file format is little-endian");

constexpr char kMagic[8] = {'N', 'D', 'G', 'C', 'P', 'A', 'R', 'M'};
constexpr std::uint32_t kVersion = 1;

std::uint32_t crc_of(const unsigned char* data, std::size_t size) {
  uLong crc = crc32(0L, Z_NULL, 0);
  while (size > 0) {
    const auto chunk = static_cast<uInt>(std::min<std::size_t>(size, 1u << 30));
    crc = crc32(crc, data, chunk);
    data += chunk;
    size -= chunk;
  }
  return static_cast<std::uint32_t>(crc);
}

// Appends value's bytes. resize + memcpy, not insert of a byte range: GCC 12
// at -O3 -march=native warned (-Warray-bounds) about the range's end.
template <class T>
void put(std::vector<unsigned char>& out, T value) {
  const std::size_t at = out.size();
  out.resize(at + sizeof(T));
  std::memcpy(out.data() + at, &value, sizeof(T));
}

std::uint8_t dtype_code(DataType t) { return static_cast<std::uint8_t>(t); }

struct Entry {
  std::string name;
  DataType dtype;
  Shape shape;
  const unsigned char* data;
  std::size_t bytes;
};

// Bounds-checked reading of the file image.
class Reader {
 public:
  Reader(const std::filesystem::path& file, const unsigned char* data, std::size_t size)
      : file_(file), p_(data), end_(data + size) {}
  template <class T>
  T get(const char* what) {
    need(sizeof(T), what);
    T value;
    std::memcpy(&value, p_, sizeof(T));
    p_ += sizeof(T);
    return value;
  }
  const unsigned char* take(std::size_t n, const char* what) {
    need(n, what);
    const unsigned char* at = p_;
    p_ += n;
    return at;
  }
  std::size_t left() const { return std::size_t(end_ - p_); }
  [[noreturn]] void fail(const std::string& problem) const {
    throw DataError(fmt::format("Model::load: {}: {}; the model was not changed", file_.string(), problem));
  }

 private:
  void need(std::size_t n, const char* what) {
    if (left() < n) fail(fmt::format("truncated while reading {} ({} bytes left, {} needed)", what, left(), n));
  }
  const std::filesystem::path& file_;
  const unsigned char* p_;
  const unsigned char* end_;
};

std::vector<unsigned char> read_file(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in)
    throw DataError(fmt::format("Model::load: cannot open {}: {}; the model was not changed", file.string(),
                                std::strerror(errno)));
  std::vector<unsigned char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad())
    throw DataError(fmt::format("Model::load: error reading {}; the model was not changed", file.string()));
  return bytes;
}

std::vector<Entry> parse(const std::filesystem::path& file, const std::vector<unsigned char>& bytes) {
  Reader r(file, bytes.data(), bytes.size());
  const unsigned char* magic = r.take(sizeof(kMagic), "the magic number");
  if (std::memcmp(magic, kMagic, sizeof(kMagic)) != 0) r.fail("not an ndgc parameter file (bad magic number)");
  const auto version = r.get<std::uint32_t>("the version");
  if (version != kVersion)
    r.fail(fmt::format("format version {} is not supported (this build reads version {})", version, kVersion));
  if (bytes.size() < sizeof(kMagic) + 12) r.fail("truncated: too short for a header and a checksum");
  std::uint32_t stored;
  std::memcpy(&stored, bytes.data() + bytes.size() - 4, 4);
  const std::uint32_t actual = crc_of(bytes.data(), bytes.size() - 4);
  if (stored != actual)
    r.fail(fmt::format("truncated or corrupt: CRC-32 {:08x} does not match the stored {:08x}", actual, stored));
  Reader body(file, bytes.data() + sizeof(kMagic) + 4, bytes.size() - sizeof(kMagic) - 8);
  const auto count = body.get<std::uint32_t>("the parameter count");
  std::vector<Entry> entries;
  for (std::uint32_t i = 0; i < count; ++i) {
    Entry e;
    const auto name_len = body.get<std::uint32_t>("a parameter name length");
    const unsigned char* name = body.take(name_len, "a parameter name");
    e.name.assign(reinterpret_cast<const char*>(name), name_len);
    const auto code = body.get<std::uint8_t>("a dtype");
    if (code > dtype_code(DataType::bfloat16)) body.fail(fmt::format("parameter '{}' has unknown dtype code {}", e.name, code));
    e.dtype = static_cast<DataType>(code);
    const auto rank = body.get<std::uint8_t>("a rank");
    if (rank > kMaxRank) body.fail(fmt::format("parameter '{}' has rank {} (at most {})", e.name, rank, kMaxRank));
    std::uint64_t elements = 1;
    for (int d = 0; d < rank; ++d) {
      const auto dim = body.get<std::int64_t>("a dimension");
      if (dim < 0 || (dim > 0 && elements > (std::uint64_t(1) << 48) / std::uint64_t(dim)))
        body.fail(fmt::format("parameter '{}' has an invalid dimension {}", e.name, dim));
      elements *= std::uint64_t(dim);
      e.shape.push_back(dim);
    }
    const auto data_len = body.get<std::uint64_t>("a data length");
    if (data_len != elements * size_of(e.dtype))
      body.fail(fmt::format("parameter '{}': {} data bytes for shape {} of {}", e.name, data_len,
                            e.shape.to_string(), to_string(e.dtype)));
    e.bytes = std::size_t(data_len);
    e.data = body.take(e.bytes, "parameter data");
    entries.push_back(std::move(e));
  }
  if (body.left() != 0) body.fail(fmt::format("{} unexpected bytes after the last parameter", body.left()));
  return entries;
}

[[noreturn]] void load_failed(const std::filesystem::path& file, const std::string& problem) {
  throw DataError(fmt::format("Model::load: {}: {}; the model was not changed", file.string(), problem));
}

}  // namespace

namespace detail {

std::vector<unsigned char> parameter_bytes(Model& model) {
  std::vector<unsigned char> out(kMagic, kMagic + sizeof(kMagic));
  put(out, kVersion);
  nn::ParameterList params = model.parameters();
  put(out, std::uint32_t(params.size()));
  for (const nn::NamedParameter& p : params) {
    const NDArray& a = p.parameter->array();
    const Shape shape = a.shape();
    const DataType dtype = a.dtype();
    put(out, std::uint32_t(p.name.size()));
    out.insert(out.end(), p.name.begin(), p.name.end());
    put(out, dtype_code(dtype));
    put(out, std::uint8_t(shape.rank()));
    for (std::int64_t d : shape) put(out, d);
    const std::uint64_t bytes = std::uint64_t(shape.size()) * size_of(dtype);
    put(out, bytes);
    const std::size_t at = out.size();
    out.resize(at + bytes);
    std::vector<std::max_align_t> aligned((bytes + sizeof(std::max_align_t) - 1) / sizeof(std::max_align_t));
    a.copy_to(aligned.data(), dtype, std::size_t(shape.size()));
    if (bytes) std::memcpy(out.data() + at, aligned.data(), bytes);
  }
  put(out, crc_of(out.data(), out.size()));
  return out;
}

}  // namespace detail

void Model::save(const std::filesystem::path& file) {
  const std::vector<unsigned char> out = detail::parameter_bytes(*this);
  support::write_atomically(file, "Model::save", [&](std::ostream& f) {
    return bool(f.write(reinterpret_cast<const char*>(out.data()), std::streamsize(out.size())));
  });
}

void Model::load(const std::filesystem::path& file) { detail::load_parameter_bytes(*this, read_file(file), file); }

namespace detail {

void load_parameter_bytes(Model& model, const std::vector<unsigned char>& bytes, const std::filesystem::path& file) {
  const std::string& name_ = model.name();
  const std::vector<Entry> entries = parse(file, bytes);
  auto fail = [&](const std::string& problem) { load_failed(file, problem); };

  // The names must be exactly the model's parameters, each matching.
  nn::ParameterList params = model.parameters();
  std::map<std::string, const Entry*> by_name;
  for (const Entry& e : entries)
    if (!by_name.emplace(e.name, &e).second) fail(fmt::format("parameter '{}' appears twice", e.name));
  std::vector<const Entry*> plan;
  for (const nn::NamedParameter& p : params) {
    auto it = by_name.find(p.name);
    if (it == by_name.end()) load_failed(file, fmt::format("no parameter '{}' (model '{}' has {} parameters, the file {})", p.name, name_, params.size(), entries.size()));
    const Entry& e = *it->second;
    if (p.parameter->is_initialized()) {
      const NDArray& a = p.parameter->array();
      if (a.dtype() != e.dtype || !(a.shape() == e.shape))
        fail(fmt::format("parameter '{}' is {} {} in the file but {} {} in the model", p.name,
                         to_string(e.dtype), e.shape.to_string(), to_string(a.dtype()), a.shape().to_string()));
    }
    plan.push_back(&e);
    by_name.erase(it);
  }
  if (!by_name.empty()) fail(fmt::format("parameter '{}' is not in model '{}'", by_name.begin()->first, name_));

  // Stage every array (aligned copies of the file's bytes) before touching the model.
  ManagerRef manager_ = model.manager();
  NDManager stage = manager_.new_sub_manager("load staging");
  std::vector<NDArray> staged;
  for (const Entry* e : plan) {
    std::vector<std::max_align_t> aligned((e->bytes + sizeof(std::max_align_t) - 1) / sizeof(std::max_align_t));
    if (e->bytes) std::memcpy(aligned.data(), e->data, e->bytes);
    staged.push_back(stage.create_raw(aligned.data(), e->dtype, std::size_t(e->shape.size()), e->shape));
  }
  for (std::size_t i = 0; i < params.size(); ++i) {
    nn::Parameter& p = *params[i].parameter;
    if (p.is_initialized()) {
      NDArray target = p.array();
      target.assign_(staged[i]);
    } else {
      staged[i].attach(manager_);
      staged[i].set_name(params[i].name);
      p.set_array(staged[i]);
    }
  }
}

}  // namespace detail

}  // namespace ndgc

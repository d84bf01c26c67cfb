// KServe v2 JSON decoding (simdjson) and encoding (kserve_codec.hpp).
//
// Note [Nested or flat data]
// KServe lets `data` be flat row-major or nested to the tensor's shape. The
// decoder accepts either, and any mix that flattens row-major to the right
// count: it walks arrays depth-first, at most 8 deep (an array's rank is at
// most 8; deeper nesting is an attack, not a tensor), and requires numbers at
// the leaves. Only the total is checked against the shape, which is what
// decides the meaning of a flat list anyway. Numbers convert to the input's
// dtype: integers must be integers in range, BOOL takes true/false (or 0/1).
#include "serving/kserve_codec.hpp"

#include <charconv>
#include <cmath>
#include <cstring>

#include <fmt/format.h>
#include <simdjson.h>

namespace ndgc::serving {
namespace {

namespace dom = simdjson::dom;

[[noreturn]] void bad(const std::string& message) { throw HttpError(400, message); }

constexpr int kMaxDepth = 8;
constexpr std::int64_t kMaxElements = std::int64_t(1) << 31;

// Appends one JSON number (or boolean) as a value of `dtype` to `out`.
void append_value(dom::element e, DataType dtype, std::string& out, const std::string& name) {
  auto put = [&](auto v) { out.append(reinterpret_cast<const char*>(&v), sizeof(v)); };
  const auto type = e.type();
  if (dtype == DataType::boolean) {
    bool b = false;
    std::int64_t i = 0;
    if (type == dom::element_type::BOOL && e.get(b) == simdjson::SUCCESS) {
    } else if (type == dom::element_type::INT64 && e.get(i) == simdjson::SUCCESS && (i == 0 || i == 1)) {
      b = i == 1;
    } else {
      bad(fmt::format("input '{}': 'data' must hold booleans (BOOL)", name));
    }
    put(static_cast<std::uint8_t>(b));
    return;
  }
  if (type != dom::element_type::DOUBLE && type != dom::element_type::INT64 && type != dom::element_type::UINT64)
    bad(fmt::format("input '{}': 'data' must hold numbers ({}), nested or flat", name, kserve_datatype(dtype)));
  if (is_floating(dtype)) {
    double v = 0;
    if (e.get(v) != simdjson::SUCCESS) bad(fmt::format("input '{}': 'data' holds a number that is not a double", name));
    if (dtype == DataType::float32) put(static_cast<float>(v));
    else if (dtype == DataType::float16) put(float16(static_cast<float>(v)).bits);
    else if (dtype == DataType::bfloat16) put(bfloat16(static_cast<float>(v)).bits);
    else put(v);
    return;
  }
  std::int64_t v = 0;
  if (type == dom::element_type::DOUBLE || e.get(v) != simdjson::SUCCESS)
    bad(fmt::format("input '{}': 'data' must hold integers ({})", name, kserve_datatype(dtype)));
  if (dtype == DataType::int64) return put(v);
  if (dtype == DataType::int32 && v >= INT32_MIN && v <= INT32_MAX) return put(static_cast<std::int32_t>(v));
  if (dtype == DataType::uint8 && v >= 0 && v <= 255) return put(static_cast<std::uint8_t>(v));
  bad(fmt::format("input '{}': {} is out of range for {}", name, v, kserve_datatype(dtype)));
}

// Note [Nested or flat data]: `count` values at most, any nesting up to kMaxDepth.
void flatten(dom::element e, DataType dtype, std::string& out, int depth, std::size_t count, const std::string& name) {
  if (depth > kMaxDepth) bad(fmt::format("input '{}': 'data' is nested too deeply", name));
  if (e.type() == dom::element_type::ARRAY) {
    for (dom::element child : dom::array(e)) flatten(child, dtype, out, depth + 1, count, name);
    return;
  }
  if (out.size() >= count * size_of(dtype))
    bad(fmt::format("input '{}': 'data' has more than the {} values its shape gives", name, count));
  append_value(e, dtype, out, name);
}

std::string_view string_field(dom::object o, const char* key, const char* where) {
  std::string_view s;
  const auto err = o[key].get(s);
  if (err == simdjson::NO_SUCH_FIELD) bad(fmt::format("{} has no '{}'", where, key));
  if (err) bad(fmt::format("{}: '{}' must be a string", where, key));
  return s;
}

}  // namespace

std::string json_string(std::string_view text) {
  std::string out = "\"";
  for (char c : text) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20)
          out += fmt::format("\\u{:04x}", static_cast<unsigned>(static_cast<unsigned char>(c)));
        else
          out += c;
    }
  }
  return out + "\"";
}

std::string error_body(std::string_view message) { return "{\"error\":" + json_string(message) + "}"; }

namespace {

// parameters.KEY is true.
bool flag(dom::object o, const char* key) {
  dom::object parameters;
  if (o["parameters"].get(parameters)) return false;
  bool on = false;
  return parameters[key].get(on) == simdjson::SUCCESS && on;
}

}  // namespace

TensorSpec TensorSpec::flat(std::int64_t inputs, std::int64_t outputs) {
  TensorSpec spec;
  spec.inputs.push_back({"input", DataType::float32, {inputs}});
  spec.outputs.push_back({"output", DataType::float32, {outputs}});
  return spec;
}

std::int64_t row_elements(const TensorInfo& t) {
  std::int64_t n = 1;
  for (std::int64_t d : t.row_shape) n *= d;
  return n;
}

std::string_view kserve_datatype(DataType dtype) {
  switch (dtype) {
    case DataType::float32: return "FP32";
    case DataType::float64: return "FP64";
    case DataType::int32: return "INT32";
    case DataType::int64: return "INT64";
    case DataType::uint8: return "UINT8";
    case DataType::boolean: return "BOOL";
    case DataType::float16: return "FP16";
    case DataType::bfloat16: return "BF16";  // Triton's name; KServe v2 lists FP16 only
  }
  return "?";
}

namespace {

std::string shape_text(std::int64_t rows, const std::vector<std::int64_t>& row_shape) {
  std::string out = rows < 0 ? std::string("[N") : fmt::format("[{}", rows);
  for (std::int64_t d : row_shape) fmt::format_to(std::back_inserter(out), ",{}", d);  // not "," + to_string: GCC 12 -Wrestrict
  out += ']';
  return out;
}

std::size_t spec_index(const std::vector<TensorInfo>& list, std::string_view name, const char* what) {
  for (std::size_t k = 0; k < list.size(); ++k)
    if (list[k].name == name) return k;
  std::string names;
  for (const auto& t : list) names += (names.empty() ? "'" : ", '") + t.name + "'";
  bad(fmt::format("unknown {} '{}' (the model's {}s: {})", what, name, what, names));
}

// The request's rows from an input's "shape", checked against its row shape.
std::int64_t rows_of(dom::object input, const TensorInfo& t) {
  dom::array shape;
  if (input["shape"].get(shape)) bad(fmt::format("input '{}' needs 'shape', an array of integers", t.name));
  std::vector<std::int64_t> dims;
  for (dom::element d : shape) {
    std::int64_t v = 0;
    if (d.get(v) || v < 0) bad(fmt::format("input '{}': 'shape' must hold non-negative integers", t.name));
    dims.push_back(v);
  }
  const std::int64_t row = row_elements(t);
  bool fits = dims.size() == t.row_shape.size() + 1 && dims[0] >= 1 && (row == 0 || dims[0] <= kMaxElements / row);
  for (std::size_t k = 1; fits && k < dims.size(); ++k) fits = dims[k] == t.row_shape[k - 1];
  if (!fits) {
    std::string given = "[";
    for (std::size_t i = 0; i < dims.size(); ++i) given += (i ? "," : "") + std::to_string(dims[i]);
    bad(fmt::format("input '{}' has shape {}], the model takes {} with N >= 1", t.name, given, shape_text(-1, t.row_shape)));
  }
  return dims[0];
}

// Decodes one input object into request.data[k]; `binary` is the bytes left after the JSON.
void decode_input(dom::object input, const TensorSpec& spec, InferRequest& request, std::vector<bool>& seen,
                  std::string_view& binary, bool has_binary_header) {
  const std::string_view name = string_field(input, "name", "an input");
  const std::size_t k = spec_index(spec.inputs, name, "input");
  const TensorInfo& t = spec.inputs[k];
  if (seen[k]) bad(fmt::format("input '{}' is given twice", name));
  seen[k] = true;
  const std::string_view datatype = string_field(input, "datatype", "an input");
  if (datatype != kserve_datatype(t.dtype))
    bad(fmt::format("input '{}' has datatype '{}', the model takes {}", name, datatype, kserve_datatype(t.dtype)));
  const std::int64_t rows = rows_of(input, t);
  if (request.rows != 0 && rows != request.rows)
    bad(fmt::format("input '{}' has {} rows, an earlier input {}: every input needs the same", name, rows, request.rows));
  request.rows = rows;
  const std::size_t count = std::size_t(rows * row_elements(t)), bytes = count * size_of(t.dtype);
  std::string& out = request.data[k];
  dom::object parameters;
  std::uint64_t binary_size = 0;
  if (input["parameters"].get(parameters) == simdjson::SUCCESS &&
      parameters["binary_data_size"].get(binary_size) == simdjson::SUCCESS) {
    if (!has_binary_header)
      bad(fmt::format("input '{}' has binary_data_size but the request no Inference-Header-Content-Length", name));
    if (binary_size != bytes)
      bad(fmt::format("input '{}' has binary_data_size {}, its shape {} of {} needs {}", name, binary_size,
                      shape_text(rows, t.row_shape), kserve_datatype(t.dtype), bytes));
    if (binary.size() < binary_size)
      bad(fmt::format("input '{}': {} bytes follow the JSON, binary_data_size says {}", name, binary.size(), binary_size));
    out.assign(binary.substr(0, binary_size));
    binary.remove_prefix(binary_size);
    return;
  }
  dom::element data;
  if (input["data"].get(data)) bad(fmt::format("input '{}' has no 'data'", name));
  if (!data.is_array()) bad(fmt::format("input '{}': 'data' must be an array", name));
  out.reserve(std::min<std::size_t>(bytes, 8 * 1024 * 1024));  // a shape alone cannot make us allocate much
  flatten(data, t.dtype, out, 0, count, std::string(name));
  if (out.size() != bytes)
    bad(fmt::format("input '{}' has {} values in 'data', its shape {} needs {}", name, out.size() / size_of(t.dtype),
                    shape_text(rows, t.row_shape), count));
}

}  // namespace

std::size_t parse_json_length(std::string_view header) {
  std::size_t v = 0;
  const char* end = header.data() + header.size();
  const auto [stop, error] = std::from_chars(header.data(), end, v);  // an unsigned value: no sign, no space
  if (error != std::errc() || stop != end)
    bad(fmt::format("Inference-Header-Content-Length '{}' is not a byte count", header));
  return v;
}

InferRequest decode_infer_request(std::string_view body, const TensorSpec& spec, std::optional<std::size_t> json_length) {
  thread_local dom::parser parser;
  std::string_view binary;
  if (json_length) {
    if (*json_length > body.size())
      bad(fmt::format("Inference-Header-Content-Length is {}, over the body's {} bytes", *json_length, body.size()));
    binary = body.substr(*json_length);
    body = body.substr(0, *json_length);
  }
  const simdjson::padded_string padded(body);
  dom::element doc;
  if (auto err = parser.parse(padded).get(doc)) bad(fmt::format("malformed JSON: {}", simdjson::error_message(err)));
  dom::object root;
  if (doc.get(root)) bad("the request must be a JSON object");

  InferRequest request;
  dom::element id;
  if (root["id"].get(id) == simdjson::SUCCESS) {
    std::string_view s;
    if (id.get(s)) bad("'id' must be a string");
    request.id = std::string(s);
  }

  dom::array inputs;
  const auto inputs_err = root["inputs"].get(inputs);
  if (inputs_err == simdjson::NO_SUCH_FIELD) bad("the request has no 'inputs'");
  if (inputs_err) bad("'inputs' must be an array");
  if (inputs.size() != spec.inputs.size())
    bad(fmt::format("'inputs' must hold exactly {} tensor(s), one per input of the model, not {}", spec.inputs.size(),
                    inputs.size()));
  request.data.resize(spec.inputs.size());
  std::vector<bool> seen(spec.inputs.size(), false);
  for (dom::element e : inputs) {
    dom::object input;
    if (e.get(input)) bad("each of 'inputs' must be an object");
    decode_input(input, spec, request, seen, binary, json_length.has_value());
  }
  if (!binary.empty()) bad(fmt::format("{} bytes follow the JSON that no input's binary_data_size claims", binary.size()));
  request.binary_output = flag(root, "binary_data_output");

  dom::element outputs;
  request.wanted.assign(spec.outputs.size(), true);
  if (root["outputs"].get(outputs) == simdjson::SUCCESS) {
    dom::array list;
    if (outputs.get(list)) bad("'outputs' must be an array");
    if (list.size() > 0) request.wanted.assign(spec.outputs.size(), false);
    for (dom::element o : list) {
      dom::object obj;
      if (o.get(obj)) bad("each of 'outputs' must be an object");
      const std::string_view out_name = string_field(obj, "name", "a requested output");
      request.wanted[spec_index(spec.outputs, out_name, "output")] = true;
      if (flag(obj, "binary_data")) request.binary_output = true;
    }
  }
  return request;
}

namespace {

// 16-bit floats are written as the float32 they hold exactly.
template <class T>
auto widened(T v) {
  if constexpr (std::is_same_v<T, float16> || std::is_same_v<T, bfloat16>) return static_cast<float>(v);
  else return v;
}

template <class T>
void append_json_values(std::string& out, const char* data, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) {
    if (i) out += ',';
    T stored;
    std::memcpy(&stored, data + i * std::int64_t(sizeof(T)), sizeof(T));
    const auto v = widened(stored);
    if constexpr (std::is_floating_point_v<decltype(v)>) {
      if (std::isfinite(v)) fmt::format_to(std::back_inserter(out), "{}", v);
      else out += "null";  // JSON has no NaN or infinity
    } else if constexpr (std::is_same_v<T, bool>) {
      out += v ? "true" : "false";
    } else {
      fmt::format_to(std::back_inserter(out), "{}", +v);
    }
  }
}

void append_json(std::string& out, DataType dtype, const char* data, std::int64_t n) {
  switch (dtype) {
    case DataType::float32: return append_json_values<float>(out, data, n);
    case DataType::float64: return append_json_values<double>(out, data, n);
    case DataType::int32: return append_json_values<std::int32_t>(out, data, n);
    case DataType::int64: return append_json_values<std::int64_t>(out, data, n);
    case DataType::uint8: return append_json_values<std::uint8_t>(out, data, n);
    case DataType::boolean: return append_json_values<bool>(out, data, n);
    case DataType::float16: return append_json_values<float16>(out, data, n);
    case DataType::bfloat16: return append_json_values<bfloat16>(out, data, n);
  }
}

}  // namespace

EncodedResponse encode_infer_response(std::string_view model, const InferRequest& request, const TensorSpec& spec,
                                     const std::vector<const char*>& outputs) {
  std::string out = "{";
  if (request.id) out += "\"id\":" + json_string(*request.id) + ",";
  out += fmt::format("\"model_name\":{},\"model_version\":\"1\",\"outputs\":[", json_string(model));
  std::string binary;
  bool first = true;
  for (std::size_t k = 0; k < spec.outputs.size(); ++k) {
    if (!request.wanted.empty() && !request.wanted[k]) continue;
    const TensorInfo& t = spec.outputs[k];
    const std::int64_t n = request.rows * row_elements(t);
    out += fmt::format("{}{{\"name\":{},\"datatype\":\"{}\",\"shape\":{},", first ? "" : ",", json_string(t.name),
                       kserve_datatype(t.dtype), shape_text(request.rows, t.row_shape));
    first = false;
    if (request.binary_output) {
      const std::size_t bytes = std::size_t(n) * size_of(t.dtype);
      out += fmt::format("\"parameters\":{{\"binary_data_size\":{}}}}}", bytes);
      binary.append(outputs[k], bytes);
    } else {
      out += "\"data\":[";
      append_json(out, t.dtype, outputs[k], n);
      out += "]}";
    }
  }
  out += "]}";
  if (!request.binary_output) return {out, 0};
  EncodedResponse r{out, out.size()};
  r.body += binary;
  return r;
}

}  // namespace ndgc::serving

// KServe v2 JSON decoding (simdjson) and encoding (kserve_codec.hpp).
//
// Note [Nested or flat data]
// KServe lets `data` be flat row-major or nested to the tensor's shape. The
// decoder accepts either, and any mix that flattens row-major to the right
// count: it walks arrays depth-first, at most 8 deep (a tensor's rank here
// is 2; deeper nesting is an attack, not a tensor), and requires numbers at
// the leaves. Only the total is checked against the shape, which is what
// decides the meaning of a flat list anyway.
#include "serving/kserve_codec.hpp"

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

void flatten(dom::element e, std::vector<float>& out, int depth, std::size_t limit) {
  if (depth > kMaxDepth) bad("'data' is nested too deeply");
  switch (e.type()) {
    case dom::element_type::ARRAY:
      for (dom::element child : dom::array(e)) flatten(child, out, depth + 1, limit);
      return;
    case dom::element_type::DOUBLE:
    case dom::element_type::INT64:
    case dom::element_type::UINT64: {
      if (out.size() >= limit) bad(fmt::format("'data' has more than the {} values its shape gives", limit));
      double v = 0;
      if (e.get(v) != simdjson::SUCCESS) bad("'data' holds a number that is not a double");
      out.push_back(static_cast<float>(v));
      return;
    }
    default:
      bad("'data' must hold numbers (FP32), nested or flat");
  }
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
  if (inputs.size() != 1) bad(fmt::format("'inputs' must hold exactly 1 tensor ('{}'), not {}", spec.input_name, inputs.size()));
  dom::object input;
  if (inputs.at(0).get(input)) bad("each of 'inputs' must be an object");

  const std::string_view name = string_field(input, "name", "the input");
  if (name != spec.input_name) bad(fmt::format("unknown input '{}' (the model's input is '{}')", name, spec.input_name));
  const std::string_view datatype = string_field(input, "datatype", "input 'input'");
  if (datatype != "FP32") bad(fmt::format("input '{}' has datatype '{}', the model takes FP32", name, datatype));

  dom::array shape;
  if (input["shape"].get(shape)) bad(fmt::format("input '{}' needs 'shape', an array of integers", name));
  std::vector<std::int64_t> dims;
  for (dom::element d : shape) {
    std::int64_t v = 0;
    if (d.get(v) || v < 0) bad(fmt::format("input '{}': 'shape' must hold non-negative integers", name));
    dims.push_back(v);
  }
  if (dims.size() != 2 || dims[1] != spec.inputs || dims[0] < 1 || dims[0] > kMaxElements / spec.inputs) {
    std::string given = "[";
    for (std::size_t i = 0; i < dims.size(); ++i) given += (i ? "," : "") + std::to_string(dims[i]);
    bad(fmt::format("input '{}' has shape {}], the model takes [N,{}] with N >= 1", name, given, spec.inputs));
  }
  request.rows = dims[0];
  const std::size_t count = std::size_t(dims[0] * dims[1]);

  dom::object parameters;
  std::uint64_t binary_size = 0;
  const bool is_binary = input["parameters"].get(parameters) == simdjson::SUCCESS &&
                         parameters["binary_data_size"].get(binary_size) == simdjson::SUCCESS;
  if (is_binary) {
    if (!json_length) bad(fmt::format("input '{}' has binary_data_size but the request no Inference-Header-Content-Length", name));
    if (binary_size != count * sizeof(float))
      bad(fmt::format("input '{}' has binary_data_size {}, its shape [{},{}] of FP32 needs {}", name, binary_size,
                      dims[0], dims[1], count * sizeof(float)));
    if (binary.size() != binary_size)
      bad(fmt::format("input '{}': {} bytes follow the JSON, binary_data_size says {}", name, binary.size(), binary_size));
    request.data.resize(count);
    std::memcpy(request.data.data(), binary.data(), binary_size);
  } else {
    if (!binary.empty()) bad(fmt::format("{} bytes follow the JSON, but no input has binary_data_size", binary.size()));
    dom::element data;
    if (input["data"].get(data)) bad(fmt::format("input '{}' has no 'data'", name));
    if (!data.is_array()) bad(fmt::format("input '{}': 'data' must be an array", name));
    request.data.reserve(std::min<std::size_t>(count, body.size()));  // a shape cannot make us allocate more than the body
    flatten(data, request.data, 0, count);
    if (request.data.size() != count)
      bad(fmt::format("input '{}' has {} values in 'data', its shape [{},{}] needs {}", name, request.data.size(),
                      dims[0], dims[1], count));
  }
  request.binary_output = flag(root, "binary_data_output");

  dom::element outputs;
  if (root["outputs"].get(outputs) == simdjson::SUCCESS) {
    dom::array list;
    if (outputs.get(list)) bad("'outputs' must be an array");
    for (dom::element o : list) {
      dom::object obj;
      if (o.get(obj)) bad("each of 'outputs' must be an object");
      const std::string_view out_name = string_field(obj, "name", "a requested output");
      if (out_name != spec.output_name)
        bad(fmt::format("unknown output '{}' (the model's output is '{}')", out_name, spec.output_name));
      if (flag(obj, "binary_data")) request.binary_output = true;
    }
  }
  return request;
}

EncodedResponse encode_infer_response(std::string_view model, const InferRequest& request, const TensorSpec& spec,
                                     const float* data) {
  const std::int64_t rows = request.rows;
  std::string out = "{";
  if (request.id) out += "\"id\":" + json_string(*request.id) + ",";
  out += fmt::format("\"model_name\":{},\"model_version\":\"1\",\"outputs\":[{{\"name\":{},\"datatype\":\"FP32\","
                     "\"shape\":[{},{}],",
                     json_string(model), json_string(spec.output_name), rows, spec.outputs);
  const std::int64_t n = rows * spec.outputs;
  if (request.binary_output) {
    const std::size_t bytes = std::size_t(n) * sizeof(float);
    out += fmt::format("\"parameters\":{{\"binary_data_size\":{}}}}}]}}", bytes);
    EncodedResponse r{out, out.size()};
    r.body.append(reinterpret_cast<const char*>(data), bytes);
    return r;
  }
  out += "\"data\":[";
  for (std::int64_t i = 0; i < n; ++i) {
    if (i) out += ',';
    const float v = data[i];
    if (std::isfinite(v))
      fmt::format_to(std::back_inserter(out), "{}", v);
    else
      out += "null";  // JSON has no NaN or infinity
  }
  return {out + "]}]}", 0};
}

}  // namespace ndgc::serving

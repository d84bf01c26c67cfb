// KServe v2 (Open Inference Protocol) JSON: decoding an infer request into
// each input's rows, encoding the response. Decoding uses simdjson (DOM, one
// parser per thread, reused) and never trusts the input: every problem is an
// HttpError 400 naming it (malformed JSON, an unknown, missing or repeated
// input, an unknown output name, a wrong datatype or shape, inputs that
// disagree on the rows, data of the wrong length or type). It is the target
// of tests/fuzz/serving_decoder_fuzz.cpp.
//
// Triton's binary tensor extension: with the request header
// Inference-Header-Content-Length: N, the first N bytes of the body are the
// JSON and the rest the tensors' bytes, in the order of the inputs that have
// "parameters": {"binary_data_size": B} instead of "data", B being exactly
// rows × row elements × the datatype's size (little-endian; BOOL one byte).
// An output asked for with "parameters": {"binary_data": true} (or the
// request's "parameters": {"binary_data_output": true}) comes back the same
// way: binary_data_size in the JSON, the bytes after it in the order of the
// outputs, and the response's Inference-Header-Content-Length.
#pragma once

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "ndgc/serving.hpp"

namespace ndgc::serving {

// A request refused with an HTTP status and a message for {"error": ...}.
class HttpError : public std::runtime_error {
 public:
  HttpError(unsigned status, const std::string& message) : std::runtime_error(message), status_(status) {}
  unsigned status() const noexcept { return status_; }

 private:
  unsigned status_;
};

// What a model takes and gives (TensorInfo: ndgc/serving.hpp).
struct TensorSpec {
  std::vector<TensorInfo> inputs, outputs;
  // One FP32 input "input" [-1, inputs], one FP32 output "output" [-1, outputs].
  static TensorSpec flat(std::int64_t inputs, std::int64_t outputs);
};

// Elements in one row of `t`.
std::int64_t row_elements(const TensorInfo& t);
// "FP32", "INT64", ...: KServe's name of a dtype.
std::string_view kserve_datatype(DataType dtype);

struct InferRequest {
  std::optional<std::string> id;   // echoed in the response
  std::int64_t rows = 0;
  std::vector<std::string> data;   // per input of the spec, in its order: rows × row elements, raw bytes of its dtype
  std::vector<bool> wanted;        // per output of the spec: in the response
  bool binary_output = false;      // the outputs as binary data (Triton's extension)
};

struct EncodedResponse {
  std::string body;
  std::size_t json_length = 0;  // with binary output: the JSON's bytes; 0: the body is all JSON
};

// The value of an Inference-Header-Content-Length header: a decimal byte
// count, digits only (no sign, no space). Throws HttpError(400, ...) quoting
// the header otherwise, or when the count does not fit a size_t.
std::size_t parse_json_length(std::string_view header);

// Throws HttpError(400, ...) naming what is wrong.
// `json_length`: Inference-Header-Content-Length when the request has it.
InferRequest decode_infer_request(std::string_view body, const TensorSpec& spec,
                                  std::optional<std::size_t> json_length = std::nullopt);
// {"id"?, "model_name", "model_version", "outputs": [{name, datatype, shape, data}]}.
// outputs[k]: the request's rows of the spec's output k, raw bytes of its dtype.
EncodedResponse encode_infer_response(std::string_view model, const InferRequest& request, const TensorSpec& spec,
                                     const std::vector<const char*>& outputs);
// {"error": "..."} with the message escaped.
std::string error_body(std::string_view message);
// A JSON string literal, quotes included.
std::string json_string(std::string_view text);

}  // namespace ndgc::serving

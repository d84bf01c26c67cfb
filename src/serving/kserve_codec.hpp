// KServe v2 (Open Inference Protocol) JSON: decoding an infer request into
// rows of floats, encoding the response. Decoding uses simdjson (DOM, one
// parser per thread, reused) and never trusts the input: every problem is an
// HttpError 400 naming it (malformed JSON, an unknown input or output name,
// a wrong datatype or shape, data of the wrong length or type). It is the
// target of tests/fuzz/serving_decoder_fuzz.cpp.
#pragma once

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace ndgc::serving {

// A request refused with an HTTP status and a message for {"error": ...}.
class HttpError : public std::runtime_error {
 public:
  HttpError(unsigned status, const std::string& message) : std::runtime_error(message), status_(status) {}
  unsigned status() const noexcept { return status_; }

 private:
  unsigned status_;
};

// What a model takes and gives: one FP32 input [-1, inputs], one FP32 output [-1, outputs].
struct TensorSpec {
  std::string input_name = "input";
  std::string output_name = "output";
  std::int64_t inputs = 0;
  std::int64_t outputs = 0;
};

struct InferRequest {
  std::optional<std::string> id;  // echoed in the response
  std::int64_t rows = 0;
  std::vector<float> data;        // rows × spec.inputs, row-major
};

// Throws HttpError(400, ...) naming what is wrong.
InferRequest decode_infer_request(std::string_view body, const TensorSpec& spec);
// {"id"?, "model_name", "model_version", "outputs": [{name, datatype, shape, data}]}
std::string encode_infer_response(std::string_view model, const std::optional<std::string>& id,
                                  const TensorSpec& spec, std::int64_t rows, const float* data);
// {"error": "..."} with the message escaped.
std::string error_body(std::string_view message);
// A JSON string literal, quotes included.
std::string json_string(std::string_view text);

}  // namespace ndgc::serving

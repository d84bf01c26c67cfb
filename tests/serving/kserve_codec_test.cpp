// KServe v2 JSON decoding and encoding (src/serving/kserve_codec.cpp): nested
// and flat data, KServe's own example, and a 400 naming each problem.
#include <doctest/doctest.h>

#include <cstring>

#include "serving/kserve_codec.hpp"

namespace ndgc::serving {
namespace {

TensorSpec spec4() {
  TensorSpec s;
  s.inputs = 4;
  s.outputs = 3;
  return s;
}

void rejects(const std::string& body, const char* message) {
  CAPTURE(body);
  try {
    decode_infer_request(body, spec4());
    FAIL("accepted");
  } catch (const HttpError& e) {
    CHECK(e.status() == 400);
    CHECK_MESSAGE(std::string(e.what()).find(message) != std::string::npos, e.what());
  }
}

}  // namespace

TEST_CASE("KServe's example request, nested and flat, decodes row-major") {
  // The example of KServe's v2 protocol documentation (its input renamed to the model's).
  const InferRequest nested = decode_infer_request(
      R"({"id":"42","inputs":[{"name":"input","shape":[2,4],"datatype":"FP32","data":[[6.8,2.8,4.8,1.4],[6.0,3.4,4.5,1.6]]}]})",
      spec4());
  CHECK(nested.id == std::optional<std::string>("42"));
  CHECK(nested.rows == 2);
  CHECK(nested.data == std::vector<float>{6.8f, 2.8f, 4.8f, 1.4f, 6.0f, 3.4f, 4.5f, 1.6f});
  const InferRequest flat = decode_infer_request(
      R"({"inputs":[{"name":"input","shape":[2,4],"datatype":"FP32","data":[6.8,2.8,4.8,1.4,6,3,4,1]}],"outputs":[{"name":"output"}]})",
      spec4());
  CHECK(!flat.id);
  CHECK(flat.data.size() == 8);
}

TEST_CASE("each bad request is a 400 naming the problem") {
  rejects("{", "malformed JSON");
  rejects("[]", "must be a JSON object");
  rejects("{}", "no 'inputs'");
  rejects(R"({"inputs":[{"name":"x","shape":[1,4],"datatype":"FP32","data":[1,2,3,4]}]})", "unknown input 'x'");
  rejects(R"({"inputs":[{"name":"input","shape":[1,4],"datatype":"INT64","data":[1,2,3,4]}]})", "datatype 'INT64'");
  rejects(R"({"inputs":[{"name":"input","shape":[1,5],"datatype":"FP32","data":[1,2,3,4,5]}]})", "has shape [1,5]");
  rejects(R"({"inputs":[{"name":"input","shape":[2,4],"datatype":"FP32","data":[1,2,3,4]}]})", "has 4 values");
  rejects(R"({"inputs":[{"name":"input","shape":[1,4],"datatype":"FP32","data":[1,2,3,4,5]}]})", "more than the 4");
  rejects(R"({"inputs":[{"name":"input","shape":[1,4],"datatype":"FP32","data":[1,2,"3",4]}]})", "must hold numbers");
  rejects(R"({"inputs":[{"name":"input","shape":[1,4],"datatype":"FP32","data":[[[[[[[[[[1]]]]]]]]]]}]})", "nested too deeply");
  rejects(R"({"inputs":[{"name":"input","shape":[1,4],"datatype":"FP32","data":[1,2,3,4]}],"outputs":[{"name":"y"}]})",
          "unknown output 'y'");
  rejects(R"({"inputs":[{"name":"input","shape":[4611686018427387904,4],"datatype":"FP32","data":[1]}]})", "has shape");
}

TEST_CASE("responses and errors are valid JSON with escaped text") {
  const float y[6] = {1.5f, -2, 0, 0.25f, 1e-3f, 3};
  InferRequest request;
  request.id = "a\"b";
  request.rows = 2;
  CHECK(encode_infer_response("m", request, spec4(), y).body ==
        R"({"id":"a\"b","model_name":"m","model_version":"1","outputs":[{"name":"output","datatype":"FP32","shape":[2,3],"data":[1.5,-2,0,0.25,0.001,3]}]})");
  CHECK(error_body("bad \"x\"\n") == R"({"error":"bad \"x\"\n"})");
}

TEST_CASE("Triton's binary tensor extension: binary input after the JSON, binary output on request") {
  const std::string json =
      R"({"inputs":[{"name":"input","shape":[2,4],"datatype":"FP32","parameters":{"binary_data_size":32}}],"outputs":[{"name":"output","parameters":{"binary_data":true}}]})";
  const float x[8] = {1, 2, 3, 4, 5, 6, 7, 8};
  const std::string body = json + std::string(reinterpret_cast<const char*>(x), sizeof x);
  const InferRequest r = decode_infer_request(body, spec4(), json.size());
  CHECK(r.rows == 2);
  CHECK(r.data == std::vector<float>(x, x + 8));
  CHECK(r.binary_output);
  const float y[6] = {1, 2, 3, 4, 5, 6};
  const EncodedResponse out = encode_infer_response("m", r, spec4(), y);
  REQUIRE(out.json_length > 0);
  CHECK(out.body.substr(0, out.json_length) ==
        R"({"model_name":"m","model_version":"1","outputs":[{"name":"output","datatype":"FP32","shape":[2,3],"parameters":{"binary_data_size":24}}]})");
  CHECK(out.body.size() == out.json_length + 24);
  CHECK(std::memcmp(out.body.data() + out.json_length, y, 24) == 0);

  auto rejects_binary = [&](const std::string& b, std::size_t length, const char* message) {
    try {
      decode_infer_request(b, spec4(), length);
      FAIL("accepted");
    } catch (const HttpError& e) {
      CHECK_MESSAGE(std::string(e.what()).find(message) != std::string::npos, e.what());
    }
  };
  rejects_binary(body, body.size() + 1, "over the body's");
  rejects_binary(body.substr(0, body.size() - 4), json.size(), "28 bytes follow the JSON");
  rejects_binary(json, json.size(), "0 bytes follow the JSON");
  CHECK_THROWS_AS(decode_infer_request(json, spec4()), HttpError);  // binary_data_size without the header
}

}  // namespace ndgc::serving

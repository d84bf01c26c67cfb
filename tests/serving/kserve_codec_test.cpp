// KServe v2 JSON decoding and encoding (src/serving/kserve_codec.cpp): nested
// and flat data, KServe's own example, and a 400 naming each problem.
#include <doctest/doctest.h>

#include <cstring>

#include "serving/kserve_codec.hpp"

namespace ndgc::serving {
namespace {

TensorSpec spec4() { return TensorSpec::flat(4, 3); }

std::vector<float> floats(const std::string& bytes) {
  std::vector<float> out(bytes.size() / sizeof(float));
  std::memcpy(out.data(), bytes.data(), out.size() * sizeof(float));
  return out;
}

template <class T>
std::string bytes_of(std::initializer_list<T> values) {
  std::string out;
  for (T v : values) out.append(reinterpret_cast<const char*>(&v), sizeof v);
  return out;
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
  CHECK(floats(nested.data.at(0)) == std::vector<float>{6.8f, 2.8f, 4.8f, 1.4f, 6.0f, 3.4f, 4.5f, 1.6f});
  const InferRequest flat = decode_infer_request(
      R"({"inputs":[{"name":"input","shape":[2,4],"datatype":"FP32","data":[6.8,2.8,4.8,1.4,6,3,4,1]}],"outputs":[{"name":"output"}]})",
      spec4());
  CHECK(!flat.id);
  CHECK(floats(flat.data.at(0)).size() == 8);
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

TEST_CASE("Inference-Header-Content-Length is digits only") {
  CHECK(parse_json_length("0") == 0);
  CHECK(parse_json_length("1234") == 1234);
  // std::stoull, which the server used before, took the space and the plus sign.
  for (const char* bad : {"", " 12", "+12", "12 ", "-1", "1x", "0x10", "99999999999999999999999"}) {
    CAPTURE(bad);
    try {
      (void)parse_json_length(bad);
      FAIL("accepted");
    } catch (const HttpError& e) {
      CHECK(e.status() == 400);
      CHECK(std::string(e.what()).find(std::string("Inference-Header-Content-Length '") + bad + "'") !=
            std::string::npos);
    }
  }
}

TEST_CASE("responses and errors are valid JSON with escaped text") {
  const float y[6] = {1.5f, -2, 0, 0.25f, 1e-3f, 3};
  InferRequest request;
  request.id = "a\"b";
  request.rows = 2;
  CHECK(encode_infer_response("m", request, spec4(), {reinterpret_cast<const char*>(y)}).body ==
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
  CHECK(floats(r.data.at(0)) == std::vector<float>(x, x + 8));
  CHECK(r.binary_output);
  const float y[6] = {1, 2, 3, 4, 5, 6};
  const EncodedResponse out = encode_infer_response("m", r, spec4(), {reinterpret_cast<const char*>(y)});
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

TEST_CASE("several inputs and outputs of several datatypes, in JSON and binary, in any order") {
  TensorSpec spec;
  spec.inputs = {{"pixels", DataType::float32, {2}}, {"ids", DataType::int64, {}}, {"mask", DataType::boolean, {3}}};
  spec.outputs = {{"scores", DataType::float64, {2}}, {"labels", DataType::int32, {}}};
  const InferRequest r = decode_infer_request(
      R"({"inputs":[{"name":"ids","shape":[2],"datatype":"INT64","data":[7,-9007199254740993]},)"
      R"({"name":"mask","shape":[2,3],"datatype":"BOOL","data":[[true,false,true],[0,1,0]]},)"
      R"({"name":"pixels","shape":[2,2],"datatype":"FP32","data":[0.5,1,2,3]}],"outputs":[{"name":"labels"}]})",
      spec);
  CHECK(r.rows == 2);
  CHECK(r.data.at(0) == bytes_of<float>({0.5f, 1, 2, 3}));
  CHECK(r.data.at(1) == bytes_of<std::int64_t>({7, -9007199254740993}));  // exact past 2^53
  CHECK(r.data.at(2) == bytes_of<std::uint8_t>({1, 0, 1, 0, 1, 0}));
  CHECK(r.wanted == std::vector<bool>{false, true});
  const std::string scores = bytes_of<double>({0.25, 0.75, 1, 0}), labels = bytes_of<std::int32_t>({1, 0});
  CHECK(encode_infer_response("m", r, spec, {scores.data(), labels.data()}).body ==
        R"({"model_name":"m","model_version":"1","outputs":[{"name":"labels","datatype":"INT32","shape":[2],"data":[1,0]}]})");

  // Binary: the bytes follow the JSON in the order of the inputs that have binary_data_size.
  const std::string json =
      R"({"inputs":[{"name":"mask","shape":[1,3],"datatype":"BOOL","parameters":{"binary_data_size":3}},)"
      R"({"name":"pixels","shape":[1,2],"datatype":"FP32","parameters":{"binary_data_size":8}},)"
      R"({"name":"ids","shape":[1],"datatype":"INT64","data":[5]}],"parameters":{"binary_data_output":true}})";
  const std::string body = json + bytes_of<std::uint8_t>({0, 1, 1}) + bytes_of<float>({4, 5});
  const InferRequest b = decode_infer_request(body, spec, json.size());
  CHECK(b.data.at(0) == bytes_of<float>({4, 5}));
  CHECK(b.data.at(2) == bytes_of<std::uint8_t>({0, 1, 1}));
  const std::string one_score = bytes_of<double>({1, 2}), one_label = bytes_of<std::int32_t>({3});
  const EncodedResponse out = encode_infer_response("m", b, spec, {one_score.data(), one_label.data()});
  CHECK(out.body.substr(out.json_length) == one_score + one_label);

  auto rejects_spec = [&](const std::string& text, const char* message) {
    try {
      decode_infer_request(text, spec);
      FAIL("accepted");
    } catch (const HttpError& e) {
      CHECK_MESSAGE(std::string(e.what()).find(message) != std::string::npos, e.what());
    }
  };
  const std::string ids = R"({"name":"ids","shape":[1],"datatype":"INT64","data":[1]})";
  const std::string mask = R"({"name":"mask","shape":[1,3],"datatype":"BOOL","data":[1,1,1]})";
  const std::string pixels = R"({"name":"pixels","shape":[1,2],"datatype":"FP32","data":[1,1]})";
  rejects_spec(R"({"inputs":[)" + ids + "," + mask + "]}", "exactly 3 tensor(s)");
  rejects_spec(R"({"inputs":[)" + ids + "," + ids + "," + mask + "]}", "'ids' is given twice");
  rejects_spec(R"({"inputs":[{"name":"ids","shape":[1],"datatype":"INT64","data":[1.5]},)" + mask + "," + pixels + "]}",
               "must hold integers");
  rejects_spec(R"({"inputs":[{"name":"ids","shape":[2],"datatype":"INT64","data":[1,2]},)" + mask + "," + pixels + "]}",
               "every input needs the same");
  rejects_spec(R"({"inputs":[)" + ids + R"(,{"name":"mask","shape":[1,3],"datatype":"BOOL","data":[1,2,1]},)" + pixels +
                   "]}",
               "must hold booleans");
}

}  // namespace ndgc::serving

namespace ndgc::serving {

TEST_CASE("FP16 and BF16: JSON numbers rounded to the 16-bit dtype, binary bits as they come, outputs as floats") {
  TensorSpec spec;
  spec.inputs = {{"h", DataType::float16, {2}}, {"b", DataType::bfloat16, {2}}};
  spec.outputs = {{"y", DataType::bfloat16, {2}}, {"z", DataType::float16, {}}};
  const InferRequest r = decode_infer_request(
      R"({"inputs":[{"name":"h","shape":[1,2],"datatype":"FP16","data":[0.1,-65504]},)"
      R"({"name":"b","shape":[1,2],"datatype":"BF16","data":[3.14159,1e6]}]})",
      spec);
  CHECK(r.data.at(0) == bytes_of<std::uint16_t>({float16(0.1f).bits, float16(-65504.0f).bits}));
  CHECK(r.data.at(1) == bytes_of<std::uint16_t>({bfloat16(3.14159f).bits, bfloat16(1e6f).bits}));
  const std::string y = bytes_of<std::uint16_t>({bfloat16(1.5f).bits, bfloat16(-2.0f).bits});
  const std::string z = bytes_of<std::uint16_t>({float16(0.25f).bits});
  CHECK(encode_infer_response("m", r, spec, {y.data(), z.data()}).body ==
        R"({"model_name":"m","model_version":"1","outputs":[{"name":"y","datatype":"BF16","shape":[1,2],"data":[1.5,-2]},)"
        R"({"name":"z","datatype":"FP16","shape":[1],"data":[0.25]}]})");
  const std::string json = R"({"inputs":[{"name":"h","shape":[1,2],"datatype":"FP16","parameters":{"binary_data_size":4}},)"
                           R"({"name":"b","shape":[1,2],"datatype":"BF16","data":[1,2]}]})";
  const std::string body = json + bytes_of<std::uint16_t>({0x3c00, 0x7c00});
  CHECK(decode_infer_request(body, spec, json.size()).data.at(0) == bytes_of<std::uint16_t>({0x3c00, 0x7c00}));
  try {
    decode_infer_request(R"({"inputs":[{"name":"h","shape":[1,2],"datatype":"FP32","data":[1,2]},)"
                         R"({"name":"b","shape":[1,2],"datatype":"BF16","data":[1,2]}]})",
                         spec);
    FAIL("accepted");
  } catch (const HttpError& e) {
    CHECK(std::string(e.what()).find("the model takes FP16") != std::string::npos);
  }
}

}  // namespace ndgc::serving

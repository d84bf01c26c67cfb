// Fuzzes the KServe request decoder (src/serving/kserve_codec.cpp), JSON and
// Triton's binary extension. Any
// bytes either decode into exactly rows × row elements of each input or
// raise HttpError 400; nothing else escapes, and nothing crashes. The first
// byte picks the model: one FP32 input [N, 4], or that and an INT64 [N].
// Runs with ndgc::serving.
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <string_view>

#include "serving/kserve_codec.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const ndgc::serving::TensorSpec one = ndgc::serving::TensorSpec::flat(4, 3);
  static const ndgc::serving::TensorSpec two{
      {{"input", ndgc::DataType::float32, {4}}, {"ids", ndgc::DataType::int64, {}}},
      {{"output", ndgc::DataType::float32, {3}}}};
  const bool both = size > 0 && (data[0] & 2) != 0;
  const ndgc::serving::TensorSpec& spec = both ? two : one;
  // The first byte, when there is one, picks plain JSON (odd) or the binary
  // extension (even). Its JSON length is twice the byte, or, when bit 2 is
  // set too, the Inference-Header-Content-Length text before the rest's first
  // line feed, parsed as the server parses the header.
  std::optional<std::size_t> json_length;
  const bool header_text = size > 0 && data[0] % 2 == 0 && (data[0] & 4) != 0;
  if (size > 0) {
    if (data[0] % 2 == 0) json_length = std::size_t(data[0]) * 2;
    ++data;
    --size;
  }
  try {
    if (header_text) {
      const std::string_view rest(reinterpret_cast<const char*>(data), size);
      const std::size_t line = rest.find('\n');
      if (line == std::string_view::npos) return 0;
      json_length = ndgc::serving::parse_json_length(rest.substr(0, line));
      data += line + 1;
      size -= line + 1;
    }
    const auto r = ndgc::serving::decode_infer_request(
        std::string_view(reinterpret_cast<const char*>(data), size), spec, json_length);
    if (r.rows < 1 || r.data.size() != spec.inputs.size() || r.data[0].size() != std::size_t(r.rows * 4 * 4) ||
        (both && r.data[1].size() != std::size_t(r.rows * 8)))
      std::abort();
  } catch (const ndgc::serving::HttpError& e) {
    if (e.status() != 400) std::abort();
  }
  return 0;
}

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
  // extension with that many bytes of JSON out of the rest.
  std::optional<std::size_t> json_length;
  if (size > 0) {
    if (data[0] % 2 == 0) json_length = std::size_t(data[0]) * 2;
    ++data;
    --size;
  }
  try {
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

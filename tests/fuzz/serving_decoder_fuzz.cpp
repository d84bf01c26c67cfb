// Fuzzes the KServe request decoder (src/serving/kserve_codec.cpp), JSON and
// Triton's binary extension. Any
// bytes either decode into exactly rows × inputs floats or raise HttpError
// 400; nothing else escapes, and nothing crashes. Runs with ndgc::serving.
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <string_view>

#include "serving/kserve_codec.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  ndgc::serving::TensorSpec spec;
  spec.inputs = 4;
  spec.outputs = 3;
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
    if (r.rows < 1 || r.data.size() != std::size_t(r.rows * spec.inputs)) std::abort();
  } catch (const ndgc::serving::HttpError& e) {
    if (e.status() != 400) std::abort();
  }
  return 0;
}

// Fuzzes the KServe request decoder (src/serving/kserve_codec.cpp). Any
// bytes either decode into exactly rows × inputs floats or raise HttpError
// 400; nothing else escapes, and nothing crashes. Runs with ndgc::serving.
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "serving/kserve_codec.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  ndgc::serving::TensorSpec spec;
  spec.inputs = 4;
  spec.outputs = 3;
  try {
    const auto r = ndgc::serving::decode_infer_request(
        std::string_view(reinterpret_cast<const char*>(data), size), spec);
    if (r.rows < 1 || r.data.size() != std::size_t(r.rows * spec.inputs)) std::abort();
  } catch (const ndgc::serving::HttpError& e) {
    if (e.status() != 400) std::abort();
  }
  return 0;
}

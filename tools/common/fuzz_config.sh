# Sourced by tools/fuzz and tools/test: the CMake settings of a libFuzzer
# build (clang-14 as CC/CXX, set by the caller): AddressSanitizer and
# UndefinedBehaviorSanitizer at -O1, libFuzzer's coverage in the library's
# and the targets' units (NDGC_BUILD_FUZZ), no perf/, tools/ or CUDA. tools/test's asan phase adds
# the suites to it, so that one build serves both phases.
NDGC_FUZZ_CONFIG=(-DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG="-O1 -gline-tables-only"
  -DNDGC_SANITIZE=address,undefined -DNDGC_BUILD_FUZZ=ON
  -DNDGC_BUILD_PERF=OFF -DNDGC_BUILD_TOOLS=OFF -DNDGC_CUDA=OFF)
# The libFuzzer targets of tests/fuzz/, each with its seeds in tests/fuzz/corpus/<name without _fuzz>/.
NDGC_FUZZ_TARGETS=(idx_reader_fuzz model_file_fuzz api_fuzz serving_decoder_fuzz onnx_model_fuzz report_input_fuzz)

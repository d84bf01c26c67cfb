// Fuzzes the IDX reader (data::read_idx, src/data/idx_reader.cpp): any bytes,
// plain or gzip'd (the reader sniffs the gzip magic), either load into an
// array whose size matches the header or raise DataError; nothing else, no
// crash, no leak. See fuzz_util.hpp for how it is built and run.
#include <cstdint>
#include <filesystem>

#include "fuzz_util.hpp"

using namespace ndgc;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const std::filesystem::path file = fuzz::scratch_file("idx");
  fuzz::write_file(file, data, size);
  fuzz::Balance balance;
  {
    NDManager m = NDManager::new_base_manager("fuzz-idx");
    try {
      NDArray a = data::read_idx(m, file);
      // A header declares rank and dims; the data has exactly that many elements.
      fuzz::expect(a.rank() >= 1, "read_idx returned a rank-0 array");
      fuzz::expect(m.array_count() == 1, "read_idx left extra arrays in the manager");
      // Every element is readable, and reducible: a sum of int32 data that
      // overflows wraps (it was signed overflow in the CPU kernel, found
      // here: corpus/idx_reader/regress-int32-overflowing-sum).
      (void)a.to_vector<double>();
      (void)a.sum();
    } catch (const DataError&) {
      fuzz::expect(m.array_count() == 0, "a failed read_idx left an array behind");
    }
  }
  balance.check("idx_reader_fuzz");
  std::filesystem::remove(file);
  return 0;
}

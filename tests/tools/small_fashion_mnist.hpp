// A small Fashion-MNIST-shaped data set for ndgc-train's tests: the four
// IDX files FashionMnist::load reads (unpacked), 256 training and 64 test
// images of 28×28, written to a temporary directory removed afterwards. The
// images are learnable (the brightest row is twice the label), so accuracy
// says a model trained; a run of a few epochs takes well under a second.
#pragma once

#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>

namespace ndgc::train_tool {

inline constexpr std::uint32_t kTrainRows = 256, kTestRows = 64;

inline void put_u32(std::ofstream& out, std::uint32_t v) {
  const unsigned char b[4] = {static_cast<unsigned char>(v >> 24), static_cast<unsigned char>(v >> 16),
                              static_cast<unsigned char>(v >> 8), static_cast<unsigned char>(v)};
  out.write(reinterpret_cast<const char*>(b), 4);
}

// Images whose brightest 28-pixel row is the label's, and their labels, as
// unpacked IDX files: learnable, so accuracy says the model trained.
inline void write_split(const std::filesystem::path& dir, const std::string& prefix, std::uint32_t rows, std::uint32_t seed) {
  std::ofstream images(dir / (prefix + "-images-idx3-ubyte"), std::ios::binary);
  std::ofstream labels(dir / (prefix + "-labels-idx1-ubyte"), std::ios::binary);
  put_u32(images, 0x00000803);
  put_u32(images, rows);
  put_u32(images, 28);
  put_u32(images, 28);
  put_u32(labels, 0x00000801);
  put_u32(labels, rows);
  std::uint32_t state = seed;
  for (std::uint32_t i = 0; i < rows; ++i) {
    const unsigned char label = static_cast<unsigned char>(i % 10);
    labels.put(static_cast<char>(label));
    for (int p = 0; p < 784; ++p) {
      state = state * 1664525u + 1013904223u;
      const unsigned char noise = static_cast<unsigned char>(state >> 26);  // 0..63
      images.put(static_cast<char>(p / 28 == 2 * label ? 200 + noise / 2 : noise));
    }
  }
}

struct SmallData {
  std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("ndgc-train-small-data-" + std::to_string(::getpid()));
  SmallData() {
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
    write_split(dir, "train", kTrainRows, 1);
    write_split(dir, "t10k", kTestRows, 2);
  }
  ~SmallData() {
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
  }
};

}  // namespace ndgc::train_tool

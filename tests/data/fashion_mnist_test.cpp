// Fashion-MNIST: the real files when installed, and small fake ones for every
// way the files can disagree.
#include <algorithm>
#include <chrono>
#include <cmath>

#include "data_test_util.hpp"
#include "support/options.hpp"

using namespace ndgc;
using namespace ndgc::data_test;

namespace {

// A fake split of `n` images whose pixel (i, j) is (i + j) % 256, labels i % 10.
void write_fake(const TempDir& dir, const std::string& split, std::uint32_t n, bool gz = true) {
  Bytes pixels(std::size_t(n) * 784), labels(n);
  for (std::size_t i = 0; i < n; ++i) {
    labels[i] = static_cast<unsigned char>(i % 10);
    for (std::size_t j = 0; j < 784; ++j) pixels[i * 784 + j] = static_cast<unsigned char>((i + j) % 256);
  }
  auto write = gz ? write_gz : write_plain;
  const std::string ext = gz ? ".gz" : "";
  write(dir / (split + "-images-idx3-ubyte" + ext), idx_bytes(0x08, {n, 28, 28}, pixels));
  write(dir / (split + "-labels-idx1-ubyte" + ext), idx_bytes(0x08, {n}, labels));
}

void check_load_rejected(const TempDir& dir, data::Split split, const std::string& file, const std::string& problem) {
  NDManager m = NDManager::new_base_manager("fmnist");
  const std::uint64_t bytes = host_bytes();
  CHECK_THROWS_WITH_AS(data::FashionMnist::load(m, split, dir.path()), doctest::Contains(problem.c_str()),
                       DataError);
  CHECK_THROWS_WITH_AS(data::FashionMnist::load(m, split, dir.path()),
                       doctest::Contains((dir / file).string().c_str()), DataError);
  CHECK(m.array_count() == 0);
  CHECK(host_bytes() == bytes);
}

}  // namespace

TEST_CASE("FashionMnist: the real dataset, when installed") {
  const fs::path dir = data::FashionMnist::default_directory();
  if (!data::FashionMnist::available(dir)) {
    MESSAGE("skipped: Fashion-MNIST is not in " << dir
                                                << " (install Debian's dataset-fashion-mnist or set NDGC_DATA_DIR)");
    return;
  }
  NDManager m = NDManager::new_base_manager("fmnist");
  Stopwatch clock;
  data::ArrayDataset train = data::FashionMnist::load(m, data::Split::train, dir);
  MESSAGE("FashionMnist::load(train): " << clock.wall_ms() << " ms wall, " << clock.cpu_ms() << " ms CPU");
  data::ArrayDataset test = data::FashionMnist::load(m, data::Split::test, dir);

  for (auto entry : {std::pair{&train, 60000}, std::pair{&test, 10000}}) {  // CAPTURE: no structured binding
    data::ArrayDataset* set = entry.first;
    const int n = entry.second;
    CAPTURE(n);
    CHECK(set->size() == n);
    CHECK(set->features().shape() == Shape{n, 784});
    CHECK(set->features().dtype() == DataType::float32);
    CHECK(set->labels().shape() == Shape{n});
    CHECK(set->labels().dtype() == DataType::int64);
    CHECK(set->features().min().item<float>() == 0.0f);
    CHECK(set->features().max().item<float>() == 1.0f);
    std::vector<std::int64_t> labels = set->labels().to_vector<std::int64_t>();
    std::vector<int> per_class(10, 0);
    for (std::int64_t l : labels) {
      REQUIRE(l >= 0);
      REQUIRE(l <= 9);
      per_class[std::size_t(l)]++;
    }
    for (int count : per_class) CHECK(count == n / 10);  // Fashion-MNIST is balanced
    // Every pixel is a multiple of 1/255.
    std::vector<float> first = set->features().get(NDIndex("0")).to_vector<float>();
    for (float p : first) CHECK(std::round(p * 255.0f) / 255.0f == p);
  }
  CHECK(train.features().manager().same(m));
  CHECK(m.array_count() >= 4);
}

TEST_CASE("FashionMnist: default directory follows NDGC_DATA_DIR through the options table") {
  const std::string& env = support::options().data_dir;
  fs::path dir = data::FashionMnist::default_directory();
  if (env.empty()) CHECK(dir == fs::path("/usr/share/datasets/fashion-mnist"));
  else CHECK(dir == fs::path(env) / "fashion-mnist");
}

TEST_CASE("FashionMnist: fake files, gzip'd or plain, load with pixels / 255 and int64 labels") {
  for (bool gz : {true, false}) {
    CAPTURE(gz);
    TempDir dir;
    CHECK_FALSE(data::FashionMnist::available(dir.path()));
    write_fake(dir, "train", 12, gz);
    CHECK_FALSE(data::FashionMnist::available(dir.path()));
    write_fake(dir, "t10k", 3, gz);
    CHECK(data::FashionMnist::available(dir.path()));

    NDManager m = NDManager::new_base_manager("fmnist");
    data::ArrayDataset train = data::FashionMnist::load(m, data::Split::train, dir.path());
    CHECK(train.size() == 12);
    std::vector<float> f = train.features().to_vector<float>();
    REQUIRE(f.size() == 12 * 784);
    for (std::size_t i = 0; i < 12; ++i)
      for (std::size_t j = 0; j < 784; j += 97) CHECK(f[i * 784 + j] == float((i + j) % 256) / 255.0f);
    std::vector<std::int64_t> labels = train.labels().to_vector<std::int64_t>();
    for (std::size_t i = 0; i < 12; ++i) CHECK(labels[i] == std::int64_t(i % 10));
    CHECK(data::FashionMnist::load(m, data::Split::test, dir.path()).size() == 3);
    CHECK(m.array_count() == 4);
  }
}

TEST_CASE("FashionMnist: missing and inconsistent files are DataErrors naming the file") {
  TempDir dir;
  check_load_rejected(dir, data::Split::train, "train-images-idx3-ubyte.gz", "no such file");
  write_fake(dir, "train", 4);
  const fs::path labels = dir / "train-labels-idx1-ubyte.gz", images = dir / "train-images-idx3-ubyte.gz";
  write_gz(labels, idx_bytes(0x08, {5}, {1, 2, 3, 4, 5}));
  check_load_rejected(dir, data::Split::train, "train-images-idx3-ubyte.gz", "4 images, but");
  write_gz(labels, idx_bytes(0x08, {4}, {1, 2, 10, 4}));
  check_load_rejected(dir, data::Split::train, "train-labels-idx1-ubyte.gz", "label 10 of sample 2 is outside 0..9");
  write_gz(labels, idx_bytes(0x0C, {4}, Bytes(16, 0)));
  check_load_rejected(dir, data::Split::train, "train-labels-idx1-ubyte.gz", "expected uint8 labels");
  write_gz(labels, idx_bytes(0x08, {4}, {1, 2, 3, 4}));
  write_gz(images, idx_bytes(0x08, {4, 27, 28}, Bytes(4 * 27 * 28, 0)));
  check_load_rejected(dir, data::Split::train, "train-images-idx3-ubyte.gz",
                      "expected uint8 images of shape (N, 28, 28), found (4, 27, 28) of uint8");
  write_gz(images, {0, 0, 8});
  check_load_rejected(dir, data::Split::train, "train-images-idx3-ubyte.gz", "truncated");
  // Failures while the pixels stream into the features: nothing is published.
  write_gz(images, idx_bytes(0x08, {4, 28, 28}, Bytes(3 * 784 + 5, 7)));
  check_load_rejected(dir, data::Split::train, "train-images-idx3-ubyte.gz",
                      "declare 3136 bytes of data, the file holds only 2357");
  write_gz(images, idx_bytes(0x08, {4, 28, 28}, Bytes(4 * 784 + 1, 7)));
  check_load_rejected(dir, data::Split::train, "train-images-idx3-ubyte.gz", "1 bytes of trailing data");
  write_fake(dir, "train", 4);
  Bytes gz = read_all(images);
  gz[gz.size() - 6] ^= 0x55;  // the CRC
  write_plain(images, gz);
  check_load_rejected(dir, data::Split::train, "train-images-idx3-ubyte.gz", "corrupt gzip data");
  write_fake(dir, "train", 4);
  NDManager m = NDManager::new_base_manager("fmnist");
  CHECK(data::FashionMnist::load(m, data::Split::train, dir.path()).size() == 4);
  check_load_rejected(dir, data::Split::test, "t10k-images-idx3-ubyte.gz", "no such file");
}

// Fashion-MNIST: the four IDX files of Debian's dataset-fashion-mnist as an ArrayDataset.
//
// The labels are read and checked first (uint8, 0..9), then the images'
// header (28×28 uint8, as many as labels); the pixels then stream from zlib
// straight into the float32 features (pixel / 255, one pass, no copy of the
// raw bytes). An array is published only once complete, so a bad file leaves
// the manager untouched. Directory: argument, else
// NDGC_DATA_DIR/fashion-mnist (read through support::options(), the one
// place that reads the environment), else /usr/share/datasets/fashion-mnist.
//
// Thread-safety: stateless. Key numbers: train 60000 images (47 MB of pixels,
// 188 MB as float32), test 10000. Loading train costs ~0.27 s of CPU: ~0.17 s
// in zlib's inflate, most of the rest in first-touch page faults of the
// 188 MB output (the conversion itself is ~20 ms).
#include <fmt/format.h>

#include "data/idx_reader.hpp"
#include "data/new_array.hpp"
#include "ndgc/data.hpp"
#include "support/options.hpp"

namespace ndgc::data {
namespace {

constexpr const char* kOp = "FashionMnist::load";
constexpr std::int64_t kSide = 28;
constexpr std::uint8_t kClasses = 10;
constexpr const char* kSystemDirectory = "/usr/share/datasets/fashion-mnist";

const char* prefix(Split split) noexcept { return split == Split::train ? "train" : "t10k"; }

// `<name>.gz`, or `<name>` when only the unpacked file exists; the .gz path
// when neither does, so that the error names what the package installs.
std::filesystem::path resolve(const std::filesystem::path& directory, const std::string& name) {
  std::filesystem::path gz = directory / (name + ".gz"), plain = directory / name;
  std::error_code ec;
  if (!std::filesystem::is_regular_file(gz, ec) && std::filesystem::is_regular_file(plain, ec)) return plain;
  return gz;
}

[[noreturn]] void fail(const std::filesystem::path& file, const std::string& what) {
  throw DataError(fmt::format("{}: '{}': {}", kOp, file.string(), what));
}

}  // namespace

std::filesystem::path FashionMnist::default_directory() {
  const std::string& dir = support::options().data_dir;
  return dir.empty() ? std::filesystem::path(kSystemDirectory) : std::filesystem::path(dir) / "fashion-mnist";
}

bool FashionMnist::available(const std::filesystem::path& directory) {
  for (const char* split : {"train", "t10k"})
    for (const char* kind : {"images-idx3", "labels-idx1"}) {
      std::error_code ec;
      if (!std::filesystem::is_regular_file(resolve(directory, fmt::format("{}-{}-ubyte", split, kind)), ec))
        return false;
    }
  return true;
}

ArrayDataset FashionMnist::load(const ManagerRef& manager, Split split, const std::filesystem::path& directory,
                                Site site) {
  detail::open_manager(manager, kOp);  // fail fast, before reading 26 MB of gzip
  const std::string p = prefix(split);
  const std::filesystem::path images_path = resolve(directory, p + "-images-idx3-ubyte");
  const std::filesystem::path labels_path = resolve(directory, p + "-labels-idx1-ubyte");
  for (const auto& path : {images_path, labels_path}) {
    std::error_code ec;
    if (!std::filesystem::exists(path, ec))
      fail(path, "no such file; install Debian's dataset-fashion-mnist, or set NDGC_DATA_DIR to a directory "
                 "holding fashion-mnist/");
  }

  // The labels first: reading them whole proves how many samples there are,
  // before the images' header can make us allocate their float32 array.
  detail::IdxFile labels = detail::read_idx_file(labels_path, kOp);
  if (labels.type != detail::IdxType::uint8 || labels.shape.rank() != 1)
    fail(labels_path, fmt::format("expected uint8 labels of shape (N), found {} {}",
                                  detail::idx_type_name(labels.type), labels.shape.to_string()));
  const std::int64_t n = labels.shape[0];
  for (std::int64_t i = 0; i < n; ++i)
    if (labels.payload[std::size_t(i)] >= kClasses)
      fail(labels_path, fmt::format("label {} of sample {} is outside 0..9", labels.payload[std::size_t(i)], i));

  detail::IdxReader images(images_path, kOp);
  if (images.type() != detail::IdxType::uint8 || images.shape().rank() != 3 || images.shape()[1] != kSide ||
      images.shape()[2] != kSide)
    images.fail(fmt::format("expected uint8 images of shape (N, 28, 28), found {}", images.describe()));
  if (images.shape()[0] != n)
    images.fail(fmt::format("{} images, but '{}' has {} labels", images.shape()[0], labels_path.string(), n));

  // Pixels go from zlib's output, 1 MiB at a time, straight into the float32
  // buffer; a bad stream throws from inside the fill, before publication.
  detail::CloseUnlessReleased features(detail::new_host_filled(
      manager, Shape{n, kSide * kSide}, DataType::float32, site, kOp, [&](void* out) {
        float* f = static_cast<float*>(out);
        images.read_chunks([f](const unsigned char* pixels, std::size_t count, std::uint64_t offset) {
          float* o = f + offset;
          for (std::size_t i = 0; i < count; ++i) o[i] = float(pixels[i]) / 255.0f;
        });
      }));
  const unsigned char* label_bytes = labels.payload.data();
  detail::CloseUnlessReleased label_array(
      detail::new_host_filled(manager, Shape{n}, DataType::int64, site, kOp, [&](void* out) {
        auto* l = static_cast<std::int64_t*>(out);
        for (std::int64_t i = 0; i < n; ++i) l[i] = label_bytes[i];
      }));
  ArrayDataset dataset(features.get(), label_array.get());
  features.get().set_name(fmt::format("fashion-mnist {} features", p));
  label_array.get().set_name(fmt::format("fashion-mnist {} labels", p));
  features.release();
  label_array.release();
  return dataset;
}

}  // namespace ndgc::data

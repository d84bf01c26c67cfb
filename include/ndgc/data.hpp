// Datasets and batches (DJL's Dataset / Batch, on ndgc managers).
//
//   NDManager model = NDManager::new_base_manager("model");
//   data::ArrayDataset train = data::FashionMnist::load(model, data::Split::train);
//   train.set_batch_size(32).set_shuffle(true, /*seed=*/42);
//   for (data::Batch& batch : train.batches(trainer_manager, /*epoch=*/0)) {
//     NDArray x = batch.data[0], y = batch.labels[0];   // in batch.manager
//   }                                                    // each batch's manager closes with it
//
// A Batch owns a per-step manager (a sub-manager of the one passed to
// batches()) holding its data and labels, so a step that keeps its work in
// that manager leaks nothing: the manager closes when the Batch is destroyed.
// With a prefetch depth above 0 (set_prefetch), batches are prepared on a
// background thread, that many ahead of the consumer; handles cross threads,
// which is what they are built for.
//
// Errors: a missing, truncated or malformed file raises DataError naming the
// file and what was wrong.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "ndgc/manager.hpp"
#include "ndgc/ndarray.hpp"
#include "ndgc/ndlist.hpp"

namespace ndgc::data {

// One step's arrays and the manager that owns them.
struct Batch {
  NDManager manager;  // a sub-manager of the manager passed to batches()
  NDList data;
  NDList labels;
  std::int64_t size = 0;   // samples in this batch
  std::int64_t index = 0;  // position of the batch in its epoch
};

class Dataset {
 public:
  virtual ~Dataset() = default;
  virtual std::int64_t size() const = 0;
  // The samples `indices`, stacked into one batch whose manager is a new
  // sub-manager of `parent`.
  virtual Batch get_batch(const ManagerRef& parent, std::span<const std::int64_t> indices) const = 0;
};

class BatchRange;

// Samples stored as arrays: features [N, ...] and labels [N, ...].
class ArrayDataset : public Dataset {
 public:
  ArrayDataset(NDArray features, NDArray labels);  // InvalidArgument unless both have N rows
  std::int64_t size() const override;
  Batch get_batch(const ManagerRef& parent, std::span<const std::int64_t> indices) const override;

  ArrayDataset& set_batch_size(std::int64_t batch_size);  // > 0
  ArrayDataset& set_shuffle(bool shuffle, std::uint64_t seed = 0);
  ArrayDataset& set_drop_last(bool drop_last);
  ArrayDataset& set_prefetch(int depth);  // 0: batches are made on the consumer's thread
  // At most `limit` batches per epoch (0: all), for quick runs.
  ArrayDataset& set_limit_batches(std::int64_t limit);
  std::int64_t batch_size() const noexcept { return batch_size_; }
  // Batches per epoch with the current settings.
  std::int64_t batch_count() const;
  // The batches of epoch `epoch`: the order is a function of (seed, epoch) when shuffling.
  BatchRange batches(const ManagerRef& parent, std::int64_t epoch) const;

  const NDArray& features() const noexcept { return features_; }
  const NDArray& labels() const noexcept { return labels_; }

 private:
  NDArray features_, labels_;
  std::int64_t batch_size_ = 32;
  bool shuffle_ = false;
  std::uint64_t seed_ = 0;
  bool drop_last_ = false;
  int prefetch_ = 0;
  std::int64_t limit_batches_ = 0;
};

// An input range of Batch (each produced once, moved out to the consumer).
class BatchRange {
 public:
  class Iterator;
  BatchRange(const ArrayDataset& dataset, ManagerRef parent, std::vector<std::vector<std::int64_t>> plan,
             int prefetch);
  ~BatchRange();
  BatchRange(BatchRange&&) noexcept;
  BatchRange(const BatchRange&) = delete;
  Iterator begin();
  std::default_sentinel_t end() const noexcept { return {}; }
  std::int64_t size() const noexcept;

  class Iterator {
   public:
    using value_type = Batch;
    using difference_type = std::ptrdiff_t;
    Batch& operator*() const;
    Iterator& operator++();
    bool operator==(std::default_sentinel_t) const;

   private:
    friend class BatchRange;
    explicit Iterator(BatchRange* range) : range_(range) {}
    BatchRange* range_;
  };

 private:
  struct State;
  std::unique_ptr<State> state_;
};

enum class Split { train, test };

// Fashion-MNIST from Debian's dataset-fashion-mnist: 60000 training and 10000
// test images of 28×28 pixels. features: float32 [N, 784] scaled to [0, 1];
// labels: int64 [N]. The directory defaults to NDGC_DATA_DIR/fashion-mnist,
// else /usr/share/datasets/fashion-mnist.
struct FashionMnist {
  static std::filesystem::path default_directory();
  static bool available(const std::filesystem::path& directory = default_directory());
  static ArrayDataset load(const ManagerRef& manager, Split split,
                           const std::filesystem::path& directory = default_directory());
};

// An IDX file (LeCun's format, optionally gzip'd) read into one array of
// `manager`: uint8 data stays uint8, other IDX types map to their dtype.
NDArray read_idx(const ManagerRef& manager, const std::filesystem::path& file);

}  // namespace ndgc::data

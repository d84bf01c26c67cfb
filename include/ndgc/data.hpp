// Datasets and batches (DJL's Dataset / Batch, on ndgc managers).
//
//   NDManager model = NDManager::new_base_manager("model");
//   data::ArrayDataset train = data::FashionMnist::load(model, data::Split::train);
//   train.set_batch_size(32).set_shuffle(true, /*seed=*/42).set_prefetch(2);
//   for (data::Batch& batch : train.batches(trainer_manager, /*epoch=*/0)) {
//     NDArray x = batch.data[0], y = batch.labels[0];   // in batch.manager
//   }                                                    // each batch's manager closes with it
//
// A Batch owns a per-step manager (a sub-manager of the one passed to
// batches(), named "batch <index>") holding its data and labels, so a step
// that keeps its work in that manager leaks nothing: the manager closes when
// the Batch is destroyed. A BatchRange yields each batch once; the batch it
// hands out lives until the iterator advances (or the range is destroyed),
// and may be moved out to keep it longer.
//
// Order: without shuffling, batches follow the rows in order. With
// set_shuffle(true, seed), epoch e's order is a Fisher–Yates permutation
// driven by std::mt19937_64 seeded from (seed, e): the same (seed, epoch)
// gives the same batches on every platform and run, whatever the prefetch
// depth; different epochs give different orders.
//
// Prefetching: with set_prefetch(depth > 0), one background thread per range
// prepares up to `depth` batches ahead of the consumer, in order. Destroying
// the range (leaving the loop early included) stops and joins the thread and
// closes the batches it prepared; an exception on that thread is rethrown to
// the consumer at the batch where it happened. Handles cross threads, which
// is what they are built for. A range keeps its own copy of the dataset's
// handles, so it may outlive the ArrayDataset object it came from.
//
// Errors: a missing, truncated or malformed file raises DataError naming the
// file and what was wrong, and leaves nothing behind in the manager.
#pragma once

#include <cstdint>
#include <filesystem>
#include <iterator>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "ndgc/manager.hpp"
#include "ndgc/ndarray.hpp"
#include "ndgc/ndlist.hpp"

namespace ndgc::data {

// One step's arrays and the manager that owns them. Move-only (the manager).
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
  // sub-manager of `parent`. Must be safe to call from another thread
  // (prefetching) while the dataset is not modified.
  virtual Batch get_batch(const ManagerRef& parent, std::span<const std::int64_t> indices) const = 0;
};

class BatchRange;

// Samples stored as arrays: features [N, ...] and labels [N, ...]. A batch's
// arrays are rows of these gathered into new contiguous arrays (bulk copies;
// runs of consecutive rows in one copy), on the batch manager's device, the
// device of the manager passed to batches() / get_batch(): host data feeding
// a model on a GPU is gathered on the host and copied to the GPU in one
// transfer per array, on the prefetch thread when prefetching (so it
// overlaps the step). fit() passes the trainer's manager, which is on the
// model's device.
class ArrayDataset : public Dataset {
 public:
  ArrayDataset(NDArray features, NDArray labels);  // InvalidArgument unless both have N rows
  std::int64_t size() const override;
  // The batch on `parent`'s device. InvalidArgument for an index outside [0, size()).
  Batch get_batch(const ManagerRef& parent, std::span<const std::int64_t> indices) const override;

  // Each setter throws InvalidArgument for an out-of-range value.
  ArrayDataset& set_batch_size(std::int64_t batch_size);  // > 0
  ArrayDataset& set_shuffle(bool shuffle, std::uint64_t seed = 0);
  ArrayDataset& set_drop_last(bool drop_last);
  ArrayDataset& set_prefetch(int depth);  // >= 0; 0: batches are made on the consumer's thread
  // At most `limit` batches per epoch (0: all), for quick runs.
  ArrayDataset& set_limit_batches(std::int64_t limit);
  // Data-parallel sharding (a distributed sampler): this process is `rank`
  // of `ranks`. Every rank draws the same epoch order (same seed), cut into
  // global batches of batch_size() × ranks rows; rank r takes the r-th of
  // `ranks` consecutive, near-equal parts of each. So the ranks' batches are
  // disjoint, together cover the epoch, and batch i of every rank is one
  // slice of the same global batch, as one process with batch_size() × ranks
  // would see it. A last global batch with fewer than `ranks` rows is dropped
  // (every rank must have rows). (0, 1): no sharding, the default.
  ArrayDataset& set_shard(int rank, int ranks);
  int shard_rank() const noexcept { return shard_rank_; }
  int shard_count() const noexcept { return shard_count_; }
  std::int64_t batch_size() const noexcept { return batch_size_; }
  bool shuffle() const noexcept { return shuffle_; }
  std::uint64_t seed() const noexcept { return seed_; }
  bool drop_last() const noexcept { return drop_last_; }
  int prefetch() const noexcept { return prefetch_; }
  std::int64_t limit_batches() const noexcept { return limit_batches_; }
  // Batches per epoch with the current settings (the same on every shard).
  std::int64_t batch_count() const;
  // The sample indices of each batch of epoch `epoch`, as batches() uses them.
  std::vector<std::vector<std::int64_t>> epoch_plan(std::int64_t epoch) const;
  // The batches of epoch `epoch`: the order is a function of (seed, epoch) when shuffling.
  BatchRange batches(const ManagerRef& parent, std::int64_t epoch) const;

  const NDArray& features() const noexcept { return features_; }
  const NDArray& labels() const noexcept { return labels_; }

 private:
  NDArray features_, labels_;
  std::int64_t rows_ = 0;
  std::int64_t batch_size_ = 32;
  bool shuffle_ = false;
  std::uint64_t seed_ = 0;
  bool drop_last_ = false;
  int prefetch_ = 0;
  std::int64_t limit_batches_ = 0;
  int shard_rank_ = 0, shard_count_ = 1;
};

// An input range of Batch (each produced once, handed to the consumer by
// reference; move it out to keep it past the iterator's next step).
class BatchRange {
 public:
  class Iterator;
  // Batches of `dataset` (copied: the range keeps its handles) per `plan`.
  BatchRange(const ArrayDataset& dataset, ManagerRef parent, std::vector<std::vector<std::int64_t>> plan,
             int prefetch);
  // Any dataset: get_batch(parent, plan[i]) for each i, on a background
  // thread when prefetch > 0.
  BatchRange(std::shared_ptr<const Dataset> dataset, ManagerRef parent,
             std::vector<std::vector<std::int64_t>> plan, int prefetch);
  ~BatchRange();
  BatchRange(BatchRange&&) noexcept;
  BatchRange(const BatchRange&) = delete;
  BatchRange& operator=(const BatchRange&) = delete;
  // Starts producing (the first call) and waits for the next batch.
  Iterator begin();
  std::default_sentinel_t end() const noexcept { return {}; }
  // Batches in the plan.
  std::int64_t size() const noexcept;

  class Iterator {
   public:
    using iterator_concept = std::input_iterator_tag;
    using value_type = Batch;
    using difference_type = std::ptrdiff_t;
    Batch& operator*() const;
    Batch* operator->() const { return &**this; }
    // Destroys the current batch (closing its manager unless it was moved
    // out), then waits for the next one. Rethrows a failure to make it; the
    // range is then exhausted.
    Iterator& operator++();
    void operator++(int) { ++*this; }
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
// test images of 28×28 pixels. features: float32 [N, 784] scaled to [0, 1]
// (pixel / 255); labels: int64 [N] in 0..9. The directory defaults to
// NDGC_DATA_DIR/fashion-mnist, else /usr/share/datasets/fashion-mnist; in it,
// each file is read as `<name>.gz`, or `<name>` if only the unpacked one exists.
struct FashionMnist {
  static std::filesystem::path default_directory();
  // True when the four files of the dataset are there.
  static bool available(const std::filesystem::path& directory = default_directory());
  // DataError for a missing or malformed file, or files that disagree
  // (image size, image and label counts, a label outside 0..9).
  static ArrayDataset load(const ManagerRef& manager, Split split,
                           const std::filesystem::path& directory = default_directory(),
                           Site site = Site::current());
};

// An IDX file (LeCun's format, plain or gzip'd) read into one array of
// `manager`. uint8 data stays uint8; int8, int16 and int32 become int32;
// float32 and float64 keep their type. DataError names the file and the
// problem: missing, truncated, bad magic, unknown type code, rank 0 or above
// kMaxRank, a size over 1 TiB, data shorter or longer than the dimensions
// declare, a corrupt gzip stream.
NDArray read_idx(const ManagerRef& manager, const std::filesystem::path& file, Site site = Site::current());

}  // namespace ndgc::data

// The data-parallel gradient reducer: training::GradientReducer over a
// ProcessGroup, with gradients all-reduced in fused buckets.
//
// Note [Data-parallel layering]
// training (the layer below distributed in docs/design.md §2) must not depend on
// MPI, which ndgc::distributed makes optional. So training declares the hook
// it calls (training::GradientReducer: broadcast the parameters, reduce the
// gradients, sum the metrics) and this file, the one place in distributed
// that knows training, implements it. The core library never links MPI.
//
// Note [Gradient buckets]
// One all-reduce per parameter costs one latency per parameter; PyTorch's
// DDP fuses gradients into 25 MiB buckets, Horovod into a 64 MiB buffer.
// Here the parameters are grouped once, in reverse order (the order backward
// produces their gradients), by device and dtype, into buckets of at most
// `bucket_bytes` (a larger parameter gets a bucket to itself). Each bucket is
// a contiguous array in the reducer's own manager ("gradient buckets"), made
// once: a step creates no arrays. Per step, each bucket is packed (the
// gradients copied in, scaled by this rank's rows), its non-blocking
// all-reduce started at once, and the next bucket packed while it travels;
// then each is waited for, divided by the total rows and unpacked. The first
// bucket carries one extra element, this rank's row count, so the total
// rows arrive with the gradients, in the same call.
// With overlap on (the default), the Trainer calls begin_reduction before
// backward and gradient_ready(i) as each parameter's gradient becomes final
// (GradientCollector::backward's watch, Note [Gradient ready] in
// src/autograd/backward.cpp): a bucket is packed and its all-reduce started
// the moment its last member is ready, so the network works while backward
// computes the earlier layers (PyTorch DDP's autograd hooks). Every rank
// walks the same tape, so buckets start in the same order everywhere, as
// MPI's non-blocking collectives require. reduce_gradients then waits, in
// bucket order, before the optimizer step. Packing reads the same final
// gradients either way, so overlap changes when the bits travel, not which
// bits: the result is identical to the reduction after backward (tested).
// Each start exchanges the collective's header first (Note [Header check] in
// communicator.hpp: one small all-reduce), a short synchronisation per
// bucket. The last bucket of a step to become ready (the only one for a
// model under one bucket) has nothing left to overlap with: it is packed
// and reduced in reduce_gradients with the blocking all_reduce (MPI's tuned
// algorithms, Note [Blocking payload] in process_group.cpp), after every
// other bucket has started, so the order of collectives is the same on
// every rank; then the others are waited for.
// Every rank adds the same numbers in the same MPI reduction, so all ranks
// get the same bits (MPI's tuned and libnbc all-reduces compute each element
// once and distribute it, or add in rank order on every rank), and the
// optimizer, deterministic per element, keeps the parameters identical.
//
// Thread-safety: one training thread at a time, like the Trainer.
#include <optional>

#include <fmt/format.h>

#include "core/registry.hpp"
#include "ndgc/distributed.hpp"
#include "ndgc/error.hpp"
#include "ndgc/manager.hpp"
#include "ndgc/workspace.hpp"
#include "ops/op_support.hpp"

namespace ndgc::distributed {
namespace {

using ndgc::detail::Pinned;

struct Bucket {
  NDArray buffer;                    // 1-D, in the reducer's manager
  std::vector<std::size_t> members;  // indices into the parameter list
  std::vector<std::int64_t> offsets; // element offset of each member
  bool carries_rows = false;         // the last element is the row count
};

class BucketedReducer final : public training::GradientReducer {
 public:
  BucketedReducer(ProcessGroup group, std::size_t bucket_bytes, bool overlap)
      : group_(std::move(group)), bucket_bytes_(bucket_bytes), overlap_(overlap) {
    if (bucket_bytes_ == 0) throw InvalidArgument("make_gradient_reducer: bucket_bytes must be positive");
  }

  int rank() const override { return group_.rank(); }
  int size() const override { return group_.size(); }

  void broadcast_parameters(const NDList& parameters) override {
    for (std::size_t i = 0; i < parameters.size(); ++i) {
      NDArray p = parameters[i];
      group_.broadcast(p, 0);
    }
  }

  // See Note [Gradient buckets]: the buckets start during backward.
  bool begin_reduction(const NDList& parameters, std::int64_t rows) override {
    if (!overlap_) return false;
    start(parameters, rows);
    begun_ = true;
    return true;
  }

  void gradient_ready(std::size_t index) override {
    if (!begun_ || index >= bucket_of_.size()) return;
    const std::size_t k = bucket_of_[index];
    // The last bucket waits for reduce_gradients (Note [Gradient buckets]).
    if (--waiting_[k] == 0 && unlaunched_ > 1) launch(k);
  }

  void reduce_gradients(const NDList& parameters, std::int64_t rows) override {
    if (!begun_) start(parameters, rows);
    begun_ = false;
    // Every bucket not started yet (all of them without overlap; the last
    // one to become ready with it): all but the last asynchronously, in
    // bucket order, the last one blocking. See Note [Gradient buckets].
    std::optional<std::size_t> last;
    for (std::size_t k = 0; k < buckets_.size(); ++k) {
      if (launched_[k]) continue;
      if (last) launch(*last);
      last = k;
    }
    if (last) {
      launched_[*last] = true;
      --unlaunched_;
      pack(buckets_[*last], gradients_, rows_);
      group_.all_reduce(buckets_[*last].buffer, ReduceOp::sum);
    }
    double total = 0;
    for (std::size_t k = 0; k < buckets_.size(); ++k) {
      if (works_[k].pending()) works_[k].wait();
      if (buckets_[k].carries_rows) total = last_element(buckets_[k].buffer);
      unpack(buckets_[k], gradients_, total);
    }
  }

  void sum(std::vector<double>& values) override {
    if (values.empty()) return;
    if (!metrics_manager_.defined()) metrics_manager_ = NDManager::new_base_manager("distributed metrics");
    NDArray a = metrics_manager_.create(values);
    group_.all_reduce(a, ReduceOp::sum);
    values = a.to_vector<double>();
    a.close();
  }

 private:
  // This step's gradients, rows and per-bucket countdown; no bucket in flight.
  void start(const NDList& parameters, std::int64_t rows) {
    if (buckets_.empty() || parameters.size() != planned_for_) plan(parameters);
    gradients_.clear();
    for (std::size_t i = 0; i < parameters.size(); ++i) gradients_.push_back(parameters[i].gradient());
    rows_ = rows;
    works_.resize(buckets_.size());
    for (Work& w : works_) w = Work();
    launched_.assign(buckets_.size(), false);
    unlaunched_ = buckets_.size();
    waiting_.assign(buckets_.size(), 0);
    for (std::size_t i = 0; i < bucket_of_.size(); ++i) ++waiting_[bucket_of_[i]];
  }

  void launch(std::size_t k) {
    launched_[k] = true;
    --unlaunched_;
    pack(buckets_[k], gradients_, rows_);
    works_[k] = group_.all_reduce_async(buckets_[k].buffer, ReduceOp::sum);
  }

  // See Note [Gradient buckets].
  void plan(const NDList& parameters) {
    buckets_.clear();
    planned_for_ = parameters.size();
    if (parameters.size() == 0) return;
    struct Open {
      Bucket bucket;
      DataType dtype;
      Device device;
      std::int64_t elements = 0;
    };
    std::vector<Open> done;
    std::optional<Open> open;
    for (std::size_t j = parameters.size(); j-- > 0;) {
      const NDArray& p = parameters[j];
      const DataType dtype = p.dtype();
      const Device device = p.device();
      const std::int64_t n = p.size();
      const bool fits = open && open->dtype == dtype && open->device == device &&
                        std::size_t(open->elements + n) * size_of(dtype) <= bucket_bytes_;
      if (open && !fits) done.push_back(std::move(*open)), open.reset();
      if (!open) open = Open{Bucket{}, dtype, device, 0};
      open->bucket.members.push_back(j);
      open->bucket.offsets.push_back(open->elements);
      open->elements += n;
    }
    done.push_back(std::move(*open));
    done.front().bucket.carries_rows = true;
    // Planned during the first step, which may run in the Trainer's step
    // workspace: the buckets live across steps, so never in its arena.
    workspace::ScopeOut ordinary_memory;
    manager_ = NDManager::new_base_manager("gradient buckets", done.front().device);
    for (Open& o : done) {
      if (o.device != done.front().device)
        throw InvalidArgument("make_gradient_reducer: the model's parameters are on several devices; give each rank "
                              "one device");
      o.bucket.buffer = manager_.zeros(Shape{o.elements + (o.bucket.carries_rows ? 1 : 0)}, o.dtype);
      o.bucket.buffer.set_name(fmt::format("gradient bucket {}", buckets_.size()));
      buckets_.push_back(std::move(o.bucket));
    }
    bucket_of_.assign(parameters.size(), 0);
    for (std::size_t k = 0; k < buckets_.size(); ++k)
      for (std::size_t j : buckets_[k].members) bucket_of_[j] = k;
  }

  static void pack(Bucket& b, const std::vector<NDArray>& gradients, std::int64_t rows) {
    Pinned buffer(b.buffer, "reduce_gradients");
    ops::Engine& engine = ops::engine(buffer->device);
    const DataType dtype = buffer->dtype;
    char* base = static_cast<char*>(buffer->data());
    for (std::size_t m = 0; m < b.members.size(); ++m) {
      Pinned g(gradients[b.members[m]], "reduce_gradients");
      engine.copy(ops::view_of(*g), ops::contiguous_view(base + std::size_t(b.offsets[m]) * size_of(dtype), dtype, g->shape));
    }
    const ops::TensorView all = ops::view_of(*buffer);
    if (b.carries_rows) {
      ops::TensorView last = ops::contiguous_view(base + std::size_t(buffer->size() - 1) * size_of(dtype), dtype, Shape{1});
      engine.fill(last, 1.0);
    }
    engine.binary_scalar(ops::Binary::mul, all, double(rows), false, all);
  }

  static void unpack(const Bucket& b, const std::vector<NDArray>& gradients, double total) {
    Pinned buffer(b.buffer, "reduce_gradients");
    ops::Engine& engine = ops::engine(buffer->device);
    const ops::TensorView all = ops::view_of(*buffer);
    if (total > 0) engine.binary_scalar(ops::Binary::div, all, total, false, all);
    const DataType dtype = buffer->dtype;
    char* base = static_cast<char*>(buffer->data());
    for (std::size_t m = 0; m < b.members.size(); ++m) {
      Pinned g(gradients[b.members[m]], "reduce_gradients");
      engine.copy(ops::contiguous_view(base + std::size_t(b.offsets[m]) * size_of(dtype), dtype, g->shape), ops::view_of(*g));
    }
  }

  static double last_element(const NDArray& buffer) {
    Pinned p(buffer, "reduce_gradients");
    double value = 0;
    const DataType dtype = p->dtype;
    ops::TensorView last =
        ops::contiguous_view(static_cast<char*>(p->data()) + std::size_t(p->size() - 1) * size_of(dtype), dtype, Shape{1});
    ops::engine(p->device).to_host(last, ops::contiguous_view(&value, DataType::float64, Shape{1}));
    return value;
  }

  ProcessGroup group_;
  std::size_t bucket_bytes_;
  bool overlap_;
  NDManager manager_;          // the buckets
  NDManager metrics_manager_;  // sum()'s one array per call, closed at once
  std::vector<Bucket> buckets_;
  std::vector<std::size_t> bucket_of_;  // parameter index -> bucket
  std::size_t planned_for_ = 0;
  // The step in progress (kept between steps: no allocation once sized).
  std::vector<NDArray> gradients_;
  std::vector<Work> works_;
  std::vector<bool> launched_;
  std::size_t unlaunched_ = 0;  // buckets not started this step
  std::vector<std::size_t> waiting_;  // members not yet ready, per bucket
  std::int64_t rows_ = 0;
  bool begun_ = false;
};

}  // namespace

std::shared_ptr<training::GradientReducer> make_gradient_reducer(ProcessGroup group, std::size_t bucket_bytes,
                                                                 bool overlap) {
  return std::make_shared<BucketedReducer>(std::move(group), bucket_bytes, overlap);
}

}  // namespace ndgc::distributed

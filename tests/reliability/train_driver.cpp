// A few training batches of an MLP on Fashion-MNIST's test split (10000
// images: quick to load; random data when the dataset is not installed),
// then a few predictions: the workload tools/check-valgrind runs under
// Valgrind memcheck (issue 5). Auto-close off for the first half of the
// batches and on for the second, with a prefetching thread, so both paths and
// a thread handing batches over are covered. Exits non-zero if host bytes in
// use are not back to zero once everything is closed (invariant 4), or if,
// under Memcheck, the host block caches hold anything: there the allocator
// must make exact allocations, or memcheck cannot see a buffer's bounds.
//
//   reliability-train [BATCHES]      (default 8)
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#if __has_include(<valgrind/memcheck.h>)
#include <valgrind/memcheck.h>
#endif

#include <ndgc/ndgc.hpp>
#include <ndgc/inference.hpp>
#include <ndgc/training.hpp>

using namespace ndgc;

namespace {

struct Classify : inference::Translator<std::vector<float>, std::int64_t> {
  NDList process_input(const ManagerRef& ctx, const std::vector<float>& pixels) override {
    return NDList{ctx.create(pixels, Shape{1, 784})};
  }
  std::int64_t process_output(const ManagerRef&, const NDList& out) override {
    return out.head().argmax(1).item<std::int64_t>();
  }
};

bool under_memcheck() {
#ifdef VALGRIND_GET_VBITS
  char probe = 0, vbits = 0;
  return VALGRIND_GET_VBITS(&probe, &vbits, 1) != 0;
#else
  return false;
#endif
}

}  // namespace

int main(int argc, char** argv) {
  const std::int64_t batches = argc > 1 ? std::atoll(argv[1]) : 8;
  {
    Model model("mlp", std::make_unique<nn::Mlp>(784, 10, std::vector<std::int64_t>{128, 64}));
    model.initialize(Shape{32, 784});
    std::unique_ptr<data::ArrayDataset> test_set;
    const char* source = "Fashion-MNIST test split";
    if (data::FashionMnist::available()) {
      test_set = std::make_unique<data::ArrayDataset>(data::FashionMnist::load(model.manager(), data::Split::test));
    } else {
      source = "random data";
      set_random_seed(3);
      NDArray x = model.manager().random_uniform({512, 784});
      NDArray y = x.get(":, 0:10").argmax(1);
      test_set = std::make_unique<data::ArrayDataset>(x, y);
    }
    test_set->set_batch_size(32).set_shuffle(true, 42).set_prefetch(2);
    training::TrainingConfig config;
    config.loss = std::make_shared<nn::SoftmaxCrossEntropyLoss>();
    config.optimizer = std::make_shared<nn::Adam>(1e-3);
    config.metrics.push_back(std::make_shared<training::Accuracy>());
    training::Trainer trainer(model, config);
    std::int64_t done = 0;
    double loss = 0;
    for (data::Batch& batch : test_set->batches(trainer.manager(), 0)) {
      if (done == batches / 2) gc::enable();
      loss = trainer.train_batch(batch);
      if (++done == batches) break;
    }
    inference::Predictor<std::vector<float>, std::int64_t> predictor(model, std::make_shared<Classify>());
    std::vector<float> pixels = test_set->features().get("0").to_vector<float>();
    std::int64_t label = 0;
    for (int i = 0; i < 4; ++i) label = predictor.predict(pixels);
    const std::uint64_t cached = memory::stats(Device::cpu()).cached_bytes;
    if (under_memcheck() && cached != 0) {
      std::fprintf(stderr, "reliability-train: under Memcheck the host block caches hold %llu bytes; "
                   "allocations must be exact there\n", static_cast<unsigned long long>(cached));
      return 1;
    }
    std::printf("reliability-train: %lld batches of 32 from %s, last loss %.4f, predicted %lld\n",
                static_cast<long long>(done), source, loss, static_cast<long long>(label));
  }
  gc::disable();
  gc::sweep();
  const std::uint64_t left = memory::stats(Device::cpu()).current_bytes;
  if (left != 0) {
    std::fprintf(stderr, "reliability-train: %llu host bytes still in use after every manager closed\n",
                 static_cast<unsigned long long>(left));
    return 1;
  }
  return 0;
}

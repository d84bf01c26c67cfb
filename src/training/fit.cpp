// fit(): DJL's EasyTrain.fit — epochs of training batches, then validation.
#include <fmt/format.h>

#include "ndgc/error.hpp"
#include "ndgc/training.hpp"

namespace ndgc::training {

void fit(Trainer& trainer, std::int64_t epochs, const data::ArrayDataset& train, const data::ArrayDataset* validation) {
  if (epochs < 0) throw InvalidArgument(fmt::format("fit: epochs must not be negative, not {}", epochs));
  trainer.notify_training_begin();
  for (std::int64_t epoch = 0; epoch < epochs; ++epoch) {
    trainer.notify_epoch_begin(epoch);
    // Each batch's manager is a sub-manager of the trainer's; it closes when
    // the iterator moves on.
    for (data::Batch& batch : train.batches(trainer.manager(), epoch)) trainer.train_batch(batch, epoch);
    if (validation)
      for (data::Batch& batch : validation->batches(trainer.manager(), epoch)) trainer.validate_batch(batch, epoch);
    trainer.notify_epoch_end(epoch, validation != nullptr);
  }
  trainer.notify_training_end();
}

}  // namespace ndgc::training

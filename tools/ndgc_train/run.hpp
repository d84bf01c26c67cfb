// One configuration's training run: the Fashion-MNIST MLP of the training
// issue (784→128→64→10, ReLU, softmax cross entropy, Adam lr 1e-3, batches
// shuffled with the seed, validated on the test set after each epoch) with
// auto-close off, on or trace, and the leak of --leak model when asked, on
// the device --device names (under --gpu-limit on a GPU).
//
// Managers: the data in a base manager "data"; the model's tree is DJL's
// (model → trainer → batch), so "live arrays" counts exactly the model's
// parameters, gradients, optimizer state, the step's batch — and whatever
// leaks into the model's manager.
#pragma once

#include <filesystem>
#include <iosfwd>

#include "options.hpp"
#include "results.hpp"

namespace ndgc::train_tool {

// The Fashion-MNIST directory `options` names (or the default). DataError
// with what to do when the files are not there.
std::filesystem::path check_data(const Options& options);

// Throws ndgc::Error: DataError when the data is missing or malformed,
// InvalidArgument when the trace detector is asked for but not linked or
// the device cannot be used. A run that dies of OutOfMemory returns its
// result with `failure` set (Note [A run that dies] in run.cpp).
RunResult run_training(const Options& options, std::ostream& progress, bool terminal);

}  // namespace ndgc::train_tool

// --leak model: user code that leaks into the model's manager (leak.cpp).
#pragma once

#include <memory>

#include <ndgc/training.hpp>

namespace ndgc::train_tool {

// A listener that runs the leaking user code after every training step.
std::shared_ptr<training::TrainingListener> make_model_leak(Model& model);

}  // namespace ndgc::train_tool

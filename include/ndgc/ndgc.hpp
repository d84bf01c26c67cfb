// ndgc: tensors with DJL-style managers and opt-in auto-close.
//
//   #include <ndgc/ndgc.hpp>
//   using namespace ndgc;
//   gc::enable();                                          // optional
//   NDManager base = NDManager::new_base_manager("app");
//   NDArray y = (base.ones({2, 3}) * 2.0f).sum({1});
//
// The umbrella header: everything public. See README.md for a tour.
#pragma once

#include "ndgc/autocast.hpp"
#include "ndgc/autograd.hpp"
#include "ndgc/data.hpp"
#include "ndgc/device.hpp"
#include "ndgc/device_graph.hpp"
#include "ndgc/debug.hpp"
#include "ndgc/dtype.hpp"
#include "ndgc/error.hpp"
#include "ndgc/gc.hpp"
#include "ndgc/half.hpp"
#include "ndgc/inference.hpp"
#include "ndgc/layers.hpp"
#include "ndgc/loss.hpp"
#include "ndgc/lstm.hpp"
#include "ndgc/manager.hpp"
#include "ndgc/memory.hpp"
#include "ndgc/model.hpp"
#include "ndgc/ndarray.hpp"
#include "ndgc/ndindex.hpp"
#include "ndgc/ndlist.hpp"
#include "ndgc/nn.hpp"
#include "ndgc/nn_layers.hpp"
#include "ndgc/optimizer.hpp"
#include "ndgc/parallel.hpp"
#include "ndgc/scope.hpp"
#include "ndgc/shape.hpp"
#include "ndgc/training.hpp"
#include "ndgc/uuid.hpp"
#include "ndgc/workspace.hpp"

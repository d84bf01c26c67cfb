// ndgc-train's run in-process on SmallData with DJL's leak, for the tests
// that drive it on the simulated GPU (ndgc_train_run_test.cpp) and on a real
// one (tests/gpu/ndgc_train_test.cpp).
#pragma once

#include <cstdint>
#include <sstream>

#include <ndgc/gc.hpp>

#include "ndgc_train/options.hpp"
#include "ndgc_train/run.hpp"
#include "small_fashion_mnist.hpp"
#include "test_util.hpp"

namespace ndgc::train_tool {

// --leak model, batches of 16 (16 training and 4 test batches per epoch), seed 7.
inline Options leak_options(const SmallData& data, Device device, AutoClose autoclose, std::int64_t epochs = 3) {
  Options o;
  o.epochs = epochs;
  o.batch_size = 16;
  o.seed = 7;
  o.autoclose = autoclose;
  o.leak = Leak::model;
  o.data_dir = data.dir;
  o.out = data.dir / "out";
  o.device = device;
  return o;
}

// run_training, then the switch as it was and the orphans closed.
inline RunResult run_in_process(const Options& o) {
  test::AutoClose restore(false);  // run_training sets the switch; put it back afterwards
  std::ostringstream progress;
  RunResult r = run_training(o, progress, false);
  gc::poll();
  return r;
}

}  // namespace ndgc::train_tool

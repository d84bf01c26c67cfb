// leak-demo: the leak auto-close cures, in thirty lines of user code.
//
// Each step makes a batch in a per-step sub-manager, as DJL teaches, but
// computes `w.matmul(x)` with the weight first: an op's output joins its
// first input's manager, so every intermediate lands in the long-lived model
// manager and stays there until the model closes. With auto-close off the
// model's memory grows every step; with it on, each intermediate is closed
// as soon as its last handle dies.
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <string>

#include <ndgc/ndgc.hpp>

using namespace ndgc;

namespace {

struct Result {
  std::uint64_t bytes_in_use;
  std::size_t model_arrays;
};

Result run(bool autoclose, int steps, bool show_dump) {
  if (autoclose) gc::enable();
  else gc::disable();
  NDManager model = NDManager::new_base_manager("model");
  NDArray w = model.random_normal({128, 784}, 0, 0.05);
  w.set_name("w");
  for (int step = 1; step <= steps; ++step) {
    NDManager batch = model.new_sub_manager("batch");
    NDArray x = batch.random_uniform({784, 32});
    NDArray h = w.matmul(x).relu();        // joins `model`: w is the first input
    float loss = h.mean().item<float>();   // so does the mean
    (void)loss;
  }
  gc::poll();
  Result r{memory::stats(Device::cpu()).current_bytes, model.array_count()};
  if (show_dump) {
    std::string dump = model.debug_dump(true);
    std::size_t cut = 0;
    for (int lines = 0; lines < 6 && cut != std::string::npos; ++lines) cut = dump.find('\n', cut + 1);
    std::cout << "\ndebug_dump of the model manager, auto-close " << (autoclose ? "on" : "off") << " (first lines):\n"
              << dump.substr(0, cut) << "\n  ...\n";
  }
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  int steps = argc > 1 ? std::atoi(argv[1]) : 500;
  if (steps <= 0) {
    std::cerr << "usage: leak-demo [steps]\n";
    return 2;
  }
  std::cout << "leak-demo: " << steps << " steps whose intermediates join the model manager\n\n";
  std::printf("%-12s %14s %14s\n", "auto-close", "bytes in use", "model arrays");
  for (bool on : {false, true}) {
    Result r = run(on, steps, false);
    std::printf("%-12s %14s %14zu\n", on ? "on" : "off",
                memory::format_bytes(r.bytes_in_use).c_str(), r.model_arrays);
  }
  // Bytes shown are while the model manager is open, just before it closes.
  run(false, 3, true);
  run(true, 3, true);
  return 0;
}

// The batcher's threading (src/serving/batcher.hpp), Note [Inline batches]:
// with no queue delay an idle batcher runs a request on the submitting
// thread; with a delay a worker does; and a batch run inline counts against
// `workers`, so a request that arrives meanwhile waits for it.
#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <future>
#include <mutex>
#include <thread>

#include <ndgc/ndgc.hpp>

#include "serving/batcher.hpp"

namespace ndgc::serving {
namespace {

struct Answer {
  std::promise<std::thread::id> thread;
  unsigned status = 0;
};

Job job_for(Answer& a, float value) {
  Job j;
  j.request.rows = 1;
  const float row[4] = {value, 0, 0, 0};
  j.request.data = {std::string(reinterpret_cast<const char*>(row), sizeof row)};
  j.arrived = std::chrono::steady_clock::now();
  j.done = [&a](unsigned status, EncodedResponse) {
    a.status = status;
    a.thread.set_value(std::this_thread::get_id());
  };
  return j;
}

const TensorSpec kSpec = TensorSpec::flat(4, 4);

}  // namespace

TEST_CASE("batcher: with no queue delay, a request that finds it idle runs on the submitting thread") {
  Model model("identity", std::make_unique<nn::LambdaBlock>("identity", [](const NDList& x) { return x; }));
  model.initialize(Shape{1, 4});
  ModelMetrics metrics(32);
  Batcher batcher("identity", model, kSpec, BatchOptions{}, metrics);
  Answer a;
  std::future<std::thread::id> on = a.thread.get_future();
  REQUIRE(batcher.submit(job_for(a, 1)));
  REQUIRE(on.wait_for(std::chrono::seconds(0)) == std::future_status::ready);  // answered before submit returned
  CHECK(on.get() == std::this_thread::get_id());
  CHECK(a.status == 200);
  CHECK(batcher.pending() == 0);
  CHECK(metrics.executions.load() == 1);
}

TEST_CASE("batcher: with a queue delay, a worker runs the batch") {
  Model model("identity", std::make_unique<nn::LambdaBlock>("identity", [](const NDList& x) { return x; }));
  model.initialize(Shape{1, 4});
  ModelMetrics metrics(32);
  BatchOptions o;
  o.max_queue_delay = std::chrono::microseconds(500);
  Batcher batcher("identity", model, kSpec, o, metrics);
  Answer a;
  std::future<std::thread::id> on = a.thread.get_future();
  REQUIRE(batcher.submit(job_for(a, 1)));
  REQUIRE(on.wait_for(std::chrono::seconds(10)) == std::future_status::ready);
  CHECK(on.get() != std::this_thread::get_id());
  CHECK(a.status == 200);
}

TEST_CASE("batcher: a batch run inline counts against workers; a request meanwhile waits for it") {
  // The first forward pass blocks until released; later ones pass through.
  std::mutex mutex;
  std::condition_variable cv;
  bool entered = false, released = false;
  std::atomic<int> calls{0};
  Model model("gate", std::make_unique<nn::LambdaBlock>("gate", [&](const NDList& x) {
                if (calls.fetch_add(1) == 0) {
                  std::unique_lock lock(mutex);
                  entered = true;
                  cv.notify_all();
                  cv.wait(lock, [&] { return released; });
                }
                return x;
              }));
  model.initialize(Shape{1, 4});
  calls = 0;  // initialize may have run the block
  ModelMetrics metrics(32);
  Batcher batcher("gate", model, kSpec, BatchOptions{}, metrics);  // one worker
  Answer first, second;
  std::future<std::thread::id> first_on = first.thread.get_future(), second_on = second.thread.get_future();
  std::thread::id io_id;
  std::thread io([&] {
    io_id = std::this_thread::get_id();
    batcher.submit(job_for(first, 1));  // runs inline and blocks in forward
  });
  {
    std::unique_lock lock(mutex);
    REQUIRE(cv.wait_for(lock, std::chrono::seconds(10), [&] { return entered; }));
  }
  REQUIRE(batcher.submit(job_for(second, 2)));  // the one slot is taken: queued, not run
  CHECK(second_on.wait_for(std::chrono::milliseconds(100)) == std::future_status::timeout);
  CHECK(batcher.pending() == 2);
  {
    std::lock_guard lock(mutex);
    released = true;
  }
  cv.notify_all();
  io.join();
  REQUIRE(second_on.wait_for(std::chrono::seconds(10)) == std::future_status::ready);
  CHECK(first_on.get() == io_id);
  CHECK(second_on.get() != std::this_thread::get_id());  // a worker ran it
  CHECK(first.status == 200);
  CHECK(second.status == 200);
  CHECK(calls.load() == 2);
}

}  // namespace ndgc::serving

// The intra-op pool (src/support/thread_pool.cpp) and the kernels' entry
// points (src/support/parallel.hpp): coverage of every index, fixed chunks,
// errors, nesting, concurrent callers, resizing, fork, lazy start.
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <dirent.h>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include <doctest/doctest.h>
#include <fmt/format.h>

#include <ndgc/ndgc.hpp>

#include "support/parallel.hpp"
#include "support/sanitizers.hpp"
#include "test_util.hpp"

using namespace ndgc;
using support::kGrainSize;

namespace {

using test::Threads;

int tasks_of_this_process() {
  int n = 0;
  if (DIR* d = opendir("/proc/self/task")) {
    while (dirent* e = readdir(d))
      if (e->d_name[0] != '.') ++n;
    closedir(d);
  }
  return n;
}

}  // namespace

TEST_CASE("set_num_threads: the count, and InvalidArgument below 1") {
  Threads keep(3);
  CHECK(num_threads() == 3);
  set_num_threads(1);
  CHECK(num_threads() == 1);
  for (int bad : {0, -2}) {
    CHECK_THROWS_AS(set_num_threads(bad), InvalidArgument);
    try {
      set_num_threads(bad);
    } catch (const InvalidArgument& e) {
      CHECK(std::string(e.what()).find(fmt::format("set_num_threads({})", bad)) != std::string::npos);
      CHECK(std::string(e.what()).find("at least 1") != std::string::npos);
    }
  }
  CHECK(num_threads() == 1);  // unchanged by the refusals
}

TEST_CASE("default thread count: NDGC_NUM_THREADS, else cores shared by the local MPI ranks") {
  CHECK(support::default_threads(5, 16, nullptr) == 5);
  CHECK(support::default_threads(5, 16, "4") == 5);
  CHECK(support::default_threads(0, 16, nullptr) == 16);
  CHECK(support::default_threads(0, 16, "4") == 4);
  CHECK(support::default_threads(0, 2, "4") == 1);
  CHECK(support::default_threads(0, 0, nullptr) == 1);  // hardware_concurrency() may not know
  CHECK(support::default_threads(0, 8, "junk") == 8);
}

TEST_CASE("parallel_for covers [0, n) exactly once at any thread count") {
  for (int threads : {1, 2, 3, 7}) {
    Threads keep(threads);
    for (std::int64_t n : {std::int64_t(0), std::int64_t(1), kGrainSize - 1, kGrainSize, kGrainSize + 1,
                           3 * kGrainSize + 17}) {
      std::vector<std::atomic<int>> hits(static_cast<std::size_t>(n));
      support::parallel_for(n, kGrainSize, [&](std::int64_t lo, std::int64_t hi) {
        REQUIRE(lo < hi);
        for (std::int64_t i = lo; i < hi; ++i) hits[std::size_t(i)].fetch_add(1);
      });
      for (std::int64_t i = 0; i < n; ++i) REQUIRE(hits[std::size_t(i)].load() == 1);
    }
  }
}

TEST_CASE("parallel_chunks: the same chunks whatever the thread count") {
  using Chunk = std::tuple<std::int64_t, std::int64_t, std::int64_t>;
  std::set<Chunk> first;
  for (int threads : {1, 2, 3, 7}) {
    Threads keep(threads);
    std::mutex m;
    std::set<Chunk> seen;
    support::parallel_chunks(10 * 1000 + 7, 1000, [&](std::int64_t i, std::int64_t lo, std::int64_t hi) {
      std::lock_guard lock(m);
      seen.insert({i, lo, hi});
    });
    CHECK(seen.size() == 11);
    CHECK(seen.count({10, 10000, 10007}) == 1);
    if (threads == 1) first = seen;
    else CHECK(seen == first);
  }
}

TEST_CASE("parallel_reduce adds the chunks' partials in chunk order") {
  // Values whose float sum depends on the order: the result must still be
  // the same bits at every thread count, and equal the ordered fold.
  std::vector<float> v(200 * 1000);
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = float(1e-3 * double(i % 977) + (i % 5 == 0 ? 1e4 : 0));
  auto partial = [&](std::int64_t lo, std::int64_t hi) {
    float s = 0;
    for (std::int64_t i = lo; i < hi; ++i) s += v[std::size_t(i)];
    return s;
  };
  float expected = 0;
  for (std::int64_t lo = 0; lo < std::int64_t(v.size()); lo += 1000)
    expected += partial(lo, std::min<std::int64_t>(lo + 1000, std::int64_t(v.size())));
  for (int threads : {1, 2, 3, 7}) {
    Threads keep(threads);
    const float got = support::parallel_reduce(std::int64_t(v.size()), 1000, 0.0f, partial,
                                               [](float a, float b) { return a + b; });
    CHECK(got == expected);
  }
}

TEST_CASE("pool threads take pieces when the count is above 1") {
  Threads keep(2);
  // Each piece waits (at most 10 s) until pieces have run on two threads:
  // inline execution could never get there.
  std::mutex m;
  std::set<std::thread::id> ids;
  std::atomic<bool> timed_out{false};
  support::parallel_chunks(4, 1, [&](std::int64_t, std::int64_t, std::int64_t) {
    { std::lock_guard lock(m); ids.insert(std::this_thread::get_id()); }
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    for (;;) {
      { std::lock_guard lock(m); if (ids.size() >= 2) return; }
      if (std::chrono::steady_clock::now() > until) {
        timed_out = true;
        return;
      }
      std::this_thread::yield();
    }
  });
  CHECK_FALSE(timed_out.load());
  CHECK(ids.size() >= 2);
}

TEST_CASE("an exception in a piece reaches the caller: the lowest piece's") {
  for (int threads : {1, 2, 3, 7}) {
    Threads keep(threads);
    try {
      support::parallel_chunks(64, 1, [&](std::int64_t i, std::int64_t, std::int64_t) {
        if (i == 9 || i == 40) throw InvalidArgument(fmt::format("piece {} failed", i));
      });
      FAIL("no exception");
    } catch (const InvalidArgument& e) {
      CHECK(std::string(e.what()) == "piece 9 failed");
    }
    // The pool is usable afterwards.
    std::atomic<int> count{0};
    support::parallel_chunks(64, 1, [&](std::int64_t, std::int64_t, std::int64_t) { ++count; });
    CHECK(count.load() == 64);
  }
}

TEST_CASE("a region inside a region runs inline on the piece's thread") {
  Threads keep(3);
  std::atomic<int> nested_elsewhere{0}, inner_pieces{0};
  support::parallel_chunks(6, 1, [&](std::int64_t, std::int64_t, std::int64_t) {
    const auto outer = std::this_thread::get_id();
    CHECK(support::region_threads() == 1);
    support::parallel_chunks(8, 1, [&](std::int64_t, std::int64_t, std::int64_t) {
      ++inner_pieces;
      if (std::this_thread::get_id() != outer) ++nested_elsewhere;
    });
  });
  CHECK(inner_pieces.load() == 48);
  CHECK(nested_elsewhere.load() == 0);
  CHECK(support::region_threads() == 3);  // the caller's flag is restored
}

TEST_CASE("callers on several threads share the pool (and run inline when it is busy)") {
  Threads keep(3);
  std::vector<std::thread> callers;
  std::atomic<int> wrong{0};
  for (int t = 0; t < 4; ++t)
    callers.emplace_back([&, t] {
      for (int round = 0; round < 50; ++round) {
        const std::int64_t n = 5 * kGrainSize + t;
        std::vector<int> out(std::size_t(n), 0);
        support::parallel_for(n, kGrainSize, [&](std::int64_t lo, std::int64_t hi) {
          for (std::int64_t i = lo; i < hi; ++i) out[std::size_t(i)] = int(i) + t;
        });
        for (std::int64_t i = 0; i < n; ++i)
          if (out[std::size_t(i)] != int(i) + t) ++wrong;
      }
    });
  // Resizing the pool while the callers run waits for the region in flight.
  for (int n : {2, 4, 3}) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    set_num_threads(n);
  }
  for (auto& c : callers) c.join();
  CHECK(wrong.load() == 0);
}

TEST_CASE("lazy start, 1 thread starts none, and a forked child gets a pool of its own") {
  // In a child: it has one thread (fork copies only the caller), whatever
  // the pool of the parent was doing.
  {
    Threads keep(3);
    support::parallel_chunks(16, 1, [](std::int64_t, std::int64_t, std::int64_t) {});  // the parent's pool runs
  }
  const pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    alarm(20);  // a deadlock fails the test instead of hanging it
    int code = 0;
    set_num_threads(1);
    std::atomic<int> count{0};
    support::parallel_chunks(64, 1, [&](std::int64_t, std::int64_t, std::int64_t) { ++count; });
    if (count != 64) code |= 1;
    if (tasks_of_this_process() != 1) code |= 2;  // 1 thread: no pool started
#if NDGC_TSAN
    _exit(code);  // TSan forbids starting threads after a multi-threaded fork
#endif
    set_num_threads(3);
    count = 0;
    support::parallel_chunks(64, 1, [&](std::int64_t, std::int64_t, std::int64_t) { ++count; });
    if (count != 64) code |= 4;
    if (tasks_of_this_process() != 3) code |= 8;  // started on demand: the caller and two
    NDManager m = NDManager::new_base_manager("child");
    NDArray x = m.ones({3 * kGrainSize}) * 2.0f;
    if (x.sum().to_vector<float>()[0] != float(6 * kGrainSize)) code |= 16;
    _exit(code);
  }
  int status = 0;
  REQUIRE(waitpid(pid, &status, 0) == pid);
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
}

// llvm::function_ref's guard: a copy of a non-const TaskRef is a copy, not a
// TaskRef wrapping the first one (which would add an indirect call and point
// at an object that may be gone).
TEST_CASE("TaskRef: copying a non-const one copies the reference, it does not wrap it") {
  std::int64_t seen = -1;
  auto f = [&](std::int64_t i) { seen = i; };
  support::TaskRef a(f);
  support::TaskRef b(a);  // a is not const
  CHECK(std::memcmp(&a, &b, sizeof a) == 0);
  support::TaskRef c = b;
  CHECK(std::memcmp(&a, &c, sizeof a) == 0);
  c(7);
  CHECK(seen == 7);
}

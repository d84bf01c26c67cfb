// Close-site tracking: in code (debug::set_track_close) and through
// NDGC_TRACK_CLOSE at start-up. The environment is read once, when the
// library starts, so the environment test runs this test binary again as a
// child process with the variable set.
#include <doctest/doctest.h>

#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "core/key.hpp"
#include "core/registry.hpp"
#include "debug_test_util.hpp"
#include "test_util.hpp"

extern char** environ;

using namespace ndgc;
using test::site_text;

namespace {

// A use after close, and the message it throws.
std::string closed_message(int* close_line) {
  NDManager m = NDManager::new_base_manager("tracked");
  NDArray a = m.ones({2});
  a.close(); *close_line = __LINE__;
  try {
    (void)a.sum();
  } catch (const ArrayClosed& e) {
    return e.what();
  }
  return "(no ArrayClosed)";
}

// Runs this binary's test case `name` in a child with `env` added; returns its exit status.
int run_child(const std::string& name, const std::vector<std::string>& env) {
  std::vector<std::string> args = {"/proc/self/exe", "--test-case=" + name, "--no-intro", "--no-version"};
  std::vector<std::string> envs = env;
  for (char** e = environ; *e; ++e) {
    std::string kv = *e;
    if (kv.rfind("NDGC_TRACK_CLOSE=", 0) != 0 && kv.rfind("NDGC_DEBUG_TEST_CHILD=", 0) != 0) envs.push_back(kv);
  }
  std::vector<char*> argv, envp;
  for (std::string& s : args) argv.push_back(s.data());
  argv.push_back(nullptr);
  for (std::string& s : envs) envp.push_back(s.data());
  envp.push_back(nullptr);
  pid_t pid;
  if (posix_spawn(&pid, "/proc/self/exe", nullptr, nullptr, argv.data(), envp.data()) != 0) return -1;
  int status = 0;
  if (waitpid(pid, &status, 0) != pid) return -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

constexpr int kChildAgrees = 42, kChildDisagrees = 43;

// Close tracking on (or off) for one test, restored after.
struct TrackClose {
  explicit TrackClose(bool on) : was_(debug::track_close()) { debug::set_track_close(on); }
  ~TrackClose() { debug::set_track_close(was_); }
  bool was_;
};

std::string use_message(const NDArray& a) {
  try {
    (void)a.sum();
  } catch (const ArrayClosed& e) {
    return e.what();
  }
  return "(no ArrayClosed)";
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

}  // namespace

TEST_CASE("set_track_close(true): a use after close names the file and line of the close") {
  bool was = debug::track_close();
  debug::set_track_close(true);
  CHECK(debug::track_close());
  int line = 0;
  std::string msg = closed_message(&line);
  CHECK(msg.find("closed by close() at ") != std::string::npos);
  CHECK(msg.find(site_text(__FILE__, line)) != std::string::npos);

  // A manager's close is tracked too, at the line that closed the manager.
  NDManager m = NDManager::new_base_manager("tracked-manager");
  NDArray b = m.zeros({1});
  m.close(); int mline = __LINE__;
  CHECK_THROWS_WITH_AS(b.sum(), doctest::Contains(("because its manager closed at " + std::string(__FILE__) + ":" +
                                                   std::to_string(mline)).c_str()),
                       ArrayClosed);

  debug::set_track_close(false);
  CHECK_FALSE(debug::track_close());
  msg = closed_message(&line);
  CHECK(msg.find("set NDGC_TRACK_CLOSE=1 to learn where") != std::string::npos);
  CHECK(msg.find(site_text(__FILE__, line)) == std::string::npos);
  debug::set_track_close(was);
}

// The child half of the next test: does nothing unless run by it.
TEST_CASE("track_close child") {
  const char* expect = std::getenv("NDGC_DEBUG_TEST_CHILD");
  if (!expect) return;
  bool want = std::string(expect) == "on";
  int line = 0;
  std::string msg = closed_message(&line);
  bool named = msg.find(site_text(__FILE__, line)) != std::string::npos;
  std::_Exit(debug::track_close() == want && named == want ? kChildAgrees : kChildDisagrees);
}

TEST_CASE("NDGC_TRACK_CLOSE=1 at start-up switches close tracking on; =0 leaves it off") {
  CHECK(run_child("track_close child", {"NDGC_TRACK_CLOSE=1", "NDGC_DEBUG_TEST_CHILD=on"}) == kChildAgrees);
  CHECK(run_child("track_close child", {"NDGC_TRACK_CLOSE=on", "NDGC_DEBUG_TEST_CHILD=on"}) == kChildAgrees);
  CHECK(run_child("track_close child", {"NDGC_TRACK_CLOSE=0", "NDGC_DEBUG_TEST_CHILD=off"}) == kChildAgrees);
  CHECK(run_child("track_close child", {"NDGC_DEBUG_TEST_CHILD=off"}) == kChildAgrees);
  // The child really checks: expecting the wrong state fails.
  CHECK(run_child("track_close child", {"NDGC_TRACK_CLOSE=1", "NDGC_DEBUG_TEST_CHILD=off"}) == kChildDisagrees);
}

// Issue 11: every close path records where, and the switch is suggested only when it was off.

TEST_CASE("close tracking: an NDManager's destructor names the manager and where it was created") {
  TrackClose on(true);
  NDArray a, b;
  int line = 0;
  {
    NDManager m = NDManager::new_base_manager("dtor"); line = __LINE__;
    NDManager sub = m.new_sub_manager("inner");
    a = m.ones({2});
    b = sub.ones({2});
    (void)sub.release();  // closed by m's destructor, through the tree
  }
  std::string msg = use_message(a);
  CHECK(contains(msg, "because its manager closed when NDManager 'system/dtor' (created at "));
  CHECK(contains(msg, site_text(__FILE__, line) + ") was destroyed"));
  CHECK_FALSE(contains(msg, "NDGC_TRACK_CLOSE"));
  msg = use_message(b);  // a sub-manager's array names the destroyed ancestor
  CHECK(contains(msg, "manager system/dtor/inner"));
  CHECK(contains(msg, "when NDManager 'system/dtor' (created at "));
  CHECK(contains(msg, site_text(__FILE__, line) + ") was destroyed"));
}

TEST_CASE("close tracking: the end of an NDScope names where the scope was opened") {
  TrackClose on(true);
  NDManager m = NDManager::new_base_manager("scoped");
  NDArray a, outside = m.ones({1});
  int line = 0;
  {
    NDScope scope; line = __LINE__;
    a = m.ones({2});
    scope.attach(outside);
  }
  for (const NDArray& x : {a, outside}) {
    std::string msg = use_message(x);
    CHECK(contains(msg, "was closed at the end of the NDScope opened at "));
    CHECK(contains(msg, site_text(__FILE__, line)));
    CHECK_FALSE(contains(msg, "NDGC_TRACK_CLOSE"));
  }
}

TEST_CASE("close tracking: the reclaim paths name themselves; no switch is suggested") {
  // With a handle left only the trace detector's drain (a leaked handle)
  // closes by reclaim; the registry call here is the one that drain makes.
  TrackClose on(true);
  NDManager m = NDManager::new_base_manager("reclaimed");
  NDArray a = m.ones({2}), b = m.ones({2}), c = m.ones({2});
  auto close = [](const NDArray& x, detail::CloseReason why) {
    const detail::Key* k = detail::key_of(x);
    detail::Registry::instance().request_close(k->slot, k->generation, why, nullptr, nullptr);
  };
  close(a, detail::CloseReason::leaked_handle);
  close(b, detail::CloseReason::sweep);
  close(c, detail::CloseReason::autoclose);
  std::string msg = use_message(a);
  CHECK(contains(msg, "by the trace detector"));
  CHECK(contains(msg, "in a drain of the reclaim queue"));
  CHECK_FALSE(contains(msg, "NDGC_TRACK_CLOSE"));
  CHECK(contains(use_message(b), "by gc::sweep() (no handle reached it) during the sweep"));
  CHECK(contains(use_message(c), "by auto-close (no handle reached it) in a drain of the reclaim queue"));
}

TEST_CASE("close tracking: a path with nothing to add suggests nothing; a close made untracked says so") {
  NDManager m = NDManager::new_base_manager("silent");
  NDArray a = m.ones({2}), b = m.ones({2});
  {
    TrackClose on(true);
    const detail::Key* k = detail::key_of(a);
    detail::Registry::instance().request_close(k->slot, k->generation, detail::CloseReason::explicit_close, nullptr,
                                               nullptr);
    CHECK_FALSE(contains(use_message(a), "NDGC_TRACK_CLOSE"));
  }
  {
    TrackClose off(false);
    b.close();
    CHECK(contains(use_message(b), "(set NDGC_TRACK_CLOSE=1 to learn where)"));
  }
  TrackClose on(true);  // switched on after the close: the switch is on, so it is not suggested
  std::string msg = use_message(b);
  CHECK_FALSE(contains(msg, "set NDGC_TRACK_CLOSE"));
  CHECK(contains(msg, "(close tracking was off when it closed)"));
}

TEST_CASE("close tracking: a new close path plugs in its own description (the workspace hook)") {
  TrackClose on(true);
  NDManager m = NDManager::new_base_manager("hooked");
  NDArray a = m.ones({2});
  struct Cycle {
    const char* workspace;
    int n;
  } cycle{"W", 7};
  const detail::CloseSite site{nullptr,
                               [](const void* c) {
                                 const auto& cy = *static_cast<const Cycle*>(c);
                                 return std::string("when workspace '") + cy.workspace + "' recycled cycle " +
                                        std::to_string(cy.n);
                               },
                               &cycle};
  const detail::Key* k = detail::key_of(a);
  detail::Registry::instance().request_close(k->slot, k->generation, detail::CloseReason::explicit_close, &site,
                                             nullptr);
  CHECK(contains(use_message(a), "when workspace 'W' recycled cycle 7"));
}

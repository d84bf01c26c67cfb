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

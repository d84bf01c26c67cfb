// The error paths of the CI scripts that tools/test runs: together()
// (tools/common/together.sh), which runs the fuzz targets and memcheck side
// by side, and tools/fuzz's refusal of a target it does not know.
#include <doctest/doctest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace {

struct Run {
  int exit_code = -1;
  std::string output;  // stdout and stderr together
};

// Runs `script` with bash in the source tree, at most 60 s: a script that
// hangs fails with timeout's status, 124, rather than stalling the suite.
Run run_in_source_tree(const std::string& script) {
  char path[] = "/tmp/ndgc-ci-script-XXXXXX";
  const int fd = ::mkstemp(path);
  REQUIRE(fd >= 0);
  REQUIRE(::write(fd, script.data(), script.size()) == static_cast<ssize_t>(script.size()));
  ::close(fd);
  const std::string command = std::string("cd '" NDGC_SOURCE_ROOT "' && timeout 60 bash ") + path + " 2>&1";
  Run run;
  FILE* pipe = ::popen(command.c_str(), "r");
  REQUIRE(pipe != nullptr);
  std::array<char, 4096> chunk{};
  std::size_t n = 0;
  while ((n = std::fread(chunk.data(), 1, chunk.size(), pipe)) > 0) run.output.append(chunk.data(), n);
  const int status = ::pclose(pipe);
  ::unlink(path);
  REQUIRE(WIFEXITED(status));
  run.exit_code = WEXITSTATUS(status);
  return run;
}

}  // namespace

TEST_CASE("together: every task runs; a failed one is named with its exit status and the call fails") {
  // Under `set -euo pipefail`, as tools/test calls it: the call's failure
  // ends the script with status 1.
  const Run run = run_in_source_tree(R"(set -euo pipefail
source tools/common/together.sh
together 2 "echo first" "grep -q x /nonexistent/file" "echo third" "false" "echo fifth"
echo unreachable
)");
  CAPTURE(run.output);
  CHECK(run.exit_code == 1);
  for (const char* line : {"first\n", "third\n", "fifth\n"}) CHECK(run.output.find(line) != std::string::npos);
  CHECK(run.output.find("'false' failed (exit 1)") != std::string::npos);
  CHECK(run.output.find("'grep -q x /nonexistent/file' failed (exit 2)") != std::string::npos);
  CHECK(run.output.find("unreachable") == std::string::npos);
}

TEST_CASE("together: tasks that all succeed; each one's output is printed whole, never interleaved") {
  // Two tasks at once, each printing three lines with pauses between them.
  const Run run = run_in_source_tree(R"(set -euo pipefail
source tools/common/together.sh
d=$(mktemp -d)
for t in a b; do printf "echo ${t}1; sleep 0.1; echo ${t}2; sleep 0.1; echo ${t}3\n" > "$d/$t.sh"; done
together 2 "sh $d/a.sh" "sh $d/b.sh"
echo "together: $?"
rm -r "$d"
)");
  CAPTURE(run.output);
  CHECK(run.exit_code == 0);
  CHECK(run.output.find("together: 0") != std::string::npos);
  const bool a_whole = run.output.find("a1\na2\na3\n") != std::string::npos;
  const bool b_whole = run.output.find("b1\nb2\nb3\n") != std::string::npos;
  CHECK(a_whole);
  CHECK(b_whole);
}

TEST_CASE("tools/fuzz: an unknown target exits 2, names it, and lists the targets it knows") {
  const Run run = run_in_source_tree("NDGC_FUZZ_BUILD=/nonexistent tools/fuzz no_such_fuzz 1");
  CAPTURE(run.output);
  CHECK(run.exit_code == 2);
  CHECK(run.output.find("no corpus tests/fuzz/corpus/no_such") != std::string::npos);
  CHECK(run.output.find("api_fuzz") != std::string::npos);  // one of the targets it lists
  CHECK(run.output.find("onnx_model_fuzz") != std::string::npos);
}

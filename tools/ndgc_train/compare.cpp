// run_children(): posix_spawn of /proc/self/exe per configuration, waitpid,
// then read_run() of the child's result file.
#include "compare.hpp"

#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <iostream>

#include <fmt/format.h>

extern char** environ;

namespace ndgc::train_tool {
namespace {

// The parent's environment without NDGC_AUTOCLOSE: the child's --autoclose decides.
std::vector<char*> child_environment() {
  std::vector<char*> env;
  for (char** e = environ; e && *e; ++e)
    if (std::strncmp(*e, "NDGC_AUTOCLOSE=", 15) != 0) env.push_back(*e);
  env.push_back(nullptr);
  return env;
}

// Spawns the child and waits; returns an empty string on success, else what went wrong.
std::string spawn_and_wait(const std::vector<std::string>& args) {
  const char* self = "/proc/self/exe";
  std::vector<char*> argv;
  std::string program = "ndgc-train";
  argv.push_back(program.data());
  std::vector<std::string> copies = args;
  for (std::string& a : copies) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::vector<char*> env = child_environment();
  std::cout.flush();
  std::cerr.flush();
  pid_t pid = 0;
  if (int rc = posix_spawn(&pid, self, nullptr, nullptr, argv.data(), env.data()); rc != 0)
    return fmt::format("cannot start {}: {}", self, std::strerror(rc));
  int status = 0;
  while (waitpid(pid, &status, 0) < 0)
    if (errno != EINTR) return fmt::format("waitpid failed: {}", std::strerror(errno));
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return {};
  if (WIFEXITED(status)) return fmt::format("exited with status {}", WEXITSTATUS(status));
  if (WIFSIGNALED(status)) return fmt::format("killed by signal {} ({})", WTERMSIG(status), strsignal(WTERMSIG(status)));
  return "ended abnormally";
}

}  // namespace

CompareOutcome run_children(const Options& o, const std::vector<RunMode>& modes) {
  CompareOutcome outcome;
  for (std::size_t i = 0; i < modes.size(); ++i) {
    const std::string config = config_name(modes[i]);
    const std::filesystem::path file = run_file(o.out, config);
    std::error_code ec;
    std::filesystem::remove(file, ec);  // never read a stale result
    std::cout << fmt::format("== run {}/{}: {} (fresh process) ==", i + 1, modes.size(), config)
              << std::endl;
    if (std::string error = spawn_and_wait(child_arguments(o, modes[i].autoclose, modes[i].workspace));
        !error.empty()) {
      outcome.failures.push_back(fmt::format("{}: the child process {}", config, error));
      continue;
    }
    try {
      outcome.runs.push_back(read_run(file));
    } catch (const std::exception& e) {
      outcome.failures.push_back(fmt::format("{}: {}", config, e.what()));
    }
  }
  return outcome;
}

}  // namespace ndgc::train_tool

// Runs a function in a child process and reports how it ended: for tests of
// code that must abort (a broken invariant, NDGC_ASSERT), which doctest
// cannot catch in-process.
#pragma once

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>

namespace ndgc::test {

struct Death {
  // f() did not return: the child was stopped (SIGABRT; under ThreadSanitizer,
  // whose runtime ends an aborting forked child its own way, any end but a
  // clean exit counts).
  bool stopped = false;
  std::string stderr_text;
};

// Forks; the child runs `f` with stderr into a pipe, then exits 0.
template <class F>
Death run_in_child(F&& f) {
  int fds[2];
  if (::pipe(fds) != 0) std::abort();
  std::fflush(nullptr);  // or the child may write the parent's buffered output again
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::dup2(fds[1], STDERR_FILENO);
    ::close(fds[0]);
    ::close(fds[1]);
    f();
    ::_exit(0);
  }
  ::close(fds[1]);
  Death d;
  char buffer[256];
  for (ssize_t n; (n = ::read(fds[0], buffer, sizeof buffer)) > 0;) d.stderr_text.append(buffer, std::size_t(n));
  ::close(fds[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  d.stopped = !(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  return d;
}

}  // namespace ndgc::test

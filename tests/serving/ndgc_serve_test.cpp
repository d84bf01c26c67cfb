// tools/ndgc-serve as a child process: the first stdout line, a prediction
// from a model file, and SIGTERM's graceful shutdown (exit 0, no array left);
// bad command lines exit 2. Runs where the tool is built (NDGC_SERVE_BINARY).
#include <doctest/doctest.h>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <string>

#include <ndgc/model_file.hpp>
#include <ndgc/ndgc.hpp>

#include "serving/http_client.hpp"

#ifdef NDGC_SERVE_BINARY
namespace ndgc::serving {
namespace {

struct Child {
  pid_t pid = -1;
  FILE* out = nullptr;
  explicit Child(const std::vector<std::string>& args) {
    int fds[2];
    REQUIRE(::pipe(fds) == 0);
    pid = ::fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
      ::dup2(fds[1], STDOUT_FILENO);
      ::close(fds[0]);
      ::close(fds[1]);
      std::vector<char*> argv{const_cast<char*>(NDGC_SERVE_BINARY)};
      for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
      argv.push_back(nullptr);
      ::execv(NDGC_SERVE_BINARY, argv.data());
      ::_exit(127);
    }
    ::close(fds[1]);
    out = ::fdopen(fds[0], "r");
  }
  std::string line() {
    char buffer[256] = {};
    return std::fgets(buffer, sizeof buffer, out) ? std::string(buffer) : std::string();
  }
  int wait() {
    int status = 0;
    ::waitpid(pid, &status, 0);
    pid = -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }
  ~Child() {
    if (pid > 0) {
      ::kill(pid, SIGKILL);
      wait();
    }
    if (out) std::fclose(out);
  }
};

}  // namespace

TEST_CASE("ndgc-serve: listening line, a prediction, SIGTERM exits 0 with no array left") {
  const auto file = std::filesystem::temp_directory_path() / ("ndgc_serve_" + std::to_string(::getpid()) + ".model");
  {
    const Architecture arch = Architecture::mlp(4, 3, {5});
    Model model("m", arch.make_block());
    model.initialize(Shape{1, 4});
    save_model_file(model, arch, file);
  }
  Child child({"--model", "tiny=" + file.string(), "--port", "0", "--workers", "2"});
  const std::string first = child.line();
  REQUIRE(first.starts_with("listening on http://127.0.0.1:"));
  const auto port = static_cast<unsigned short>(std::stoi(first.substr(first.rfind(':') + 1)));
  {
    test::Client c(port);
    CHECK(c.get("/v2/health/ready").result_int() == 200);
    const auto r = c.post("/v2/models/tiny/infer",
                          R"({"inputs":[{"name":"input","shape":[1,4],"datatype":"FP32","data":[1,2,3,4]}]})");
    CHECK(r.result_int() == 200);
    CHECK(r.body().find("\"shape\":[1,3]") != std::string::npos);
  }
  ::kill(child.pid, SIGTERM);
  CHECK(child.wait() == 0);
  std::filesystem::remove(file);
}

TEST_CASE("ndgc-serve: bad command lines exit 2, a missing model file 1") {
  CHECK(Child({"--port", "0"}).wait() == 2);  // --model is required
  CHECK(Child({"--model", "nofile", "--port", "0"}).wait() == 2);
  CHECK(Child({"--model", "x=/nonexistent.model", "--port", "0"}).wait() == 1);
  CHECK(Child({"--model", "x=y", "--autoclose", "sometimes"}).wait() == 2);
  CHECK(Child({"--model", "x=y", "--compute-threads", "0"}).wait() == 2);
}

}  // namespace ndgc::serving
#endif

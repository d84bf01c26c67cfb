#include "common/program_beside.hpp"

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

namespace ndgc::tools {

std::string program_beside(std::string_view name) {
  std::error_code ec;
  const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) return {};
  const std::filesystem::path beside = self.parent_path() / name;
  return ::access(beside.c_str(), X_OK) == 0 ? beside.string() : std::string();
}

std::string exec_beside(std::string_view name, char** argv) {
  const std::string program = program_beside(name);
  if (program.empty()) return std::string(name) + " is not beside this program";
  ::execv(program.c_str(), argv);
  return program + ": " + std::strerror(errno);
}

}  // namespace ndgc::tools

// support::write_atomically(): the whole file or none of it, and errors that
// name the operation and the path.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include <ndgc/error.hpp>

#include "support/atomic_write.hpp"

namespace ndgc {
namespace {

std::string contents_of(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace

TEST_CASE("write_atomically: replaces the file whole; a failed write leaves the old one and no temporary") {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / "ndgc_atomic_write_test";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const std::filesystem::path file = dir / "f.bin";
  support::write_atomically(file, "test", [](std::ostream& out) { return bool(out << "first"); });
  CHECK(contents_of(file) == "first");
  CHECK_THROWS_WITH_AS(support::write_atomically(file, "test op", [](std::ostream& out) {
                         out << "half";
                         return false;
                       }),
                       doctest::Contains(("test op: error writing " + (dir / "f.bin.tmp").string()).c_str()), DataError);
  CHECK(contents_of(file) == "first");
  CHECK_FALSE(std::filesystem::exists(dir / "f.bin.tmp"));
  CHECK_THROWS_WITH_AS(support::write_atomically(dir / "no" / "f.bin", "test op", [](std::ostream&) { return true; }),
                       doctest::Contains(("test op: cannot create " + (dir / "no" / "f.bin.tmp").string()).c_str()), DataError);
  std::filesystem::create_directories(dir / "a-directory");
  CHECK_THROWS_WITH_AS(support::write_atomically(dir / "a-directory", "test op", [](std::ostream&) { return true; }),
                       doctest::Contains("test op: cannot rename"), DataError);
  CHECK_FALSE(std::filesystem::exists(dir / "a-directory.tmp"));
  std::filesystem::remove_all(dir);
}

}  // namespace ndgc

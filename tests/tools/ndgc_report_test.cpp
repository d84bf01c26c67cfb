// ndgc-report's inputs: saved snapshots and dumps read back, and bad files
// refused with a DataError naming the file and the place (inputs.hpp).
#include <doctest/doctest.h>

#include <sys/wait.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include <ndgc/ndgc.hpp>
#include <ndgc/report.hpp>

#include "ndgc_report/inputs.hpp"

namespace ndgc::report_tool {
namespace {

struct InputDir {
  std::filesystem::path dir = std::filesystem::temp_directory_path() / "ndgc_report_inputs_test";
  InputDir() { std::filesystem::create_directories(dir); }
  ~InputDir() { std::filesystem::remove_all(dir); }
  std::filesystem::path write(const std::string& name, const std::string& text) const {
    std::ofstream(dir / name, std::ios::binary) << text;
    return dir / name;
  }
};

// ndgc-report with `args`, its output in `log`; the exit status.
int run_report(const std::string& args, const std::filesystem::path& log) {
  const std::string cmd = std::string("'") + NDGC_REPORT_BINARY + "' " + args + " > '" + log.string() + "' 2>&1";
  const int status = std::system(cmd.c_str());
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

std::string read_log(const std::filesystem::path& log) {
  std::ifstream in(log);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace

TEST_CASE("ndgc-report the program: 0 and the page written; 1 naming a bad file; 2 for a bad command line") {
  InputDir d;
  const auto log = d.dir / "log.txt";
  const auto good = d.write("start.json", debug::snapshot().to_json());
  const auto out = d.dir / "page.html";
  CHECK(run_report("'" + good.string() + "' -o '" + out.string() + "'", log) == 0);
  CHECK(read_log(log).find("written: " + out.string()) != std::string::npos);
  CHECK(std::filesystem::file_size(out) > 50'000);
  const auto bad = d.write("bad.json", "{\"format\": \"ndgc.snapshot\"");
  CHECK(run_report("'" + good.string() + "' '" + bad.string() + "' -o '" + (d.dir / "no.html").string() + "'", log) == 1);
  CHECK(read_log(log).find("bad.json: not valid JSON at byte") != std::string::npos);
  CHECK_FALSE(std::filesystem::exists(d.dir / "no.html"));  // nothing written for a bad input
  CHECK(run_report("", log) == 2);  // no file
  CHECK(run_report("'" + (d.dir / "missing.json").string() + "'", log) == 2);  // CLI11: not an existing file
  CHECK(read_log(log).find("missing.json") != std::string::npos);
}

TEST_CASE("ndgc-report inputs: snapshots and a dump make one document, runs in order") {
  InputDir d;
  NDManager m = NDManager::new_base_manager("report_inputs");
  const std::string first = debug::snapshot().to_json();
  NDArray a = m.zeros(Shape{16});
  const std::string second = debug::snapshot().to_json();
  const std::string dump = debug::dump(m, true, debug::Format::json);
  std::vector<Input> in{read_input(d.write("start.json", first)), read_input(d.write("end.json", second)),
                        read_input(d.write("tree.json", dump))};
  CHECK(in[0].snapshot.has_value());
  CHECK(in[2].dump.has_value());
  CHECK(in[1].label == "end");
  const nlohmann::json doc = nlohmann::json::parse(document_of(in, "t"));
  REQUIRE(doc["runs"].size() == 2);
  CHECK(doc["runs"][0]["snapshots"].size() == 2);
  CHECK(doc["runs"][0]["snapshots"][1]["label"] == "end");
  CHECK(doc["runs"][1]["name"] == "tree");
  CHECK_NOTHROW(report::page(doc.dump()));
}

TEST_CASE("ndgc-report inputs: truncated, hostile and wrong files are DataErrors naming the file and the place") {
  InputDir d;
  const std::string snapshot = debug::snapshot().to_json();
  const auto truncated = d.write("cut.json", snapshot.substr(0, snapshot.size() / 2));
  CHECK_THROWS_WITH_AS(read_input(truncated), doctest::Contains("cut.json: not valid JSON at byte"), DataError);
  CHECK_THROWS_WITH_AS(read_input(d.write("garbage.json", "\x01\x02 not json")),
                       doctest::Contains("garbage.json: not valid JSON at byte 1"), DataError);
  CHECK_THROWS_WITH_AS(read_input(d.write("deep.json", std::string(1000000, '[') + std::string(1000000, ']'))),
                       doctest::Contains("deep.json: the document's \"format\" is missing"), DataError);
  // A dump whose managers nest 100,000 deep: refused by the dump's reader, naming the file.
  std::string deep_dump = R"({"format":"ndgc.dump","version":1,"detailed":false,"workspaces":[],"root":)";
  const std::string manager = R"j({"name":"m","path":"m","uuid":"0f8fad5b-d9cb-469f-a165-70867728950e",)j"
                              R"j("device":"cpu()","open":true,"capped":false,"array_count":0,"bytes":0,"children":[)j";
  for (int i = 0; i < 100000; ++i) deep_dump += manager;
  for (int i = 0; i < 100000; ++i) deep_dump += "]}";
  deep_dump += "}";
  CHECK_THROWS_WITH_AS(read_input(d.write("deep-dump.json", deep_dump)),
                       doctest::Contains("deep-dump.json: debug::Dump::from_json"), DataError);
  CHECK_THROWS_WITH_AS(read_input(d.dir / "deep-dump.json"), doctest::Contains("managers nested more than 1000"),
                       DataError);
  CHECK_THROWS_WITH_AS(read_input(d.write("other.json", R"({"format": "ndgc.diff"})")),
                       doctest::Contains("other.json: the document's \"format\" is \"ndgc.diff\""), DataError);
  CHECK_THROWS_WITH_AS(read_input(d.write("array.json", "[1, 2, 3]")),
                       doctest::Contains("\"format\" is missing"), DataError);
  nlohmann::json bad = nlohmann::json::parse(snapshot);
  bad["arrays"] = nlohmann::json::array({nlohmann::json::array({"not-a-uuid", 0, 0, 0, 0})});
  CHECK_THROWS_WITH_AS(read_input(d.write("field.json", bad.dump())),
                       doctest::Contains("field.json: debug::Snapshot::from_json: arrays[0]"), DataError);
}

TEST_CASE("ndgc-report inputs: a file over the size limit is refused before it is read") {
  InputDir d;
  const std::filesystem::path huge = d.dir / "huge.json";
  std::ofstream(huge).close();
  std::filesystem::resize_file(huge, kMaxInputBytes + 1);  // sparse: no data written
  CHECK_THROWS_WITH_AS(read_input(huge), doctest::Contains("huge.json: 268435457 bytes, more than the 256 MiB"),
                       DataError);
  CHECK_THROWS_WITH_AS(read_input(d.dir / "missing.json"), doctest::Contains("missing.json: cannot read it"),
                       DataError);
}

}  // namespace ndgc::report_tool

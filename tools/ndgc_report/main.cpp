// ndgc-report: the memory report page from snapshots and dumps a program
// saved (debug::Snapshot::to_json, debug::dump with Format::json), for
// programs that embed ndgc and never run ndgc-train (docs/report.md).
//
//   ndgc-report before.json after.json -o report.html
//
// Exit codes: 0 the page was written, 1 an input or the output failed (the
// message names the file and the place), 2 a bad command line.
#include <iostream>

#include <CLI/CLI.hpp>

#include <ndgc/error.hpp>
#include <ndgc/report.hpp>

#include "inputs.hpp"

int main(int argc, char** argv) {
  CLI::App app{"ndgc-report: a memory report page (HTML, offline) from saved snapshots and dumps"};
  std::vector<std::string> files;
  std::string out = "report.html";
  std::string title;
  app.add_option("files", files, "Snapshots (debug::Snapshot::to_json) and dumps (debug::dump, JSON), oldest first")
      ->required()
      ->check(CLI::ExistingFile);
  app.add_option("-o,--out", out, "The page to write")->capture_default_str();
  app.add_option("--title", title, "The page's title (default: the files' names)");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    app.exit(e);  // prints the help, or the error and the usage
    return e.get_exit_code() == 0 ? 0 : 2;  // a usage error is 2, as for the other programs
  }

  try {
    std::vector<ndgc::report_tool::Input> inputs;
    for (const std::string& f : files) inputs.push_back(ndgc::report_tool::read_input(f));
    if (title.empty()) {
      title = "ndgc-report:";
      for (const auto& i : inputs) title += " " + i.label;
    }
    ndgc::report::write_page(out, ndgc::report_tool::document_of(inputs, title));
    std::cout << "written: " << out << '\n';
    return 0;
  } catch (const ndgc::Error& e) {
    std::cerr << e.what() << '\n';
  }
  return 1;
}

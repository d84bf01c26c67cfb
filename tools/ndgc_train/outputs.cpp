// write_outputs(): CSV, JSON, SVG and the report page of a set of runs.
#include "outputs.hpp"

#include <ndgc/report.hpp>

#include "report_page.hpp"
#include "svg_chart.hpp"

namespace ndgc::train_tool {

std::filesystem::path write_report(const std::vector<RunResult>& runs, const std::filesystem::path& dir,
                                   const std::string& title) {
  const std::filesystem::path file = dir / "report.html";
  report::write_page(file, report_document(runs, title));
  return file;
}

std::vector<std::filesystem::path> write_outputs(const std::vector<RunResult>& runs, const std::filesystem::path& dir,
                                                 const std::string& stem, const std::string& title) {
  std::vector<std::filesystem::path> paths{dir / (stem + ".csv"), dir / (stem + ".json"), dir / (stem + ".svg"),
                                          write_report(runs, dir, title)};
  write_file(paths[0], to_csv(runs));
  write_file(paths[1], to_json(runs));
  write_file(paths[2], render_chart(runs, title));
  return paths;
}

}  // namespace ndgc::train_tool

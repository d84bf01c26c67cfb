// See conformance.hpp.
#include "conformance.hpp"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <sstream>

#include <fmt/format.h>

#include <ndgc/ndgc.hpp>
#include <ndgc/onnx.hpp>

#include "onnx/tensors.hpp"

namespace ndgc::test::onnx_conformance {
namespace {

::onnx::TensorProto read_tensor(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  ::onnx::TensorProto t;
  if (!in || !t.ParseFromIstream(&in)) throw DataError("cannot read tensor " + file.string());
  return t;
}

std::vector<std::filesystem::path> numbered(const std::filesystem::path& folder, const std::string& prefix) {
  std::vector<std::filesystem::path> out;
  for (int k = 0;; ++k) {
    auto p = folder / fmt::format("{}_{}.pb", prefix, k);
    if (!std::filesystem::exists(p)) return out;
    out.push_back(p);
  }
}

// "" when `got` matches `want` (dtype, shape, values within tolerance).
std::string compare(const NDArray& got, const NDArray& want, const std::string& what) {
  if (got.dtype() != want.dtype())
    return fmt::format("{}: dtype {} (expected {})", what, to_string(got.dtype()), to_string(want.dtype()));
  if (!(got.shape() == want.shape()))
    return fmt::format("{}: shape {} (expected {})", what, got.shape().to_string(), want.shape().to_string());
  std::vector<double> g(static_cast<std::size_t>(got.size())), w(g.size());
  got.copy_to(g.data(), DataType::float64, g.size());
  want.copy_to(w.data(), DataType::float64, w.size());
  const bool exact = !is_floating(want.dtype());
  for (std::size_t i = 0; i < g.size(); ++i) {
    if (std::isnan(w[i]) && std::isnan(g[i])) continue;
    if (std::isinf(w[i]) && g[i] == w[i]) continue;
    const bool ok = exact ? g[i] == w[i] : std::abs(g[i] - w[i]) <= kAtol + kRtol * std::abs(w[i]);
    if (!ok) return fmt::format("{}: element {} is {} (expected {})", what, i, g[i], w[i]);
  }
  return "";
}

std::string first_lines(const std::string& text, int lines) {
  std::istringstream in(text);
  std::string line, out;
  for (int k = 0; k < lines && std::getline(in, line); ++k) out += (k ? " / " : "") + line;
  return out;
}

// Runs every data set of a loaded case; "" when all match.
std::string run_data_sets(onnx::Imported& net, const std::filesystem::path& folder) {
  std::vector<std::filesystem::path> sets;
  for (const auto& e : std::filesystem::directory_iterator(folder))
    if (e.is_directory() && e.path().filename().string().rfind("test_data_set_", 0) == 0) sets.push_back(e.path());
  std::sort(sets.begin(), sets.end());
  for (const auto& set : sets) {
    NDManager batch = net.model.manager().new_sub_manager("case");
    NDList inputs;
    for (const auto& p : numbered(set, "input"))
      inputs.push_back(ndgc::onnx::detail::to_array(read_tensor(p), batch, "test data"));
    const std::vector<std::filesystem::path> expected = numbered(set, "output");
    NDList outputs = net.model.block().forward(inputs, false);
    if (outputs.size() != expected.size())
      return fmt::format("{} outputs (expected {})", outputs.size(), expected.size());
    for (std::size_t k = 0; k < expected.size(); ++k) {
      NDArray want = ndgc::onnx::detail::to_array(read_tensor(expected[k]), batch, "test data");
      if (std::string why = compare(outputs[k], want, fmt::format("{} output {}", set.filename().string(), k));
          !why.empty())
        return why;
    }
  }
  return "";
}

}  // namespace

CaseResult run_case(const std::filesystem::path& folder, const std::string& directory) {
  CaseResult r{directory, folder.filename().string(), Outcome::passed, ""};
  std::optional<onnx::Imported> net;
  try {
    net.emplace(onnx::load(folder / "model.onnx", r.name));
  } catch (const InvalidArgument& e) {
    r.outcome = Outcome::refused, r.reason = e.what();
    return r;
  } catch (const DataError& e) {
    r.outcome = Outcome::refused, r.reason = e.what();
    return r;
  } catch (const std::exception& e) {
    r.outcome = Outcome::failed, r.reason = fmt::format("load threw {}", e.what());
    return r;
  }
  try {
    r.reason = run_data_sets(*net, folder);
  } catch (const std::exception& e) {
    r.reason = fmt::format("forward threw: {}", first_lines(e.what(), 2));
  }
  if (!r.reason.empty()) r.outcome = Outcome::failed;
  return r;
}

std::vector<CaseResult> run_directory(const std::filesystem::path& root, const std::string& directory) {
  std::vector<std::filesystem::path> cases;
  for (const auto& e : std::filesystem::directory_iterator(root / directory))
    if (e.is_directory()) cases.push_back(e.path());
  std::sort(cases.begin(), cases.end());
  std::vector<CaseResult> out;
  for (const auto& c : cases) out.push_back(run_case(c, directory));
  return out;
}

std::string report(const std::vector<CaseResult>& results) {
  std::map<std::string, std::array<int, 3>> counts;
  for (const auto& r : results) ++counts[r.directory][std::size_t(r.outcome)];
  std::string out = "| directory | passed | refused | failed |\n|---|---|---|---|\n";
  std::array<int, 3> total{};
  for (const auto& [dir, c] : counts) {
    out += fmt::format("| {} | {} | {} | {} |\n", dir, c[0], c[1], c[2]);
    for (int k = 0; k < 3; ++k) total[std::size_t(k)] += c[std::size_t(k)];
  }
  out += fmt::format("| **all** | **{}** | **{}** | **{}** |\n", total[0], total[1], total[2]);
  for (Outcome o : {Outcome::failed, Outcome::refused}) {
    out += o == Outcome::failed ? "\nFailed:\n\n" : "\nRefused:\n\n";
    for (const auto& r : results)
      if (r.outcome == o) out += fmt::format("- {}/{}: {}\n", r.directory, r.name, first_lines(r.reason, 3));
  }
  return out;
}

}  // namespace ndgc::test::onnx_conformance

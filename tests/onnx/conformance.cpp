// See conformance.hpp.
#include "conformance.hpp"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include <doctest/doctest.h>
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
  // ONNX 1.12's test data stores bfloat16 values as UINT16 tensors of their
  // bits (the Cast cases); no case ndgc loads takes a real uint16.
  if (t.data_type() == ::onnx::TensorProto::UINT16) t.set_data_type(::onnx::TensorProto::BFLOAT16);
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
  const double rtol = want.dtype() == DataType::bfloat16  ? kRtolBfloat16
                      : want.dtype() == DataType::float16 ? kRtolFloat16
                                                          : kRtol;
  for (std::size_t i = 0; i < g.size(); ++i) {
    if (std::isnan(w[i]) && std::isnan(g[i])) continue;
    if (std::isinf(w[i]) && g[i] == w[i]) continue;
    const bool ok = exact ? g[i] == w[i] : std::abs(g[i] - w[i]) <= kAtol + rtol * std::abs(w[i]);
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

struct BadData : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Throws BadData when an input of the data set has another static shape than the graph declares.
void check_against_graph(const onnx::Imported& net, const NDList& inputs) {
  for (std::size_t k = 0; k < inputs.size() && k < net.inputs.size(); ++k) {
    const Shape shape = inputs[k].shape();
    const std::vector<std::int64_t>& want = net.inputs[k].shape;
    bool contradicts = shape.rank() != int(want.size());
    for (int d = 0; !contradicts && d < shape.rank(); ++d) contradicts = want[std::size_t(d)] >= 0 && want[std::size_t(d)] != shape[d];
    if (contradicts)
      throw BadData(fmt::format("input '{}' of the data has shape {}, the graph declares [{}]", net.inputs[k].name,
                                shape.to_string(), fmt::join(want, ", ")));
  }
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
    check_against_graph(net, inputs);
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

// The scope ndgc aims at (docs/onnx.md): the default domain's ops but strings, sequences,
// optionals, quantized ops, signal ops, training ops, NonMaxSuppression,
// RoiAlign, GridSample, Unique, Det and the random ops; ndgc's dtypes; not
// the four training-mode dropout cases (NumPy's random generator).
bool in_scope(const std::filesystem::path& folder) {
  static const std::set<std::string> out_ops = {
      "StringNormalizer", "TfIdfVectorizer", "SequenceConstruct", "SequenceEmpty", "SequenceAt", "SequenceInsert",
      "SequenceErase", "SequenceLength", "SplitToSequence", "ConcatFromSequence", "SequenceMap", "Optional",
      "OptionalHasElement", "OptionalGetElement", "QuantizeLinear", "DequantizeLinear", "DynamicQuantizeLinear",
      "QLinearConv", "QLinearMatMul", "ConvInteger", "MatMulInteger", "DFT", "STFT", "HannWindow", "HammingWindow",
      "BlackmanWindow", "MelWeightMatrix", "Adam", "Adagrad", "Momentum", "Gradient", "NonMaxSuppression", "RoiAlign",
      "GridSample", "Unique", "Det", "RandomNormal", "RandomUniform", "RandomNormalLike", "RandomUniformLike",
      "Multinomial", "Bernoulli"};
  const std::string name = folder.filename().string();
  if (name.rfind("test_training_dropout", 0) == 0) return false;
  ::onnx::ModelProto model;
  std::ifstream in(folder / "model.onnx", std::ios::binary);
  if (!model.ParseFromIstream(&in)) return true;
  for (const auto& n : model.graph().node())
    if (out_ops.count(n.op_type()) || (!n.domain().empty() && n.domain() != "ai.onnx")) return false;
  auto ndgc_type = [](const ::onnx::ValueInfoProto& v) {
    return v.type().has_tensor_type() && onnx::detail::dtype_of_elem(v.type().tensor_type().elem_type());
  };
  for (const auto& v : model.graph().input())
    if (!ndgc_type(v)) return false;
  for (const auto& v : model.graph().output())
    if (!ndgc_type(v)) return false;
  return true;
}

// Cases whose expected values ONNX has since corrected, with why: ndgc runs
// the corrected meaning, so their old data is bad data, not a failure.
const std::map<std::string, std::string>& corrected_cases() {
  static const std::map<std::string, std::string> cases = {
      {"test_maxunpool_export_with_output_shape",
       "its values come from ONNX 1.12's reference, which placed the indices in the inferred 4x4 shape and padded "
       "that to output_shape; MaxPool's indices address the pooled input, whose shape output_shape gives, as ONNX "
       "Runtime (microsoft/onnxruntime#2193) and ONNX's later reference (onnx/onnx#2398, #8413) read them, and ndgc"}};
  return cases;
}

}  // namespace

CaseResult run_case(const std::filesystem::path& folder, const std::string& directory, Device device) {
  CaseResult r{directory, folder.filename().string(), Outcome::passed, "", in_scope(folder)};
  std::optional<onnx::Imported> net;
  try {
    net.emplace(onnx::load(folder / "model.onnx", r.name, device));
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
  } catch (const BadData& e) {
    r.outcome = Outcome::bad_data, r.reason = e.what(), r.in_scope = false;
    return r;
  } catch (const std::exception& e) {
    r.reason = fmt::format("forward threw: {}", first_lines(e.what(), 2));
  }
  if (!r.reason.empty()) r.outcome = Outcome::failed;
  if (auto it = corrected_cases().find(r.name); r.outcome == Outcome::failed && it != corrected_cases().end())
    r.outcome = Outcome::bad_data, r.reason = fmt::format("{} ({})", it->second, r.reason), r.in_scope = false;
  return r;
}

std::vector<CaseResult> run_directory(const std::filesystem::path& root, const std::string& directory, Device device) {
  std::vector<std::filesystem::path> cases;
  for (const auto& e : std::filesystem::directory_iterator(root / directory))
    if (e.is_directory()) cases.push_back(e.path());
  std::sort(cases.begin(), cases.end());
  std::vector<CaseResult> out;
  for (const auto& c : cases) out.push_back(run_case(c, directory, device));
  return out;
}

int check_same_outcomes(const std::filesystem::path& root, Device device) {
  int passed = 0;
  for (std::string directory : {"node", "pytorch-converted", "pytorch-operator", "simple"}) {
    const std::vector<CaseResult> host = run_directory(root, directory);
    const std::vector<CaseResult> there = run_directory(root, directory, device);
    REQUIRE(host.size() == there.size());
    for (std::size_t k = 0; k < host.size(); ++k) {
      INFO(directory << "/" << host[k].name << " on " << device.to_string() << ": " << there[k].reason);
      CHECK(there[k].outcome == host[k].outcome);
      passed += there[k].outcome == Outcome::passed;
    }
  }
  return passed;
}

std::string report(const std::vector<CaseResult>& results) {
  std::map<std::string, std::array<int, 4>> counts;
  for (const auto& r : results) ++counts[r.directory][std::size_t(r.outcome)];
  std::string out =
      "<!-- Written by NDGC_ONNX_REPORT=FILE build/tests/test_onnx -tc='ONNX conformance*' -->\n\n"
      "| directory | passed | refused | failed | bad data |\n|---|---|---|---|---|\n";
  std::array<int, 4> total{};
  for (const auto& [dir, c] : counts) {
    out += fmt::format("| {} | {} | {} | {} | {} |\n", dir, c[0], c[1], c[2], c[3]);
    for (int k = 0; k < 4; ++k) total[std::size_t(k)] += c[std::size_t(k)];
  }
  out += fmt::format("| **all** | **{}** | **{}** | **{}** | **{}** |\n", total[0], total[1], total[2], total[3]);
  int scope = 0, scope_passed = 0;
  for (const auto& r : results) scope += r.in_scope, scope_passed += r.in_scope && r.outcome == Outcome::passed;
  out += fmt::format("\nIn the scope ndgc aims at (docs/onnx.md: ndgc's dtypes; no strings, sequences, optionals, quantized, "
                     "signal, training or random ops, NonMaxSuppression, RoiAlign, GridSample, Unique, Det; not the "
                     "four training-mode dropout cases): **{} of {} pass**; refused cases in scope are marked (in "
                     "scope) below.\n",
                     scope_passed, scope);
  for (Outcome o : {Outcome::failed, Outcome::bad_data, Outcome::refused}) {
    out += o == Outcome::failed     ? "\nFailed:\n\n"
           : o == Outcome::bad_data ? "\nBad data (the case's data contradicts its own graph, or ONNX has since corrected it):\n\n"
                                    : "\nRefused:\n\n";
    for (const auto& r : results)
      if (r.outcome == o) {
        std::string why = r.reason;  // "onnx::load: /usr/share/.../model.onnx: what": the case names the file
        if (auto at = why.find("model.onnx: "); at != std::string::npos) why = why.substr(at + 12);
        out += fmt::format("- {}/{}{}: {}\n", r.directory, r.name, r.in_scope ? " (in scope)" : "", first_lines(why, 4));
      }
  }
  return out;
}

}  // namespace ndgc::test::onnx_conformance

// In-process Predictor::predict of one row: the baseline that ndgc-serve's
// latency is measured against (issue 28; perf/serve_load.sh runs both).
//
//   build/perf/bench_predict_latency MODEL_FILE [CALLS] [ROWS]
//
// Loads MODEL_FILE (ndgc-train --save) on the CPU, predicts ROWS rows
// (default 1) of inputs all 0.5 (the row perf/serve_load.sh posts) CALLS
// times (default 20,000) after 2,000 warm-up calls, and prints the p50, p99
// and mean of the calls' wall times in microseconds, one `name value` per
// line.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "ndgc/inference.hpp"
#include "ndgc/model_file.hpp"
#include "ndgc/ndgc.hpp"

namespace {

using Row = std::vector<float>;

// Rows -> [R, F] float32 -> the outputs: what a server's translator does
// with a decoded request, minus the JSON.
class RowTranslator final : public ndgc::inference::Translator<Row, Row> {
 public:
  explicit RowTranslator(std::int64_t rows) : rows_(rows) {}
  ndgc::NDList process_input(const ndgc::ManagerRef& context, const Row& values) override {
    return ndgc::NDList{context.create(values, ndgc::Shape{rows_, static_cast<std::int64_t>(values.size()) / rows_})};
  }
  Row process_output(const ndgc::ManagerRef&, const ndgc::NDList& out) override { return out.head().to_vector<float>(); }

 private:
  std::int64_t rows_;
};

double percentile(std::vector<double> v, double p) {
  auto k = static_cast<std::size_t>(p * static_cast<double>(v.size() - 1));
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(k), v.end());
  return v[k];
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s MODEL_FILE [CALLS] [ROWS]\n", argv[0]);
    return 2;
  }
  const long calls = argc > 2 ? std::atol(argv[2]) : 20000, rows = argc > 3 ? std::atol(argv[3]) : 1;
  if (calls <= 0 || rows <= 0) {
    std::fprintf(stderr, "%s: CALLS and ROWS must be positive\n", argv[0]);
    return 2;
  }
  try {
    ndgc::LoadedModel loaded = ndgc::load_model_file(argv[1], "model");
    ndgc::inference::Predictor<Row, Row> predictor(loaded.model, std::make_shared<RowTranslator>(rows));
    const Row row(static_cast<std::size_t>(rows * loaded.architecture.inputs), 0.5f);
    float sink = 0;
    for (int i = 0; i < 2000; ++i) sink += predictor.predict(row)[0];
    std::vector<double> us(static_cast<std::size_t>(calls));
    for (double& t : us) {
      auto start = std::chrono::steady_clock::now();
      sink += predictor.predict(row)[0];
      t = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count();
    }
    double mean = 0;
    for (double t : us) mean += t / static_cast<double>(calls);
    std::printf("predict_p50_us %.1f\npredict_p99_us %.1f\npredict_mean_us %.1f\n", percentile(us, 0.50),
                percentile(us, 0.99), mean);
    return sink == sink ? 0 : 1;  // keeps the predictions; NaN outputs fail
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: %s\n", argv[0], e.what());
    return 1;
  }
}

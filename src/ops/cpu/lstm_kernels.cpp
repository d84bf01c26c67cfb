// CPU kernels of the fused LSTM cell, forward and backward: the maths of
// ops/lstm_math.hpp, in the same order, over runs of a row's units.
//
// Each unit (row b, column j) depends on its own four pre-activations and
// cell state only, so the work is split over rows with parallel_for: the
// same bits for any split. Gate and state rows may be strided (a step's
// input gates are a [B, 4H] slice of the [B, T, 4H] projection): only a view
// whose last axis is not contiguous is copied.
//
// Note [Vectorised gates]
// Unit by unit, through libm's scalar expf and tanhf (tanhf calls expm1f),
// the transcendentals took 55 % of an LSTM training step (perf record,
// bench_layers' lstm_ndgc at 1 thread). A row's units are processed in runs
// of kRun with Eigen's vectorised logistic() and tanh(), the functions the
// unary sigmoid and tanh ops use on the CPU, so the cell agrees with the same
// composition of ops. The CUDA kernel runs lstm_math.hpp per unit.
#include <algorithm>
#include <memory>

#include "ops/cpu/cpu_engine.hpp"
#include "ops/cpu/eigen.hpp"
#include "ops/cpu/layer_dispatch.hpp"
#include "ops/lstm_math.hpp"

namespace ndgc::ops::cpu {
namespace {

// A [rows, cols] view read row by row: its own data when the last axis is
// contiguous, else a contiguous copy held in `keep`.
template <class T>
struct Rows {
  T* data = nullptr;
  std::int64_t stride = 0;
  Rows() = default;
  Rows(const TensorView& v, std::optional<Scratch>& keep) {
    const TensorView& r = v.shape[1] > 1 && v.strides[1] != 1 ? contiguous_or_copy(v, keep) : v;
    data = static_cast<T*>(r.data);
    stride = r.strides[0];
  }
  T* row(std::int64_t b) const { return data + b * stride; }
};

constexpr std::int64_t kRun = 64;  // units per vectorised run (stack buffers of kRun elements)

template <class T>
using Run = Eigen::Map<Eigen::Array<T, Eigen::Dynamic, 1>>;
template <class T>
using ConstRun = Eigen::Map<const Eigen::Array<T, Eigen::Dynamic, 1>>;

// The activated gates i, f, g, o of units [j, j + n) of one row.
template <class T>
struct GateRun {
  alignas(64) T i[kRun], f[kRun], g[kRun], o[kRun];
  std::int64_t n;

  GateRun(const T* input_gates, const T* hidden_gates, std::int64_t hidden, std::int64_t j, std::int64_t count)
      : n(count) {
    auto pre = [&](int k) {
      return ConstRun<T>(input_gates + k * hidden + j, n) + ConstRun<T>(hidden_gates + k * hidden + j, n);
    };
    Run<T>(i, n) = pre(0).logistic();
    Run<T>(f, n) = pre(1).logistic();
    Run<T>(g, n) = pre(2).tanh();
    Run<T>(o, n) = pre(3).logistic();
  }
  Run<T> at(T* p) { return Run<T>(p, n); }
};

}  // namespace

void CpuEngine::lstm_cell(const TensorView& input_gates, const TensorView& hidden_gates, const TensorView& c,
                          const TensorView& out) {
  const std::int64_t batch = c.shape[0], hidden = c.shape[1];
  std::optional<Scratch> ki, kh, kc;
  floating(c.dtype, "lstm_cell", [&](auto tag) {
    using T = decltype(tag);
    const Rows<T> ig(input_gates, ki), hg(hidden_gates, kh), cs(c, kc);
    T* h_out = static_cast<T*>(out.data);
    T* c_out = h_out + batch * hidden;
    support::parallel_for(batch, grain_for(lstm::kGates * hidden * 2), [&](std::int64_t lo, std::int64_t hi) {
      for (std::int64_t b = lo; b < hi; ++b) {
        const T *gi = ig.row(b), *gh = hg.row(b), *cb = cs.row(b);
        T *hb = h_out + b * hidden, *nb = c_out + b * hidden;
        for (std::int64_t j = 0; j < hidden; j += kRun) {
          GateRun<T> r(gi, gh, hidden, j, std::min(kRun, hidden - j));
          Run<T> c_next(nb + j, r.n);
          c_next = r.at(r.f) * ConstRun<T>(cb + j, r.n) + r.at(r.i) * r.at(r.g);
          Run<T>(hb + j, r.n) = r.at(r.o) * c_next.tanh();
        }
      }
    });
  });
}

void CpuEngine::lstm_cell_backward(const TensorView& input_gates, const TensorView& hidden_gates,
                                   const TensorView& c, const TensorView& g, const TensorView& d_input_gates,
                                   const TensorView& d_hidden_gates, const TensorView& dc) {
  const std::int64_t batch = c.shape[0], hidden = c.shape[1];
  std::optional<Scratch> ki, kh, kc, kg;
  const TensorView& gc = contiguous_or_copy(g, kg);
  floating(c.dtype, "lstm_cell_backward", [&](auto tag) {
    using T = decltype(tag);
    const Rows<T> ig(input_gates, ki), hg(hidden_gates, kh), cs(c, kc);
    const T* dh_all = static_cast<const T*>(gc.data);
    const T* dc_all = dh_all + batch * hidden;
    T* dx = static_cast<T*>(d_input_gates.data);
    T* dhg = static_cast<T*>(d_hidden_gates.data);
    T* dcp = static_cast<T*>(dc.data);
    const std::int64_t width = lstm::kGates * hidden;
    support::parallel_for(batch, grain_for(width * 2), [&](std::int64_t lo, std::int64_t hi) {
      for (std::int64_t b = lo; b < hi; ++b) {
        const T *gi = ig.row(b), *gh = hg.row(b), *cb = cs.row(b);
        for (std::int64_t j = 0; j < hidden; j += kRun) {
          GateRun<T> r(gi, gh, hidden, j, std::min(kRun, hidden - j));
          const std::int64_t n = r.n, at = b * hidden + j;
          Run<T> i = r.at(r.i), f = r.at(r.f), g = r.at(r.g), o = r.at(r.o);
          const ConstRun<T> c(cb + j, n), dh(dh_all + at, n), dc_next(dc_all + at, n);
          alignas(64) T tc_buf[kRun], dcell_buf[kRun];
          Run<T> tc(tc_buf, n), dcell(dcell_buf, n);
          tc = (f * c + i * g).tanh();
          dcell = dc_next + dh * o * (T(1) - tc * tc);
          if (dcp) Run<T>(dcp + at, n) = dcell * f;
          // The gate gradients, each over what no later one reads: o, then
          // g's into tc's buffer (tc is done), then i (which reads g), then f.
          o = dh * tc * o * (T(1) - o);
          tc = dcell * i * (T(1) - g * g);
          i = dcell * g * i * (T(1) - i);
          f = dcell * c * f * (T(1) - f);
          for (T* out : {dx, dhg}) {
            if (!out) continue;
            T* row = out + b * width + j;
            Run<T>(row, n) = i;
            Run<T>(row + hidden, n) = f;
            Run<T>(row + 2 * hidden, n) = tc;
            Run<T>(row + 3 * hidden, n) = o;
          }
        }
      }
    });
  });
}

}  // namespace ndgc::ops::cpu

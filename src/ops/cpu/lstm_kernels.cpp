// CPU kernels of the fused LSTM cell, forward and backward (ops/lstm_math.hpp).
//
// Each unit (row b, column j) depends on its own four pre-activations and
// cell state only, so the work is split over rows with parallel_for: the
// same bits for any split. Gate and state rows may be strided (a step's
// input gates are a [B, 4H] slice of the [B, T, 4H] projection): only a view
// whose last axis is not contiguous is copied.
#include <memory>

#include "ops/cpu/cpu_engine.hpp"
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
    support::parallel_for(batch, grain_for(lstm::kGates * hidden * 8), [&](std::int64_t lo, std::int64_t hi) {
      for (std::int64_t b = lo; b < hi; ++b) {
        const T *gi = ig.row(b), *gh = hg.row(b), *cb = cs.row(b);
        T *hb = h_out + b * hidden, *nb = c_out + b * hidden;
        for (std::int64_t j = 0; j < hidden; ++j)
          lstm::cell_forward(lstm::pre_activations(gi, gh, hidden, j), cb[j], hb[j], nb[j]);
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
    const T* dh = static_cast<const T*>(gc.data);
    const T* dc_next = dh + batch * hidden;
    T* dx = static_cast<T*>(d_input_gates.data);
    T* dhg = static_cast<T*>(d_hidden_gates.data);
    T* dcp = static_cast<T*>(dc.data);
    const std::int64_t width = lstm::kGates * hidden;
    support::parallel_for(batch, grain_for(width * 12), [&](std::int64_t lo, std::int64_t hi) {
      for (std::int64_t b = lo; b < hi; ++b) {
        const T *gi = ig.row(b), *gh = hg.row(b), *cb = cs.row(b);
        for (std::int64_t j = 0; j < hidden; ++j) {
          const std::int64_t at = b * hidden + j;
          T dprev;
          const lstm::Gates<T> d =
              lstm::cell_backward(lstm::pre_activations(gi, gh, hidden, j), cb[j], dh[at], dc_next[at], dprev);
          if (dcp) dcp[at] = dprev;
          for (T* out : {dx, dhg}) {
            if (!out) continue;
            T* row = out + b * width;
            row[j] = d.i, row[hidden + j] = d.f, row[2 * hidden + j] = d.g, row[3 * hidden + j] = d.o;
          }
        }
      }
    });
  });
}

}  // namespace ndgc::ops::cpu

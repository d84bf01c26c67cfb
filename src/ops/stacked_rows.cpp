// See Note [Stacked rows] in stacked_rows.hpp.
#include "ops/stacked_rows.hpp"

namespace ndgc::ops {

std::optional<TensorView> stacked_rows(const TensorView& v) noexcept {
  if (v.rank < 2) return std::nullopt;
  const int r = v.rank;
  std::int64_t rows = v.shape[r - 2], row_stride = v.strides[r - 2];
  for (int i = r - 3; i >= 0; --i) {
    if (v.shape[i] == 1) continue;
    if (rows == 1) row_stride = v.strides[i];  // a single row's stride is free
    else if (v.strides[i] != row_stride * rows) return std::nullopt;
    rows *= v.shape[i];
  }
  TensorView m = v;
  m.rank = 2;
  m.shape[0] = rows, m.strides[0] = row_stride;
  m.shape[1] = v.shape[r - 1], m.strides[1] = v.strides[r - 1];
  return m;
}

void batched_matmul(Engine& e, const TensorView& a, const TensorView& b, const TensorView& out) {
  const int r = out.rank;
  bool shared = r > 2;
  for (int i = 0; i < r - 2; ++i) shared = shared && (b.strides[i] == 0 || b.shape[i] == 1);
  if (shared) {
    const std::optional<TensorView> as = stacked_rows(a), os = stacked_rows(out);
    if (as && os) {
      TensorView bm = b;
      bm.rank = 2;
      bm.shape[0] = b.shape[r - 2], bm.strides[0] = b.strides[r - 2];
      bm.shape[1] = b.shape[r - 1], bm.strides[1] = b.strides[r - 1];
      return e.matmul(*as, bm, *os);
    }
  }
  e.matmul(a, b, out);
}

}  // namespace ndgc::ops

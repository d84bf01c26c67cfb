// float32 products through oneDNN's matmul primitive (Note [Products through
// oneDNN] in onednn_gemm.cpp), for builds that found libdnnl (NDGC_HAVE_ONEDNN).
// A build without it computes every product with Eigen.
#pragma once

#include <cstdint>

#include "ops/cpu/onednn.hpp"

namespace ndgc::ops::cpu {

// A float32 matrix: element (i, j) at data[i * row_stride + j * col_stride].
struct MatrixRef {
  const float* data;
  std::int64_t rows, cols, row_stride, col_stride;
};
// An output matrix, rows with unit element stride.
struct OutRef {
  float* data;
  std::int64_t rows, cols, row_stride;
};

// c = a · b, or c += a · b when `accumulate`, computed on the calling thread
// alone. False, with c untouched, where oneDNN does not serve the product:
// a build or a CPU without it, NDGC_CPU_GEMM=eigen, a product of fewer than
// 65,536 multiply-adds, an operand with no axis of unit stride, or a shape
// its fast kernels do not take. The result depends on the shapes and layouts alone.
bool onednn_product(const MatrixRef& a, const MatrixRef& b, const OutRef& c, bool accumulate);

// Products onednn_product has computed in this process.
std::uint64_t onednn_products() noexcept;

}  // namespace ndgc::ops::cpu

// CUDA matrix products: cuBLAS for float32/float64 and, with float32 sums on
// tensor cores, float16/bfloat16 (matmul_16); a plain kernel for integers;
// batched over leading axes. Twin of src/ops/cpu/matmul_kernel.cpp.
//
// Row-major C = A·B is column-major Cᵀ = Bᵀ·Aᵀ, so each operand goes to
// cuBLAS without a copy when either of its last two axes has stride 1 (a
// row-major matrix is a column-major transpose; a transposed view is
// op = T). Other layouts are copied into a contiguous scratch first. Batches
// whose offsets follow one stride per operand run as one strided-batched
// call; others loop. TF32 stays off unless cuda::set_allow_tf32(true).
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include <cublas_v2.h>

#include "cuda_context.hpp"
#include "kernels.hpp"
#include "launch.cuh"
#include "ndgc/error.hpp"

namespace ndgc::cuda::kernels {
namespace {

// One operand as cuBLAS sees it: rows × cols of a row-major matrix with row
// stride rs and column stride cs, given as its column-major transpose.
struct Operand {
  cublasOperation_t op = CUBLAS_OP_N;
  std::int64_t ld = 1;
  bool ok = false;
};

Operand as_blas(std::int64_t rows, std::int64_t cols, std::int64_t rs, std::int64_t cs) {
  Operand o;
  // A single row or column has no meaningful stride along its length-1 axis.
  if ((cs == 1 || cols <= 1) && (rs >= cols || rows <= 1)) {
    o.op = CUBLAS_OP_N;  // stored as the column-major cols × rows matrix Xᵀ
    o.ld = rows <= 1 ? (cols > 1 ? cols : 1) : rs;
    o.ok = o.ld >= (cols > 1 ? cols : 1);
  } else if ((rs == 1 || rows <= 1) && (cs >= rows || cols <= 1)) {
    o.op = CUBLAS_OP_T;  // stored column-major rows × cols: transpose it
    o.ld = cols <= 1 ? (rows > 1 ? rows : 1) : cs;
    o.ok = o.ld >= (rows > 1 ? rows : 1);
  }
  return o;
}

int as_int(std::int64_t v, const char* what) {
  if (v > std::numeric_limits<int>::max())
    throw InvalidArgument(std::string("matmul: ") + what + " " + std::to_string(v) +
                          " exceeds what cuBLAS takes (2^31 - 1)");  // no fmt under nvcc: its consteval trips it
  return int(v);
}

// The matrices of one batch view (the last two axes) made contiguous.
TensorView matrices_of(const TensorView& v) {
  TensorView c = v;
  std::int64_t stride = 1;
  for (int i = v.rank - 1; i >= 0; --i) {
    c.strides[i] = stride;
    stride *= v.shape[i];
  }
  return c;
}

template <class T>
__global__ void integer_matmul_kernel(const T* a, const T* b, T* out, ops::index::Strided<3> batch,
                                      std::int64_t batches, std::int64_t m, std::int64_t n, std::int64_t k,
                                      std::int64_t a_rs, std::int64_t a_cs, std::int64_t b_rs, std::int64_t b_cs,
                                      std::int64_t o_rs, std::int64_t o_cs, bool accumulate) {
  using U = std::make_unsigned_t<T>;
  const std::int64_t total = batches * m * n;
  for (std::int64_t t = global_index(); t < total; t += grid_stride()) {
    const std::int64_t j = t % n, i = (t / n) % m, bi = t / (n * m);
    std::int64_t off[3];
    ops::index::offsets(batch, bi, off);
    U acc = 0;  // wraps, as the CPU's
    for (std::int64_t p = 0; p < k; ++p)
      acc += U(a[off[0] + i * a_rs + p * a_cs]) * U(b[off[1] + p * b_rs + j * b_cs]);
    T& o = out[off[2] + i * o_rs + j * o_cs];
    o = accumulate ? T(U(o) + acc) : T(acc);
  }
}

// The batch axes (all but the last two) of a, b and out, coalesced together.
ops::index::Strided<3> batch_walk(const TensorView& a, const TensorView& b, const TensorView& out) {
  TensorView ba = a, bb = b, bo = out;
  ba.rank = bb.rank = bo.rank = out.rank - 2;
  for (int i = 0; i < bo.rank; ++i) ba.shape[i] = bb.shape[i] = bo.shape[i];
  const TensorView* views[3] = {&bo, &ba, &bb};
  ops::index::Strided<3> w = ops::index::coalesce(views);
  // coalesce() orders operands (out, a, b); the kernels want (a, b, out).
  ops::index::Strided<3> r = w;
  for (int d = 0; d < w.rank; ++d) {
    r.strides[0][d] = w.strides[1][d];
    r.strides[1][d] = w.strides[2][d];
    r.strides[2][d] = w.strides[0][d];
  }
  return r;
}

}  // namespace

bool matmul(const TensorView& a_in, const TensorView& b_in, const TensorView& out, bool accumulate, int device,
            cudaStream_t stream) {
  const int r = out.rank;
  const std::int64_t m = out.shape[r - 2], n = out.shape[r - 1], k = a_in.shape[r - 1];
  const std::int64_t o_rs = out.strides[r - 2], o_cs = out.strides[r - 1];
  const bool out_ok = (o_cs == 1 || n <= 1) && (o_rs >= n || m <= 1);
  if (!out_ok) return false;
  if (out.size() == 0) return true;
  if (k == 0) {
    if (!accumulate) fill(out, 0.0, stream);
    return true;
  }
  const ops::index::Strided<3> batch = batch_walk(a_in, b_in, out);
  const std::int64_t batches = batch.size();

  if (!is_floating(out.dtype)) {
    dispatch(out.dtype, [&](auto tag) {
      using T = decltype(tag);
      if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {  // the ops layer rejects boolean products
        const std::int64_t total = batches * m * n;
        integer_matmul_kernel<T><<<blocks_for(total), kThreads, 0, stream>>>(
            static_cast<const T*>(a_in.data), static_cast<const T*>(b_in.data), static_cast<T*>(out.data), batch,
            batches, m, n, k, a_in.strides[r - 2], a_in.strides[r - 1], b_in.strides[r - 2], b_in.strides[r - 1],
            o_rs, o_cs, accumulate);
        CUDA_CHECK_LAUNCH();
      }
    });
    return true;
  }

  // Operands cuBLAS cannot take as they are become contiguous scratch copies.
  std::unique_ptr<DeviceScratch> a_copy, b_copy;
  TensorView a = a_in, b = b_in;
  const std::size_t esize = size_of(out.dtype);
  Operand oa = as_blas(m, k, a.strides[r - 2], a.strides[r - 1]);
  if (!oa.ok) {
    a_copy = std::make_unique<DeviceScratch>(device, std::size_t(a.size()) * esize);
    TensorView c = matrices_of(a);
    c.data = a_copy->get();
    copy(a, c, stream);
    a = c;
    oa = as_blas(m, k, a.strides[r - 2], a.strides[r - 1]);
  }
  Operand ob = as_blas(k, n, b.strides[r - 2], b.strides[r - 1]);
  if (!ob.ok) {
    b_copy = std::make_unique<DeviceScratch>(device, std::size_t(b.size()) * esize);
    TensorView c = matrices_of(b);
    c.data = b_copy->get();
    copy(b, c, stream);
    b = c;
    ob = as_blas(k, n, b.strides[r - 2], b.strides[r - 1]);
  }
  const ops::index::Strided<3> walk = (a_copy || b_copy) ? batch_walk(a, b, out) : batch;
  const std::int64_t ldo = m <= 1 ? (n > 1 ? n : 1) : o_rs;

  cublasHandle_t h = blas(device);
  // float16 and bfloat16 run on tensor cores with float32 sums and scalars,
  // rounded once on store (Note [16-bit storage, float32 arithmetic]).
  const bool f32 = out.dtype != DataType::float64;
  const cudaDataType_t type = out.dtype == DataType::float64    ? CUDA_R_64F
                              : out.dtype == DataType::float16  ? CUDA_R_16F
                              : out.dtype == DataType::bfloat16 ? CUDA_R_16BF
                                                                : CUDA_R_32F;
  const cublasComputeType_t compute =
      !f32 ? CUBLAS_COMPUTE_64F
           : (out.dtype == DataType::float32 && allow_tf32() ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F);
  const float one_f = 1, zero_f = 0, beta_f = accumulate ? 1.f : 0.f;
  const double one_d = 1, beta_d = accumulate ? 1.0 : 0.0;
  (void)zero_f;
  const void* alpha = f32 ? static_cast<const void*>(&one_f) : static_cast<const void*>(&one_d);
  const void* beta = f32 ? static_cast<const void*>(&beta_f) : static_cast<const void*>(&beta_d);
  const int in = as_int(n, "n"), im = as_int(m, "m"), ik = as_int(k, "k");
  const int lda = as_int(oa.ld, "a's leading dimension"), ldb = as_int(ob.ld, "b's leading dimension");
  const int ldc = as_int(ldo, "out's leading dimension");
  char* pa = static_cast<char*>(a.data);
  char* pb = static_cast<char*>(b.data);
  char* po = static_cast<char*>(out.data);
  const auto e = std::int64_t(esize);

  if (walk.rank <= 1) {  // one stride per operand: one strided-batched call
    const std::int64_t sa = walk.rank ? walk.strides[0][0] : 0, sb = walk.rank ? walk.strides[1][0] : 0,
                       so = walk.rank ? walk.strides[2][0] : 0;
    CUBLAS_CHECK(cublasGemmStridedBatchedEx(h, ob.op, oa.op, in, im, ik, alpha, pb, type, ldb, sb, pa, type, lda, sa,
                                            beta, po, type, ldc, so, as_int(batches, "batch count"), compute,
                                            CUBLAS_GEMM_DEFAULT));
  } else {
    for (std::int64_t i = 0; i < batches; ++i) {
      std::int64_t off[3];
      ops::index::offsets(walk, i, off);
      CUBLAS_CHECK(cublasGemmEx(h, ob.op, oa.op, in, im, ik, alpha, pb + off[1] * e, type, ldb, pa + off[0] * e,
                                type, lda, beta, po + off[2] * e, type, ldc, compute, CUBLAS_GEMM_DEFAULT));
    }
  }
  return true;  // the scratch copies are freed stream-ordered after the products
}

}  // namespace ndgc::cuda::kernels

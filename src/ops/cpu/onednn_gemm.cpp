// float32 products through oneDNN's matmul primitive.
//
// Note [Products through oneDNN]
// On this project's AVX-512 machine oneDNN's brgemm matmul ran the products
// of our models 1.2-1.6x faster than Eigen's GEMM, one thread each
// (perf/RESULTS.md, issue 40), so CpuEngine's float32 products call it, tile
// by tile (Note [Products by fixed tiles] in matmul_kernel.cpp: the tiles and
// so the bits do not depend on the thread count).
// - One thread per call. Debian's oneDNN runs on OpenMP, whose threads would
//   fight ndgc's pool, so each call holds OpenMP to one thread on the calling
//   thread and restores the caller's setting after.
// - No allocation of ours in a steady loop. Each thread keeps its primitives,
//   keyed by shape and layout, up to kCapacity of them (least recently used
//   out), with their memory objects and a scratchpad buffer that only grows.
//   oneDNN itself allocates a little on every execute (its argument map,
//   freed before it returns): inside_onednn() lets the steady-step
//   allocation tests tell those apart from ndgc's. The
//   buffers are the thread's, as Eigen's blocking buffers are: outside the
//   manager's accounting and NDGC_MAX_BYTES, sized by the largest tile the
//   thread has run, and kept until the thread ends.
// - Dense operands only. oneDNN's fast kernels take a row-major or a
//   transposed matrix without padding; with a leading dimension it falls
//   back to a GEMM that mallocs its packing buffers on every call. So a tile
//   of a wider matrix is first copied to a dense buffer, and an output tile
//   is computed in one and copied out: k·cols and rows·cols copies against
//   rows·cols·k multiply-adds. A product that only that fallback would take
//   is left to Eigen.
// - c += a · b is computed in the buffer and added, not with oneDNN's sum
//   post-op: with it an execute made two more allocations (8, not 6).
// - NDGC_CPU_GEMM=eigen turns it off (to compare, or to run under Valgrind,
//   which has no AVX-512 and so no brgemm anyway).
#include "ops/cpu/onednn_gemm.hpp"

#include <atomic>

#if NDGC_HAVE_ONEDNN
#include <algorithm>
#include <cstring>
#include <iterator>
#include <utility>

#include "ops/cpu/onednn_support.hpp"
#include "support/assert.hpp"
#include "support/scope_exit.hpp"
#endif

namespace ndgc::ops::cpu {
namespace {
std::atomic<std::uint64_t> g_products{0};
}  // namespace

std::uint64_t onednn_products() noexcept { return g_products.load(std::memory_order_relaxed); }

#if !NDGC_HAVE_ONEDNN

bool onednn_product(const MatrixRef&, const MatrixRef&, const OutRef&, bool) { return false; }

#else

namespace {

constexpr std::size_t kCapacity = 64;  // primitives kept per thread
// Products of fewer multiply-adds stay on Eigen: there oneDNN's fixed cost
// per call (its argument map, the OpenMP setting, the lookup) outweighed its
// faster kernel. The ONNX transformer at batch 1 (products of 64 x 64 x 32)
// took 0.89-0.94 ms with this bound, 1.02-1.10 ms with none, 0.98-1.05 ms on
// Eigen alone.
constexpr std::int64_t kMinWork = std::int64_t(1) << 16;

// How an operand is laid out: dense (row-major or transposed), rows or
// columns with a leading dimension (a tile of a wider matrix), or neither
// (not served: matmul_kernel.cpp's with_matrix has already copied such an
// operand row-major before a product gets here).
enum class Layout { row_major, transposed, padded_rows, padded_columns, strided };

Layout layout_of(const MatrixRef& x) {
  if ((x.col_stride == 1 || x.cols <= 1) && (x.row_stride == x.cols || x.rows <= 1)) return Layout::row_major;
  if ((x.row_stride == 1 || x.rows <= 1) && (x.col_stride == x.rows || x.cols <= 1)) return Layout::transposed;
  if (x.col_stride == 1) return Layout::padded_rows;
  if (x.row_stride == 1) return Layout::padded_columns;
  return Layout::strided;
}

// Whether oneDNN reads the dense form of a `layout` operand as transposed.
bool read_transposed(Layout layout) { return layout == Layout::transposed || layout == Layout::padded_columns; }

struct Key {
  std::int64_t m = 0, n = 0, k = 0;
  bool a_transposed = false, b_transposed = false;
  bool operator==(const Key&) const = default;
};

struct Entry {
  Key key;
  dnnl_primitive_t primitive = nullptr;  // null: oneDNN's fast kernels do not take this product
  dnnl_memory_t a = nullptr, b = nullptr, c = nullptr, scratchpad = nullptr;
  std::size_t scratchpad_bytes = 0;
  std::uint64_t last_use = 0;

  void release() {
    for (dnnl_memory_t* m : {&a, &b, &c, &scratchpad})
      if (*m) dnnl_memory_destroy(std::exchange(*m, nullptr));
    if (primitive) dnnl_primitive_destroy(std::exchange(primitive, nullptr));
  }
};

using onednn::Buffer;
using onednn::engine;

constexpr const char* kOp = "matmul";

void check(dnnl_status_t status, const char* what) { onednn::check(status, kOp, what); }

// Fills e with a primitive for `key`, or leaves e.primitive null where only a
// slow or allocating implementation would take it.
void create(Entry& e, const Key& key, dnnl_engine_t eng) {
  e.key = key;
  dnnl_memory_desc_t ad, bd, cd;
  const dnnl_dims_t adims = {key.m, key.k}, bdims = {key.k, key.n}, cdims = {key.m, key.n};
  check(dnnl_memory_desc_init_by_tag(&ad, 2, adims, dnnl_f32, key.a_transposed ? dnnl_ba : dnnl_ab), "memory desc");
  check(dnnl_memory_desc_init_by_tag(&bd, 2, bdims, dnnl_f32, key.b_transposed ? dnnl_ba : dnnl_ab), "memory desc");
  check(dnnl_memory_desc_init_by_tag(&cd, 2, cdims, dnnl_f32, dnnl_ab), "memory desc");
  dnnl_matmul_desc_t md;
  check(dnnl_matmul_desc_init(&md, &ad, &bd, nullptr, &cd), "matmul desc");

  const onednn::UserScratchpad attr(kOp);
  dnnl_primitive_desc_t pd = nullptr;
  if (dnnl_primitive_desc_create(&pd, &md, attr.get(), eng, nullptr) != dnnl_success) return;
  support::ScopeExit free_pd{[&] { dnnl_primitive_desc_destroy(pd); }};
  if (!onednn::implemented_by(pd, {"brg"}, kOp)) return;

  const dnnl_memory_desc_t* sd = dnnl_primitive_desc_query_md(pd, dnnl_query_scratchpad_md, 0);
  e.scratchpad_bytes = dnnl_memory_desc_get_size(sd);
  support::ScopeExit undo{[&] {
    if (!e.scratchpad) e.release();  // a failure below leaves nothing half made
  }};
  check(dnnl_primitive_create(&e.primitive, pd), "primitive");
  check(dnnl_memory_create(&e.a, &ad, eng, DNNL_MEMORY_NONE), "memory");
  check(dnnl_memory_create(&e.b, &bd, eng, DNNL_MEMORY_NONE), "memory");
  check(dnnl_memory_create(&e.c, &cd, eng, DNNL_MEMORY_NONE), "memory");
  check(dnnl_memory_create(&e.scratchpad, sd, eng, DNNL_MEMORY_NONE), "memory");
}

// One thread's primitives, stream and buffers.
struct ThreadCache {
  onednn::Primitives<Key, Entry, kCapacity> primitives{[](Entry& e, const Key& k) { create(e, k, engine()); }};
  Buffer scratchpad, a_copy, b_copy, c_copy;

  dnnl_stream_t stream() { return primitives.stream(kOp); }
  Entry& entry(const Key& key) { return primitives.entry(key); }
};

ThreadCache& thread_cache() {
  thread_local ThreadCache cache;
  return cache;
}

void copy_rows(const float* from, std::int64_t from_stride, float* to, std::int64_t to_stride, std::int64_t rows,
               std::int64_t cols) {
  for (std::int64_t i = 0; i < rows; ++i)
    std::memcpy(to + i * to_stride, from + i * from_stride, std::size_t(cols) * sizeof(float));
}

void add_rows(const float* from, std::int64_t from_stride, float* to, std::int64_t to_stride, std::int64_t rows,
              std::int64_t cols) {
  for (std::int64_t i = 0; i < rows; ++i) {
    const float* f = from + i * from_stride;
    float* t = to + i * to_stride;
    for (std::int64_t j = 0; j < cols; ++j) t[j] += f[j];
  }
}

// x without padding: itself when it is dense, else copied into `copy`, row
// by row or column by column as it is laid out (read_transposed(layout)
// says which). Never called for a strided x.
const float* dense(const MatrixRef& x, Layout layout, Buffer& copy) {
  switch (layout) {
    case Layout::row_major:
    case Layout::transposed:
      return x.data;
    case Layout::padded_rows: {
      float* out = copy.floats(x.rows * x.cols);
      copy_rows(x.data, x.row_stride, out, x.cols, x.rows, x.cols);
      return out;
    }
    case Layout::padded_columns: {
      float* out = copy.floats(x.rows * x.cols);
      copy_rows(x.data, x.col_stride, out, x.rows, x.cols, x.rows);
      return out;
    }
    case Layout::strided:
      break;
  }
  NDGC_ASSERT(false, "onednn_product: a strided operand is not served");
  return nullptr;
}

}  // namespace

bool onednn_product(const MatrixRef& a, const MatrixRef& b, const OutRef& c, bool accumulate) {
  NDGC_ASSERT(a.rows == c.rows && b.cols == c.cols && a.cols == b.rows, "onednn_product: shapes do not chain");
  const std::int64_t m = c.rows, n = c.cols, k = a.cols;
  if (m * n * k < kMinWork || !onednn_enabled()) return false;
  const Layout la = layout_of(a), lb = layout_of(b);
  if (la == Layout::strided || lb == Layout::strided) return false;
  const Key key{m, n, k, read_transposed(la), read_transposed(lb)};
  onednn::OneOpenMpThread one_thread;
  ThreadCache& cache = thread_cache();
  Entry& e = cache.entry(key);
  if (!e.primitive) return false;

  const float* ap = dense(a, la, cache.a_copy);
  const float* bp = dense(b, lb, cache.b_copy);
  const bool direct = !accumulate && (c.row_stride == n || m <= 1);
  float* cp = direct ? c.data : cache.c_copy.floats(m * n);
  check(dnnl_memory_set_data_handle(e.a, const_cast<float*>(ap)), "data handle");
  check(dnnl_memory_set_data_handle(e.b, const_cast<float*>(bp)), "data handle");
  check(dnnl_memory_set_data_handle(e.c, cp), "data handle");
  check(dnnl_memory_set_data_handle(e.scratchpad, cache.scratchpad.bytes(std::max<std::size_t>(e.scratchpad_bytes, 1))),
        "data handle");
  const dnnl_exec_arg_t args[] = {
      {DNNL_ARG_SRC, e.a}, {DNNL_ARG_WEIGHTS, e.b}, {DNNL_ARG_DST, e.c}, {DNNL_ARG_SCRATCHPAD, e.scratchpad}};
  onednn::execute(e.primitive, cache.stream(), int(std::size(args)), args, kOp);
  if (accumulate) add_rows(cp, n, c.data, c.row_stride, m, n);
  else if (!direct) copy_rows(cp, n, c.data, c.row_stride, m, n);
  g_products.fetch_add(1, std::memory_order_relaxed);
  return true;
}

#endif

}  // namespace ndgc::ops::cpu

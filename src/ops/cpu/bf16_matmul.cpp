// bfloat16 matrix products on AVX512-BF16: vdpbf16ps multiplies pairs of
// bfloat16 and adds both products into float32 lanes, twice the arithmetic
// of a float32 FMA per instruction, on operands half the size.
//
// Note [bfloat16 products]
// Both operands are packed first, on the pool, into 32-bit pairs along k
// (the instruction's operand format): A as rows of pairs [m][k/2], B as
// panels of 32 columns [n/32][k/2][32]; an odd k gets a zero pair half. A
// register tile of 6 rows × 32 columns (12 accumulators) then runs the whole
// of k, and its float32 sums are rounded to bfloat16 once, on store, as
// every 16-bit kernel does (Note [16-bit storage, float32 arithmetic]). The
// pool splits the rows by tiles of 6 and runs 96-row blocks over each panel,
// so a block of A (96 × k/2 pairs) and a panel of B (k/2 × 32 pairs) share
// L2. A batch of products (a convolution's, one per image) goes to the pool
// a batch element per task instead, each packed and run on its thread, and
// a left operand they all share (the weight) is packed once: small products
// spent more on three fork-joins and two packings each than on arithmetic.
// Rows whose pairs are adjacent in memory are packed by copying words.
// Each output element's sum runs over k in one order whatever the
// thread count or the split: the same bits on 1 thread or 64. Unlike the widened
// product, vdpbf16ps flushes subnormal inputs and products to zero, and
// rounds its pair sums its own way, so results can differ from the float32
// product rounded by a unit in the last place (tests/ops/bf16_matmul_test.cpp
// bounds it); its sums are deterministic all the same.
//
// Used where the CPU has AVX512-BF16 (chosen at run time), for bfloat16
// operands and output; anything else takes the widening path.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <optional>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "ndgc/half.hpp"
#include "memory/allocator.hpp"
#include "ops/cpu/cpu_engine.hpp"
#include "support/cpu_features.hpp"
#include "support/parallel.hpp"

namespace ndgc::ops::cpu {
namespace {

constexpr std::int64_t kRows = 6, kCols = 32, kBlockTiles = 16;  // register tile; tiles per L2 block

// A host buffer of `count` 32-bit words from the host allocator (counted like any array's).
class Words {
 public:
  explicit Words(std::int64_t count)
      : bytes_(std::size_t(count) * 4), data_(static_cast<std::uint32_t*>(memory::host_allocator().allocate(bytes_))) {}
  ~Words() { memory::host_allocator().deallocate(data_, bytes_); }
  Words(const Words&) = delete;
  Words& operator=(const Words&) = delete;
  std::uint32_t* get() const noexcept { return data_; }

 private:
  std::size_t bytes_;
  std::uint32_t* data_;
};

// One matrix of a (maybe batched) view: element (i, j) at base + i·rs + j·cs.
struct Matrix {
  const std::uint16_t* base;
  std::int64_t rows, cols, rs, cs;
  std::uint16_t at(std::int64_t i, std::int64_t j) const noexcept {
    return (i < rows && j < cols) ? base[i * rs + j * cs] : std::uint16_t(0);
  }
};

std::uint32_t pair(std::uint16_t lo, std::uint16_t hi) noexcept { return std::uint32_t(lo) | (std::uint32_t(hi) << 16); }

#if defined(__x86_64__)

#define NDGC_BF16_TARGET __attribute__((target("avx512f,avx512bw,avx512vl,avx512bf16")))

// acc[r][0..31] = Σ_p a[r][p] · b[p][0..31] over `pairs` k-pairs; stores the
// rounded sums of the first `rows` × `cols` into out (row stride ors, column stride ocs).
template <int R>
NDGC_BF16_TARGET void tile(const std::uint32_t* a, std::int64_t a_stride, const std::uint32_t* b, std::int64_t pairs,
                           std::uint16_t* out, std::int64_t ors, std::int64_t ocs, std::int64_t cols) {
  __m512 acc[R][2];
  for (int r = 0; r < R; ++r) acc[r][0] = acc[r][1] = _mm512_setzero_ps();
  for (std::int64_t p = 0; p < pairs; ++p) {
    const __m512bh b0 = (__m512bh)_mm512_loadu_si512(b + p * kCols);
    const __m512bh b1 = (__m512bh)_mm512_loadu_si512(b + p * kCols + 16);
    for (int r = 0; r < R; ++r) {
      const __m512bh x = (__m512bh)_mm512_set1_epi32(int(a[r * a_stride + p]));
      acc[r][0] = _mm512_dpbf16_ps(acc[r][0], x, b0);
      acc[r][1] = _mm512_dpbf16_ps(acc[r][1], x, b1);
    }
  }
  alignas(64) float sums[kCols];
  for (int r = 0; r < R; ++r) {
    _mm512_store_ps(sums, acc[r][0]);
    _mm512_store_ps(sums + 16, acc[r][1]);
    std::uint16_t* row = out + r * ors;
    for (std::int64_t c = 0; c < cols; ++c) row[c * ocs] = half_bits::bfloat16_from_float(sums[c]);
  }
}

using TileFn = void (*)(const std::uint32_t*, std::int64_t, const std::uint32_t*, std::int64_t, std::uint16_t*,
                        std::int64_t, std::int64_t, std::int64_t);
constexpr TileFn kTiles[kRows + 1] = {nullptr, tile<1>, tile<2>, tile<3>, tile<4>, tile<5>, tile<6>};

// Rows [lo, hi) of a packed into pa: row i's pairs along k at pa + i·pairs.
void pack_rows(const Matrix& a, std::int64_t pairs, std::uint32_t* pa, std::int64_t lo, std::int64_t hi) {
  const std::int64_t k = a.cols, whole = k / 2;
  for (std::int64_t i = lo; i < hi; ++i) {
    std::uint32_t* dst = pa + i * pairs;
    if (a.cs == 1) {  // a row's pairs are its words: one copy (little-endian: the low half is the first)
      const std::uint16_t* row = a.base + i * a.rs;
      std::memcpy(dst, row, std::size_t(whole) * sizeof(std::uint32_t));
      if (whole < pairs) dst[whole] = pair(row[k - 1], 0);
    } else {
      for (std::int64_t p = 0; p < pairs; ++p) dst[p] = pair(a.at(i, 2 * p), a.at(i, 2 * p + 1));
    }
  }
}

// Panel rows q in [lo, hi) of b packed into pb: panel q / pairs, pair q % pairs,
// 32 columns (zeros past b's last column).
void pack_panels(const Matrix& b, std::int64_t pairs, std::uint32_t* pb, std::int64_t lo, std::int64_t hi) {
  for (std::int64_t q = lo; q < hi; ++q) {
    const std::int64_t panel = q / pairs, p = q % pairs, col = panel * kCols;
    const std::int64_t cols = std::min(kCols, b.cols - col);
    std::uint32_t* dst = pb + q * kCols;
    const bool second = 2 * p + 1 < b.rows;
    if (b.cs == 1) {  // rows 2p and 2p + 1, each contiguous
      const std::uint16_t* r0 = b.base + 2 * p * b.rs + col;
      const std::uint16_t* r1 = second ? r0 + b.rs : nullptr;
      for (std::int64_t c = 0; c < cols; ++c) dst[c] = pair(r0[c], r1 ? r1[c] : std::uint16_t(0));
    } else if (b.rs == 1 && second) {  // column-major: a pair is one word of its column
      const std::uint16_t* from = b.base + 2 * p + col * b.cs;
      for (std::int64_t c = 0; c < cols; ++c) std::memcpy(dst + c, from + c * b.cs, sizeof(std::uint32_t));
    } else {
      for (std::int64_t c = 0; c < cols; ++c) dst[c] = pair(b.at(2 * p, col + c), b.at(2 * p + 1, col + c));
    }
    for (std::int64_t c = cols; c < kCols; ++c) dst[c] = 0;
  }
}

// Row tiles [lo, hi) of out, each over every panel, in blocks of kBlockTiles.
void run_tiles(const std::uint32_t* pa, const std::uint32_t* pb, std::int64_t m, std::int64_t n, std::int64_t pairs,
               std::uint16_t* out, std::int64_t ors, std::int64_t ocs, std::int64_t lo, std::int64_t hi) {
  const std::int64_t panels = (n + kCols - 1) / kCols;
  for (std::int64_t block = lo; block < hi; block += kBlockTiles) {
    const std::int64_t block_end = std::min(hi, block + kBlockTiles);
    for (std::int64_t panel = 0; panel < panels; ++panel) {
      const std::int64_t col = panel * kCols, cols = std::min(kCols, n - col);
      for (std::int64_t t = block; t < block_end; ++t) {
        const std::int64_t row = t * kRows, rows = std::min(kRows, m - row);
        kTiles[rows](pa + row * pairs, pairs, pb + panel * pairs * kCols, pairs, out + row * ors + col * ocs, ors,
                     ocs, cols);
      }
    }
  }
}

// out (m × n) = a (m × k) · b (k × n), all bfloat16, k > 0. See Note
// [bfloat16 products]. `packed_a`: a already packed (a weight every batch
// element shares), else null. `spread`: packing and tiles go to the pool;
// otherwise all of it runs on the calling thread (one batch element of a
// batch spread over the pool). Each output element's sum is the same either way.
void product(const Matrix& a, const Matrix& b, const std::uint32_t* packed_a, std::uint16_t* out, std::int64_t ors,
             std::int64_t ocs, bool spread) {
  const std::int64_t m = a.rows, n = b.cols, pairs = (a.cols + 1) / 2;
  const std::int64_t panels = (n + kCols - 1) / kCols, tiles = (m + kRows - 1) / kRows;
  std::optional<Words> ap;
  if (!packed_a) ap.emplace(m * pairs);
  Words bp(panels * pairs * kCols);
  const std::uint32_t* pa = packed_a ? packed_a : ap->get();
  std::uint32_t* pb = bp.get();
  if (!spread) {
    if (ap) pack_rows(a, pairs, ap->get(), 0, m);
    pack_panels(b, pairs, pb, 0, panels * pairs);
    run_tiles(pa, pb, m, n, pairs, out, ors, ocs, 0, tiles);
    return;
  }
  const std::int64_t pack_grain = std::max<std::int64_t>(1, 4096 / std::max<std::int64_t>(pairs, 1));
  if (ap) support::parallel_for(m, pack_grain, [&](std::int64_t lo, std::int64_t hi) { pack_rows(a, pairs, ap->get(), lo, hi); });
  support::parallel_for(panels * pairs, pack_grain,
                        [&](std::int64_t lo, std::int64_t hi) { pack_panels(b, pairs, pb, lo, hi); });
  const std::int64_t tile_work = kRows * pairs * 2 * n;
  const std::int64_t grain = std::max<std::int64_t>(1, (std::int64_t(1) << 21) / std::max<std::int64_t>(tile_work, 1));
  support::parallel_for(tiles, grain,
                        [&](std::int64_t lo, std::int64_t hi) { run_tiles(pa, pb, m, n, pairs, out, ors, ocs, lo, hi); });
}

#endif  // __x86_64__

}  // namespace

bool CpuEngine::matmul_16(const TensorView& a, const TensorView& b, const TensorView& out) {
#if defined(__x86_64__)
  if (a.dtype != DataType::bfloat16 || b.dtype != DataType::bfloat16 || out.dtype != DataType::bfloat16 ||
      !support::cpu_has_avx512_bf16())
    return false;
  const int r = out.rank;
  const std::int64_t m = out.shape[r - 2], n = out.shape[r - 1], k = a.shape[r - 1];
  if (m == 0 || n == 0) return true;
  std::int64_t batches = 1;
  for (int d = 0; d < r - 2; ++d) batches *= out.shape[d];
  const auto* abase = static_cast<const std::uint16_t*>(a.data);
  const auto* bbase = static_cast<const std::uint16_t*>(b.data);
  auto* obase = static_cast<std::uint16_t*>(out.data);
  // Batch element `batch`'s offsets, the last batch axis fastest.
  const auto offsets = [&](std::int64_t batch, std::int64_t& ao, std::int64_t& bo, std::int64_t& oo) {
    ao = bo = oo = 0;
    for (int d = r - 3; d >= 0; --d) {
      const std::int64_t idx = batch % out.shape[d];
      batch /= out.shape[d];
      ao += idx * a.strides[d], bo += idx * b.strides[d], oo += idx * out.strides[d];
    }
  };
  if (k == 0) {
    for (std::int64_t batch = 0; batch < batches; ++batch) {
      std::int64_t ao, bo, oo;
      offsets(batch, ao, bo, oo);
      for (std::int64_t i = 0; i < m; ++i)
        for (std::int64_t j = 0; j < n; ++j) obase[oo + i * out.strides[r - 2] + j * out.strides[r - 1]] = 0;
    }
    return true;
  }
  const auto a_of = [&](std::int64_t ao) { return Matrix{abase + ao, m, k, a.strides[r - 2], a.strides[r - 1]}; };
  const auto b_of = [&](std::int64_t bo) { return Matrix{bbase + bo, k, n, b.strides[r - 2], b.strides[r - 1]}; };
  if (batches == 1) {
    product(a_of(0), b_of(0), nullptr, obase, out.strides[r - 2], out.strides[r - 1], /*spread=*/true);
    return true;
  }
  // A batch: each element on one thread (Note [bfloat16 products]); a left
  // operand every element shares (a weight) packed once, on the pool.
  bool shared_a = true;
  for (int d = 0; d < r - 2; ++d) shared_a = shared_a && (a.strides[d] == 0 || out.shape[d] == 1);
  const std::int64_t pairs = (k + 1) / 2;
  std::optional<Words> packed;
  if (shared_a) {
    packed.emplace(m * pairs);
    const Matrix a0 = a_of(0);
    const std::int64_t grain = std::max<std::int64_t>(1, 4096 / pairs);
    support::parallel_for(m, grain, [&](std::int64_t lo, std::int64_t hi) { pack_rows(a0, pairs, packed->get(), lo, hi); });
  }
  support::parallel_for(batches, 1, [&](std::int64_t lo, std::int64_t hi) {
    for (std::int64_t batch = lo; batch < hi; ++batch) {
      std::int64_t ao, bo, oo;
      offsets(batch, ao, bo, oo);
      product(a_of(ao), b_of(bo), packed ? packed->get() : nullptr, obase + oo, out.strides[r - 2],
              out.strides[r - 1], /*spread=*/false);
    }
  });
  return true;
#else
  (void)a, (void)b, (void)out;
  return false;
#endif
}

}  // namespace ndgc::ops::cpu

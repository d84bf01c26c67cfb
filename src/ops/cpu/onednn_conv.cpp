// float32 and bfloat16 convolutions through oneDNN's convolution primitive.
//
// Note [Convolutions through oneDNN]
// im2col writes kH·kW copies of every input pixel and reads them back for
// the product (Note [Convolution as GEMM] in ops/conv.cpp): for resnet18 at
// batch 16 that traffic left ndgc 1.1-1.8x behind LibTorch, whose CPU
// convolutions are oneDNN's (perf/RESULTS.md, issues 39 and 40). oneDNN's
// direct kernels (brgconv, brdgmm for depthwise, jit) read each pixel once.
// So a float32 conv2d's forward pass calls them where they serve it, and a
// bfloat16 one where the CPU has AVX512-BF16 (float32 sums, each output
// rounded once, as every 16-bit kernel: Note [16-bit storage, float32
// arithmetic]; oneDNN's bf16 kernels flush subnormal inputs, as
// bf16_matmul.cpp's do). The gradients stay on im2col and the products.
// - Fixed tasks, one thread each. A task is one image, or half of an
//   image's output channels where each half is large (onednn_conv_blocks),
//   chosen from the image's shape alone: the bits depend neither on the
//   thread count nor on the batch an image comes in (ndgc-serve's batching
//   never changes an answer). Halves let one image feed two threads; more
//   blocks reorder the image once more each and measured no faster on
//   resnet18 at batch 16. Each task holds OpenMP to one thread as the
//   products do (Note [Products through oneDNN] in onednn_gemm.cpp) and
//   runs on ndgc's pool.
// - Layouts. oneDNN's fast kernels read and write blocked layouts (channels
//   in groups of 16); ndgc's arrays are NCHW, or any strides for x. A task
//   reorders its image into the thread's buffer and its output back, each
//   pixel read and written once. The weights are reordered once per call,
//   a block a task, into the calling thread's buffer, and every task reads
//   them there.
// - No allocation of ours in a steady loop: each thread keeps its
//   primitives, keyed by the geometry, up to kCapacity of them (least
//   recently used out), and buffers that only grow, as the products do.
//   Outside the manager's accounting and NDGC_MAX_BYTES, kept until the
//   thread ends: for resnet18's first convolution a task's output buffer is
//   32 x 112 x 112 floats, 1.6 MB.
// - Only oneDNN's direct kernels: a geometry for which it offers its GEMM
//   fallback (which allocates on every call) or its reference kernels is
//   left to im2col.
#include "ops/cpu/onednn_conv.hpp"

#include <atomic>

#if NDGC_HAVE_ONEDNN
#include <algorithm>
#include <iterator>
#include <utility>

#include "ndgc/error.hpp"
#include "ops/cpu/onednn_support.hpp"
#include "support/assert.hpp"
#include "support/cpu_features.hpp"
#include "support/parallel.hpp"
#include "support/scope_exit.hpp"
#endif

namespace ndgc::ops::cpu {
namespace {
std::atomic<std::uint64_t> g_convolutions{0};

constexpr std::int64_t kBlockChannels = 16;  // oneDNN's channel blocks on AVX-512
constexpr std::int64_t kMinBlockWork = std::int64_t(1) << 22;
constexpr std::int64_t kMostBlocks = 2;
}  // namespace

std::uint64_t onednn_convolutions() noexcept { return g_convolutions.load(std::memory_order_relaxed); }

std::int64_t onednn_conv_blocks(std::int64_t out_channels, std::int64_t groups, std::int64_t work) noexcept {
  const bool split = groups == 1 && out_channels % (kMostBlocks * kBlockChannels) == 0 &&
                     work / kMostBlocks >= kMinBlockWork;
  return split ? kMostBlocks : 1;
}

#if !NDGC_HAVE_ONEDNN

bool onednn_conv2d(const TensorView&, const TensorView&, const TensorView*, const Window2d&, const TensorView&) {
  return false;
}

bool onednn_conv_16() noexcept { return false; }

#else

namespace {

using onednn::Buffer;
using onednn::engine;

constexpr const char* kOp = "conv2d";
constexpr std::size_t kCapacity = 32;  // geometries kept per thread
// Tasks of fewer multiply-adds stay on im2col: oneDNN's fixed cost per call
// (the reorders, its argument maps) outweighs its faster kernel there.
constexpr std::int64_t kMinWork = std::int64_t(1) << 16;

void check(dnnl_status_t status, const char* what) { onednn::check(status, kOp, what); }

// One task's convolution: an image, `out` of its output channels.
struct Key {
  std::int64_t channels = 0, height = 0, width = 0, out = 0, groups = 1;
  std::int64_t kernel[2] = {}, stride[2] = {}, padding[2] = {}, dilation[2] = {};
  std::int64_t x_strides[3] = {};  // of the image's C, H and W axes
  bool bias = false;
  DataType dtype = DataType::float32;  // of x, the weight, the bias and y: float32 or bfloat16
  bool operator==(const Key&) const = default;
};

// A primitive and the memory objects it runs on (their data set per call).
struct Step {
  dnnl_primitive_t primitive = nullptr;
  dnnl_memory_t from = nullptr, weights = nullptr, bias = nullptr, to = nullptr, scratchpad = nullptr;
  std::size_t scratchpad_bytes = 0;

  void release() {
    for (dnnl_memory_t* m : {&from, &weights, &bias, &to, &scratchpad})
      if (*m) dnnl_memory_destroy(std::exchange(*m, nullptr));
    if (primitive) dnnl_primitive_destroy(std::exchange(primitive, nullptr));
  }

  // Takes pd's primitive, with memory objects for `from`, `to` (and
  // `weights` and `bias` when given) and its scratchpad.
  void make(const_dnnl_primitive_desc_t pd, const dnnl_memory_desc_t* from_md, const dnnl_memory_desc_t* to_md,
            const dnnl_memory_desc_t* weights_md = nullptr, const dnnl_memory_desc_t* bias_md = nullptr) {
    const dnnl_memory_desc_t* sd = dnnl_primitive_desc_query_md(pd, dnnl_query_scratchpad_md, 0);
    scratchpad_bytes = dnnl_memory_desc_get_size(sd);
    check(dnnl_primitive_create(&primitive, pd), "primitive");
    check(dnnl_memory_create(&from, from_md, engine(), DNNL_MEMORY_NONE), "memory");
    check(dnnl_memory_create(&to, to_md, engine(), DNNL_MEMORY_NONE), "memory");
    if (weights_md) check(dnnl_memory_create(&weights, weights_md, engine(), DNNL_MEMORY_NONE), "memory");
    if (bias_md) check(dnnl_memory_create(&bias, bias_md, engine(), DNNL_MEMORY_NONE), "memory");
    check(dnnl_memory_create(&scratchpad, sd, engine(), DNNL_MEMORY_NONE), "memory");
  }

  // A reorder from `in` to `out`.
  void run(dnnl_stream_t stream, const void* in, void* out, void* scratch) const {
    set(from, in);
    set(to, out);
    set(scratchpad, scratch);
    const dnnl_exec_arg_t args[] = {{DNNL_ARG_FROM, from}, {DNNL_ARG_TO, to}, {DNNL_ARG_SCRATCHPAD, scratchpad}};
    onednn::execute(primitive, stream, int(std::size(args)), args, kOp);
  }

  // A convolution of `in` by `weight_data` (plus `bias_data` where it has a bias) into `out`.
  void run(dnnl_stream_t stream, const void* in, const void* weight_data, const void* bias_data, void* out,
           void* scratch) const {
    set(from, in);
    set(weights, weight_data);
    set(to, out);
    set(scratchpad, scratch);
    if (bias) {
      set(bias, bias_data);
      const dnnl_exec_arg_t args[] = {{DNNL_ARG_SRC, from},
                                      {DNNL_ARG_WEIGHTS, weights},
                                      {DNNL_ARG_BIAS, bias},
                                      {DNNL_ARG_DST, to},
                                      {DNNL_ARG_SCRATCHPAD, scratchpad}};
      onednn::execute(primitive, stream, int(std::size(args)), args, kOp);
    } else {
      const dnnl_exec_arg_t args[] = {
          {DNNL_ARG_SRC, from}, {DNNL_ARG_WEIGHTS, weights}, {DNNL_ARG_DST, to}, {DNNL_ARG_SCRATCHPAD, scratchpad}};
      onednn::execute(primitive, stream, int(std::size(args)), args, kOp);
    }
  }

 private:
  static void set(dnnl_memory_t memory, const void* data) {
    check(dnnl_memory_set_data_handle(memory, const_cast<void*>(data)), "data handle");
  }
};

// A reorder from `from` to `to`, or nothing (primitive null) when they are
// the same layout. False where oneDNN has no reorder between them.
bool make_reorder(Step& step, const dnnl_memory_desc_t* from, const dnnl_memory_desc_t* to) {
  if (dnnl_memory_desc_equal(from, to)) return true;
  const onednn::UserScratchpad attr(kOp);
  dnnl_primitive_desc_t pd = nullptr;
  if (dnnl_reorder_primitive_desc_create(&pd, from, engine(), to, engine(), attr.get()) != dnnl_success)
    return false;
  support::ScopeExit free_pd{[&] { dnnl_primitive_desc_destroy(pd); }};
  step.make(pd, from, to);
  return true;
}

struct Entry {
  Key key;
  Step conv, src_reorder, weight_reorder, dst_reorder;  // conv.primitive null: not served
  std::size_t src_bytes = 0, weight_bytes = 0, dst_bytes = 0;
  std::uint64_t last_use = 0;

  void release() {
    for (Step* s : {&conv, &src_reorder, &weight_reorder, &dst_reorder}) s->release();
  }
  std::size_t scratchpad_bytes() const {
    return std::max({conv.scratchpad_bytes, src_reorder.scratchpad_bytes, weight_reorder.scratchpad_bytes,
                     dst_reorder.scratchpad_bytes, std::size_t(1)});
  }
};

std::int64_t out_size(const Key& k, int a) {
  const std::int64_t in = a == 0 ? k.height : k.width;
  return conv::out_size(in, k.kernel[a], k.stride[a], k.padding[a], k.dilation[a]);
}

// Fills e with the primitives for `key`, or leaves e.conv.primitive null
// where only oneDNN's GEMM fallback or reference kernels would take it.
void create(Entry& e, const Key& key) {
  e.key = key;
  const std::int64_t g = key.groups;
  const dnnl_data_type_t dt = key.dtype == DataType::bfloat16 ? dnnl_bf16 : dnnl_f32;
  const dnnl_dims_t src_dims = {1, key.channels, key.height, key.width};
  const dnnl_dims_t dst_dims = {1, key.out, out_size(key, 0), out_size(key, 1)};
  const dnnl_dims_t plain_weights = {key.out, key.channels, key.kernel[0], key.kernel[1]};
  const dnnl_dims_t grouped_weights = {g, key.out / g, key.channels / g, key.kernel[0], key.kernel[1]};
  dnnl_memory_desc_t user_src, user_weights, user_dst, any_src, any_weights, any_dst;
  const dnnl_dims_t src_strides = {key.channels * key.x_strides[0], key.x_strides[0], key.x_strides[1],
                                   key.x_strides[2]};
  check(dnnl_memory_desc_init_by_strides(&user_src, 4, src_dims, dt, src_strides), "memory desc");
  check(dnnl_memory_desc_init_by_tag(&user_dst, 4, dst_dims, dt, dnnl_nchw), "memory desc");
  if (g == 1) check(dnnl_memory_desc_init_by_tag(&user_weights, 4, plain_weights, dt, dnnl_oihw), "memory desc");
  else check(dnnl_memory_desc_init_by_tag(&user_weights, 5, grouped_weights, dt, dnnl_goihw), "memory desc");
  check(dnnl_memory_desc_init_by_tag(&any_src, 4, src_dims, dt, dnnl_format_tag_any), "memory desc");
  check(dnnl_memory_desc_init_by_tag(&any_dst, 4, dst_dims, dt, dnnl_format_tag_any), "memory desc");
  check(dnnl_memory_desc_init_by_tag(&any_weights, user_weights.ndims, user_weights.dims, dt,
                                     dnnl_format_tag_any),
        "memory desc");
  // oneDNN counts dilation from 0 (no gap), ndgc from 1; padding is symmetric.
  const dnnl_dims_t strides = {key.stride[0], key.stride[1]};
  const dnnl_dims_t dilates = {key.dilation[0] - 1, key.dilation[1] - 1};
  const dnnl_dims_t padding = {key.padding[0], key.padding[1]};
  // The right padding that makes oneDNN's output size ndgc's (the last
  // window may not reach the padding's end).
  dnnl_dims_t padding_r;
  for (int a = 0; a < 2; ++a) {
    const std::int64_t in = a == 0 ? key.height : key.width, span = (key.kernel[a] - 1) * key.dilation[a] + 1;
    padding_r[a] = (dst_dims[2 + a] - 1) * key.stride[a] + span - in - key.padding[a];
  }
  dnnl_memory_desc_t bias;
  const dnnl_dims_t bias_dims = {key.out};
  check(dnnl_memory_desc_init_by_tag(&bias, 1, bias_dims, dt, dnnl_a), "memory desc");
  dnnl_convolution_desc_t cd;
  check(dnnl_dilated_convolution_forward_desc_init(&cd, dnnl_forward_inference, dnnl_convolution_direct, &any_src,
                                                   &any_weights, key.bias ? &bias : nullptr, &any_dst, strides,
                                                   dilates, padding, padding_r),
        "convolution desc");
  const onednn::UserScratchpad attr(kOp);
  dnnl_primitive_desc_t pd = nullptr;
  if (dnnl_primitive_desc_create(&pd, &cd, attr.get(), engine(), nullptr) != dnnl_success) return;
  support::ScopeExit free_pd{[&] { dnnl_primitive_desc_destroy(pd); }};
  if (!onednn::implemented_by(pd, {"brg", "brdgmm", "jit"}, kOp)) return;

  const dnnl_memory_desc_t* src = dnnl_primitive_desc_query_md(pd, dnnl_query_src_md, 0);
  const dnnl_memory_desc_t* weights = dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0);
  const dnnl_memory_desc_t* dst = dnnl_primitive_desc_query_md(pd, dnnl_query_dst_md, 0);
  support::ScopeExit undo{[&] {
    if (!e.conv.scratchpad) e.release();  // a failure below leaves nothing half made
  }};
  if (!make_reorder(e.src_reorder, &user_src, src) || !make_reorder(e.weight_reorder, &user_weights, weights) ||
      !make_reorder(e.dst_reorder, dst, &user_dst))
    return;
  e.src_bytes = dnnl_memory_desc_get_size(src);
  e.weight_bytes = (dnnl_memory_desc_get_size(weights) + 63) / 64 * 64;
  e.dst_bytes = dnnl_memory_desc_get_size(dst);
  e.conv.make(pd, src, dst, weights, key.bias ? &bias : nullptr);
}

// One thread's primitives, stream and buffers.
struct ThreadCache {
  onednn::Primitives<Key, Entry, kCapacity> primitives{create};
  Buffer scratchpad, src, dst, weights;

  dnnl_stream_t stream() { return primitives.stream(kOp); }
  Entry& entry(const Key& key) { return primitives.entry(key); }
};

ThreadCache& thread_cache() {
  thread_local ThreadCache cache;
  return cache;
}

// The thread's entry for a key that oneDNN served on the calling thread
// (primitives depend on the key alone, so it serves it on every thread).
const Entry& served(ThreadCache& cache, const Key& key) {
  const Entry& e = cache.entry(key);
  if (!e.conv.primitive) throw Error("conv2d: oneDNN refused on one thread a convolution it took on another");
  return e;
}

// One task on the calling thread: y_block = x_image convolved by the
// prepared weights of its block, plus its bias (null where key has none).
// `reordered`: the thread's last task reordered this same image already.
void run_task(const Key& key, const void* x_image, const void* weights, const void* bias, void* y_block,
              bool reordered) {
  onednn::OneOpenMpThread one_thread;
  ThreadCache& cache = thread_cache();
  const Entry& e = served(cache, key);
  void* scratch = cache.scratchpad.bytes(e.scratchpad_bytes());
  const void* src = x_image;
  if (e.src_reorder.primitive) {
    src = cache.src.bytes(e.src_bytes);
    if (!reordered) e.src_reorder.run(cache.stream(), x_image, const_cast<void*>(src), scratch);
  }
  void* dst = e.dst_reorder.primitive ? cache.dst.bytes(e.dst_bytes) : y_block;
  e.conv.run(cache.stream(), src, weights, bias, dst, scratch);
  if (e.dst_reorder.primitive) e.dst_reorder.run(cache.stream(), dst, y_block, scratch);
  g_convolutions.fetch_add(1, std::memory_order_relaxed);
}

// The dtypes oneDNN's kernels convolve here: float32, and bfloat16 where
// the CPU has AVX512-BF16 (float32 sums, each output rounded once).
bool convolved(DataType t) {
  return t == DataType::float32 || (t == DataType::bfloat16 && support::cpu_has_avx512_bf16());
}

bool dense(const TensorView& v, DataType t) { return v.dtype == t && v.rank == 4 && v.is_contiguous(); }

// `base` advanced by `elements` of `t`.
const char* advanced(const void* base, std::int64_t elements, DataType t) {
  return static_cast<const char*>(base) + elements * std::int64_t(size_of(t));
}

// x's strides for one image (C, H, W), with the dense value on an axis of
// length 1 (whose stride nothing reads), so that one layout has one key;
// false for an axis that steps backwards or not at all.
bool image_strides(const TensorView& x, std::int64_t* strides) {
  std::int64_t dense = 1;
  for (int a = 3; a >= 1; --a) {
    strides[a - 1] = x.shape[a] == 1 ? dense : x.strides[a];
    if (strides[a - 1] < 1) return false;
    dense *= x.shape[a];
  }
  return x.strides[0] >= 0;
}

// The convolution one task runs: its image, `out` output channels.
Key key_of(const TensorView& x, std::int64_t out, const Window2d& w, const std::int64_t* x_strides, bool bias) {
  Key key{x.shape[1], x.shape[2], x.shape[3], out, w.groups};
  key.bias = bias;
  key.dtype = x.dtype;
  for (int a = 0; a < 2; ++a) {
    key.kernel[a] = w.kernel[a];
    key.stride[a] = w.stride[a];
    key.padding[a] = w.padding[a];
    key.dilation[a] = w.dilation[a];
  }
  for (int a = 0; a < 3; ++a) key.x_strides[a] = x_strides[a];
  return key;
}

// Each block's weights as the convolution reads them: reordered into the
// calling thread's buffer, one block a task (so the two halves of a large
// convolution reorder on two threads), or the user's own where no reorder
// is needed. False where oneDNN does not serve `key`.
bool prepare_weights(const Key& key, const void* weights, std::int64_t blocks, std::int64_t block_size,
                     const void** prepared) {
  char* out = nullptr;
  std::size_t stride = 0;
  {
    onednn::OneOpenMpThread one_thread;
    ThreadCache& cache = thread_cache();
    const Entry& e = cache.entry(key);
    if (!e.conv.primitive) return false;
    if (e.weight_reorder.primitive) {
      stride = e.weight_bytes;
      out = static_cast<char*>(cache.weights.bytes(stride * std::size_t(blocks)));
    }
  }
  for (std::int64_t b = 0; b < blocks; ++b)
    prepared[b] = out ? static_cast<const void*>(out + std::size_t(b) * stride)
                      : advanced(weights, b * block_size, key.dtype);
  if (!out) return true;
  support::parallel_chunks(blocks, 1, [&](std::int64_t b, std::int64_t, std::int64_t) {
    onednn::OneOpenMpThread one_thread;
    ThreadCache& cache = thread_cache();
    const Entry& e = served(cache, key);
    NDGC_ASSERT(e.weight_bytes == stride, "onednn_conv2d: the weights' layout differs between threads");
    e.weight_reorder.run(cache.stream(), advanced(weights, b * block_size, key.dtype), out + std::size_t(b) * stride,
                         cache.scratchpad.bytes(e.scratchpad_bytes()));
  });
  return true;
}

}  // namespace

bool onednn_conv_16() noexcept { return onednn_enabled() && support::cpu_has_avx512_bf16(); }

bool onednn_conv2d(const TensorView& x, const TensorView& weight, const TensorView* bias, const Window2d& w,
                   const TensorView& y) {
  std::int64_t x_strides[3];
  const DataType t = x.dtype;
  if (!convolved(t) || x.rank != 4 || !dense(weight, t) || !dense(y, t) || y.size() == 0 || x.size() == 0 ||
      !image_strides(x, x_strides) || !onednn_enabled())
    return false;
  if (bias && (bias->dtype != t || bias->rank != 1 || bias->shape[0] != y.shape[1] || !bias->is_contiguous()))
    return false;
  const std::int64_t n = x.shape[0], o = y.shape[1], taps = weight.shape[1] * w.kernel[0] * w.kernel[1];
  const std::int64_t work = o * y.shape[2] * y.shape[3] * taps;  // multiply-adds per image
  const std::int64_t blocks = onednn_conv_blocks(o, w.groups, work);
  if (work / blocks < kMinWork) return false;
  const Key key = key_of(x, o / blocks, w, x_strides, bias != nullptr);
  const void* prepared[kMostBlocks] = {};
  NDGC_ASSERT(blocks <= kMostBlocks, "onednn_conv2d: more blocks than kMostBlocks");
  if (!prepare_weights(key, weight.data, blocks, weight.size() / blocks, prepared)) return false;

  const std::int64_t image_out = o * y.shape[2] * y.shape[3];
  const auto task = [&](std::int64_t image, std::int64_t b, bool reordered) {
    const void* block_bias = bias ? advanced(bias->data, b * (o / blocks), t) : nullptr;
    void* y_block = const_cast<char*>(advanced(y.data, image * image_out + b * (image_out / blocks), t));
    run_task(key, advanced(x.data, image * x.strides[0], t), prepared[b], block_bias, y_block, reordered);
  };
  // With an image for every thread, a thread runs all of an image's blocks
  // and reorders it once; otherwise the blocks spread over the threads.
  // Either way each block is computed alike: the bits are the same.
  if (n >= support::region_threads()) {
    support::parallel_chunks(n, 1, [&](std::int64_t image, std::int64_t, std::int64_t) {
      for (std::int64_t b = 0; b < blocks; ++b) task(image, b, b > 0);
    });
  } else {
    support::parallel_chunks(n * blocks, 1,
                             [&](std::int64_t t, std::int64_t, std::int64_t) { task(t / blocks, t % blocks, false); });
  }
  return true;
}

#endif

}  // namespace ndgc::ops::cpu

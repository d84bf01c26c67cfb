// Issue 27's "measure both": the CNN's two convolutions (ndgc-train --model
// cnn, batch 32), forward and backward, through ndgc's conv2d (im2col and
// Eigen's GEMM, recorded and differentiated as in a training step) beside
// oneDNN's convolution primitives (Debian's libdnnl, the library LibTorch
// runs conv on here) over plain NCHW/OIHW buffers: the memory ndgc's arrays
// already have, so managers, limits and workspaces would keep seeing every
// byte. oneDNN's primitives are made once, as a framework caches them; only
// their execution is timed. Backward: the data gradient (second layer only:
// the first one's input is the images) and the weight and bias gradients.
// Counter same_bits_as_1_thread: whether oneDNN's weight gradient at this
// thread count has the bits it has at one (ndgc's conv has, by test).
//
//   build/perf/bench_conv_dnnl --benchmark_min_time=1   (see perf/RESULTS.md)
// Arguments: layer (1: 1 -> 32 channels at 28x28; 2: 32 -> 64 at 14x14), threads.
#include <benchmark/benchmark.h>
#include <omp.h>

#include <oneapi/dnnl/dnnl.hpp>

#include <ndgc/ndgc.hpp>

#include <cstdint>
#include <vector>

namespace {

using namespace ndgc;

struct Layer {
  std::int64_t n, c, h, w, o;
  bool data_gradient;
};

Layer layer_of(std::int64_t which) {
  return which == 1 ? Layer{32, 1, 28, 28, 32, false} : Layer{32, 32, 14, 14, 64, true};
}

void BM_conv_ndgc(benchmark::State& state) {
  const Layer l = layer_of(state.range(0));
  const int saved = num_threads();
  set_num_threads(int(state.range(1)));
  {
    NDManager m = NDManager::new_base_manager("conv bench");
    set_random_seed(5);
    NDArray x = m.random_uniform({l.n, l.c, l.h, l.w});
    NDArray w = m.random_uniform({l.o, l.c, 3, 3}, -0.1, 0.1);
    NDArray b = m.zeros({l.o});
    x.set_requires_gradient(l.data_gradient);
    w.set_requires_gradient(true);
    b.set_requires_gradient(true);
    for (auto _ : state) {
      NDManager step = m.new_sub_manager("step");
      GradientCollector collector;
      // x as a view in the step's manager: y joins it and closes with it.
      NDArray y = conv2d(x.get(step, ":"), w, b, {1, 1}, {1, 1});
      collector.backward(y);  // d y = 1 everywhere, as oneDNN's diff_dst below
      benchmark::DoNotOptimize(w.gradient());
    }
  }
  set_num_threads(saved);
}

void BM_conv_dnnl(benchmark::State& state) {
  using dnnl::memory;
  using tag = memory::format_tag;
  const Layer l = layer_of(state.range(0));
  const int saved = omp_get_max_threads();
  omp_set_num_threads(int(state.range(1)));
  {
    dnnl::engine eng(dnnl::engine::kind::cpu, 0);
    dnnl::stream s(eng);
    const memory::dims src_dims{l.n, l.c, l.h, l.w}, wei_dims{l.o, l.c, 3, 3}, bias_dims{l.o},
        dst_dims{l.n, l.o, l.h, l.w}, strides{1, 1}, pad{1, 1};
    const auto f32 = memory::data_type::f32;
    const memory::desc src_md(src_dims, f32, tag::nchw), wei_md(wei_dims, f32, tag::oihw),
        bias_md(bias_dims, f32, tag::x), dst_md(dst_dims, f32, tag::nchw);
    auto fwd_pd = dnnl::convolution_forward::primitive_desc(
        dnnl::convolution_forward::desc(dnnl::prop_kind::forward_training, dnnl::algorithm::convolution_direct,
                                        src_md, wei_md, bias_md, dst_md, strides, pad, pad),
        eng);
    auto bwd_w_pd = dnnl::convolution_backward_weights::primitive_desc(
        dnnl::convolution_backward_weights::desc(dnnl::algorithm::convolution_direct, src_md, wei_md, bias_md,
                                                 dst_md, strides, pad, pad),
        eng, fwd_pd);
    auto bwd_d_pd = dnnl::convolution_backward_data::primitive_desc(
        dnnl::convolution_backward_data::desc(dnnl::algorithm::convolution_direct, src_md, wei_md, dst_md, strides,
                                              pad, pad),
        eng, fwd_pd);
    dnnl::convolution_forward fwd(fwd_pd);
    dnnl::convolution_backward_weights bwd_w(bwd_w_pd);
    dnnl::convolution_backward_data bwd_d(bwd_d_pd);

    std::vector<float> src(std::size_t(l.n * l.c * l.h * l.w)), wei(std::size_t(l.o * l.c * 9)),
        bias(std::size_t(l.o), 0.f), dst(std::size_t(l.n * l.o * l.h * l.w)), ddst(dst.size()), dwei(wei.size()),
        dbias(bias.size()), dsrc(src.size());
    std::uint32_t seed = 12345;  // values with many distinct sums, so a changed summation order shows in the bits
    for (auto* v : {&src, &wei, &ddst})
      for (float& e : *v) e = float((seed = seed * 1664525u + 1013904223u) >> 8) / float(1 << 24) - 0.5f;
    memory src_m(src_md, eng, src.data()), wei_m(wei_md, eng, wei.data()), bias_m(bias_md, eng, bias.data()),
        dst_m(dst_md, eng, dst.data()), ddst_m(dst_md, eng, ddst.data()), dwei_m(wei_md, eng, dwei.data()),
        dbias_m(bias_md, eng, dbias.data()), dsrc_m(src_md, eng, dsrc.data());
    // The weight gradient at one thread, to compare with this run's thread count below.
    auto weight_gradient = [&] {
      bwd_w.execute(s, {{DNNL_ARG_SRC, src_m}, {DNNL_ARG_DIFF_DST, ddst_m}, {DNNL_ARG_DIFF_WEIGHTS, dwei_m},
                        {DNNL_ARG_DIFF_BIAS, dbias_m}});
      s.wait();
      return dwei;
    };
    omp_set_num_threads(1);
    const std::vector<float> one_thread = weight_gradient();
    omp_set_num_threads(int(state.range(1)));
    state.counters["same_bits_as_1_thread"] = weight_gradient() == one_thread;
    for (auto _ : state) {
      fwd.execute(s, {{DNNL_ARG_SRC, src_m}, {DNNL_ARG_WEIGHTS, wei_m}, {DNNL_ARG_BIAS, bias_m},
                      {DNNL_ARG_DST, dst_m}});
      bwd_w.execute(s, {{DNNL_ARG_SRC, src_m}, {DNNL_ARG_DIFF_DST, ddst_m}, {DNNL_ARG_DIFF_WEIGHTS, dwei_m},
                        {DNNL_ARG_DIFF_BIAS, dbias_m}});
      if (l.data_gradient)
        bwd_d.execute(s, {{DNNL_ARG_DIFF_DST, ddst_m}, {DNNL_ARG_WEIGHTS, wei_m}, {DNNL_ARG_DIFF_SRC, dsrc_m}});
      s.wait();
      benchmark::DoNotOptimize(dwei.data());
    }
    state.SetLabel(fwd_pd.impl_info_str());
  }
  omp_set_num_threads(saved);
}

void args(benchmark::internal::Benchmark* b) {
  for (int layer : {1, 2})
    for (int threads : {1, 2}) b->Args({layer, threads});
  b->Unit(benchmark::kMillisecond)->UseRealTime();
}

BENCHMARK(BM_conv_ndgc)->Apply(args);
BENCHMARK(BM_conv_dnnl)->Apply(args);

}  // namespace

BENCHMARK_MAIN();

// glibc's malloc, set so that a training step's large buffers stay mapped
// between steps, for the benchmarks that run LibTorch beside ndgc.
//
// By default glibc serves a block of more than its mmap threshold (128 KiB,
// rising to at most 32 MiB as blocks are freed) with its own mmap and
// returns it on free, and trims the heap's top beyond 128 KiB. A LibTorch
// step allocates its activations, im2col buffers and gradients anew each
// time, so each step page-faults them in again; on the virtualised build
// machine a page fault costs enough that the LibTorch CNN step measured 66 ms
// one day and 31 ms another, with 20 % of its samples in the kernel. With the
// threshold at its maximum and no trimming, blocks of up to 32 MiB are
// reused from the heap, as a long-running training process reaches anyway,
// and the figure measures LibTorch's kernels (22 ms). ndgc's host block cache
// keeps its blocks either way, so its figures do not move.
#pragma once

#include <malloc.h>

namespace ndgc::perf {

inline const bool kSteadyMalloc = [] {
  mallopt(M_MMAP_THRESHOLD, 32 << 20);
  mallopt(M_TRIM_THRESHOLD, 1 << 30);
  return true;
}();

}  // namespace ndgc::perf

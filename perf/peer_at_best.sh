#!/usr/bin/env bash
# Runs a LibTorch (or other) peer's benchmark at its best, in a process of
# its own, while ndgc's side runs as shipped, untuned:
#
#   perf/peer_at_best.sh build/perf/bench_layers --benchmark_filter='cnn_torch/1/0'
#
# For the peer's process only: glibc keeps large blocks mapped (a LibTorch
# step allocates its buffers anew each time and would page-fault them in
# again), and OPENBLAS_CORETYPE / OPENBLAS_L2_SIZE are unset, which this
# machine's environment sets to keep old OpenBLAS builds on AVX2 kernels;
# OPENBLAS_VERBOSE=2 makes OpenBLAS print the kernel it then chose. Give
# the peer's thread count as OMP_NUM_THREADS too (OMP_NUM_THREADS=1 for a
# /1 benchmark): LibTorch's OpenBLAS runs on OpenMP, and without it a "1
# thread" LibTorch step kept both cores busy (user time 1.66 × wall). Run
# ndgc's filter of the same binary without this script, alternately
# (farm-bench --vs), so that ndgc gets no tuning at all.
set -euo pipefail
exec env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE OPENBLAS_VERBOSE=2 \
  MALLOC_MMAP_THRESHOLD_=1073741824 MALLOC_TRIM_THRESHOLD_=1073741824 MALLOC_TOP_PAD_=268435456 "$@"

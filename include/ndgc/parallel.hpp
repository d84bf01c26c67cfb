// Threads inside an op: how many the CPU kernels use.
//
//   ndgc::set_num_threads(4);     // the calling thread and three pool threads
//   int n = ndgc::num_threads();  // NDGC_NUM_THREADS, else the machine's cores
//
// Kernels above a grain size (32768 elements, ATen's) split their work over
// one library-owned pool; smaller ones run on the caller. Results are the same
// bits for every thread count: reductions add fixed chunks in a fixed order.
// Pool threads only do kernel arithmetic: auto-close, managers, workspaces and
// errors stay on the calling thread. A region started inside another runs
// inline, and a process that forks keeps working in the child (its pool is
// started afresh there). Thread-safe; concurrent ops from several threads
// share the pool, and an op that finds it busy runs on its own thread.
#pragma once

namespace ndgc {

// Intra-op threads, the caller included. n >= 1, else InvalidArgument. With 1
// no pool thread is ever started; the pool starts on the first op that needs it.
void set_num_threads(int n);
// The current count. Default: NDGC_NUM_THREADS; else the machine's cores
// (std::thread::hardware_concurrency), divided by the local rank count under
// mpirun (OMPI_COMM_WORLD_LOCAL_SIZE), at least 1.
int num_threads();

}  // namespace ndgc

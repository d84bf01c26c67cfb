// NDGC_HD marks a function that both engines run: __host__ __device__ under
// nvcc, a plain function otherwise. Host tests then run the code the GPU
// kernels run (ops/index_math.hpp, ops/optimizer_math.hpp).
#pragma once

#if defined(__CUDACC__)
#define NDGC_HD __host__ __device__
#else
#define NDGC_HD
#endif

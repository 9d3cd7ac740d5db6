// Marks functions callable from both host and device code (a no-op for plain C++ compilers).
#pragma once

#ifndef SOAC_HD
#if defined(__CUDACC__)
#define SOAC_HD __host__ __device__
#else
#define SOAC_HD
#endif
#endif

// `#pragma unroll` for loops in __host__ __device__ code: the device compiler unrolls, the host
// compiler (which does not know the pragma and warns) sees nothing.
#ifndef SOAC_UNROLL
#if defined(__CUDA_ARCH__)
#define SOAC_UNROLL _Pragma("unroll")
#else
#define SOAC_UNROLL
#endif
#endif

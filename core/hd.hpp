// Marks functions callable from both host and device code (a no-op for plain C++ compilers).
#pragma once

#ifndef SOAC_HD
#if defined(__CUDACC__)
#define SOAC_HD __host__ __device__
#else
#define SOAC_HD
#endif
#endif

// Every CUDA runtime call goes through SOAC_CUDA_CHECK: a failure becomes a soac::cuda_error
// naming the call, the source place and CUDA's own message.
#pragma once

#include <cuda_runtime_api.h>

#include "core/error.hpp"

namespace soac::detail {

[[noreturn]] void throw_cuda_error(cudaError_t code, const char* call, const char* file, int line);

inline void check_cuda(cudaError_t code, const char* call, const char* file, int line) {
  if (code != cudaSuccess) throw_cuda_error(code, call, file, line);
}

}  // namespace soac::detail

#define SOAC_CUDA_CHECK(call) ::soac::detail::check_cuda((call), #call, __FILE__, __LINE__)

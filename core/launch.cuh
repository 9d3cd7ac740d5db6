// Kernel-launch helpers shared by the primitives: checked launches and grid sizing.
#pragma once

#include <cstdint>

#include "core/cuda_check.hpp"

namespace soac::detail {

// Largest gridDim.x CUDA accepts.
inline constexpr std::int64_t max_grid_x = 2147483647;

inline std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }

// Call right after a <<<...>>> launch: turns launch-configuration errors into cuda_error.
inline void check_launch(const char* kernel, const char* file, int line) {
  check_cuda(cudaGetLastError(), kernel, file, line);
}

}  // namespace soac::detail

#define SOAC_CHECK_LAUNCH(kernel_name) ::soac::detail::check_launch(kernel_name, __FILE__, __LINE__)

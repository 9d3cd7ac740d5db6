#include "bench/hold.hpp"

#include <cstdint>

#include "core/cuda_check.hpp"
#include "core/launch.cuh"

namespace soac::bench {
namespace {

__device__ std::uint64_t global_ns() {
  std::uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

// flag[0]: set by the host to release; flag[1]: set here when the timeout ended the hold.
__global__ void hold_kernel(volatile int* flag, std::uint64_t timeout_ns) {
  const std::uint64_t start = global_ns();
  while (flag[0] == 0) {
    if (global_ns() - start > timeout_ns) {
      flag[1] = 1;
      return;
    }
  }
}

}  // namespace

stream_hold::stream_hold() {
  SOAC_CUDA_CHECK(cudaHostAlloc(reinterpret_cast<void**>(&flag_), 2 * sizeof(int), cudaHostAllocMapped));
  flag_[0] = 1;
  flag_[1] = 0;
  SOAC_CUDA_CHECK(cudaHostGetDevicePointer(reinterpret_cast<void**>(&device_flag_), flag_, 0));
}

stream_hold::~stream_hold() { cudaFreeHost(flag_); }

void stream_hold::hold(cudaStream_t stream) {
  volatile int* f = flag_;
  f[0] = 0;
  f[1] = 0;
  hold_kernel<<<1, 1, 0, stream>>>(device_flag_, static_cast<std::uint64_t>(timeout_ms * 1e6));
  SOAC_CHECK_LAUNCH("hold_kernel");
}

void stream_hold::release() { static_cast<volatile int*>(flag_)[0] = 1; }

bool stream_hold::timed_out() const { return static_cast<volatile int*>(flag_)[1] != 0; }

}  // namespace soac::bench

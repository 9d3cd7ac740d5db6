// A spin kernel that holds a stream until the host releases it, so that the work queued behind
// it runs back to back (NVBench's blocking kernel): bench::time queues a timed run behind it and
// its events then measure the GPU's work, not the host's time to launch it.
#pragma once

#include <cuda_runtime_api.h>

namespace soac::bench {

class stream_hold {
 public:
  stream_hold();  // a mapped, pinned host flag
  ~stream_hold();
  stream_hold(const stream_hold&) = delete;
  stream_hold& operator=(const stream_hold&) = delete;

  // Queues the spin kernel on `stream`. It leaves when release() is called or, should the host
  // wait for the stream first (a body that synchronises), after timeout_ms.
  void hold(cudaStream_t stream);
  void release();
  // Whether the last hold ended by its timeout rather than by release().
  bool timed_out() const;

  static constexpr double timeout_ms = 20;

 private:
  int* flag_ = nullptr;  // mapped host memory: [0] released by the host, [1] timed out (see hold.cu)
  int* device_flag_ = nullptr;  // the same memory as the kernel addresses it
};

}  // namespace soac::bench

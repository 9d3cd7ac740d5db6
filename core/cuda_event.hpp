// A CUDA event owned by one object: created with its flags, destroyed on every path (cuda backend
// only: creating one needs a device).
#pragma once

#include <utility>

#include <cuda_runtime_api.h>

#include "core/cuda_check.hpp"

namespace soac {

class cuda_event {
 public:
  // Untimed unless asked: such events are cheaper to record and to wait on.
  explicit cuda_event(unsigned flags = cudaEventDisableTiming) { SOAC_CUDA_CHECK(cudaEventCreateWithFlags(&event_, flags)); }
  cuda_event(cuda_event&& other) noexcept : event_(std::exchange(other.event_, nullptr)) {}
  cuda_event& operator=(cuda_event&& other) noexcept {
    if (this != &other) {
      destroy();
      event_ = std::exchange(other.event_, nullptr);
    }
    return *this;
  }
  cuda_event(const cuda_event&) = delete;
  cuda_event& operator=(const cuda_event&) = delete;
  ~cuda_event() { destroy(); }

  cudaEvent_t get() const { return event_; }

 private:
  void destroy() noexcept {
    if (event_) cudaEventDestroy(event_);
    event_ = nullptr;
  }
  cudaEvent_t event_ = nullptr;
};

}  // namespace soac

// The execution context: which backend runs the primitives (cuda or host), and for cuda the
// device, its stream, the device properties the papers' models need, and a caching allocator
// for temporaries. A context belongs to one device; nothing here assumes there is only one.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include <cuda_runtime_api.h>

namespace soac {

enum class backend { cuda, host };

std::string_view to_string(backend);

// "auto" | "cuda" | "host" -> backend; auto picks cuda when a CUDA device is present.
backend resolve_backend(std::string_view name);

// Number of usable CUDA devices (0 when there is no driver or no GPU; never throws).
int cuda_device_count() noexcept;

// What the strategy models read off the device (SC20 eqs. 1-6, FHPC17 3.1).
struct device_properties {
  std::string name;
  int ordinal = 0;
  int compute_major = 0, compute_minor = 0;
  int sm_count = 0;
  int max_threads_per_sm = 0;              // resident threads per SM
  int max_threads_per_block = 0;
  int warp_size = 32;
  std::size_t shared_per_block = 0;        // default limit (48 KiB)
  std::size_t shared_per_block_optin = 0;  // with cudaFuncAttributeMaxDynamicSharedMemorySize
  std::size_t shared_per_sm = 0;
  std::size_t l2_bytes = 0;
  std::size_t global_bytes = 0;
  int host_threads = 1;                    // OpenMP threads of the host backend
};

class context {
 public:
  // Opens `device` for the cuda backend (throws cuda_error / usage_error when unavailable),
  // or sets up the host backend.
  explicit context(backend which, int device = 0);
  // "auto" | "cuda" | "host".
  explicit context(std::string_view backend_name, int device = 0)
      : context(resolve_backend(backend_name), device) {}
  ~context();
  context(const context&) = delete;
  context& operator=(const context&) = delete;

  backend which() const noexcept { return backend_; }
  bool is_cuda() const noexcept { return backend_ == backend::cuda; }
  const device_properties& props() const noexcept { return props_; }
  // One line: "cuda: NVIDIA H100 80GB HBM3 (sm_90, 132 SMs, 50 MiB L2)" or "host: 16 OpenMP threads".
  std::string describe() const;

  // Makes this context's device current for the calling thread (cheap when it already is).
  void activate() const;
  cudaStream_t stream() const noexcept { return stream_; }
  // Waits for all work queued on the stream; a no-op on host.
  void synchronize() const;

  // Temporaries: device memory from the caching allocator on cuda, aligned host memory on host.
  void* allocate_temp(std::size_t bytes);
  void free_temp(void* p) noexcept;
  // Long-lived arrays: cudaMalloc on cuda (clear resource_error when the device is full).
  void* allocate(std::size_t bytes);
  void free(void* p) noexcept;
  // resource_error naming `what` unless `bytes` fit in what the backend has free now (device:
  // cudaMemGetInfo; host: require_host_memory), so that sizes given by input are refused before
  // anything is allocated. allocate and allocate_temp fail cleanly too; this checks a total.
  void require_memory(std::uint64_t bytes, std::string_view what) const;
  // The same for `backend_bytes` in the backend's memory and `host_bytes` of host memory beside
  // them (e.g. a result's copy to the host): on the host backend both add up.
  void require_memory(std::uint64_t backend_bytes, std::uint64_t host_bytes, std::string_view what) const;

  // cuda only: at least `count` device counters that are zero whenever no kernel of this
  // context is running. A kernel that uses them must leave them zero again (e.g. the last block
  // to arrive resets its counter), so single-pass kernels need no memset launch per call.
  unsigned* zeroed_counters(std::size_t count);
  // cuda only: at least `bytes` of device memory for one call's intermediate results (segreduce's
  // per-block partials), kept between calls so that a call allocates and frees nothing on the
  // stream. The next call that takes it may overwrite it: nothing may use it past its own call.
  void* scratch(std::size_t bytes);

  // Copies between the backend's memory and host memory (synchronous).
  void copy_to_backend(void* dst, const void* host_src, std::size_t bytes) const;
  void copy_to_host(void* host_dst, const void* src, std::size_t bytes) const;
  // Within the backend's memory: queued on the stream (cuda), done at once (host).
  void copy_within(void* dst, const void* src, std::size_t bytes) const;
  void fill_zero(void* dst, std::size_t bytes) const;

 private:
  struct cache;  // cub::CachingDeviceAllocator, kept out of this header
  backend backend_;
  device_properties props_;
  cudaStream_t stream_ = nullptr;
  std::unique_ptr<cache> cache_;
  unsigned* counters_ = nullptr;
  std::size_t counter_count_ = 0;
  void* scratch_ = nullptr;
  std::size_t scratch_bytes_ = 0;
};

}  // namespace soac

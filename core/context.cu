#include "core/context.hpp"

#include <algorithm>
#include <cstring>
#include <limits>
#include <new>
#include <sstream>

#include <cub/util_allocator.cuh>
#include "core/host_parallel.hpp"

#include "core/cuda_check.hpp"
#include "core/error.hpp"
#include "core/memory.hpp"

namespace soac {

namespace detail {
void throw_cuda_error(cudaError_t code, const char* call, const char* file, int line) {
  std::ostringstream where;
  where << file << ':' << line;
  throw cuda_error(static_cast<int>(code), call, where.str(),
                   std::string(cudaGetErrorName(code)) + ": " + cudaGetErrorString(code));
}
}  // namespace detail

namespace {

constexpr std::align_val_t host_alignment{64};

}  // namespace

// Temporaries are rounded up to powers of two (bins 2^8 .. 2^36) so that the repeated calls of
// a benchmark or an iterative app reuse blocks instead of paying cudaMalloc/cudaFree each time.
struct context::cache {
  explicit cache(std::size_t max_cached) : alloc(2, 8, 36, max_cached) {}
  cub::CachingDeviceAllocator alloc;
};

std::string_view to_string(backend b) { return b == backend::cuda ? "cuda" : "host"; }

int cuda_device_count() noexcept {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    cudaGetLastError();  // clear the sticky "no device"/"no driver" state
    return 0;
  }
  return n;
}

backend resolve_backend(std::string_view name) {
  if (name == "cuda") return backend::cuda;
  if (name == "host") return backend::host;
  if (name == "auto") return cuda_device_count() > 0 ? backend::cuda : backend::host;
  throw usage_error("unknown backend '" + std::string(name) + "' (expected auto, cuda or host)");
}

context::context(backend which, int device) : backend_(which) {
  props_.host_threads = detail::host_max_threads();
  if (which == backend::host) {
    props_.name = "host";
    return;
  }
  const int count = cuda_device_count();
  if (count == 0) {
    int n = 0;
    const cudaError_t why = cudaGetDeviceCount(&n);
    cudaGetLastError();
    throw usage_error(std::string("the cuda backend needs a CUDA device, and none is available (") +
                      (why == cudaSuccess ? "no devices" : cudaGetErrorString(why)) +
                      "); use --backend host or auto");
  }
  if (device < 0 || device >= count)
    throw usage_error("CUDA device " + std::to_string(device) + " does not exist (this machine has " +
                      std::to_string(count) + ")");
  SOAC_CUDA_CHECK(cudaSetDevice(device));
  cudaDeviceProp p{};
  SOAC_CUDA_CHECK(cudaGetDeviceProperties(&p, device));
  props_.name = p.name;
  props_.ordinal = device;
  props_.compute_major = p.major;
  props_.compute_minor = p.minor;
  props_.sm_count = p.multiProcessorCount;
  props_.max_threads_per_sm = p.maxThreadsPerMultiProcessor;
  props_.max_threads_per_block = p.maxThreadsPerBlock;
  props_.warp_size = p.warpSize;
  props_.shared_per_block = p.sharedMemPerBlock;
  props_.shared_per_block_optin = p.sharedMemPerBlockOptin;
  props_.shared_per_sm = p.sharedMemPerMultiprocessor;
  props_.l2_bytes = static_cast<std::size_t>(p.l2CacheSize);
  props_.global_bytes = p.totalGlobalMem;
  SOAC_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
  cache_ = std::make_unique<cache>(props_.global_bytes / 4);
}

context::~context() {
  if (!is_cuda()) return;
  cudaSetDevice(props_.ordinal);
  cudaStreamSynchronize(stream_);
  cache_.reset();  // returns cached blocks before the stream goes
  cudaFree(counters_);
  cudaFree(scratch_);
  cudaStreamDestroy(stream_);
}

std::string context::describe() const {
  std::ostringstream s;
  if (!is_cuda()) {
    s << "host: " << props_.host_threads << " OpenMP thread" << (props_.host_threads == 1 ? "" : "s");
    return s.str();
  }
  s << "cuda: " << props_.name << " (device " << props_.ordinal << ", sm_" << props_.compute_major
    << props_.compute_minor << ", " << props_.sm_count << " SMs, " << bytes_text(props_.l2_bytes) << " L2, "
    << bytes_text(props_.shared_per_block_optin) << " shared/block)";
  return s.str();
}

void context::activate() const {
  if (!is_cuda()) return;
  int current = -1;
  SOAC_CUDA_CHECK(cudaGetDevice(&current));
  if (current != props_.ordinal) SOAC_CUDA_CHECK(cudaSetDevice(props_.ordinal));
}

void context::synchronize() const {
  if (is_cuda()) SOAC_CUDA_CHECK(cudaStreamSynchronize(stream_));
}

static void* host_allocate(std::size_t bytes) {
  require_host_memory(bytes, "an array of the host backend");
  try {
    return ::operator new(bytes, host_alignment);
  } catch (const std::bad_alloc&) {
    throw resource_error("cannot allocate " + bytes_text(bytes) + " of host memory");
  }
}

static resource_error device_full(const device_properties& props, std::size_t bytes) {
  std::size_t free_bytes = 0, total = 0;
  cudaGetLastError();
  cudaMemGetInfo(&free_bytes, &total);
  return resource_error("cannot allocate " + bytes_text(bytes) + " on " + props.name + " (" +
                        bytes_text(free_bytes) + " free of " + bytes_text(total) + ")");
}

// Out of memory is a resource_error naming the size and what is free; other failures cuda_error.
static void check_allocation(cudaError_t rc, const device_properties& props, std::size_t bytes) {
  if (rc == cudaErrorMemoryAllocation) throw device_full(props, bytes);
  SOAC_CUDA_CHECK(rc);
}

void* context::allocate_temp(std::size_t bytes) {
  if (bytes == 0) return nullptr;
  if (!is_cuda()) return host_allocate(bytes);
  activate();
  void* p = nullptr;
  check_allocation(cache_->alloc.DeviceAllocate(props_.ordinal, &p, bytes, stream_), props_, bytes);
  return p;
}

void context::free_temp(void* p) noexcept {
  if (!p) return;
  if (!is_cuda()) return ::operator delete(p, host_alignment);
  cache_->alloc.DeviceFree(props_.ordinal, p);
}

void context::require_memory(std::uint64_t bytes, std::string_view what) const {
  if (!is_cuda()) return require_host_memory(bytes, what);
  if (bytes < memory_check_threshold) return;
  activate();
  std::size_t free_bytes = 0, total = 0;
  SOAC_CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total));
  if (bytes > free_bytes)
    throw resource_error(std::string(what) + ": cannot allocate " + bytes_text(bytes) + " on " + props_.name + ", " +
                         bytes_text(free_bytes) + " are free of " + bytes_text(total));
}

void context::require_memory(std::uint64_t backend_bytes, std::uint64_t host_bytes, std::string_view what) const {
  if (!is_cuda()) {
    const std::uint64_t most = std::numeric_limits<std::uint64_t>::max();
    return require_host_memory(host_bytes > most - backend_bytes ? most : backend_bytes + host_bytes, what);
  }
  require_memory(backend_bytes, what);
  require_host_memory(host_bytes, what);
}

void* context::allocate(std::size_t bytes) {
  if (bytes == 0) return nullptr;
  if (!is_cuda()) return host_allocate(bytes);
  activate();
  void* p = nullptr;
  check_allocation(cudaMalloc(&p, bytes), props_, bytes);
  return p;
}

void context::free(void* p) noexcept {
  if (!p) return;
  if (!is_cuda()) return ::operator delete(p, host_alignment);
  // Other work on the stream may still read p; cudaFree synchronises the device.
  cudaFree(p);
}

unsigned* context::zeroed_counters(std::size_t count) {
  if (!is_cuda()) throw usage_error("zeroed_counters is for the cuda backend");
  if (count > counter_count_) {
    activate();
    const std::size_t grown = std::max<std::size_t>({count, 2 * counter_count_, 1024});
    SOAC_CUDA_CHECK(cudaStreamSynchronize(stream_));  // no kernel may still use the old array
    SOAC_CUDA_CHECK(cudaFree(counters_));
    counters_ = nullptr;
    counter_count_ = 0;
    counters_ = static_cast<unsigned*>(allocate(grown * sizeof(unsigned)));
    SOAC_CUDA_CHECK(cudaMemsetAsync(counters_, 0, grown * sizeof(unsigned), stream_));
    counter_count_ = grown;
  }
  return counters_;
}

void* context::scratch(std::size_t bytes) {
  if (!is_cuda()) throw usage_error("scratch is for the cuda backend");
  if (bytes > scratch_bytes_) {
    activate();
    const std::size_t grown = std::max<std::size_t>({bytes, 2 * scratch_bytes_, 64 * 1024});
    SOAC_CUDA_CHECK(cudaStreamSynchronize(stream_));  // no kernel may still use the old array
    SOAC_CUDA_CHECK(cudaFree(scratch_));
    scratch_ = nullptr;
    scratch_bytes_ = 0;
    scratch_ = allocate(grown);
    scratch_bytes_ = grown;
  }
  return scratch_;
}

// Both directions: memcpy on host, a checked copy on the context's stream on cuda.
static void copy_between(const context& ctx, void* dst, const void* src, std::size_t bytes, cudaMemcpyKind kind) {
  if (!ctx.is_cuda()) {
    std::memcpy(dst, src, bytes);
    return;
  }
  ctx.activate();
  SOAC_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, kind, ctx.stream()));
  SOAC_CUDA_CHECK(cudaStreamSynchronize(ctx.stream()));
}

void context::copy_to_backend(void* dst, const void* host_src, std::size_t bytes) const {
  copy_between(*this, dst, host_src, bytes, cudaMemcpyHostToDevice);
}

void context::copy_to_host(void* host_dst, const void* src, std::size_t bytes) const {
  copy_between(*this, host_dst, src, bytes, cudaMemcpyDeviceToHost);
}

void context::copy_within(void* dst, const void* src, std::size_t bytes) const {
  if (bytes == 0) return;
  if (!is_cuda()) {
    std::memmove(dst, src, bytes);
    return;
  }
  activate();
  SOAC_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, stream_));
}

void context::fill_zero(void* dst, std::size_t bytes) const {
  if (bytes == 0) return;
  if (!is_cuda()) {
    std::memset(dst, 0, bytes);
    return;
  }
  activate();
  SOAC_CUDA_CHECK(cudaMemsetAsync(dst, 0, bytes, stream_));
}

}  // namespace soac

// Kernel-launch helpers shared by the primitives: checked launches and grid sizing.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <tuple>
#include <utility>

#include "core/context.hpp"
#include "core/cuda_check.hpp"
#include "core/error.hpp"

namespace soac::detail {

// Largest gridDim.x CUDA accepts.
inline constexpr std::int64_t max_grid_x = 2147483647;

__host__ __device__ inline std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }

// Call right after a <<<...>>> launch: turns launch-configuration errors into cuda_error.
inline void check_launch(const char* kernel, const char* file, int line) {
  check_cuda(cudaGetLastError(), kernel, file, line);
}

// Programmatic dependent launch (sm_90 on): the blocks of a kernel started by launch_dependent
// may be scheduled while the kernel before it in the stream drains, which hides most of a launch's
// latency in a chain of short kernels (backprop's three: docs/tuning/backprop.md). Such a kernel
// calls wait_for_previous_grid() before it touches memory: the wait returns once the work before
// it in the stream has finished and its writes are visible (at once after an ordinary launch).
// No kernel triggers its dependents early (griddepcontrol.launch_dependents): that made backprop's
// step slower, not faster (docs/tuning/backprop.md).
__device__ __forceinline__ void wait_for_previous_grid() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

// A launch's shape: `grid` blocks of `block` threads, `shared_bytes` of dynamic shared memory, in
// clusters of `cluster` blocks (1: no cluster attribute).
struct launch_shape {
  std::int64_t grid = 0;
  int block = 0;
  std::size_t shared_bytes = 0;
  int cluster = 1;
};

// A cudaLaunchKernelEx configuration for `shape` on `stream`: the cluster attribute for clusters of
// more than one block (or always, where `cluster_attribute`: the occupancy query needs it), and
// programmatic stream serialization where `dependent`. Not copyable: the configuration points at
// its own attributes.
struct launch_config {
  cudaLaunchConfig_t config{};
  cudaLaunchAttribute attributes[2]{};
  launch_config(const launch_shape& shape, cudaStream_t stream, bool dependent = false, bool cluster_attribute = false) {
    config.gridDim = dim3(static_cast<unsigned>(shape.grid));
    config.blockDim = dim3(static_cast<unsigned>(shape.block));
    config.dynamicSmemBytes = shape.shared_bytes;
    config.stream = stream;
    unsigned count = 0;
    if (dependent) {
      attributes[count].id = cudaLaunchAttributeProgrammaticStreamSerialization;
      attributes[count++].val.programmaticStreamSerializationAllowed = 1;
    }
    if (shape.cluster > 1 || cluster_attribute) {
      attributes[count].id = cudaLaunchAttributeClusterDimension;
      attributes[count].val.clusterDim.x = static_cast<unsigned>(shape.cluster);
      attributes[count].val.clusterDim.y = attributes[count].val.clusterDim.z = 1;
      ++count;
    }
    config.attrs = attributes;
    config.numAttrs = count;
  }
  launch_config(const launch_config&) = delete;
  launch_config& operator=(const launch_config&) = delete;
};

// kernel<<<shape>>>(args...) on ctx.stream(), checked, as a programmatic dependent launch where the
// device has them (an ordinary launch elsewhere). Only for kernels that begin with
// wait_for_previous_grid().
template <class... Params, class... Args>
void launch_dependent(const context& ctx, const char* name, void (*kernel)(Params...), const launch_shape& shape, Args&&... args) {
  const launch_config launch(shape, ctx.stream(), ctx.props().compute_major >= 9);
  check_cuda(cudaLaunchKernelEx(&launch.config, kernel, std::forward<Args>(args)...), name, __FILE__, __LINE__);
}

// Lets `kernel` run in clusters of `cluster` blocks. Beyond 8, the portable limit, clusters are
// opt-in per kernel and device (H100 and H200: up to 16); this opts in once each, and takes no lock
// for portable sizes.
template <class Kernel>
void allow_cluster_size(Kernel kernel, int cluster) {
  if (cluster <= 8) return;
  static std::mutex guard;
  static std::set<std::pair<const void*, int>> done;
  int device = 0;
  SOAC_CUDA_CHECK(cudaGetDevice(&device));
  std::lock_guard<std::mutex> lock(guard);
  if (done.insert({reinterpret_cast<const void*>(kernel), device}).second)
    SOAC_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeNonPortableClusterSizeAllowed, 1));
}

// Blocks of `kernel` resident per SM with blocks of block_threads and shared_bytes of dynamic
// shared memory (registers included), at least 1; first raises the kernel's dynamic shared memory
// limit to shared_bytes where that exceeds the default. Both answers are cached per kernel,
// device and shape: the two driver calls cost microseconds of host time on every launch, which a
// sub-100-microsecond kernel timed from the call pays in full.
template <class Kernel>
int resident_blocks(Kernel kernel, int block_threads, std::size_t shared_bytes, const char* what) {
  using key = std::tuple<const void*, int, int, std::size_t>;
  static std::mutex guard;
  static std::map<key, int> known;
  static std::map<std::pair<const void*, int>, std::size_t> shared_limit;  // as last raised
  int device = 0;
  SOAC_CUDA_CHECK(cudaGetDevice(&device));
  const auto* address = reinterpret_cast<const void*>(kernel);
  std::lock_guard<std::mutex> lock(guard);
  if (auto it = known.find(key{address, device, block_threads, shared_bytes}); it != known.end()) return it->second;
  // Only ever raised, so every shape cached before stays launchable.
  std::size_t& limit = shared_limit[{address, device}];
  if (shared_bytes > 48 * 1024 && shared_bytes > limit) {
    SOAC_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(shared_bytes)));
    limit = shared_bytes;
  }
  int per_sm = 0;
  SOAC_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, block_threads, shared_bytes));
  if (per_sm < 1)
    throw resource_error(std::string(what) + ": the kernel cannot run with " + std::to_string(block_threads) + " threads and " +
                         std::to_string(shared_bytes) + " bytes of shared memory per block");
  known.emplace(key{address, device, block_threads, shared_bytes}, per_sm);
  return per_sm;
}

// Clusters of `cluster` blocks of `kernel` that can be resident on the whole device at once (0
// where the device has no clusters), after resident_blocks has raised the kernel's shared memory
// limit for this shape. Cached like resident_blocks.
template <class Kernel>
int resident_clusters(Kernel kernel, int block_threads, std::size_t shared_bytes, int cluster) {
  using key = std::tuple<const void*, int, int, std::size_t, int>;
  static std::mutex guard;
  static std::map<key, int> known;
  int device = 0;
  SOAC_CUDA_CHECK(cudaGetDevice(&device));
  const auto* address = reinterpret_cast<const void*>(kernel);
  std::lock_guard<std::mutex> lock(guard);
  const key k{address, device, block_threads, shared_bytes, cluster};
  if (auto it = known.find(k); it != known.end()) return it->second;
  int major = 0;
  SOAC_CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device));
  int clusters = 0;
  if (major >= 9) {
    const launch_config launch({cluster, block_threads, shared_bytes, cluster}, nullptr, false, true);
    SOAC_CUDA_CHECK(cudaOccupancyMaxActiveClusters(&clusters, kernel, &launch.config));
  }
  known.emplace(k, clusters);
  return clusters;
}

}  // namespace soac::detail

#define SOAC_CHECK_LAUNCH(kernel_name) ::soac::detail::check_launch(kernel_name, __FILE__, __LINE__)

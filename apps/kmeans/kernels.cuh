// The k-means app's own kernels: the direct assignments, the one-pass assignment and update, cuBLAS.
// A part of the kmeans app's one translation unit (apps/kmeans/kmeans_app.cu includes them in order:
// functors, kernels, plan, engine, files).
#pragma once

#include "apps/kmeans/functors.cuh"

namespace soac::apps {
namespace {

// ---- Direct assignment ----------------------------------------------------------------------

constexpr int assign_block_threads = 256;
// Values of its point each lane holds in registers: points up to 32 x 16 = 512 features stay in
// registers; longer ones are re-read (through L1) for every centroid.
constexpr int assign_lane_values = 16;

// Lanes per point: the fewest (a power of two up to a warp) whose registers hold the point.
int assign_lanes(std::int64_t d) {
  int lanes = 1;
  while (lanes < 32 && std::int64_t(lanes) * assign_lane_values < d) lanes *= 2;
  return lanes;
}

// A group of `lanes` lanes per point; lane s holds features s, s + lanes, ... and the group sums
// its partial distances with butterfly shuffles. Every warp runs its loop the same number of
// times (a point past n is computed on the last point and not stored), so the shuffles always
// have all 32 lanes.
__global__ void __launch_bounds__(assign_block_threads)
    assign_direct_kernel(const float* __restrict__ x, std::int64_t n, std::int64_t d, const float* __restrict__ centroids,
                         std::int64_t k, int lanes, nearest* __restrict__ best) {
  const int lane = int(threadIdx.x & 31u);
  const int sub = lane & (lanes - 1);
  const int per_warp = 32 / lanes;
  const std::int64_t warp = (std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x) >> 5;
  const std::int64_t warps = (std::int64_t(gridDim.x) * blockDim.x) >> 5;
  const bool in_registers = d <= std::int64_t(lanes) * assign_lane_values;
  for (std::int64_t first = warp * per_warp; first < n; first += warps * per_warp) {
    const std::int64_t p = first + lane / lanes;
    const float* xp = x + (p < n ? p : n - 1) * d;
    float xr[assign_lane_values];
#pragma unroll
    for (int r = 0; r < assign_lane_values; ++r) {
      const std::int64_t j = std::int64_t(r) * lanes + sub;
      xr[r] = in_registers && j < d ? __ldg(xp + j) : 0.f;
    }
    float best_dist = cuda::std::numeric_limits<float>::infinity();
    std::int32_t best_index = 0;
    for (std::int64_t c = 0; c < k; ++c) {
      const float* cp = centroids + c * d;
      float acc = 0.f;
      if (in_registers) {
#pragma unroll
        for (int r = 0; r < assign_lane_values; ++r) {
          const std::int64_t j = std::int64_t(r) * lanes + sub;
          if (j < d) {
            const float diff = xr[r] - __ldg(cp + j);
            acc = fmaf(diff, diff, acc);
          }
        }
      } else {
        for (std::int64_t j = sub; j < d; j += lanes) {
          const float diff = __ldg(xp + j) - __ldg(cp + j);
          acc = fmaf(diff, diff, acc);
        }
      }
      for (int offset = lanes >> 1; offset > 0; offset >>= 1) acc += __shfl_xor_sync(0xffffffffu, acc, offset);
      if (acc < best_dist) best_dist = acc, best_index = std::int32_t(c);
    }
    if (p < n && sub == 0) best[p] = {best_dist, best_index};
  }
}

// ---- Direct assignment over the feature-major copy (small k) ---------------------------------

// Each lane of a warp takes one of 32 / S points and every S-th feature of it (S slices), reading
// the feature-major copy: a warp's load is S runs of 32 / S consecutive floats (whole 32-byte
// sectors for S <= 4), so the points stream from DRAM once, eight loads in flight per lane. Each
// lane keeps a running distance to every centroid in registers (KMax of them); the centroids sit
// in shared memory as [feature][KMax] (zero past k), KMax / 4 vector loads per feature; the
// slices' partial distances meet by shuffles. Warps stride over the points (a grid of resident
// blocks loads the centroids once each).
constexpr int columns_block = 256;
constexpr int columns_max_k = 16;
constexpr std::size_t columns_shared_bytes = 48 * 1024;  // the centroids' copy, without opting in

constexpr int columns_kmax(std::int64_t k) { return k <= 8 ? 8 : columns_max_k; }
bool columns_fit(std::int64_t d, std::int64_t k) {
  return k <= columns_max_k && double(d) * columns_kmax(k) * sizeof(float) <= double(columns_shared_bytes);
}

// acc[i] += (x - c_i)^2 for the four centroids' coordinates in c.
__device__ __forceinline__ void add_squares(float x, const float4& c, float* acc) {
  const float e0 = x - c.x, e1 = x - c.y, e2 = x - c.z, e3 = x - c.w;
  acc[0] = fmaf(e0, e0, acc[0]);
  acc[1] = fmaf(e1, e1, acc[1]);
  acc[2] = fmaf(e2, e2, acc[2]);
  acc[3] = fmaf(e3, e3, acc[3]);
}

template <int KMax, int S>
__global__ void __launch_bounds__(columns_block)
    assign_columns_kernel(const float* __restrict__ xt, std::int64_t n, std::int64_t d, const float* __restrict__ centroids,
                          int k, nearest* __restrict__ best, std::int32_t* __restrict__ member) {
  extern __shared__ __align__(16) float cen[];  // d x KMax
  for (std::int64_t i = threadIdx.x; i < d * KMax; i += blockDim.x) {
    const std::int64_t j = i / KMax;
    const int c = int(i - j * KMax);
    cen[i] = c < k ? centroids[std::int64_t(c) * d + j] : 0.f;
  }
  __syncthreads();
  constexpr int per_warp = 32 / S;
  const int lane = int(threadIdx.x & 31u), s = lane / per_warp, q = lane % per_warp;
  const std::int64_t warp = (std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x) >> 5;
  const std::int64_t warps = (std::int64_t(gridDim.x) * blockDim.x) >> 5;
  for (std::int64_t first = warp * per_warp; first < n; first += warps * per_warp) {  // the same trips for a whole warp
    const std::int64_t p = first + q;
    const float* col = xt + (p < n ? p : n - 1);
    float acc[KMax];
#pragma unroll
    for (int c = 0; c < KMax; ++c) acc[c] = 0.f;
    const auto add = [&](float x, std::int64_t j) {
      const float4* cj = reinterpret_cast<const float4*>(cen + j * KMax);
#pragma unroll
      for (int v = 0; v < KMax / 4; ++v) add_squares(x, cj[v], acc + 4 * v);
    };
    std::int64_t j = s;
    for (; j + 7 * S < d; j += 8 * S) {
      float x[8];
#pragma unroll
      for (int u = 0; u < 8; ++u) x[u] = __ldg(col + (j + u * S) * n);
#pragma unroll
      for (int u = 0; u < 8; ++u) add(x[u], j + u * S);
    }
    for (; j < d; j += S) add(__ldg(col + j * n), j);
#pragma unroll
    for (int offset = per_warp; offset < 32; offset <<= 1)
#pragma unroll
      for (int c = 0; c < KMax; ++c) acc[c] += __shfl_xor_sync(0xffffffffu, acc[c], offset);
    if (p >= n || s != 0) continue;
    float best_dist = cuda::std::numeric_limits<float>::infinity();
    std::int32_t best_index = 0;
#pragma unroll
    for (int c = 0; c < KMax; ++c)
      if (c < k && acc[c] < best_dist) best_dist = acc[c], best_index = c;
    best[p] = {best_dist, best_index};
    member[p] = best_index;
  }
}

// ---- Assignment and update in one pass (small k and d) -----------------------------------------

// SC20's fused update with the assignment in the same pass over the row-major points, where the
// sums fit shared memory: S lanes a point, lane s holding its features s, s + S, ... (at most
// fused_features) in registers; the lanes' partial distances to the k <= 8 centroids meet by
// shuffles, and each lane adds its features to its own copy of the k x d sums in shared memory
// (a private histogram per lane: plain adds at the point's cluster, no atomics, no conflicts).
// The copies are folded once per block into the device's totals (one atomic per block and bin).
// The points are read once per iteration instead of twice (assignment, then update), with no
// membership array between.
constexpr int fused_block = 256;
constexpr int fused_kmax = 8;
constexpr int fused_features = 8;  // per lane
constexpr int fused_max_slices = 32;

bool fused_fit(std::int64_t d, std::int64_t k) {
  return k >= 1 && k <= fused_kmax && d >= 1 && d <= std::int64_t(fused_max_slices) * fused_features;
}
// Lanes per point: the fewest of 4, 8 and 32 whose registers hold the point.
int fused_slices(std::int64_t d) { return d <= 4 * fused_features ? 4 : d <= 8 * fused_features ? 8 : 32; }

// The shared memory of one block. A lane's copy of the sums is k rows of d padded to a multiple of
// 32 floats, and the copies of a warp's points lie S floats apart modulo 32, so that a warp's adds
// (lane q * S + s at column s + S f of some row of copy q) fall in 32 different banks.
struct fused_layout {
  int slices, k;
  std::int64_t d;
  static constexpr int warps = fused_block / 32;
  SOAC_HD std::int64_t padded() const { return (d + 31) / 32 * 32; }
  SOAC_HD std::int64_t copy_stride() const { return k * padded() + slices; }
  SOAC_HD std::int64_t copies() const { return std::int64_t(warps) * (32 / slices); }
  // Floats: the centroids (two halves of 4 clusters, [feature][4]), then the copies.
  SOAC_HD std::int64_t centroid_floats() const { return 2 * std::int64_t(slices) * fused_features * 4; }
  std::size_t bytes() const {
    return sizeof(float) * std::size_t(centroid_floats() + copies() * copy_stride()) + sizeof(int) * std::size_t(copies() * fused_kmax) +
           (sizeof(double) + sizeof(unsigned long long)) * warps;
  }
};

template <int S>
__global__ void __launch_bounds__(fused_block)
    assign_update_kernel(const float* __restrict__ x, std::int64_t n, std::int64_t d, const float* __restrict__ centroids, int k,
                         const nearest* __restrict__ before, nearest* __restrict__ best, int* __restrict__ counts,
                         float* __restrict__ sums, summary* __restrict__ report) {
  constexpr int K = fused_kmax, F = fused_features, per_warp = 32 / S, warps = fused_layout::warps;
  const fused_layout layout{S, k, d};
  const std::int64_t padded = layout.padded(), stride = layout.copy_stride(), copies = layout.copies();
  extern __shared__ __align__(16) float shared[];
  float* cen = shared;  // [half][feature][4]: zero past d and k, so padding lanes add nothing
  float* copy_sums = cen + layout.centroid_floats();
  int* copy_counts = reinterpret_cast<int*>(copy_sums + copies * stride);  // [copy][K]
  double* warp_objective = reinterpret_cast<double*>(copy_counts + copies * K);
  unsigned long long* warp_changed = reinterpret_cast<unsigned long long*>(warp_objective + warps);
  for (int i = int(threadIdx.x); i < 2 * S * F * 4; i += blockDim.x) {
    const int half = i / (S * F * 4), j = (i / 4) % (S * F), c = 4 * half + i % 4;
    cen[i] = j < d && c < k ? centroids[std::int64_t(c) * d + j] : 0.f;
  }
  for (std::int64_t i = threadIdx.x; i < copies * stride; i += blockDim.x) copy_sums[i] = 0.f;
  for (std::int64_t i = threadIdx.x; i < copies * K; i += blockDim.x) copy_counts[i] = 0;
  __syncthreads();

  const int rounds = int((d + S - 1) / S);  // features a lane holds, at most F
  const int lane = int(threadIdx.x & 31u), q = lane / S, s = lane % S, warp_in_block = int(threadIdx.x >> 5);
  float* my_sums = copy_sums + (warp_in_block * per_warp + q) * stride + s;
  int* my_counts = copy_counts + (warp_in_block * per_warp + q) * K;
  const float4* cen_low = reinterpret_cast<const float4*>(cen) + s;
  const float4* cen_high = cen_low + S * F;
  const std::int64_t warp = (std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x) >> 5;
  const std::int64_t step = ((std::int64_t(gridDim.x) * blockDim.x) >> 5) * per_warp;
  const auto load = [&](std::int64_t first, float (&v)[F]) {
    const std::int64_t p = first + q < n ? first + q : n - 1;  // past n: the last point, not kept
    const float* row = x + p * d + s;
#pragma unroll
    for (int f = 0; f < F; ++f) {
      if (f >= rounds) break;
      v[f] = s + f * S < d ? __ldg(row + f * S) : 0.f;
    }
  };
  double objective = 0;
  unsigned long long changed = 0;
  float v[F] = {}, ahead[F] = {};
  std::int64_t first = warp * per_warp;
  if (first < n) load(first, v);
  for (; first < n; first += step) {  // the same trips for a whole warp
    if (first + step < n) load(first + step, ahead);  // the next trip's loads in flight meanwhile
    float acc[K] = {};
#pragma unroll
    for (int f = 0; f < F; ++f) {
      if (f >= rounds) break;
      add_squares(v[f], cen_low[f * S], acc);
      if (k > 4) add_squares(v[f], cen_high[f * S], acc + 4);
    }
#pragma unroll
    for (int offset = 1; offset < S; offset <<= 1)
#pragma unroll
      for (int c = 0; c < K; ++c)
        if (c < k) acc[c] += __shfl_xor_sync(0xffffffffu, acc[c], offset);
    float best_dist = cuda::std::numeric_limits<float>::infinity();
    int best_index = 0;
#pragma unroll
    for (int c = 0; c < K; ++c)
      if (c < k && acc[c] < best_dist) best_dist = acc[c], best_index = c;
    const std::int64_t p = first + q;
    if (p < n) {
      float* row_sums = my_sums + best_index * padded;
#pragma unroll
      for (int f = 0; f < F; ++f) {
        if (f >= rounds) break;
        row_sums[f * S] += v[f];
      }
      if (s == 0) {
        ++my_counts[best_index];
        objective += best_dist;
        changed += before[p].index != best_index;
        best[p] = {best_dist, best_index};
      }
    }
#pragma unroll
    for (int f = 0; f < F; ++f) v[f] = ahead[f];
  }
#pragma unroll
  for (int offset = 1; offset < 32; offset <<= 1) {
    objective += __shfl_xor_sync(0xffffffffu, objective, offset);
    changed += __shfl_xor_sync(0xffffffffu, changed, offset);
  }
  if (lane == 0) warp_objective[warp_in_block] = objective, warp_changed[warp_in_block] = changed;
  __syncthreads();

  // The block's copies folded, one atomic per bin.
  for (std::int64_t i = threadIdx.x; i < k * d; i += blockDim.x) {
    const std::int64_t c = i / d, at = c * padded + (i - c * d);
    float total = 0.f;
    for (std::int64_t t = 0; t < copies; ++t) total += copy_sums[t * stride + at];
    atomicAdd(sums + i, total);
  }
  if (threadIdx.x < unsigned(k)) {
    int total = 0;
    for (std::int64_t t = 0; t < copies; ++t) total += copy_counts[t * K + threadIdx.x];
    atomicAdd(counts + threadIdx.x, total);
  }
  if (threadIdx.x == 0) {
    double o = 0;
    unsigned long long c = 0;
    for (int w = 0; w < warps; ++w) o += warp_objective[w], c += warp_changed[w];
    atomicAdd(&report->objective, o);
    atomicAdd(reinterpret_cast<unsigned long long*>(&report->changed), c);
  }
}

// ---- cuBLAS ---------------------------------------------------------------------------------

void check_cublas(cublasStatus_t status, const char* call, const char* file, int line) {
  if (status == CUBLAS_STATUS_SUCCESS) return;
  const std::string where = std::string(file) + ":" + std::to_string(line);
  if (status == CUBLAS_STATUS_ALLOC_FAILED)
    throw resource_error(std::string(call) + " at " + where + ": cuBLAS could not allocate memory");
  throw cuda_error(int(status), call, where, cublasGetStatusString(status));
}
#define KMEANS_CUBLAS_CHECK(call) check_cublas((call), #call, __FILE__, __LINE__)

// A cuBLAS handle owned by one clustering, on the context's stream. FP32 SGEMM: CUBLAS_DEFAULT_MATH
// computes with FP32 inputs and FP32 accumulation (TF32 tensor cores only under
// CUBLAS_TF32_TENSOR_OP_MATH, BF16x9 emulation only under its own mode), and keeps cuBLAS's
// fastest FP32 kernels, which CUBLAS_PEDANTIC_MATH may give up. The validator's bound holds for
// any summation order, so nothing more is needed for the memberships to check.
class blas_handle {
 public:
  blas_handle(const context& ctx, bool tf32) {
    ctx.activate();
    KMEANS_CUBLAS_CHECK(cublasCreate(&handle_));
    KMEANS_CUBLAS_CHECK(cublasSetStream(handle_, ctx.stream()));
    KMEANS_CUBLAS_CHECK(cublasSetMathMode(handle_, tf32 ? CUBLAS_TF32_TENSOR_OP_MATH : CUBLAS_DEFAULT_MATH));
  }
  ~blas_handle() {
    if (handle_) cublasDestroy(handle_);
  }
  blas_handle(const blas_handle&) = delete;
  blas_handle& operator=(const blas_handle&) = delete;
  cublasHandle_t get() const { return handle_; }

 private:
  cublasHandle_t handle_ = nullptr;
};

}  // namespace
}  // namespace soac::apps

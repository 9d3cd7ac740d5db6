// hist's planner: the only place that decides how a histogram runs. From the call (sizes, the
// operator's atomic kind, value bytes and contention tolerance), the options, the device's
// properties and its answers about the compiled kernels (hist_device), it returns the plan as
// launched: strategy, M, S, Hchk, the kernel version, grid, block, shared bytes, elements per step,
// clusters, partials. The launch code (core/hist/dispatch.cuh) maps that plan to a kernel and never
// edits it. The models are SC20 sections III-C, III-D and V-A: the shared-memory strategy (M
// sub-histograms per block, S passes over chunks of Hchk bins, eqs. 1-3), the global-memory
// strategy (sub-histograms sized to the L2 cache, eqs. 4-6, with the race factor RF from a
// sampling inspector), and the switch between them; the constants are in core/hist/tuning.hpp.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "core/context.hpp"
#include "core/hd.hpp"
#include "core/hist/options.hpp"
#include "core/hist/tuning.hpp"
#include "core/hist/update.hpp"

namespace soac {

// A compiled version of hist's kernels. per_thread is the tuning constant of elements per step
// that selects the version (hist_tuning::items_per_thread, private_items_per_thread,
// shared_items_cas_*, ...); items is what a thread takes per step once divided by the functor's
// updates per element, and wide the same for sampled wide steps (0: no sample).
struct hist_kernel {
  enum class family { none, shared, shared_fold, split, bucket, global, fused_shared, fused_global };
  family fam = family::none;
  bool exclusive = false;  // thread-private copies: plain reads and writes, no atomics
  int per_thread = 0, items = 0, wide = 0;
  bool ahead = false;      // each step's loads issued before the previous step's updates
  int max_block = 1024;    // the block size it is compiled for (__launch_bounds__)
  // The functor it is compiled for: hist_batched's flattened one (bins offset by segment), and
  // the partitioned plan's count of updates per bucket; otherwise the call's own.
  bool flat = false, counts = false;
  std::string name() const;
};

// What a call chose; returned so callers can report it (--verbose, JSON, Table I).
struct hist_plan {
  hist_strategy strategy = hist_strategy::shared;
  atomic_kind atomic = atomic_kind::hdw;
  std::int64_t n = 0, bins = 0;   // input elements, H
  int multi = 1;                  // M
  int model_multi = 1;            // M as eqs. 1-3 / 4-6 give it (multi rounds it for the layout)
  int passes = 1;                 // S
  std::int64_t chunk = 0;         // Hchk
  std::int64_t coop = 0;          // C: threads sharing one sub-histogram
  int block_threads = 0;
  int blocks_per_sm = 0;          // shared: resident blocks per SM the plan runs (0: as many as fit)
  std::int64_t grid = 0;
  int items_per_thread = 1;
  // Shared CAS: each block samples its first elements and takes items_wide elements per step
  // instead of items_per_thread where few threads share a bin (cas_sample_wide); 0: no sample.
  int items_wide = 0;
  std::size_t shared_bytes = 0;   // dynamic shared memory per block
  double race_factor = 0;         // RF used by the global model (0: not needed)
  bool race_factor_estimated = false;
  std::int64_t batches = 1;       // Nout for batched histograms
  std::int64_t blocks_per_histogram = 0;  // K (batched shared strategy)
  bool thread_private = false;    // shared: one sub-histogram per thread, no atomics (M = block)
  int cluster = 1;                // shared: blocks per cluster folding through distributed shared memory
  bool block_partials = false;    // shared: block results reduced from a temporary array, not atomics
  int split = 1;                  // shared: blocks per cluster holding one histogram together (1: none)
  bool partitioned = false;       // shared: updates bucketed by chunk first (S buckets of Hchk bins)
  bool load_ahead = false;        // shared: each step's loads issued before the previous step's updates
  bool flattened = false;         // hist_batched: one histogram of batches * H bins
  // As launched: the kernel version, the passes side by side in one launch and the rows of block
  // partials; a partitioned plan's count of updates per bucket is a histogram of its own.
  hist_kernel kernel;
  std::int64_t side_by_side = 1;
  std::int64_t partial_rows = 0;
  std::shared_ptr<const hist_plan> bucket_count;
  bool host = false;              // ran on the host backend (per-thread sub-histograms)
  int host_threads = 0;
  std::string describe() const;
};

// Whether a shared CAS block whose first `sampled` in-range elements fell in `distinct` different
// bins takes wide steps (hist_tuning::cas_wide_bins_per_sharer): uniform draws from A bins are
// expected to hit A * (1 - exp(-sampled / A)) distinct ones, so more than that for A = the bar
// means more bins in use than the bar. No in-range sample says nothing: contended steps.
SOAC_HD inline bool cas_sample_wide(int sampled, int distinct, int sharers) {
  if (sampled <= 0) return false;
  const double bar = hist_tuning::cas_wide_bins_per_sharer * double(sharers > 1 ? sharers : 1);
  return double(distinct) > bar * (1.0 - exp(-double(sampled) / bar));
}

// One call as the planner sees it: the sizes, and what the operator and the functor fix.
struct hist_call {
  std::int64_t n = 0, bins = 0;  // elements (per histogram when batched) and H
  std::int64_t batches = -1;     // hist_batched: that many histograms of n elements each (0: none); -1: one histogram
  atomic_kind kind = atomic_kind::hdw;  // as the call runs (the trait's or the forced one)
  std::size_t value_bytes = 4;   // sizeof the operator's value type
  double tolerance = 0;          // Op::hist_contention_tolerance where declared
  int per_element = 1;           // updates per element (the K of bin_values)
  // Bytes of a bin for the models (the lock included for xcg) and u for them (CAS only).
  std::size_t el_bytes() const { return value_bytes + (kind == atomic_kind::xcg ? 4 : 0); }
  double u() const { return kind == atomic_kind::cas ? tolerance : 0; }
};

// Two histograms in one pass (hist_fused).
struct hist_fused_call {
  std::int64_t n = 0, bins_a = 0, bins_b = 0;
  std::size_t bytes_a = 4, bytes_b = 4;
  atomic_kind kind_a = atomic_kind::hdw, kind_b = atomic_kind::hdw;
};

// What the planner asks the device: resident blocks per SM and resident clusters of a kernel
// version for a block shape, and the free device memory. The cuda dispatch answers from the GPU
// (occupancy queries); tests answer from a model of one.
struct hist_device {
  std::function<int(const hist_kernel&, int block_threads, std::size_t shared_bytes)> resident_blocks;
  std::function<int(const hist_kernel&, int block_threads, std::size_t shared_bytes, int cluster)> resident_clusters;
  std::function<std::size_t()> free_bytes;
};

// The plan of a hist or hist_batched call as it is launched. `inspect` estimates RF (called only
// when the global model needs it and options.race_factor is 0). Throws usage_error for options
// that cannot be honoured, resource_error where no kernel version fits the device.
hist_plan plan_hist_launch(const device_properties& props, const hist_device& device, const hist_call& call,
                           const hist_options& options, const std::function<double()>& inspect);
// The plan of a hist_fused call: one copy of both histograms per block in shared memory (M copies
// where more fit), or straight to the destinations. Of the options it honours strategy and M; any
// other option set is refused with usage_error.
hist_plan plan_hist_fused(const device_properties& props, const hist_device& device, const hist_fused_call& call,
                          const hist_options& options);
// Throws usage_error for options hist_fused cannot honour (any but strategy and M).
void check_hist_fused_options(const hist_options& options);

// ---- The models, each a step of plan_hist_launch (before the launch shape is fitted to the
// kernel versions); public for the model tests and the hist app's Table I.

// The shared-memory model (eqs. 1-3 with footnote 7): M, S, Hchk and the launch shape for a
// histogram of `bins` bins of el_bytes each. options.multi / options.passes override the model;
// a forced shape that cannot fit throws usage_error.
// u: the operator's contention tolerance (0: none declared); one of at least a block's threads
// gives one sub-histogram per block (and no clusters).
hist_plan plan_hist_shared(const device_properties& props, std::int64_t n, std::int64_t bins, std::size_t el_bytes,
                           atomic_kind kind, const hist_options& options, double u = 0);
// The split shared strategy (hist_overrides::split): clusters of `split` blocks, one 1024-thread
// block per slice of ceil(H / split) bins. Throws usage_error where the slice does not fit.
hist_plan plan_hist_split(const device_properties& props, std::int64_t n, std::int64_t bins, std::size_t el_bytes,
                          atomic_kind kind, int split, const hist_options& options);
// The global-memory model (eqs. 4-6) for race factor rf.
// u > 0 replaces the kind's contention tolerance (hist_tuning::u_hdw / u_other).
hist_plan plan_hist_global(const device_properties& props, std::int64_t n, std::int64_t bins, std::size_t el_bytes,
                           atomic_kind kind, double rf, const hist_options& options, double u = 0);
// The partitioned multi-pass strategy (hist_overrides::partition): S buckets of Hchk bins, each
// the largest that two 1024-thread blocks per SM hold in shared memory, and the shared model's M
// for Hchk bins. Throws usage_error for locks, more than hist_tuning::partition_max_buckets
// buckets, or 2^31 updates or more (`updates` = n times the updates per element).
hist_plan plan_hist_partition(const device_properties& props, std::int64_t n, std::int64_t updates, std::int64_t bins,
                              std::size_t el_bytes, atomic_kind kind, const hist_options& options, double u = 0);
// Device memory the partitioned strategy takes besides the histogram: the bucketed updates
// (4 bytes of bin and value_bytes of value each) and the partial rows.
std::size_t partition_temp_bytes(const hist_plan& plan, std::int64_t updates, std::size_t value_bytes,
                                 std::int64_t sm_count);

// The whole choice: shared unless its S exceeds the kind's threshold (V-A), or as forced.
// `inspect` is called only when the global model needs RF and options.race_factor is 0.
// updates_per_element: the K of f's bin_values (the partitioned strategy counts updates).
hist_plan plan_hist(const device_properties& props, std::int64_t n, std::int64_t bins, std::size_t el_bytes,
                    atomic_kind kind, const hist_options& options, const std::function<double()>& inspect, double u = 0,
                    int updates_per_element = 1);

// u: the operator's contention tolerance, as for plan_hist_shared.
int max_shared_passes(atomic_kind kind, double u = 0);

// Inspector sampling: how many groups of `group` consecutive elements to sample.
struct inspector_shape {
  std::int64_t group = 0;
  int groups = 0;
};
inspector_shape plan_inspector(std::int64_t n, std::int64_t bins);

}  // namespace soac

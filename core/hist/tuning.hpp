// The constants of hist's models and kernels (SC20 eqs. 1-6 and the H100 re-fits), each with the
// reason for its value. The measurements behind them, with GPU, commit and sizes, are in
// docs/tuning/hist.md (one section per constant, under its name).
#pragma once

#include <cstddef>
#include <cstdint>

namespace soac {

namespace hist_tuning {
// Block sizes of the paper (Fig 7): the largest block for shared memory (most threads share a
// block's copies), 256 for global memory.
inline constexpr int shared_block = 1024;
inline constexpr int global_block = 256;
// Elements a thread loads before its atomics: eight coalesced loads in flight reach the read floor.
inline constexpr int items_per_thread = 8;
// Global strategy, contention-tolerant CAS (arg_max): its updates are mostly one L2 read each.
inline constexpr int global_items_per_thread_tolerant = 2;
// hist_fused: elements per thread per step, each a load of both histograms' updates.
inline constexpr int fused_items_per_thread = 4;
// Shared CAS, elements per step: loads in flight make contended compare-and-swaps retry, so one;
// two where a block's sample finds few threads per bin (wide), or one block per SM (tolerant).
inline constexpr int shared_items_cas_contended = 1;
inline constexpr int shared_items_cas_wide = 2;
inline constexpr int shared_items_cas_alone = 2;
// The sample (cas_sample_wide): wide steps when the bins in use exceed this many times the threads
// sharing a copy.
inline constexpr double cas_wide_bins_per_sharer = 2;
// CUDA reserves 1 KiB of shared memory per resident block (sm_80 and later).
inline constexpr std::size_t shared_reserved_per_block = 1024;
// Contended CAS with several blocks per SM stays within the 196 KiB carve-out: beyond it (L1 left
// at 28 KiB) compare-and-swap loops ran 1.5x slower.
inline constexpr std::size_t cas_shared_per_sm = 196 * 1024;
// Eq. 4: k_RF, fitted by the paper.
inline constexpr double k_rf = 0.75;
// Eq. 4: the line size that divides RF; the paper's Table I is only reproduced with 64 bytes.
inline constexpr double l2_line_bytes = 64;
// Eqs. 5-6: fraction of L2 given to the sub-histograms (paper: 0.4).
inline constexpr double f_l2 = 0.4;
// Eq. 5: at most H / k_min threads cooperate on one sub-histogram (paper: 2).
inline constexpr double k_min = 2;
// Eq. 6: u (paper: 2 HDW, 1 otherwise). HDW re-fit: the H100's L2 atomics do not slow down under
// contention, so u = 64 gives global M = 1 for any RF and spares the inspector. An operator may
// declare `static constexpr double hist_contention_tolerance = u;` to replace u (arg_max does).
inline constexpr double u_hdw = 64.0, u_other = 1.0;
// Eq. 1, HDW: M * H capped at this many bytes per block, i.e. one copy: Hopper's shared atomics do
// not slow down under same-address contention, so copies only add init and fold work. CAS and XCG
// keep the paper's rule.
inline constexpr std::size_t hdw_multi_bytes = 0;
// HDW copies beyond this many bytes run one 1024-thread block per SM: each block folds all its bins
// at its end, so two blocks fold twice as much.
inline constexpr std::size_t hdw_one_block_bytes = 32 * 1024;
// M >= 32 rounds down to a multiple of the warp size so interleaved copies put a warp's lanes on 32
// banks; CAS keeps every copy that fits instead.
inline constexpr int warp_size = 32;
// Thread-private copies (no atomics) for CAS and locks where the private shape keeps at least this
// many threads per SM (fewer threads leave too few loads in flight).
inline constexpr int private_min_threads = 192;
// The same for contention-tolerant operators, whose shared atomics mostly read.
inline constexpr int private_min_threads_tolerant = 512;
// Thread-private blocks of at most private_items_max_block threads, fewer than private_many_threads
// per SM, take 32 elements per thread to keep ~8K loads in flight per SM (compiled for 512-thread
// blocks, which leaves the registers for 32 results).
inline constexpr int private_items_per_thread = 32;
inline constexpr int private_items_max_block = 512;
inline constexpr int private_many_threads = 1024;
// V-A: leave shared memory when S exceeds this (paper: 3 HDW, 4 CAS, 6 XCG on an RTX 2080 Ti),
// re-fit on the H100 with the passes side by side: global HDW is bound by L2 atomics, CAS that
// writes wins up to 7, tolerant operators do well in global memory, locks never gain.
inline constexpr int max_shared_passes_hdw = 8;
inline constexpr int max_shared_passes_cas = 7;
inline constexpr int max_shared_passes_cas_tolerant = 1;
inline constexpr int max_shared_passes_xcg = 1;
// Split histograms (hist_overrides::split): the model splits CAS that writes beyond its pass limit
// over the smallest cluster whose slices fit, up to this many blocks; updates through distributed
// shared memory are slow, so only these win.
inline constexpr int split_max_cas = 16;
// Partitioned multi-pass (hist_overrides::partition): the model partitions CAS that writes from this
// many shared passes on, into buckets of the largest chunk two 1024-thread blocks per SM hold.
// Buckets are ranked by an 8-bit digit of which one value marks ignored updates.
inline constexpr int partition_min_passes = 4;
inline constexpr int partition_max_buckets = 255;
// Clusters (hist_overrides::cluster): the model runs clusters of 2 for contention-tolerant operators
// with two blocks per SM (one update per cluster into the destination), no others.
inline constexpr int cluster_tolerant = 2;
// Split histograms, elements per step for CAS kinds (HDW takes items_per_thread).
inline constexpr int split_items_cas = 1;
// Block partials (hist_options::block_partials) for shared CAS that writes: rows of plain stores
// and a reduction kernel instead of compare-and-swap loops into the destination.
inline constexpr bool partials_for_cas = true;
// Inspector: up to this many groups of H consecutive elements, and at most n / sample_divisor
// elements in all (at least one group); it waits for its result, so it is kept small.
inline constexpr int inspector_max_groups = 2;
inline constexpr std::int64_t inspector_sample_divisor = 256;
}  // namespace hist_tuning

}  // namespace soac

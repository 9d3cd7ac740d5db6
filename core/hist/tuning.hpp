// The constants of hist's models and kernels (SC20 eqs. 1-6 and the H100 re-fits), each with the
// reason for its value. The measurements behind them are in docs/tuning/hist.md.
#pragma once

#include <cstddef>
#include <cstdint>

namespace soac {

namespace hist_tuning {
// Block sizes of the paper (Fig 7): 1024 for shared memory (largest block, most threads sharing a
// block's sub-histograms), 256 for global memory.
inline constexpr int shared_block = 1024;
inline constexpr int global_block = 256;
// Elements each thread evaluates before it issues their atomics. A plain one-load-per-step loop
// runs at 98-110 us on the 50M benchmark, 1.5x the read floor (DESIGN.md); eight independent
// coalesced loads per thread keep enough bytes in flight to reach the floor.
inline constexpr int items_per_thread = 8;
// Global strategy, contention-tolerant CAS operators (arg_max): elements per thread. Their updates
// are mostly one L2 read each, and two per thread measured 6-10% faster than eight on the H100
// (argmax, 50M elements, every H; 24-bit saturated add, which writes, lost 8% at RF = 63).
inline constexpr int global_items_per_thread_tolerant = 2;
// hist_fused: elements per thread per step, each a load of both histograms' updates.
inline constexpr int fused_items_per_thread = 4;
// Shared strategy, plain CAS updates: elements per thread per step. Loads in flight make more
// compare-and-swaps meet on contended bins, where they fail and retry; where few threads share
// each bin, two loads in flight are faster. So operators that write on most updates take
// shared_items_cas_contended or shared_items_cas_wide per block, from a sample of the block's
// first elements (see cas_sample_wide); contention-tolerant ones (arg_max), whose updates mostly
// read, take shared_items_cas_contended with two blocks per SM and shared_items_cas_alone with
// one. Measured on the H100 (24-bit saturated add, 50M elements, 1 / 2 / 8 elements): two blocks
// per SM RF = 1 505 155 / 141 / 174 us, 24K 169 / 156 / 190; RF = 63 505 304 / 508 / 779, 24K
// 249 / 427 / 773; argmax RF = 1 505 158 / 199 / 209; one block per SM (48K) RF = 1 265 / 206 /
// 228, RF = 63 321 / 391 / 768, argmax 24K RF = 1 260 / 273 / 238. (One compare-and-swap attempt
// per lane per step, a failed lane retrying at the warp's next step, measured slower: RF = 63 505
// 407 us, 12K 257 us; RF = 1 48K 255 us.)
inline constexpr int shared_items_cas_contended = 1;
inline constexpr int shared_items_cas_wide = 2;
inline constexpr int shared_items_cas_alone = 2;
// The sample: each thread evaluates the first element of its block's part (so a block samples
// blockDim elements) and the block counts the distinct in-range bins. Wide steps when the bins in
// use are more than cas_wide_bins_per_sharer times the threads that share a sub-histogram (C).
// The measurements above bracket it: wide steps won at C / (bins in use) = 0.02-0.04 (RF = 1) and
// lost at 1.3-2.6 (RF = 63, where H / 63 bins are in use).
inline constexpr double cas_wide_bins_per_sharer = 2;
// CUDA reserves 1 KiB of shared memory per resident block (sm_80 and later).
inline constexpr std::size_t shared_reserved_per_block = 1024;
// Shared CAS, operators that write on most updates, more than one block per SM: the blocks of an
// SM use at most this much shared memory together (reserve included), so the SM runs with the
// 196 KiB shared carve-out rather than the largest (228 KiB, which leaves L1 28 KiB). Contended
// compare-and-swap loops ran 1.5x slower beyond it, with no change at low contention. Measured on
// the H100 (24-bit saturated add, 50M elements, two blocks per SM, RF = 63): H = 505 M = 49
// (98980 bytes per block) 219 us, M = 50 (101000 bytes) 353 us, M = 57 309 us; H = 2K M = 12
// (96 KiB) 230 us, M = 13 (104 KiB) 360 us, M = 14 339 us; RF = 1 within 1% (133-135 us).
inline constexpr std::size_t cas_shared_per_sm = 196 * 1024;
// Eq. 4: k_RF, fitted by the paper.
inline constexpr double k_rf = 0.75;
// Eq. 4: the line size that divides RF. The paper's text says an L2 line; its Table I is only
// reproduced with 64 bytes (16 four-byte bins per line), so that is the value of the fitted model.
inline constexpr double l2_line_bytes = 64;
// Eqs. 5-6: fraction of L2 given to the sub-histograms (paper: 0.4).
inline constexpr double f_l2 = 0.4;
// Eq. 5: at most H / k_min threads cooperate on one sub-histogram (paper: 2).
inline constexpr double k_min = 2;
// Eq. 6: u, hardware atomics tolerate more contention (paper: 2 for HDW, 1 otherwise). Re-fit
// for HDW on the H100: its L2 atomics show no contention penalty (global M = 1..8 within 3% at
// RF = 1 and 63), while every extra sub-histogram costs an init and a reduction pass, and an
// RF-dependent plan costs the inspector (~40 us: it waits for its answer). u = 64 gives M = 1
// wherever HDW goes global (H >= 393K at 50M elements) for any RF, so the inspector is skipped.
inline constexpr double u_hdw = 64.0, u_other = 1.0;
// An operator may declare `static constexpr double hist_contention_tolerance = u;` to replace the
// kind's u: arg_max does (most of its updates lose, read and leave without writing, so sharing
// costs nothing; measured global M = 1 fastest at every H >= 48K and both RF).
// Eq. 1, HDW only: Hopper's shared atomics do not slow down under same-address contention
// (DESIGN.md), so many sub-histograms buy nothing but per-block init and combine work. Measured
// on the H100: M = 933 (H = 31) 86 us vs M <= 297 79 us; M = 227 (H = 127) 161 us vs M = 72
// 122 us; M = 14 (H = 2K) 84 us vs M = 3 79 us. M * H is capped at this many bytes per block:
// none, one sub-histogram per block, since a later Fig 7 sweep (50M elements) had M = 1 fastest
// at every H: H = 31 79.0 us vs 83.2 with M = 256, H = 127 77.7 vs 82.5 with M = 64, H = 2K
// 79.7 vs 80.4 with M = 4 (RF = 1; RF = 63 alike).
// CAS and XCG keep the paper's rule: their contention is real (CAS H = 31: M = 933 219 us,
// M = 297 379 us, M = 1 3277 us).
inline constexpr std::size_t hdw_multi_bytes = 0;
// HDW shared plans whose sub-histograms take more than this many bytes per block run one
// 1024-thread block per SM (eqs. 1-3 with all of the SM's shared memory) instead of as many as fit.
// Eight loads in flight per thread keep DRAM busy with 1024 threads, and every block folds all of
// its bins into the destination at its end, so two blocks per SM fold twice as much. Measured on
// the H100 (50M elements, a plain shared-atomic kernel, one vs two blocks per SM): H = 2K 79.1 vs
// 78.7 us, 6K 79.2 vs 78.9, 12K 79.9 vs 81.4, 24K 81.4 vs 84.9 (RF = 1; RF = 63 24K 80.3 vs
// 81.1); and in soac bench hist H = 31-505 one block measured 1-3 us slower.
inline constexpr std::size_t hdw_one_block_bytes = 32 * 1024;
// Shared memory, M >= 32: M is rounded down to a multiple of the warp size, which lets the
// kernel interleave the sub-histograms (bin b of copy m at b * M + m) so that a warp's 32 lanes
// always update 32 different banks. Eqs. 1-3 size M for contention only; the bank conflicts of
// random bins in contiguous copies cost more than the few copies the rounding gives up, except
// for CAS (see plan_hist_shared), where the copies matter more.
inline constexpr int warp_size = 32;
// Thread-private shared sub-histograms (M = block threads, one copy per thread): no two threads
// share a copy, so updates are a plain read, the operator and a write; the interleaved layout
// keeps a warp on 32 banks. Blocks shrink to the copies that fit (H = 31 at 4 bytes: 2 blocks of
// 928 threads per SM; H = 127: 448 threads), so they need more loads in flight per thread
// (private_items below). Used automatically for CAS and lock kinds (whose shared updates run
// at about one lane per clock per SM) when the private shape keeps at least this many threads
// per SM. Measured on the H100 (soac bench hist, 50M elements, private vs shared atomics):
// 24-bit saturated add H = 31 (1856 threads) 104 vs 236 us, H = 127 (448 threads) 145 vs 269 us
// (RF = 1) and 121 vs 955 us (RF = 63); argmax H = 127 (224 threads) 200 vs 262 us; but with 96
// threads (sat-add H = 505) 450 vs 375 us at RF = 1 (372 vs 1271 us at RF = 63: shared RF is not
// inspected), and argmax H = 505 (32 threads) 1132 vs 262 us.
inline constexpr int private_min_threads = 192;
// The same for contention-tolerant operators (arg_max), whose shared atomics mostly read: since
// shared CAS takes one element per step (shared_items_cas_contended), argmax H = 127 (224 threads) takes
// 192 us private vs 156 us with one shared copy per block, H = 31 (928 threads) 105 vs 155 us.
inline constexpr int private_min_threads_tolerant = 512;
// Elements per thread for thread-private blocks of at most private_items_max_block threads when
// fewer than private_many_threads share an SM (the ordinary 8 otherwise), so the SM keeps ~8K
// loads in flight. Those kernels are compiled for blocks of that size, which leaves a thread the
// registers for 32 results (at the 1024-thread bound they spilled: H = 127 took 177 us).
inline constexpr int private_items_per_thread = 32;
inline constexpr int private_items_max_block = 512;
inline constexpr int private_many_threads = 1024;
// V-A: leave shared memory when its multi-pass degree S exceeds this (paper: 3 HDW, 4 CAS, 6
// XCG, fitted on an RTX 2080 Ti). Re-fit on the H100 (soac bench hist, 50M elements):
// - HDW: with the passes side by side (see hist_shared_run) a pass costs ~70 us while global-
//   memory HDW is bound by L2 atomics at ~600 us for every H >= 12K and every M, so S = 7
//   (H = 393K: 487-493 us vs 592-612 us global) wins and S = 28 (1.5M: 1915 us) loses.
// - CAS, operators that write on most updates (saturated add): 7. With the passes side by side
//   and one element per step (shared_items_cas_contended), S = 7 M = 1 beats global memory at RF = 1
//   (sat-add 393K: 1312 vs 1612 us) and is 3% behind at RF = 63 (2190 vs 2117 us); S = 14 loses
//   (786K: 2325 vs 1623 us). (With eight elements per step S = 7 had lost: 2553 vs 1619 us.)
// - CAS, contention-tolerant operators (arg_max, see plan_hist_shared): 1. Their global updates
//   mostly read and leave, so global M = 1 is cheap: argmax 48K S = 2 818 us vs global 477 us.
//   They also leave one pass that needs all of an SM's shared memory (one block per SM, where
//   the threads would fit two): since their first global reads go through L1 (cas_first_read),
//   argmax 24K measured 238 / 221 us global M = 1 vs 257 / 251 shared (RF = 1 / 63); at 12K, two
//   blocks per SM, shared stays ahead (162 / 150 vs 234 / 223).
// - XCG (locks): S = 2-3 in shared took 6.7-12 ms, global 4.9-9 ms: 1.
inline constexpr int max_shared_passes_hdw = 8;
inline constexpr int max_shared_passes_cas = 7;
inline constexpr int max_shared_passes_cas_tolerant = 1;
inline constexpr int max_shared_passes_xcg = 1;
// cluster_note: the model runs clusters of cluster_tolerant blocks for contention-tolerant
// operators (arg_max) with two blocks per SM, and no others (hist_options::cluster forces them).
// arg_max, measured on the H100 (50M elements, one shared copy per block, clusters of 2 vs none):
// RF = 1 127 142 vs 150 us, 505 143 vs 152, 2K 148 vs 157, 6K 154 vs 164, 12K 160 vs 170; RF = 63
// 141-149 vs 148-154; but with one block per SM (24K, 8-byte bins) 270 vs 262.
// Clusters of 2 had paid for CAS operators that write on most updates, in one pass, while blocks
// folded their bins into the destination with compare-and-swap loops (two L2 round trips each):
// measured on the H100 (soac bench hist, 50M elements, 24-bit saturated add, clusters of 2 vs
// none): RF = 1: 505 208 vs 219 us, 12K 243 vs 286, 48K 285 vs 483. Block partials (below) made
// that fold cheap, and then clusters gained 2-3% (RF = 1 505 155 vs 158 us, 12K 166 vs 171).
// Kernels that sample their steps (shared_items_cas_wide) and fold through clusters need 46
// registers per thread, so they would run one 1024-thread block per SM (held to 32, they spill
// 72 bytes); the sample gains more (RF = 1 505 152 -> 140 us, 24K 165 -> 148), so forced
// clusters run the contended steps and the plan says so. HDW never gained (48K: 98.6 vs 95.8 us;
// later with one block per SM, 24K 87.6 vs 85.2), nor passes side by side (196K: 1396 vs 1309
// us). (argmax had measured no gain at 12K, 226 vs 228.5 us, with an earlier shared kernel.)
// split_note: split shared histograms (hist_options::split) for CAS operators that write on
// most updates, where the shared plan has too many passes (max_shared_passes_cas), in the smallest
// cluster (up to split_max_cas blocks, one block per SM) whose slices fit; global memory
// otherwise, and where the device cannot hold such a cluster. Updates through distributed shared
// memory are slow (generic atomics to another SM's shared memory), so only these win. Measured on
// the H100 (soac bench hist, 50M elements, split 2 / 4 / 8 / 16 vs auto): 24-bit saturated add
// 786K RF = 1 16: 1473 vs 1618 us (global), RF = 63 1938 vs 2128; 393K (auto: shared S = 7)
// RF = 1 8: 1315-1367 vs 1322-1330, RF = 63 1745-1810 vs 1752-1757; 196K RF = 1 1143 / 1329 /
// 1498 vs 792 (shared S = 4); 48K RF = 1 653 / 1120 / 1412 / 1673 vs 198. HDW lost everywhere (48K
// RF = 1 342 / 582 / 693 / 792 vs 92.5 us; 786K 16: 723 vs 590), so did argmax (48K RF = 1 565 /
// 747 / 829 / 883 vs 425; 196K 8: 952 vs 446).
inline constexpr int split_max_cas = 16;
// partition_note: partitioned multi-pass (hist_options::partition). The model partitions for CAS
// operators that write on most updates where the shared plan needs partition_min_passes passes or
// more (then also in place of the split and global strategies), into buckets of the largest
// chunk that two 1024-thread blocks per SM hold (the contended-CAS cap, cas_shared_per_sm: 24576
// four-byte bins). Its fixed costs are a count of each bucket's updates (an int histogram of S
// bins), the partition kernel (reads the input, writes 8 bytes per update) and reading those
// back; then every update is an uncontended-by-passes shared CAS. Measured on the H100 (soac
// bench hist, 24-bit saturated add, 50M elements, partitioned vs the plan before it, RF = 1 /
// 63, us): 196K (shared S = 4) 657 / 1267 vs 752 / 945; 393K (shared S = 7) 665 / 1264 vs 1282 /
// 1746; 786K (split 16) 680 / 1236 vs 1451 / 1797; 1.5M (global M = 3) 781 / 1326 vs 1654 /
// 2183. Then the bucket kernel's warps were made to meet after every step (see warp_steps: at
// RF = 63 it had read 1.5 GB from DRAM for 400 MB), and the bucket of a bin became a multiply
// (fast_divisor): partitioned 605 / 888 us at 196K vs shared S = 4 725 / 927, so the threshold
// went from 5 passes to 4. HDW lost (1.5M: 693 vs 579 us global), and contention-tolerant
// operators (arg_max) do well in global memory.
// Buckets are ranked by an 8-bit digit of which one value marks ignored updates.
// load_ahead_note: shared kernels with each step's loads issued before the previous step's
// updates (hist_options::load_ahead), used by the model for HDW and for CAS operators that write
// on most updates where one block runs per SM. One 1024-thread block per SM keeps too few loads
// in flight: under ncu on the H100 (int add, 48K bins, 50M elements) long-scoreboard stalls
// dominated and 35% of issue slots found no eligible warp; with loads ahead, 21%. Measured on the
// H100 (soac bench hist, 50M elements, ahead vs not, us): int add RF = 1 12K 75.7 vs 76.4, 24K
// 77.2 vs 78.6, 48K 82.9 vs 83.8 (RF = 63 79.6 vs 80.0); 24-bit saturated add 48K RF = 1 159 vs
// 184, RF = 63 290 vs 296. Not with two blocks per SM: the kernels need 64 registers, so one
// block would fit (int add 127 / 2K level or 0.4 us slower), and contended compare-and-swaps got
// slower as loads stopped pacing them (saturated add RF = 63 2K 281 vs 224 us, 12K 281 vs 228;
// RF = 1 2K 164 vs 129). Elements per step with loads ahead, int add 48K: 4 / 6 / 8 / 12: 92.6 /
// 86.3 / 83.8 / 85.1 us.
inline constexpr int partition_min_passes = 4;
inline constexpr int partition_max_buckets = 255;
inline constexpr int cluster_tolerant = 2;
// Split histograms, elements per step for CAS kinds (HDW takes items_per_thread). Measured on the
// H100 (saturated add 393K, split 8, 1 / 2 / 4 elements): RF = 1 1315 / 1333 / 1367 us, RF = 63
// 1629 / 1745 / 1810; argmax 48K split 2: RF = 1 452 / 565 / 569 us.
inline constexpr int split_items_cas = 1;
// Shared strategy, CAS operators that write on most updates, a single histogram: blocks
// (clusters) store their results in rows of partial results and a reduction kernel folds the rows
// (see hist_options::block_partials), instead of compare-and-swap loops into the destination,
// each a chain of L2 round trips at the end of the pass. Passes side by side share the rows (each
// writes its chunk): forced S = 2 at 48K (two blocks per SM) measured 492 vs 552 us (RF = 63). Measured on the H100
// (soac bench hist, 50M elements, 24-bit saturated add, clusters of 2, partials on vs off): RF = 1:
// 12K 222 vs 232 us, 24K 225 vs 240, 48K 230 vs 287; up to 6K and at RF = 63 within 1-2% (48K
// RF = 63: 808 vs 831). Not used elsewhere: HDW loses the second kernel's 8-13 us (48K: 108 vs
// 95 us), argmax changes within the spread of its runs (24K RF = 63 267 vs 277 us, 2K 262 vs
// 260). With two blocks per SM (264 blocks folding each bin) the compare-and-swap fold costs far
// more: one element per step, RF = 1, partials on vs off: 505 155 vs 511 us, 24K 169 vs 1037.
inline constexpr bool partials_for_cas = true;
// Inspector: up to this many groups of H consecutive elements, and at most n / sample_divisor
// elements in all (at least one group), so sampling stays a few percent of the pass it guides.
// The inspector waits for its result (a device-to-host copy), so it is kept to a few groups.
inline constexpr int inspector_max_groups = 2;
inline constexpr std::int64_t inspector_sample_divisor = 256;
}  // namespace hist_tuning

}  // namespace soac

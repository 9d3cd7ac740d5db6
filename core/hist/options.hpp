// What a caller may ask of hist: a strategy, the model's M and S or the atomic kind forced, the
// race factor when it is known, and (overrides) forced launch shapes. Everything left at its
// default is the model's choice (core/hist/plan.hpp).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "core/hist/update.hpp"

namespace soac {

enum class hist_strategy { automatic, shared, global };
enum class hist_toggle { automatic, on, off };

std::string_view to_string(hist_strategy);
std::string_view to_string(atomic_kind);
std::string_view to_string(hist_toggle);
hist_toggle parse_hist_toggle(std::string_view);  // throws usage_error
hist_strategy parse_hist_strategy(std::string_view);  // throws usage_error
atomic_kind parse_atomic_kind(std::string_view);      // throws usage_error

// Launch shapes the model decides, pinned: for experiments and the papers' figures (soac bench
// and reproduce set them as settings) and the few callers that know their data better than the
// model (each says why). Left at their defaults, the model decides.
struct hist_overrides {
  // Shared memory with one sub-histogram per thread (M = the block size, sized to fit), updated
  // with plain reads and writes instead of atomics. automatic: see hist_tuning::private_min_threads.
  hist_toggle thread_private = hist_toggle::automatic;
  // Shared strategy: blocks per thread-block cluster (sm_90 and later) that fold their
  // sub-histograms together through distributed shared memory before the fold into the
  // destination, so the destination takes one update per cluster instead of one per block.
  // 0: the model (see hist_tuning::cluster_note), 1: none. Plain atomic updates
  // only (not thread-private ones), and only where the grid can be whole
  // clusters that are all resident at once; the plan says what ran.
  int cluster = 0;
  // Shared strategy, a single histogram: blocks (or clusters) write their results to rows of a
  // temporary array with plain stores (passes side by side, their chunks of one row per part of
  // the input), and a second kernel reduces the rows into the destination, instead of folding
  // each bin into it with the kind's atomic. automatic: see
  // hist_tuning::partials_for_cas. Plain atomic updates only (as cluster).
  hist_toggle block_partials = hist_toggle::automatic;
  // Shared strategy, sm_90 and later: the blocks of a cluster of this many (2-16) hold one
  // histogram together, each a slice of H / split bins in its shared memory, and update each
  // other's slices through distributed shared memory, so histograms up to split times larger than
  // one block's shared memory stay in one pass. 0: the model (see hist_tuning::split_note), 1:
  // never. Hardware and CAS kinds only; batched histograms split only where they fall back to one
  // flattened histogram.
  int split = 0;
  // Partitioned multi-pass (the cuda backend): instead of reading the input once per chunk of
  // bins, one pass writes every in-range update, as (bin within its chunk, value), into the
  // bucket of its chunk; then each block folds a contiguous part of the bucketed updates into
  // shared copies of the chunks its part spans. automatic: see hist_tuning::partition_note. Not
  // for locks (XCG).
  hist_toggle partition = hist_toggle::automatic;
  // Shared strategy: threads per block (a multiple of 32); 0: hist_tuning::shared_block.
  int block = 0;
  // Shared strategy: each step's loads are issued before the previous step's updates (software
  // pipelining), so a thread keeps loads in flight while it updates. automatic: see
  // hist_tuning::load_ahead_note.
  hist_toggle load_ahead = hist_toggle::automatic;
};

struct hist_options {
  hist_strategy strategy = hist_strategy::automatic;
  int multi = 0;             // M, sub-histograms (per block for shared); 0: from the model
  int passes = 0;            // S, passes over chunks of bins; 0: from the model (or from M)
  double race_factor = 0;    // RF when known; 0: the inspector estimates it (global strategy only)
  bool force_atomic = false; // use `atomic` instead of the trait's choice (cas or xcg only)
  atomic_kind atomic = atomic_kind::xcg;
  hist_overrides overrides;  // forced launch shapes; the defaults leave them to the model
};

// Applies one `key=value` setting to options (throws usage_error naming the key and what it
// takes); hist_settings_text() lists the keys: "strategy=auto|shared|global, M=N, ...".
void set_hist_option(hist_options& options, std::string_view key, std::string_view value);
std::string hist_settings_text();
// Comma-separated settings, e.g. "strategy=shared,M=1,S=2", applied to `base`.
hist_options parse_hist_options(std::string_view settings, hist_options base = {});

// Throws usage_error for options no backend accepts (negative M, S or RF, a cluster size other
// than 0, 1, 2, 4 or 8).
void check_hist_options(const hist_options& options);

}  // namespace soac

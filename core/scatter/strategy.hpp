// How scatter maps writes to threads. The report (section 6.1) measured a plain kernel (one
// write per thread) against a chunked one (each thread a grid-strided chunk); `blocked` keeps
// several writes per thread in flight (loads first, stores after) to raise memory parallelism.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace soac {

enum class scatter_strategy { automatic, plain, chunked, blocked };

std::string_view to_string(scatter_strategy);
scatter_strategy parse_scatter_strategy(std::string_view);  // throws usage_error

struct scatter_options {
  scatter_strategy strategy = scatter_strategy::automatic;
  int chunk = 10;  // writes per thread for `chunked` (the report used 10 and 100)
};

// What a call chose; returned so callers can report it.
struct scatter_plan {
  scatter_strategy strategy = scatter_strategy::plain;
  int block_threads = 256;
  int items_per_thread = 1;  // chunk for chunked, unroll for blocked, 1 for plain
  std::int64_t grid = 0;
  bool host = false;  // ran on the host backend: one OpenMP loop, the fields above unused
  std::string describe() const;
};

namespace scatter_tuning {
inline constexpr int block_threads = 256;
// Writes per thread of the blocked kernel: 4 independent (index, value) loads in flight per
// thread saturate the H100's memory pipeline for random stores (see bench notes in README).
inline constexpr int blocked_items = 4;
}  // namespace scatter_tuning

// Chooses the strategy and launch shape for n writes (host backend: the result is informational).
scatter_plan plan_scatter(std::int64_t n, const scatter_options& options);

}  // namespace soac

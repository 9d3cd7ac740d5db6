// Shapes and tuning constants of scan / segscan (look-back thesis, sections 2.3-3.3), in one
// place with the reason for each, and the plan a call reports.
#pragma once

#include <cstdint>
#include <sstream>
#include <string>

namespace soac {

enum class scan_kind { inclusive, exclusive };

inline const char* to_string(scan_kind k) { return k == scan_kind::inclusive ? "inclusive" : "exclusive"; }

namespace scan_tuning {
// 256 threads keep 8 warps per block for the in-block scan while leaving room for several
// resident blocks per SM (the look-back hides its latency behind other resident tiles).
inline constexpr int block_threads = 256;
// Items per thread. 4-byte values: 32 (an 8192-element tile), which amortises one look-back
// (a few L2 round trips during which the block has no loads in flight) over 32 KiB of input.
// Measured on the H100, 2^26 int32, ratio to CUB InclusiveSum in the same run: 16 items 1.03x,
// 24 items 1.07x, 32 items 0.95x; segscan (flags every 10,000) 0.98x / 1.23x / 0.97x of
// InclusiveSumByKey (24 loses the 16-byte flag loads). Other sizes keep about 64 bytes of
// values per thread (a 2x2 matrix of uint32: 4 items), which bounds registers.
template <class T>
constexpr int items_per_thread() {
  if constexpr (sizeof(T) == 4) {
    return 32;
  } else {
    constexpr int items = int(64 / (sizeof(T) < 4 ? 4 : sizeof(T)));
    return items < 1 ? 1 : (items > 16 ? 16 : items);
  }
}
template <class T>
constexpr std::int64_t tile_items() { return std::int64_t{block_threads} * items_per_thread<T>(); }
// Polls of unpublished descriptors spin without __nanosleep backoff: 64 and 256 ns backoff
// measured no better on the H100 (2^26 int32 scan and segscan within noise).
}  // namespace scan_tuning

// What a call did; returned so callers (the bench) can report it.
struct scan_plan {
  scan_kind kind = scan_kind::inclusive;
  bool segmented = false;
  bool host = false;
  bool packed_descriptors = false;  // status and value published in one 64-bit word
  int block_threads = 0;
  int items_per_thread = 0;
  std::int64_t tiles = 0;
  std::string describe() const {
    std::ostringstream s;
    s << (segmented ? "segmented " : "") << to_string(kind);
    if (host) {
      s << ", host OpenMP (reduce chunks, scan chunk totals, rescan)";
    } else {
      s << ", single-pass look-back (" << block_threads << " threads x " << items_per_thread << " items, " << tiles
        << " tiles, " << (packed_descriptors ? "packed 64-bit" : "fenced") << " descriptors)";
    }
    return s.str();
  }
};

}  // namespace soac

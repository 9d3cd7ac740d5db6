// Radix-sort key encodings: each supported key maps to 32 bits whose unsigned order is the key
// order, so every pass works on plain digits. Order of the encodings:
//   uint32: as is.  int32: sign bit flipped (negatives first).
//   float: IEEE bits with the sign bit flipped for positives and all bits flipped for negatives,
//   so -NaN < -inf < ... < -0.0 < +0.0 < ... < +inf < +NaN: -0.0 sorts before +0.0, and NaNs
//   sort by sign and payload to the two ends (a NaN with the sign bit clear, as produced by
//   0.0f/0.0f on most platforms' canonical quiet NaN 0x7fc00000, goes last).
#pragma once

#include <cstdint>
#include <cstring>
#include <type_traits>

#include "core/hd.hpp"

namespace soac {

namespace sort_tuning {
// 8-bit digits: 4 passes for 32-bit keys; 256 buckets still fit one shared-memory counter per
// digit per warp, and a 5120-key tile gives runs of ~20 keys per digit to write. Measured on
// the H100 at 2^26 keys (key-value): 12 items 2.42 (4.45) ms, 16 items 2.15 (3.67) ms,
// 20 items 2.06 (3.51) ms; more items raise the ranking kernel's registers past 128.
inline constexpr int radix_bits = 8;
inline constexpr int block_threads = 256;
inline constexpr int items_per_thread = 20;
inline constexpr int tile_items = block_threads * items_per_thread;
// One-sweep tiles (docs/tuning/radixsort.md; H100, 2^24-2^28 keys): 384 threads, the first 256
// owning a digit's look-back; 20 keys a thread, 18 where 4-byte values share the exchange, 14
// with 8-byte values (whose exchange must stay within 48 KiB of static shared memory).
inline constexpr int onesweep_block_threads = 384;
inline constexpr int onesweep_items_keys = 20;
inline constexpr int onesweep_items_pairs = 18;
inline constexpr int onesweep_items_wide_pairs = 14;
constexpr int onesweep_items(int value_bytes) {
  return value_bytes == 0 ? onesweep_items_keys : value_bytes <= 4 ? onesweep_items_pairs : onesweep_items_wide_pairs;
}
}  // namespace sort_tuning

template <class K>
struct radix_key {
  static_assert(sizeof(K) == 0, "radix_sort supports uint32, int32 and float keys");
};

template <>
struct radix_key<std::uint32_t> {
  SOAC_HD static std::uint32_t encode(std::uint32_t b) { return b; }
  SOAC_HD static std::uint32_t decode(std::uint32_t b) { return b; }
};
template <>
struct radix_key<std::int32_t> {
  SOAC_HD static std::uint32_t encode(std::uint32_t b) { return b ^ 0x80000000u; }
  SOAC_HD static std::uint32_t decode(std::uint32_t b) { return b ^ 0x80000000u; }
};
template <>
struct radix_key<float> {
  SOAC_HD static std::uint32_t encode(std::uint32_t b) { return b ^ ((b & 0x80000000u) ? 0xffffffffu : 0x80000000u); }
  SOAC_HD static std::uint32_t decode(std::uint32_t b) { return b ^ ((b & 0x80000000u) ? 0x80000000u : 0xffffffffu); }
};

template <class K>
inline constexpr bool is_radix_key_v =
    std::is_same_v<K, std::uint32_t> || std::is_same_v<K, std::int32_t> || std::is_same_v<K, float>;

// The encoded bits of a key held in memory as K.
template <class K>
SOAC_HD std::uint32_t encoded_bits(const K& k) {
  std::uint32_t b;
  std::memcpy(&b, &k, 4);
  return radix_key<K>::encode(b);
}

}  // namespace soac

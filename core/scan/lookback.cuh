// Tile descriptors of the single-pass decoupled look-back (Merrill & Garland; thesis 2.3).
// Tile t publishes (status, value): status `aggregate` with the tile's own reduction, or status
// `prefix` with everything from the start (or, segmented, from the tile's last segment start)
// to its end. Two layouts:
//  - packed: value (<= 4 bytes, plus the segment flag) and status share one 64-bit word that is
//    stored and loaded with single relaxed device-scope atomics, so a reader can never see a
//    status without its value; one L2 round trip per poll.
//  - fenced (any value type): the value goes to `aggregates[t]` or `prefixes[t]` (separate
//    arrays, so publishing the prefix never overwrites an aggregate someone is reading), then
//    the status word is stored with release semantics; readers load the status with acquire
//    semantics before reading the value through L2 (ld.cg), never through the incoherent L1.
#pragma once

#include <cstdint>
#include <cstring>
#include <type_traits>

#include <cuda/atomic>

#include "core/scan/lifted.hpp"

namespace soac::detail {

enum tile_status : unsigned { status_invalid = 0, status_aggregate = 1, status_prefix = 2 };

// Value types that fit the packed layout: a <= 4-byte value, optionally with the segment flag.
template <class V>
struct packable : std::bool_constant<(sizeof(V) <= 4 && std::is_trivially_copyable_v<V>)> {};
template <class T>
struct packable<seg_value<T>> : std::bool_constant<(sizeof(T) <= 4 && std::is_trivially_copyable_v<T>)> {};

template <class V>
struct is_seg_value : std::false_type {};
template <class T>
struct is_seg_value<seg_value<T>> : std::true_type {};

template <class V, bool Packed = packable<V>::value>
struct tile_state;

template <class V>
struct tile_state<V, true> {
  unsigned long long* words;  // one per tile; 0 = invalid

  static constexpr std::size_t bytes(std::int64_t tiles) { return std::size_t(tiles) * 8; }
  static tile_state carve(void* p, std::int64_t) { return {static_cast<unsigned long long*>(p)}; }

  __device__ static unsigned long long pack(unsigned status, const V& v) {
    std::uint32_t bits = 0, flag = 0;
    if constexpr (is_seg_value<V>::value) {
      std::memcpy(&bits, &v.value, sizeof(v.value));
      flag = v.flag;
    } else {
      std::memcpy(&bits, &v, sizeof(V));
    }
    return (static_cast<unsigned long long>(status | (flag << 2)) << 32) | bits;
  }
  __device__ void publish(std::int64_t tile, unsigned status, const V& v) const {
    cuda::atomic_ref<unsigned long long, cuda::thread_scope_device> w(words[tile]);
    w.store(pack(status, v), cuda::std::memory_order_relaxed);
  }
  // Status of `tile`, and its value in v when not invalid.
  __device__ unsigned peek(std::int64_t tile, V& v) const {
    cuda::atomic_ref<unsigned long long, cuda::thread_scope_device> w(words[tile]);
    const unsigned long long x = w.load(cuda::std::memory_order_relaxed);
    const auto bits = static_cast<std::uint32_t>(x);
    const auto hi = static_cast<unsigned>(x >> 32);
    if constexpr (is_seg_value<V>::value) {
      std::memcpy(&v.value, &bits, sizeof(v.value));
      v.flag = (hi >> 2) & 1;
    } else {
      std::memcpy(&v, &bits, sizeof(V));
    }
    return hi & 3;
  }
};

template <class V>
struct tile_state<V, false> {
  // A value as 32-bit words, so that it can be moved with ld.cg / st.cg whatever its type.
  static constexpr int words_per_value = int((sizeof(V) + 3) / 4);
  struct alignas(alignof(V) > 4 ? alignof(V) : 4) slot {
    unsigned w[words_per_value];
  };
  unsigned* status;
  slot* aggregates;
  slot* prefixes;

  static constexpr std::size_t align_up(std::size_t b) { return (b + 255) / 256 * 256; }
  static constexpr std::size_t bytes(std::int64_t tiles) {
    return align_up(std::size_t(tiles) * 4) + 2 * align_up(std::size_t(tiles) * sizeof(slot));
  }
  // Only `status` must start zeroed; it comes first.
  static tile_state carve(void* p, std::int64_t tiles) {
    auto* b = static_cast<unsigned char*>(p);
    tile_state s;
    s.status = reinterpret_cast<unsigned*>(b);
    s.aggregates = reinterpret_cast<slot*>(b + align_up(std::size_t(tiles) * 4));
    s.prefixes = reinterpret_cast<slot*>(b + align_up(std::size_t(tiles) * 4) + align_up(std::size_t(tiles) * sizeof(slot)));
    return s;
  }
  __device__ void publish(std::int64_t tile, unsigned st, const V& v) const {
    slot s{};
    std::memcpy(&s, &v, sizeof(V));
    slot* dst = (st == status_prefix ? prefixes : aggregates) + tile;
    for (int k = 0; k < words_per_value; ++k) __stcg(&dst->w[k], s.w[k]);
    cuda::atomic_ref<unsigned, cuda::thread_scope_device> flag(status[tile]);
    flag.store(st, cuda::std::memory_order_release);
  }
  __device__ unsigned peek(std::int64_t tile, V& v) const {
    cuda::atomic_ref<unsigned, cuda::thread_scope_device> flag(status[tile]);
    const unsigned st = flag.load(cuda::std::memory_order_acquire);
    if (st != status_invalid) {
      const slot* src = (st == status_prefix ? prefixes : aggregates) + tile;
      slot s;
      for (int k = 0; k < words_per_value; ++k) s.w[k] = __ldcg(&src->w[k]);
      std::memcpy(&v, &s, sizeof(V));
    }
    return st;
  }
};

}  // namespace soac::detail

// Deterministic, counter-based random generation for dataset generators. Value i of a stream is a
// pure function of (seed, stream, i), so output is identical for any thread count and the same
// functions can run in CUDA kernels.
#pragma once

#include <cstdint>
#include <limits>
#include <span>
#include <string>
#include <type_traits>

#include "core/error.hpp"
#include "core/hd.hpp"

// `#pragma omp parallel for schedule(static)` when OpenMP is on; nothing otherwise, so builds
// without -fopenmp get no unknown-pragma warnings.
#ifndef SOAC_OMP_PARALLEL_FOR
#ifdef _OPENMP
#define SOAC_OMP_PARALLEL_FOR _Pragma("omp parallel for schedule(static)")
#else
#define SOAC_OMP_PARALLEL_FOR
#endif
#endif

namespace soac::datasets {

// SplitMix64's finalizer (Steele, Lea, Flood 2014) applied to x + golden gamma: a cheap,
// strong 64-bit mixer.
SOAC_HD constexpr std::uint64_t splitmix64(std::uint64_t x) {
  std::uint64_t z = x + 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

// Key of one (seed, stream) pair; mixed twice so nearby seeds and streams give unrelated keys.
SOAC_HD constexpr std::uint64_t stream_key(std::uint64_t seed, std::uint64_t stream) {
  return splitmix64(splitmix64(seed) ^ splitmix64(stream ^ 0x5851f42d4c957f2dull));
}

// Word i under a precomputed stream_key: SplitMix64's output sequence started at that key.
SOAC_HD constexpr std::uint64_t keyed_word(std::uint64_t key, std::uint64_t i) {
  return splitmix64(key + i * 0x9e3779b97f4a7c15ull);
}

// Value i of stream `stream` under `seed`: a well-mixed 64-bit word.
SOAC_HD constexpr std::uint64_t random_word(std::uint64_t seed, std::uint64_t stream, std::uint64_t i) {
  return keyed_word(stream_key(seed, stream), i);
}

SOAC_HD constexpr std::uint32_t random_u32(std::uint64_t seed, std::uint64_t stream, std::uint64_t i) {
  return static_cast<std::uint32_t>(random_word(seed, stream, i) >> 32);
}

// Uniform in [0, 1) with 53 random bits.
SOAC_HD constexpr double random_unit(std::uint64_t seed, std::uint64_t stream, std::uint64_t i) {
  return static_cast<double>(random_word(seed, stream, i) >> 11) * 0x1.0p-53;
}

// High 64 bits of a 64x64-bit product.
SOAC_HD constexpr std::uint64_t mul_high64(std::uint64_t a, std::uint64_t b) {
#if defined(__SIZEOF_INT128__) && !defined(__CUDA_ARCH__)
  __extension__ using u128 = unsigned __int128;
  return static_cast<std::uint64_t>((static_cast<u128>(a) * b) >> 64);
#else
  const std::uint64_t a_lo = a & 0xffffffffu, a_hi = a >> 32, b_lo = b & 0xffffffffu, b_hi = b >> 32;
  const std::uint64_t lo_lo = a_lo * b_lo, hi_lo = a_hi * b_lo, lo_hi = a_lo * b_hi;
  const std::uint64_t mid = (lo_lo >> 32) + (hi_lo & 0xffffffffu) + lo_hi;
  return a_hi * b_hi + (hi_lo >> 32) + (mid >> 32);
#endif
}

// Maps a random word to [0, range) by multiply-shift (Lemire); range 0 means the full 2^64.
// The bias is at most range / 2^64, negligible for dataset generation.
SOAC_HD constexpr std::uint64_t random_below(std::uint64_t word, std::uint64_t range) {
  return range == 0 ? word : mul_high64(word, range);
}

// A pseudo-random bijection of [0, n): a balanced Feistel network over the smallest power of two
// with an even bit width that is >= n, then cycle walking (re-encrypt until the value is < n).
// That domain is < 4n, so a lookup takes fewer than 4 encryptions on average.
class random_permutation {
 public:
  static constexpr int rounds = 6;

  SOAC_HD constexpr random_permutation(std::uint64_t n, std::uint64_t seed) : n_(n) {
    int bits = 0;
    while (bits < 64 && (std::uint64_t{1} << bits) < n) bits += 2;
    half_bits_ = bits / 2;
    mask_ = half_bits_ == 32 ? 0xffffffffull : (std::uint64_t{1} << half_bits_) - 1;
    for (int r = 0; r < rounds; ++r) keys_[r] = random_word(seed, 0x7065726d75746531ull, r);
  }

  // i < n -> a distinct value < n.
  SOAC_HD constexpr std::uint64_t operator()(std::uint64_t i) const {
    std::uint64_t x = i;
    do {
      x = encrypt(x);
    } while (x >= n_);
    return x;
  }

  SOAC_HD constexpr std::uint64_t size() const { return n_; }

 private:
  SOAC_HD constexpr std::uint64_t encrypt(std::uint64_t x) const {
    std::uint64_t left = (x >> half_bits_) & mask_, right = x & mask_;
    for (int r = 0; r < rounds; ++r) {
      const std::uint64_t f = splitmix64(right ^ keys_[r]) & mask_;
      const std::uint64_t next = left ^ f;
      left = right;
      right = next;
    }
    return (left << half_bits_) | right;
  }

  std::uint64_t n_;
  int half_bits_ = 0;
  std::uint64_t mask_ = 0;
  std::uint64_t keys_[rounds] = {};
};

// --- Fill helpers (host, OpenMP-parallel; output is the same for any thread count) -------------

inline void fill_random_u32(std::span<std::uint32_t> out, std::uint64_t seed, std::uint64_t stream) {
  const std::uint64_t key = stream_key(seed, stream);
  const auto n = static_cast<std::int64_t>(out.size());
  std::uint32_t* p = out.data();
SOAC_OMP_PARALLEL_FOR
  for (std::int64_t i = 0; i < n; ++i)
    p[i] = static_cast<std::uint32_t>(keyed_word(key, static_cast<std::uint64_t>(i)) >> 32);
}

// Uniform integers in [lo, hi_inclusive].
template <class T>
void fill_random_int(std::span<T> out, T lo, T hi_inclusive, std::uint64_t seed, std::uint64_t stream) {
  static_assert(std::is_integral_v<T> && !std::is_same_v<T, bool>, "fill_random_int needs an integer type");
  if (hi_inclusive < lo)
    throw usage_error("fill_random_int: empty range [" + std::to_string(lo) + ", " +
                      std::to_string(hi_inclusive) + "]");
  using U = std::make_unsigned_t<T>;
  // Width of the range in 64-bit unsigned arithmetic; wraps to 0 for the full 64-bit range,
  // which random_below reads as 2^64.
  const std::uint64_t range =
      static_cast<std::uint64_t>(static_cast<U>(static_cast<U>(hi_inclusive) - static_cast<U>(lo))) + 1;
  const std::uint64_t key = stream_key(seed, stream);
  const auto n = static_cast<std::int64_t>(out.size());
  T* p = out.data();
SOAC_OMP_PARALLEL_FOR
  for (std::int64_t i = 0; i < n; ++i) {
    const std::uint64_t off = random_below(keyed_word(key, static_cast<std::uint64_t>(i)), range);
    p[i] = static_cast<T>(static_cast<U>(static_cast<U>(lo) + static_cast<U>(off)));
  }
}

// out.size() distinct values from [0, n) in random order: a prefix of random_permutation(n, seed).
template <class T>
void fill_distinct_indices(std::span<T> out, std::uint64_t n, std::uint64_t seed) {
  static_assert(std::is_integral_v<T> && !std::is_same_v<T, bool>, "fill_distinct_indices needs an integer type");
  if (out.size() > n)
    throw usage_error("fill_distinct_indices: cannot draw " + std::to_string(out.size()) +
                      " distinct values from [0, " + std::to_string(n) + ")");
  if (n > 0 && n - 1 > static_cast<std::uint64_t>(std::numeric_limits<T>::max()))
    throw usage_error("fill_distinct_indices: values up to " + std::to_string(n - 1) +
                      " do not fit the element type");
  const random_permutation perm(n, seed);
  const auto k = static_cast<std::int64_t>(out.size());
  T* p = out.data();
SOAC_OMP_PARALLEL_FOR
  for (std::int64_t i = 0; i < k; ++i) p[i] = static_cast<T>(perm(static_cast<std::uint64_t>(i)));
}

}  // namespace soac::datasets

// The three atomic update primitives of SC20 section III-B, on any address (shared or global):
// HDW (native atomics), CAS (compare-and-swap loop over the value's 32- or 64-bit pattern) and
// XCG (a lock per bin taken with atomicExch). Vector bins (soac::elementwise) use the element
// operator's atomic on each element (section IV-D).
#pragma once

#include <cstdint>
#include <type_traits>

#include "core/hist/update.hpp"

namespace soac::detail {

template <class Op, template <class> class Family>
struct is_family : std::false_type {};
template <class T, template <class> class Family>
struct is_family<Family<T>, Family> : std::true_type {};

template <class Op, class = void>
struct has_user_update : std::false_type {};
template <class Op>
struct has_user_update<Op, std::void_t<decltype(hist_atomic<Op>::update(
                               static_cast<typename Op::value_type*>(nullptr), typename Op::value_type{}))>>
    : std::true_type {};

// The value as a machine word of the same size (4 or 8 bytes).
template <class V>
using word_of = std::conditional_t<sizeof(V) == 4, unsigned int, unsigned long long>;

template <class To, class From>
__device__ __forceinline__ To bits_as(const From& x) {
  static_assert(sizeof(To) == sizeof(From));
  To r;
  __builtin_memcpy(&r, &x, sizeof(To));
  return r;
}

// Bitwise equality (values need not have operator==); used to skip identity results.
template <class V>
__device__ __forceinline__ bool same_bits(const V& a, const V& b) {
  if constexpr (sizeof(V) % 4 == 0) {
    unsigned int wa[sizeof(V) / 4], wb[sizeof(V) / 4];
    __builtin_memcpy(wa, &a, sizeof(V));
    __builtin_memcpy(wb, &b, sizeof(V));
    bool eq = true;
#pragma unroll
    for (std::size_t j = 0; j < sizeof(V) / 4; ++j) eq &= wa[j] == wb[j];
    return eq;
  } else {
    const auto* pa = reinterpret_cast<const unsigned char*>(&a);
    const auto* pb = reinterpret_cast<const unsigned char*>(&b);
    for (std::size_t j = 0; j < sizeof(V); ++j)
      if (pa[j] != pb[j]) return false;
    return true;
  }
}

// Reads and writes of a value guarded by a lock. Word-sized values go through relaxed atomics,
// one per 4-byte word: the lock orders them, and atomics keep them from being data races in the
// CUDA memory model (and from being reported by compute-sanitizer racecheck, which does not
// understand spin locks). Other sizes fall back to volatile bytes.
template <class V>
__device__ __forceinline__ V locked_load(V* p) {
  V r;
  if constexpr (sizeof(V) % 4 == 0 && alignof(V) >= 4) {
    unsigned int* s = reinterpret_cast<unsigned int*>(p);
    unsigned int w[sizeof(V) / 4];
#pragma unroll
    for (std::size_t j = 0; j < sizeof(V) / 4; ++j) w[j] = atomicOr(s + j, 0u);
    __builtin_memcpy(&r, w, sizeof(V));
  } else {
    const volatile unsigned char* s = reinterpret_cast<const volatile unsigned char*>(p);
    unsigned char w[sizeof(V)];
    for (std::size_t j = 0; j < sizeof(V); ++j) w[j] = s[j];
    __builtin_memcpy(&r, w, sizeof(V));
  }
  return r;
}

template <class V>
__device__ __forceinline__ void locked_store(V* p, const V& v) {
  if constexpr (sizeof(V) % 4 == 0 && alignof(V) >= 4) {
    unsigned int* d = reinterpret_cast<unsigned int*>(p);
    unsigned int w[sizeof(V) / 4];
    __builtin_memcpy(w, &v, sizeof(V));
#pragma unroll
    for (std::size_t j = 0; j < sizeof(V) / 4; ++j) atomicExch(d + j, w[j]);
  } else {
    volatile unsigned char* d = reinterpret_cast<volatile unsigned char*>(p);
    unsigned char w[sizeof(V)];
    __builtin_memcpy(w, &v, sizeof(V));
    for (std::size_t j = 0; j < sizeof(V); ++j) d[j] = w[j];
  }
}

// HDW: the native atomic of a built-in (operator, type) pair, or the user's update.
template <class Op, class V>
__device__ __forceinline__ void hw_update(V* p, V v) {
  if constexpr (has_user_update<Op>::value) {
    hist_atomic<Op>::update(p, v);
  } else if constexpr (sizeof(V) == 8 && std::is_integral_v<V>) {
    // CUDA spells 64-bit atomics with (unsigned) long long; int64_t is long on LP64.
    using S = std::conditional_t<std::is_signed_v<V>, long long, unsigned long long>;
    auto* q = reinterpret_cast<S*>(p);
    auto* uq = reinterpret_cast<unsigned long long*>(p);
    const S x = static_cast<S>(v);
    if constexpr (is_family<Op, plus>::value) atomicAdd(uq, static_cast<unsigned long long>(x));
    else if constexpr (is_family<Op, minimum>::value) atomicMin(q, x);
    else if constexpr (is_family<Op, maximum>::value) atomicMax(q, x);
    else if constexpr (is_family<Op, bit_and>::value) atomicAnd(uq, static_cast<unsigned long long>(x));
    else if constexpr (is_family<Op, bit_or>::value) atomicOr(uq, static_cast<unsigned long long>(x));
    else static_assert(sizeof(Op) == 0, "hist_atomic says hdw but no hardware atomic is known for this operator");
  } else {
    if constexpr (is_family<Op, plus>::value) atomicAdd(p, v);
    else if constexpr (is_family<Op, minimum>::value) atomicMin(p, v);
    else if constexpr (is_family<Op, maximum>::value) atomicMax(p, v);
    else if constexpr (is_family<Op, bit_and>::value) atomicAnd(p, v);
    else if constexpr (is_family<Op, bit_or>::value) atomicOr(p, v);
    else static_assert(sizeof(Op) == 0, "hist_atomic says hdw but no hardware atomic is known for this operator");
  }
}

// Whether predicated_red below applies: a 4-byte built-in operator with a PTX reduction (no user
// update, which the trait may map to anything).
template <class Op>
inline constexpr bool has_predicated_red = [] {
  using V = typename Op::value_type;
  if constexpr (has_user_update<Op>::value || sizeof(V) != 4) return false;
  else if constexpr (std::is_same_v<V, float>) return is_family<Op, plus>::value;
  else if constexpr (is_hw_int32<V>)
    return is_family<Op, plus>::value || is_family<Op, minimum>::value || is_family<Op, maximum>::value ||
           is_family<Op, bit_and>::value || is_family<Op, bit_or>::value;
  else return false;
}();

// HDW update of the bin at `at` when `pred` holds, as one predicated reduction instruction. `at`:
// a 32-bit shared address (unsigned), or a pointer to global memory (whose generic address is its
// global one). Written as `if (pred) atomicAdd(...)`, each update became a branch around the
// atomic inside a convergence region (BSSY, BRA, BSYNC: about 4 more instructions per update),
// which mattered where one 1024-thread block per SM is issue-bound (docs/tuning/hist.md, atomics).
template <class Op, class Address>
__device__ __forceinline__ void predicated_red(Address at, const typename Op::value_type& v, bool pred) {
  using V = typename Op::value_type;
  constexpr bool shared = std::is_same_v<Address, unsigned>;
  const unsigned p = pred;
#define SOAC_RED(OPTYPE, REG, VALUE)                                                                               \
  if constexpr (shared)                                                                                            \
    asm volatile("{\n\t.reg .pred q;\n\tsetp.ne.u32 q, %2, 0;\n\t@q red.shared." OPTYPE " [%0], %1;\n\t}" ::"r"(at), \
                 REG(VALUE), "r"(p)                                                                                \
                 : "memory");                                                                                      \
  else                                                                                                             \
    asm volatile("{\n\t.reg .pred q;\n\tsetp.ne.u32 q, %2, 0;\n\t@q red.global." OPTYPE " [%0], %1;\n\t}" ::"l"(at), \
                 REG(VALUE), "r"(p)                                                                                \
                 : "memory")
  if constexpr (std::is_same_v<V, float>) {
    SOAC_RED("add.f32", "f", v);
  } else {
    constexpr bool sign = std::is_signed_v<V>;
    if constexpr (is_family<Op, plus>::value) { SOAC_RED("add.u32", "r", v); }
    else if constexpr (is_family<Op, minimum>::value && sign) { SOAC_RED("min.s32", "r", v); }
    else if constexpr (is_family<Op, minimum>::value) { SOAC_RED("min.u32", "r", v); }
    else if constexpr (is_family<Op, maximum>::value && sign) { SOAC_RED("max.s32", "r", v); }
    else if constexpr (is_family<Op, maximum>::value) { SOAC_RED("max.u32", "r", v); }
    else if constexpr (is_family<Op, bit_and>::value) { SOAC_RED("and.b32", "r", v); }
    else { SOAC_RED("or.b32", "r", v); }
  }
#undef SOAC_RED
}

// CAS: retry until the word we combined with is still the one in memory, starting from `old`, a
// value the bin held. A result equal to the value read means v is already absorbed (for an
// associative, commutative operator it then is in every later value too), so no write is
// needed; that keeps argmax and saturation cheap when most updates lose.
//
// The loop is written as a do-while with one exit test after the compare-and-swap: written with
// two early returns, NVVM rotated it (the first combine peeled off, an exit branch right after
// the CAS), and that form ran 1.45x slower on the H100. Backing off after a failed
// compare-and-swap (__nanosleep) made contended bins far slower (docs/tuning/hist.md, atomics).
template <class Op, class V>
__device__ __forceinline__ void cas_update_from(V* p, word_of<V> old, V v) {
  static_assert(sizeof(V) == 4 || sizeof(V) == 8, "CAS atomics need a 4- or 8-byte value");
  using W = word_of<V>;
  W* w = reinterpret_cast<W*>(p);
  W assumed;
  do {
    assumed = old;
    const W next = bits_as<W>(Op{}(bits_as<V>(assumed), v));
    if (next == assumed) break;
    old = atomicCAS(w, assumed, next);
  } while (old != assumed);
}

// A value the bin held, to start the CAS loop from. Any earlier value is correct (a stale one
// only costs a failed compare-and-swap, and one that already absorbs v stays absorbing, see
// cas_update_from); in global memory it is read from L2 (ld.global.cg), skipping L1 without the
// system-scope ordering a volatile load carries. Operators that declare a contention tolerance
// (most updates lose and leave without writing: arg_max) read through L1 instead (ld.global.ca):
// a stale L1 copy that already absorbs v spares the L2 round trip, and one that does not only
// costs the failed compare-and-swap that fetches the bin (docs/tuning/hist.md, atomics). Operators that write on
// most updates keep the L2 read: a stale value there is a failed compare-and-swap every time.
template <class Op, class V>
__device__ __forceinline__ word_of<V> cas_first_read(const V* p) {
  const auto* w = reinterpret_cast<const word_of<V>*>(p);
  if (__isGlobal(p)) {
    if constexpr (contention_tolerance<Op>::value > 0) return __ldca(w);
    else return __ldcg(w);
  }
  return *reinterpret_cast<const volatile word_of<V>*>(p);
}

template <class Op, class V>
__device__ __forceinline__ void cas_update(V* p, V v) {
  cas_update_from<Op>(p, cas_first_read<Op>(p), v);
}

// XCG: a spin lock per bin. The loop keeps the critical section inside the `if`, so a warp whose
// lanes contend for one lock always lets the winner finish.
template <class Op, class V>
__device__ __forceinline__ void lock_update(V* p, int* lock, const V& v) {
  bool done = false;
  while (!done) {
    if (atomicExch(lock, 1) == 0) {
      __threadfence();
      locked_store(p, Op{}(locked_load(p), v));
      __threadfence();
      atomicExch(lock, 0);
      done = true;
    }
  }
}

// One update of the bin at p (lock: its lock for xcg, unused otherwise).
template <atomic_kind K, class Op>
__device__ __forceinline__ void atomic_update(typename Op::value_type* p, int* lock, const typename Op::value_type& v) {
  if constexpr (K == atomic_kind::xcg) {
    lock_update<Op>(p, lock, v);
  } else if constexpr (is_elementwise<Op>::value) {
    using E = typename Op::scalar_op;
#pragma unroll
    for (int j = 0; j < Op::size; ++j) atomic_update<K, E>(&p->v[j], nullptr, v.v[j]);
  } else if constexpr (K == atomic_kind::hdw) {
    hw_update<Op>(p, v);
  } else {
    cas_update<Op>(p, v);
  }
}

// Lane src's value of v, for the lanes of `mask` (values of whole 4-byte words).
template <class V>
__device__ __forceinline__ V shuffle_value(unsigned mask, const V& v, int src) {
  static_assert(sizeof(V) % 4 == 0, "shuffle_value moves 4-byte words");
  unsigned int w[sizeof(V) / 4];
  __builtin_memcpy(w, &v, sizeof(V));
#pragma unroll
  for (std::size_t j = 0; j < sizeof(V) / 4; ++j) w[j] = __shfl_sync(mask, w[j], src);
  V r;
  __builtin_memcpy(&r, w, sizeof(V));
  return r;
}

// Whether kind K can update Op's values: hdw only where the trait says so, cas for 4/8-byte
// units, xcg always.
template <class Op>
constexpr bool atomic_allowed(atomic_kind k) {
  using U = typename atomic_unit<Op>::op;
  using V = typename U::value_type;
  switch (k) {
    case atomic_kind::hdw: return hist_atomic<Op>::kind == atomic_kind::hdw;
    case atomic_kind::cas: return sizeof(V) == 4 || sizeof(V) == 8;
    default: return true;
  }
}

}  // namespace soac::detail

// What a hist functor returns, and how each (value type, operator) is updated atomically.
//
// f(i) returns one soac::bin_value{bin, value} or a fixed number of them (soac::bin_values<V, K>,
// e.g. 4 per 32-bit word of a byte histogram, 16 per pixel of image registration). Bins outside
// [0, H) are ignored.
//
// soac::hist_atomic<Op>::kind is the atomic strategy of SC20 section III-B, decided from the
// operator and its value type: hdw (the GPU has an atomic for it), cas (any other 4- or 8-byte
// value: compare-and-swap loop), xcg (anything larger: a lock per bin taken with atomicExch).
// Users may specialise hist_atomic for their own operator; a specialisation that says hdw must
// also provide `static __device__ void update(value_type* p, value_type v)`.
//
// soac::elementwise<Op, D> lifts a scalar operator to D-vectors (k-means sums): each element is
// updated with the scalar operator's own atomic (section IV-D), never under a lock.
#pragma once

#include <cstdint>
#include <type_traits>

#include "core/hd.hpp"
#include "core/operators.hpp"

namespace soac {

template <class V>
struct bin_value {
  std::int64_t bin;
  V value;
};
template <class V>
bin_value(std::int64_t, V) -> bin_value<V>;

// K updates from one element, applied in order.
template <class V, int K>
struct bin_values {
  static_assert(K >= 1, "bin_values needs at least one update");
  bin_value<V> u[K];
  SOAC_HD bin_value<V>& operator[](int k) { return u[k]; }
  SOAC_HD const bin_value<V>& operator[](int k) const { return u[k]; }
};

enum class atomic_kind { hdw, cas, xcg };

// A D-element vector, the value type of elementwise<Op, D>.
template <class T, int D>
struct vec {
  T v[D];
  SOAC_HD T& operator[](int j) { return v[j]; }
  SOAC_HD const T& operator[](int j) const { return v[j]; }
};

template <class Op, int D>
struct elementwise {
  using scalar_op = Op;
  using scalar_type = typename Op::value_type;
  using value_type = vec<scalar_type, D>;
  static constexpr int size = D;
  static constexpr bool commutative = is_commutative_v<Op>;
  SOAC_HD static value_type identity() {
    value_type r;
    for (int j = 0; j < D; ++j) r.v[j] = Op::identity();
    return r;
  }
  SOAC_HD value_type operator()(const value_type& a, const value_type& b) const {
    value_type r;
    for (int j = 0; j < D; ++j) r.v[j] = Op{}(a.v[j], b.v[j]);
    return r;
  }
};

namespace detail {

template <class T>
inline constexpr bool is_hw_int32 = std::is_same_v<T, std::int32_t> || std::is_same_v<T, std::uint32_t>;
template <class T>
inline constexpr bool is_hw_int64 = std::is_same_v<T, std::int64_t> || std::is_same_v<T, std::uint64_t> ||
                                    std::is_same_v<T, long long> || std::is_same_v<T, unsigned long long>;

// Which (operator, type) pairs CUDA has a native atomic for on sm_60 and later.
template <class Op>
struct has_hw_atomic : std::false_type {};
template <class T>
struct has_hw_atomic<plus<T>>
    : std::bool_constant<is_hw_int32<T> || is_hw_int64<T> || std::is_same_v<T, float> || std::is_same_v<T, double>> {};
template <class T>
struct has_hw_atomic<minimum<T>> : std::bool_constant<is_hw_int32<T> || is_hw_int64<T>> {};
template <class T>
struct has_hw_atomic<maximum<T>> : std::bool_constant<is_hw_int32<T> || is_hw_int64<T>> {};
template <class T>
struct has_hw_atomic<bit_and<T>> : std::bool_constant<is_hw_int32<T> || is_hw_int64<T>> {};
template <class T>
struct has_hw_atomic<bit_or<T>> : std::bool_constant<is_hw_int32<T> || is_hw_int64<T>> {};

template <class Op>
constexpr atomic_kind default_atomic_kind() {
  using V = typename Op::value_type;
  if constexpr (has_hw_atomic<Op>::value) return atomic_kind::hdw;
  else if constexpr (sizeof(V) == 4 || sizeof(V) == 8) return atomic_kind::cas;
  else return atomic_kind::xcg;
}

}  // namespace detail

template <class Op>
struct hist_atomic {
  static constexpr atomic_kind kind = detail::default_atomic_kind<Op>();
};

// Vector bins: the element operator's kind, applied once per element.
template <class Op, int D>
struct hist_atomic<elementwise<Op, D>> {
  static constexpr atomic_kind kind = hist_atomic<Op>::kind;
};

namespace detail {
template <class Op>
struct is_elementwise : std::false_type {};
template <class Op, int D>
struct is_elementwise<elementwise<Op, D>> : std::true_type {};

// The per-element unit the atomics work on: the scalar operator for elementwise ops.
template <class Op>
struct atomic_unit {
  using op = Op;
  static constexpr int count = 1;
};
template <class Op, int D>
struct atomic_unit<elementwise<Op, D>> {
  using op = Op;
  static constexpr int count = D;
};

// Normalises what f(i) returns to "K updates of value type V".
template <class R>
struct updates_of;
template <class V>
struct updates_of<bin_value<V>> {
  using value_type = V;
  static constexpr int count = 1;
  SOAC_HD static const bin_value<V>& get(const bin_value<V>& r, int) { return r; }
};
template <class V, int K>
struct updates_of<bin_values<V, K>> {
  using value_type = V;
  static constexpr int count = K;
  SOAC_HD static const bin_value<V>& get(const bin_values<V, K>& r, int k) { return r.u[k]; }
};

// The operator's own contention tolerance for the global model (hist_tuning::u_other otherwise):
// Op::hist_contention_tolerance when declared. It matters for CAS only, where an update that
// does not change the bin never writes; a lock is taken whatever the value.
template <class Op, class = void>
struct contention_tolerance {
  static constexpr double value = 0;
};
template <class Op>
struct contention_tolerance<Op, std::void_t<decltype(Op::hist_contention_tolerance)>> {
  static constexpr double value = Op::hist_contention_tolerance;
};
template <class Op>
constexpr double model_contention_tolerance(atomic_kind kind) {
  return kind == atomic_kind::cas ? contention_tolerance<Op>::value : 0;
}

// Bytes a bin occupies for the models: the value, plus the lock for xcg (SC20 III-C).
template <class Op>
constexpr std::size_t model_element_bytes(atomic_kind kind) {
  return sizeof(typename Op::value_type) + (kind == atomic_kind::xcg ? 4 : 0);
}
}  // namespace detail

}  // namespace soac

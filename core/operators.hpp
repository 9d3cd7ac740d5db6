// The operator convention shared by hist, segreduce and scan. An operator is a type with
//   using value_type = ...;
//   SOAC_HD static value_type identity();                       // neutral element
//   SOAC_HD value_type operator()(value_type a, value_type b) const;   // associative
//   static constexpr bool commutative = true|false;             // optional; absent means false
// Primitives that reorder (hist always, segreduce when allowed) check soac::is_commutative_v.
#pragma once

#include <cstdint>
#include <type_traits>

#include <cuda/std/limits>

#include "core/hd.hpp"

namespace soac {

namespace detail {
template <class Op, class = void>
struct commutative_member : std::false_type {};
template <class Op>
struct commutative_member<Op, std::void_t<decltype(Op::commutative)>> : std::bool_constant<Op::commutative> {};
}  // namespace detail

template <class Op>
inline constexpr bool is_commutative_v = detail::commutative_member<Op>::value;

template <class T>
struct plus {
  using value_type = T;
  static constexpr bool commutative = true;
  SOAC_HD static constexpr T identity() { return T(0); }
  SOAC_HD constexpr T operator()(T a, T b) const { return a + b; }
};

template <class T>
struct minimum {
  using value_type = T;
  static constexpr bool commutative = true;
  SOAC_HD static constexpr T identity() { return cuda::std::numeric_limits<T>::max(); }
  SOAC_HD constexpr T operator()(T a, T b) const { return b < a ? b : a; }
};

template <class T>
struct maximum {
  using value_type = T;
  static constexpr bool commutative = true;
  SOAC_HD static constexpr T identity() { return cuda::std::numeric_limits<T>::lowest(); }
  SOAC_HD constexpr T operator()(T a, T b) const { return a < b ? b : a; }
};

template <class T>
struct bit_or {
  using value_type = T;
  static constexpr bool commutative = true;
  SOAC_HD static constexpr T identity() { return T(0); }
  SOAC_HD constexpr T operator()(T a, T b) const { return a | b; }
};

template <class T>
struct bit_and {
  using value_type = T;
  static constexpr bool commutative = true;
  SOAC_HD static constexpr T identity() { return T(~T(0)); }
  SOAC_HD constexpr T operator()(T a, T b) const { return a & b; }
};

// A value with its index (the element's position, or any tag that breaks ties).
template <class T, class I = std::int32_t>
struct indexed {
  T value;
  I index;
  friend SOAC_HD constexpr bool operator==(const indexed& a, const indexed& b) {
    return a.value == b.value && a.index == b.index;
  }
};

// Index of the largest value, the lower index on ties: a total order, so commutative. 8 bytes
// with 32-bit T and I, so hist's trait picks a 64-bit CAS; larger ones fall to the lock path.
template <class T, class I = std::int32_t>
struct arg_max {
  using value_type = indexed<T, I>;
  static constexpr bool commutative = true;
  // For hist's global model (hist_tuning::u): once a bin holds a large value most updates lose
  // and leave after one read, so threads sharing a sub-histogram barely contend. Large enough for
  // one sub-histogram at any RF (docs/tuning/hist.md), which also spares the RF inspector.
  static constexpr double hist_contention_tolerance = 1e9;
  SOAC_HD static constexpr value_type identity() {
    return {cuda::std::numeric_limits<T>::lowest(), cuda::std::numeric_limits<I>::max()};
  }
  SOAC_HD constexpr value_type operator()(const value_type& a, const value_type& b) const {
    if (a.value != b.value) return a.value > b.value ? a : b;
    return a.index < b.index ? a : b;
  }
};

}  // namespace soac

// The operator convention shared by hist, segreduce and scan. An operator is a type with
//   using value_type = ...;
//   SOAC_HD static value_type identity();                       // neutral element
//   SOAC_HD value_type operator()(value_type a, value_type b) const;   // associative
//   static constexpr bool commutative = true|false;             // optional; absent means false
// Primitives that reorder (hist always, segreduce when allowed) check soac::is_commutative_v.
#pragma once

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

}  // namespace soac

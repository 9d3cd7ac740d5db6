// The segmented scan as a plain scan over (flag, value) pairs: the lifted operator of the
// thesis (section 3.1). (fa, a) + (fb, b) = (fa | fb, fb ? b : a + b) is associative whenever +
// is, and needs no commutativity, so the unsegmented machinery (look-back included) carries
// segments unchanged. Shared by the CUDA and host backends so both have one semantics.
#pragma once

#include <type_traits>

#include "core/hd.hpp"

namespace soac::detail {

template <class T>
struct seg_value {
  T value;
  bool flag;  // a segment starts somewhere in the range this pair covers
};

// The scan element of the unsegmented (Seg = false) or segmented (Seg = true) scan.
template <bool Seg, class T>
using scan_value_t = std::conditional_t<Seg, seg_value<T>, T>;

template <bool Seg, class Op>
struct scan_operator;

template <class Op>
struct scan_operator<false, Op> {
  using T = typename Op::value_type;
  Op op;
  SOAC_HD T operator()(const T& a, const T& b) const { return op(a, b); }
  SOAC_HD static T identity() { return Op::identity(); }
  SOAC_HD static T make(const T& x, bool) { return x; }
  SOAC_HD static const T& value(const T& v) { return v; }
  SOAC_HD static bool flag(const T&) { return false; }
};

template <class Op>
struct scan_operator<true, Op> {
  using T = typename Op::value_type;
  using V = seg_value<T>;
  Op op;
  SOAC_HD V operator()(const V& a, const V& b) const { return {b.flag ? b.value : op(a.value, b.value), a.flag || b.flag}; }
  SOAC_HD static V identity() { return {Op::identity(), false}; }
  SOAC_HD static V make(const T& x, bool f) { return {x, f}; }
  SOAC_HD static const T& value(const V& v) { return v.value; }
  SOAC_HD static bool flag(const V& v) { return v.flag; }
};

// Scans `count` items in place starting from `prefix` (everything before them): the thread-local
// step of both backends. Exclusive output is the identity at a segment start.
template <bool Seg, bool Inclusive, class Op, class T>
SOAC_HD void scan_items(const scan_operator<Seg, Op>& sop, scan_value_t<Seg, T> running, T* items,
                        const bool* flags, int count) {
  for (int j = 0; j < count; ++j) {
    const auto v = sop.make(items[j], Seg ? flags[j] : false);
    if constexpr (Inclusive) {
      running = sop(running, v);
      items[j] = sop.value(running);
    } else {
      items[j] = (Seg && flags[j]) ? Op::identity() : sop.value(running);
      running = sop(running, v);
    }
  }
}

}  // namespace soac::detail

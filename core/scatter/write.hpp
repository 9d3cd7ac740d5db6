// What a scatter functor returns: one (index, value) pair per destination array.
#pragma once

#include <cstdint>
#include <type_traits>

#include <cuda/std/span>
#include <cuda/std/tuple>
#include <cuda/std/utility>

#include "core/hd.hpp"

namespace soac {

// dest[index] = value, ignored when index is outside [0, dest.size()).
template <class I, class V>
struct write_at {
  static_assert(std::is_integral_v<I>, "a write's index must be an integer");
  I index;
  V value;
};
template <class I, class V>
write_at(I, V) -> write_at<I, V>;

// Several writes, the k-th going to the k-th destination array.
template <class... W>
SOAC_HD constexpr cuda::std::tuple<W...> writes(W... w) {
  return cuda::std::tuple<W...>(w...);
}

namespace detail {

template <class W>
struct is_write : std::false_type {};
template <class I, class V>
struct is_write<write_at<I, V>> : std::true_type {};

template <class I>
SOAC_HD constexpr bool index_in_range(I index, std::size_t size) {
  if constexpr (std::is_signed_v<I>) {
    return index >= 0 && static_cast<std::uint64_t>(index) < size;
  } else {
    return static_cast<std::uint64_t>(index) < size;
  }
}

template <class I, class V, class T>
SOAC_HD void store(const write_at<I, V>& w, cuda::std::span<T> dest) {
  if (index_in_range(w.index, dest.size())) dest.data()[w.index] = static_cast<T>(w.value);
}

template <class Tuple, std::size_t... k, class... T>
SOAC_HD void store_each(const Tuple& ws, cuda::std::index_sequence<k...>, cuda::std::span<T>... dest) {
  (store(cuda::std::get<k>(ws), dest), ...);
}

// Applies what f(i) returned to the destination arrays.
template <class W, class... T>
SOAC_HD void apply_writes(const W& w, cuda::std::span<T>... dest) {
  if constexpr (is_write<W>::value) {
    static_assert(sizeof...(T) == 1, "the functor returns one soac::write_at but several destinations were given");
    (store(w, dest), ...);
  } else {
    static_assert(cuda::std::tuple_size<W>::value == sizeof...(T),
                  "the functor must return one soac::write_at per destination array (use soac::writes)");
    store_each(w, cuda::std::index_sequence_for<T...>{}, dest...);
  }
}

}  // namespace detail
}  // namespace soac

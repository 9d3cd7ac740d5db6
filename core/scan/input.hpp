// Input functors for arrays: f(i) = data[i]. The scan kernel recognises array_reader<unsigned
// char> flags and loads them 16 at a time.
#pragma once

#include <cstdint>
#include <type_traits>

#include "core/buffer.hpp"
#include "core/hd.hpp"

namespace soac {

template <class T>
struct array_reader {
  const T* data;
  SOAC_HD T operator()(std::int64_t i) const { return data[i]; }
};
template <class T>
array_reader<std::remove_const_t<T>> from_array(span<T> s) { return {s.data()}; }
template <class T>
array_reader<T> from_array(const buffer<T>& b) { return {b.data()}; }

}  // namespace soac

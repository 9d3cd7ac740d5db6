// Sequential reference for scatter (write): dest[indexes[i]] = values[i] for in-range indexes.
#pragma once

#include <algorithm>
#include <cstdint>
#include <span>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "validate/report.hpp"

namespace soac::validate {

template <class I>
bool in_range(I index, std::size_t size) {
  if constexpr (std::is_signed_v<I>) return index >= 0 && static_cast<std::uint64_t>(index) < size;
  else return static_cast<std::uint64_t>(index) < size;
}

// The reference itself, in index order (the last of duplicate writes wins here; scatter leaves
// the winner unspecified, which check_scatter accounts for).
template <class I, class T>
void scatter_reference(std::span<T> dest, std::span<const I> indexes, std::span<const T> values) {
  for (std::size_t i = 0; i < indexes.size(); ++i)
    if (in_range(indexes[i], dest.size())) dest[static_cast<std::size_t>(indexes[i])] = values[i];
}

// Checks `result` against `original` updated by the writes. An element written more than once
// may hold any of the values written to it; an element never written must be unchanged.
template <class I, class T>
report check_scatter(std::span<const T> original, std::span<const I> indexes, std::span<const T> values,
                     std::span<const T> result) {
  report r;
  r.checked = static_cast<std::int64_t>(result.size());
  if (result.size() != original.size()) {
    r.mismatch("result has " + std::to_string(result.size()) + " elements, the destination " +
               std::to_string(original.size()));
    return r;
  }
  std::vector<std::pair<std::uint64_t, T>> writes;
  writes.reserve(indexes.size());
  for (std::size_t i = 0; i < indexes.size(); ++i)
    if (in_range(indexes[i], original.size())) writes.emplace_back(static_cast<std::uint64_t>(indexes[i]), values[i]);
  std::stable_sort(writes.begin(), writes.end(), [](auto& a, auto& b) { return a.first < b.first; });
  std::size_t w = 0;
  for (std::size_t j = 0; j < original.size(); ++j) {
    const std::size_t first = w;
    while (w < writes.size() && writes[w].first == j) ++w;
    if (first == w) {
      if (!(result[j] == original[j]))
        r.mismatch("element " + std::to_string(j) + " was not written but changed from " + std::to_string(original[j]) +
                   " to " + std::to_string(result[j]));
    } else {
      bool any = false;
      for (std::size_t k = first; k < w && !any; ++k) any = result[j] == writes[k].second;
      if (!any)
        r.mismatch("element " + std::to_string(j) + " is " + std::to_string(result[j]) + ", expected " +
                   std::to_string(writes[first].second) +
                   (w - first > 1 ? " or another of its " + std::to_string(w - first) + " writes" : ""));
    }
  }
  return r;
}

}  // namespace soac::validate

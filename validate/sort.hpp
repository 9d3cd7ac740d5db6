// Sequential references for radix sort, filter and partition.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <numeric>
#include <span>
#include <string>
#include <vector>

#include "core/sort/keys.hpp"
#include "validate/report.hpp"

namespace soac::validate {

// The permutation a stable ascending sort applies (key order of core/sort/keys.hpp).
template <class K>
std::vector<std::int64_t> stable_sort_order(std::span<const K> keys) {
  std::vector<std::int64_t> order(keys.size());
  std::iota(order.begin(), order.end(), std::int64_t{0});
  std::stable_sort(order.begin(), order.end(), [&](std::int64_t a, std::int64_t b) {
    return encoded_bits(keys[std::size_t(a)]) < encoded_bits(keys[std::size_t(b)]);
  });
  return order;
}

template <class T>
bool same_bits(const T& a, const T& b) {
  return std::memcmp(&a, &b, sizeof(T)) == 0;
}

// Checks sorted keys (and, when given, values: stability) bit for bit against the reference.
template <class K, class V = std::uint32_t>
report check_sort(std::span<const K> keys, std::span<const K> sorted_keys, std::span<const V> values = {},
                  std::span<const V> sorted_values = {}) {
  report r;
  r.checked = static_cast<std::int64_t>(keys.size());
  if (sorted_keys.size() != keys.size() || sorted_values.size() != values.size()) {
    r.mismatch("result has " + std::to_string(sorted_keys.size()) + " keys and " + std::to_string(sorted_values.size()) +
               " values, the input " + std::to_string(keys.size()) + " and " + std::to_string(values.size()));
    return r;
  }
  const auto order = stable_sort_order(keys);
  for (std::size_t i = 0; i < keys.size(); ++i) {
    const auto from = std::size_t(order[i]);
    if (!same_bits(sorted_keys[i], keys[from]))
      r.mismatch("position " + std::to_string(i) + ": key " + std::to_string(sorted_keys[i]) + ", expected " +
                 std::to_string(keys[from]));
    else if (!values.empty() && !same_bits(sorted_values[i], values[from]))
      r.mismatch("position " + std::to_string(i) + ": value " + std::to_string(sorted_values[i]) + ", expected " +
                 std::to_string(values[from]) + " (input position " + std::to_string(from) + "; stability)");
  }
  return r;
}

// Stable partition reference: selected elements in order, then the rest in order.
template <class T, class P>
std::vector<T> partition_reference(std::span<const T> in, P pred, std::int64_t& selected) {
  std::vector<T> out;
  out.reserve(in.size());
  for (std::size_t i = 0; i < in.size(); ++i)
    if (pred(std::int64_t(i))) out.push_back(in[i]);
  selected = static_cast<std::int64_t>(out.size());
  for (std::size_t i = 0; i < in.size(); ++i)
    if (!pred(std::int64_t(i))) out.push_back(in[i]);
  return out;
}

}  // namespace soac::validate

// Sequential reference for a histogram of a file's elements (the `stream` app): bin x % bins
// counted once per element, block by block so that files of any size can be checked.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace soac::validate {

template <class T>
void count_values(std::vector<std::uint64_t>& histo, std::span<const T> values) {
  const std::uint64_t bins = histo.size();
  for (const T x : values) ++histo[std::uint64_t(x) % bins];
}

}  // namespace soac::validate

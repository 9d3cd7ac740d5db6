// Whether the int32 sums an app forms from user data fit int32: host arithmetic would overflow
// (undefined behaviour) where the GPU wraps, so the apps refuse such data with an input error.
#pragma once

#include <climits>
#include <cstdint>

namespace soac::apps {

// Every sum of a run of consecutive values among v[0, n) (what a scan or a maximum subarray sum
// forms, in any grouping): each is a difference of two prefix sums.
inline bool consecutive_sums_fit_int32(const std::int32_t* v, std::int64_t n) {
  std::int64_t prefix = 0, lowest = 0, highest = 0;  // prefix sums so far, the empty one included
  for (std::int64_t j = 0; j < n; ++j) {
    prefix += v[j];
    if (prefix - lowest > INT32_MAX || prefix - highest < INT32_MIN) return false;
    lowest = prefix < lowest ? prefix : lowest;
    highest = prefix > highest ? prefix : highest;
  }
  return true;
}

// Every sum of any subset of v[0, n) (what a parallel reduction may form): the positive and the
// negative values each sum within int32.
inline bool any_sums_fit_int32(const std::int32_t* v, std::int64_t n) {
  std::int64_t positive = 0, negative = 0;
  for (std::int64_t j = 0; j < n; ++j) (v[j] > 0 ? positive : negative) += v[j];
  return positive <= INT32_MAX && negative >= INT32_MIN;
}

}  // namespace soac::apps

// How C's atof and the scanf family read a number (glibc, "C" locale), for the readers that must
// read an original program's files exactly as it does: the longest prefix that converts, and
// nothing when none does (atof then gives 0; fscanf stops, leaving its variable as it was).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace soac::datasets {

template <class T>
struct c_prefix {
  T value{};
  std::size_t length = 0;  // characters converted; 0: no number at the start of the text
};

// strtod's (and atof's) conversion of the start of `text`, which must not start with white space.
c_prefix<double> strtod_prefix(std::string_view text);
// strtof's, which is what fscanf's %f stores (one rounding, to float).
c_prefix<float> strtof_prefix(std::string_view text);
// fscanf's %d and %ld: an optional sign and decimal digits. A value beyond 64 bits saturates
// (the readers refuse it as out of range).
c_prefix<std::int64_t> decimal_prefix(std::string_view text);

}  // namespace soac::datasets

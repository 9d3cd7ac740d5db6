#include "datasets/c_numbers.hpp"

#include <cerrno>
#include <cstdlib>
#include <limits>
#include <string>

namespace soac::datasets {

namespace {
// strtod and strtof need a terminated string; tokens are views into a larger text.
template <class T, class Convert>
c_prefix<T> convert_prefix(std::string_view text, Convert convert) {
  char small[64];
  std::string large;
  const char* s = small;
  if (text.size() < sizeof small) {
    text.copy(small, text.size());
    small[text.size()] = '\0';
  } else {
    large.assign(text);
    s = large.c_str();
  }
  char* end = nullptr;
  const int saved = errno;
  const T v = convert(s, &end);
  errno = saved;  // ERANGE is not an error to atof or scanf: they return the rounded value
  return {v, std::size_t(end - s)};
}
}  // namespace

c_prefix<double> strtod_prefix(std::string_view text) {
  return convert_prefix<double>(text, [](const char* s, char** end) { return std::strtod(s, end); });
}

c_prefix<float> strtof_prefix(std::string_view text) {
  return convert_prefix<float>(text, [](const char* s, char** end) { return std::strtof(s, end); });
}

c_prefix<std::int64_t> decimal_prefix(std::string_view text) {
  std::size_t i = 0;
  const bool negative = i < text.size() && text[i] == '-';
  if (i < text.size() && (text[i] == '-' || text[i] == '+')) ++i;
  const std::size_t digits_from = i;
  std::uint64_t magnitude = 0;
  bool saturated = false;
  for (; i < text.size() && text[i] >= '0' && text[i] <= '9'; ++i) {
    const unsigned digit = unsigned(text[i] - '0');
    if (magnitude > (std::numeric_limits<std::uint64_t>::max() - digit) / 10) saturated = true;
    else magnitude = magnitude * 10 + digit;
  }
  if (i == digits_from) return {};
  constexpr std::uint64_t max = std::uint64_t(std::numeric_limits<std::int64_t>::max());
  if (saturated || magnitude > max) magnitude = max;
  return {negative ? -std::int64_t(magnitude) : std::int64_t(magnitude), i};
}

}  // namespace soac::datasets

// The outcome of comparing a result with a sequential reference.
#pragma once

#include <cmath>
#include <cstdint>
#include <sstream>
#include <string>
#include <vector>

namespace soac::validate {

struct report {
  std::int64_t checked = 0;
  std::int64_t mismatches = 0;
  std::vector<std::string> examples;  // the first few mismatches, described

  bool ok() const { return mismatches == 0; }

  void mismatch(std::string what) {
    if (examples.size() < max_examples) examples.push_back(std::move(what));
    ++mismatches;
  }
  // "12 of 1000000 elements differ" + the examples on following lines.
  std::string describe(const std::string& what_is_checked) const {
    std::ostringstream s;
    if (ok()) s << "all " << checked << " " << what_is_checked << " match the sequential reference";
    else s << mismatches << " of " << checked << " " << what_is_checked << " differ from the sequential reference";
    for (const auto& e : examples) s << "\n  " << e;
    if (mismatches > std::int64_t(examples.size())) s << "\n  ...";
    return s.str();
  }
  static constexpr std::size_t max_examples = 10;
};

// A non-finite value that matches the reference's: both NaN, or the same infinity. Inputs out of a
// formula's domain (a NaN price, a negative time) give the same non-finite values in the app and
// in the reference; a tolerance test (|got - expected| <= tol) would call that a mismatch.
inline bool same_non_finite(double got, double expected) {
  if (std::isnan(got) || std::isnan(expected)) return std::isnan(got) && std::isnan(expected);
  return std::isinf(got) && got == expected;
}

}  // namespace soac::validate

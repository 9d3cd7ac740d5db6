// Generator of the scatter microbenchmark's data (write-construct report, Fig 15): a destination
// of n random int32, and k writes whose indexes are distinct and uniformly random in [0, n),
// optionally with a fraction placed outside [0, n) to exercise the "ignored" rule.
#pragma once

#include <cstdint>
#include <vector>

namespace soac::datasets {

struct scatter_spec {
  std::int64_t n = 0;          // destination length
  std::int64_t k = 0;          // number of writes (at most n: in-range indexes are distinct)
  double out_of_range = 0.0;   // fraction of writes given an index outside [0, n)
  std::uint64_t seed = 1;
};

template <class Index>
struct scatter_data {
  std::vector<std::int32_t> dest;
  std::vector<Index> indexes;
  std::vector<std::int32_t> values;
};

// True when the indexes of `spec` (out-of-range ones included) need 64 bits.
bool scatter_needs_int64(const scatter_spec& spec);

// Deterministic in spec (seed included), whatever the thread count. Throws usage_error on a bad spec.
template <class Index>
scatter_data<Index> generate_scatter(const scatter_spec& spec);

extern template scatter_data<std::int32_t> generate_scatter(const scatter_spec&);
extern template scatter_data<std::int64_t> generate_scatter(const scatter_spec&);

}  // namespace soac::datasets

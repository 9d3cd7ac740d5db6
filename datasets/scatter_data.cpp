#include "datasets/scatter_data.hpp"

#include <limits>
#include <span>
#include <string>

#include "core/error.hpp"
#include "datasets/random.hpp"

namespace soac::datasets {

namespace {
// Streams of the counter-based generator, one per array, so arrays are independent.
enum stream : std::uint64_t { dest_stream = 1, value_stream = 2, out_of_range_stream = 3 };
// Out-of-range indexes land in [-spread, -1] or [n, n + spread).
constexpr std::int64_t spread = 1000;
}  // namespace

bool scatter_needs_int64(const scatter_spec& spec) {
  return spec.n + spread > std::numeric_limits<std::int32_t>::max();
}

template <class Index>
scatter_data<Index> generate_scatter(const scatter_spec& spec) {
  if (spec.n < 0 || spec.k < 0) throw usage_error("scatter: n and k must not be negative");
  if (spec.k > spec.n)
    throw usage_error("scatter: k = " + std::to_string(spec.k) + " writes cannot have distinct indexes in a destination of n = " +
                      std::to_string(spec.n));
  if (!(spec.out_of_range >= 0.0 && spec.out_of_range <= 1.0))
    throw usage_error("scatter: out_of_range must be a fraction in [0, 1]");
  if (sizeof(Index) < 8 && scatter_needs_int64(spec))
    throw usage_error("scatter: n = " + std::to_string(spec.n) + " needs 64-bit indexes");

  scatter_data<Index> d;
  d.dest.resize(static_cast<std::size_t>(spec.n));
  d.indexes.resize(static_cast<std::size_t>(spec.k));
  d.values.resize(static_cast<std::size_t>(spec.k));
  constexpr auto lo = std::numeric_limits<std::int32_t>::min(), hi = std::numeric_limits<std::int32_t>::max();
  fill_random_int<std::int32_t>(d.dest, lo, hi, spec.seed, dest_stream);
  fill_random_int<std::int32_t>(d.values, lo, hi, spec.seed, value_stream);
  fill_distinct_indices<Index>(d.indexes, static_cast<std::uint64_t>(spec.n), spec.seed);

  if (spec.out_of_range > 0) {
    const std::uint64_t key = stream_key(spec.seed, out_of_range_stream);
    const auto k = static_cast<std::int64_t>(spec.k);
    const std::int64_t n = spec.n;
    Index* idx = d.indexes.data();
#pragma omp parallel for schedule(static)
    for (std::int64_t i = 0; i < k; ++i) {
      const std::uint64_t w = keyed_word(key, static_cast<std::uint64_t>(i));
      if (double(w >> 11) * 0x1.0p-53 < spec.out_of_range) {
        const auto offset = static_cast<std::int64_t>((w & 0xffff) % spread);
        idx[i] = static_cast<Index>(w & 0x10000 ? -1 - offset : n + offset);
      }
    }
  }
  return d;
}

template scatter_data<std::int32_t> generate_scatter(const scatter_spec&);
template scatter_data<std::int64_t> generate_scatter(const scatter_spec&);

}  // namespace soac::datasets

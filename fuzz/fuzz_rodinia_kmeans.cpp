// Rodinia k-means' point files on any bytes, text or binary (the first byte's low bit picks);
// accepted points must write and read back equal in the same format.
#include <cstdint>

#include "datasets/rodinia_kmeans.hpp"
#include "fuzz/common.hpp"

using namespace soac;
using datasets::kmeans_points;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const bool binary = data[0] & 1;
  const auto write = binary ? datasets::write_rodinia_kmeans_binary : datasets::write_rodinia_kmeans_text;
  fuzz::check_round_trip(
      "kmeans", "points", fuzz::as_text(data + 1, size - 1),
      [binary](const std::filesystem::path& path) {
        return binary ? datasets::read_rodinia_kmeans_binary(path) : datasets::read_rodinia_kmeans_text(path);
      },
      [&](const kmeans_points& p, const std::filesystem::path& path) {
        if (static_cast<std::int64_t>(p.features.size()) != p.n * p.d) std::abort();
        return write(path, p.n, p.d, p.features), true;
      },
      [](const kmeans_points& a, const kmeans_points& b) { return a.n == b.n && a.d == b.d && a.features == b.features; });
  return 0;
}

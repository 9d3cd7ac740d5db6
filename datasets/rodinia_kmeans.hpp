// Rodinia k-means' input files, so users can bring theirs (`soac run kmeans -i FILE --format F`)
// and run Rodinia's own program on generated data (`soac gen kmeans --format F`):
//   text ("rodinia"):       one point per line, an integer id then the point's d features,
//                           separated by blanks; d is what the first line holds. Blank lines are
//                           skipped. Rodinia ignores the id, and so does soac.
//   binary ("rodinia-bin"): int32 n, int32 d, then n * d float32, row-major, little-endian.
// Features must be finite (a NaN or infinity has no nearest centroid). Every problem is an
// input_error naming the file (and for text the line and column).
#pragma once

#include <cstdint>
#include <filesystem>
#include <span>
#include <vector>

namespace soac::datasets {

struct kmeans_points {
  std::int64_t n = 0, d = 0;
  std::vector<float> features;  // n * d, row-major
};

kmeans_points read_rodinia_kmeans_text(const std::filesystem::path& path);
kmeans_points read_rodinia_kmeans_binary(const std::filesystem::path& path);

// Ids are 1-based; features are written with 9 significant digits, which read back (as a float,
// or as Rodinia does, a double rounded to float) to the same float.
void write_rodinia_kmeans_text(const std::filesystem::path& path, std::int64_t n, std::int64_t d,
                               std::span<const float> features);
void write_rodinia_kmeans_binary(const std::filesystem::path& path, std::int64_t n, std::int64_t d,
                                 std::span<const float> features);

}  // namespace soac::datasets

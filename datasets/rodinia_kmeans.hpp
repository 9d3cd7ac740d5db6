// Rodinia k-means' input files, so users can bring theirs (`soac run kmeans -i FILE --format F`)
// and run Rodinia's own program on generated data (`soac gen kmeans --format F`). Both are read as
// Rodinia's kmeans.c reads them, so every file it runs on runs here with the same numbers:
//   text ("rodinia"):       a point per line: a first token (the id, never read), then features
//                           separated by blanks or commas; d is the number of tokens after the id
//                           on the first line that is not blank. Each later line gives its first d
//                           tokens to atof (a word reads as 0, "1.5x" as 1.5; the double rounded to
//                           float) and the rest of the line is ignored. Blank lines are skipped.
//   binary ("rodinia-bin"): int32 n, int32 d, then n * d float32, row-major, little-endian; bytes
//                           after them are not read.
// What Rodinia reads leniently (words, surplus tokens or bytes, lines longer than its 1,024-byte
// buffer, which it would split) is counted in `lenient`, or refused when it is strict. Refused
// always, as input_errors naming the file (and line and column): what Rodinia cannot run (a line
// with fewer than d features, a line of only a carriage return, no points, a short binary file)
// and features that are not finite floats (they have no nearest centroid).
#pragma once

#include <cstdint>
#include <filesystem>
#include <span>
#include <vector>

#include "datasets/lenient.hpp"

namespace soac::datasets {

struct kmeans_points {
  std::int64_t n = 0, d = 0;
  std::vector<float> features;  // n * d, row-major
};

kmeans_points read_rodinia_kmeans_text(const std::filesystem::path& path, leniency& lenient);
kmeans_points read_rodinia_kmeans_binary(const std::filesystem::path& path, leniency& lenient);
// Lenient reading whose notes are dropped (fuzzers, tests).
kmeans_points read_rodinia_kmeans_text(const std::filesystem::path& path);
kmeans_points read_rodinia_kmeans_binary(const std::filesystem::path& path);

// Reading in parts, for ranks in separate processes (none reads the whole file):
// text: the feature count d (the first point's, read from the file's start up to that point), then
// each process the points whose lines start in its bytes [begin, end) of the file
// (rodinia_kmeans_text_bytes), read as above; errors name the file's line (counted then).
std::int64_t rodinia_kmeans_text_features(const std::filesystem::path& path);
std::uint64_t rodinia_kmeans_text_bytes(const std::filesystem::path& path);
kmeans_points read_rodinia_kmeans_text_part(const std::filesystem::path& path, std::uint64_t begin, std::uint64_t end, std::int64_t d,
                                            leniency& lenient);
// binary: the header (checked against the file's size), then any rows by offset into `out`
// (count x d floats), refusing features that are not finite; the bytes after the features are
// noted in `lenient` once (by whoever calls note_rodinia_binary_tail).
inline constexpr std::uint64_t rodinia_binary_header_bytes = 8;
struct rodinia_binary_shape {
  std::int64_t n = 0, d = 0;
  std::uint64_t extra_bytes = 0;  // after the features
};
rodinia_binary_shape read_rodinia_kmeans_binary_shape(const std::filesystem::path& path);
void read_rodinia_kmeans_binary_rows(const std::filesystem::path& path, const rodinia_binary_shape& shape, std::int64_t first,
                                     std::int64_t count, float* out);
void note_rodinia_binary_tail(const std::filesystem::path& path, const rodinia_binary_shape& shape, leniency& lenient);

// Ids are 1-based; features are written with 9 significant digits, which read back (as a float,
// or as Rodinia does, a double rounded to float) to the same float.
void write_rodinia_kmeans_text(const std::filesystem::path& path, std::int64_t n, std::int64_t d,
                               std::span<const float> features);
void write_rodinia_kmeans_binary(const std::filesystem::path& path, std::int64_t n, std::int64_t d,
                                 std::span<const float> features);

// The centroids Rodinia's kmeans prints with -o ("================= Centroid Coordinates
// =================", then "I: x x ..." per centroid, each " %.2f"), read from its output (any other
// lines, such as "iterated 37 times", are skipped). input_error for a listing whose centroids are
// not numbered 0, 1, ... in order, of different lengths, or none at all.
struct kmeans_centroids {
  std::int64_t k = 0, d = 0;
  std::vector<double> values;  // k * d, as printed
};
kmeans_centroids read_rodinia_centroids(const std::filesystem::path& path);

}  // namespace soac::datasets

#include "datasets/rodinia_kmeans.hpp"

#include <charconv>
#include <cmath>
#include <limits>
#include <string>

#include "core/error.hpp"
#include "datasets/binary_file.hpp"
#include "datasets/text_reader.hpp"

namespace soac::datasets {

namespace {
// Memberships are int32 and Rodinia's header is int32.
constexpr std::int64_t max_points = std::numeric_limits<std::int32_t>::max();

void check_shape(std::int64_t n, std::int64_t d, std::span<const float> features) {
  if (n < 1 || d < 1 || n > max_points || d > max_points || static_cast<std::uint64_t>(n) * std::uint64_t(d) != features.size())
    throw usage_error("rodinia k-means writer: " + std::to_string(n) + " x " + std::to_string(d) + " points do not match " +
                      std::to_string(features.size()) + " features");
}
}  // namespace

kmeans_points read_rodinia_kmeans_text(const std::filesystem::path& path) {
  text_reader in(path);
  kmeans_points pts;
  if (in.at_end()) in.fail("the file holds no points (each line: an id, then the features)");
  while (!in.at_end()) {
    if (pts.n == max_points) in.fail("more than " + std::to_string(max_points) + " points");
    in.read_int("the point id", std::numeric_limits<std::int64_t>::min(), std::numeric_limits<std::int64_t>::max());
    std::int64_t j = 0;
    // The first line fixes d; later lines stop at d so that end_line reports any extra token.
    while ((pts.n == 0 || j < pts.d) && in.next_on_line()) {
      const float v = in.read_float("a feature");
      if (!std::isfinite(v)) in.fail_at_token("feature " + std::to_string(j + 1) + " of point " + std::to_string(pts.n + 1) + " is not finite");
      pts.features.push_back(v);
      ++j;
    }
    if (pts.n == 0) {
      if (j == 0) in.fail("the first point has no features (each line: an id, then the features)");
      pts.d = j;
    } else if (j < pts.d) {
      in.fail("point " + std::to_string(pts.n + 1) + " has " + std::to_string(j) + " features, the first point has " +
              std::to_string(pts.d));
    }
    in.end_line("the " + std::to_string(pts.d) + " features of point " + std::to_string(pts.n + 1));
    ++pts.n;
  }
  return pts;
}

kmeans_points read_rodinia_kmeans_binary(const std::filesystem::path& path) {
  binary_reader in(path);
  kmeans_points pts;
  pts.n = in.read<std::int32_t>("the point count (int32)");
  pts.d = in.read<std::int32_t>("the feature count (int32)");
  if (pts.n < 1) in.fail("the header's point count is " + std::to_string(pts.n) + " (at least 1)");
  if (pts.d < 1) in.fail("the header's feature count is " + std::to_string(pts.d) + " (at least 1)");
  pts.features = in.read_array<float>(std::uint64_t(pts.n) * std::uint64_t(pts.d), "the n x d float32 features");
  in.expect_end("the features");
  for (std::size_t i = 0; i < pts.features.size(); ++i)
    if (!std::isfinite(pts.features[i]))
      in.fail("feature " + std::to_string(i % std::size_t(pts.d) + 1) + " of point " + std::to_string(i / std::size_t(pts.d) + 1) +
              " is not finite");
  return pts;
}

void write_rodinia_kmeans_text(const std::filesystem::path& path, std::int64_t n, std::int64_t d,
                               std::span<const float> features) {
  check_shape(n, d, features);
  std::string out;
  out.reserve(features.size() * 12 + std::size_t(n) * 8);
  char buf[32];
  for (std::int64_t p = 0; p < n; ++p) {
    out += std::to_string(p + 1);
    for (std::int64_t j = 0; j < d; ++j) {
      // 9 significant digits identify a float, also through Rodinia's atof (double, then float).
      const auto r = std::to_chars(buf, buf + sizeof buf, features[std::size_t(p * d + j)], std::chars_format::general, 9);
      out += ' ';
      out.append(buf, r.ptr);
    }
    out += '\n';
  }
  write_file_atomically(path, out);
}

void write_rodinia_kmeans_binary(const std::filesystem::path& path, std::int64_t n, std::int64_t d,
                                 std::span<const float> features) {
  check_shape(n, d, features);
  std::string out;
  out.reserve(8 + features.size_bytes());
  append_bytes(out, std::int32_t(n));
  append_bytes(out, std::int32_t(d));
  append_bytes(out, features);
  write_file_atomically(path, out);
}

}  // namespace soac::datasets

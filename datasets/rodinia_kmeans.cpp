#include "datasets/rodinia_kmeans.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>
#include <optional>
#include <string>

#include "core/error.hpp"
#include "datasets/binary_file.hpp"
#include "datasets/c_numbers.hpp"
#include "datasets/text_reader.hpp"

namespace soac::datasets {

namespace {
std::string file_line(const std::filesystem::path& path, std::int64_t line) { return path.string() + ":" + std::to_string(line) + ": "; }

// Memberships are int32 and Rodinia's header is int32.
constexpr std::int64_t max_points = std::numeric_limits<std::int32_t>::max();
// Rodinia's `char line[1024]`: fgets splits longer lines.
constexpr std::size_t rodinia_line_buffer = 1024;

void check_shape(std::int64_t n, std::int64_t d, std::span<const float> features) {
  if (n < 1 || d < 1 || n > max_points || d > max_points || static_cast<std::uint64_t>(n) * std::uint64_t(d) != features.size())
    throw usage_error("rodinia k-means writer: " + std::to_string(n) + " x " + std::to_string(d) + " points do not match " +
                      std::to_string(features.size()) + " features");
}
}  // namespace

namespace {
// Rodinia's strtok delimiters: the id ends at a blank, a feature also at a comma.
constexpr std::string_view id_ends = " \t", feature_ends = " ,\t";

bool is_point_line(std::string_view line) { return line.find_first_not_of(id_ends) != std::string_view::npos; }

// The points of `text` (whole lines). `d`: the file's feature count, or 0 where the first point
// fixes it. `lines_before()`: the file's lines before `text`, asked only for a message (a part of
// the file counts them then). Point numbers in messages are the file's only when `whole`.
template <class LinesBefore>
kmeans_points parse_points(std::string_view text, const std::string& file, LinesBefore lines_before, std::int64_t d, bool whole,
                           leniency& lenient) {
  kmeans_points pts;
  pts.d = d;
  std::int64_t first_line = 0;
  std::optional<std::int64_t> base;
  auto line_of = [&](std::int64_t local) {
    if (!base) base = lines_before();
    return *base + local;
  };
  auto point_name = [&] { return whole ? "point " + std::to_string(pts.n + 1) : std::string("the point on this line"); };
  // A carriage return is no delimiter to Rodinia: it ends the last token of a CRLF line (which
  // atof reads up to it), or is a token of its own after a blank (a point of a blank line).
  for_each_line(text, false, [&](std::int64_t local_line, std::string_view line) {
    auto where = [&](std::size_t column) {
      return file + ":" + std::to_string(line_of(local_line)) + ":" + std::to_string(column + 1) + ": ";
    };
    std::size_t at = line.find_first_not_of(id_ends);
    if (at == std::string_view::npos) return;  // blank
    if (pts.n == max_points) throw input_error(where(at) + "more than " + std::to_string(max_points) + " points");
    at = std::min(line.find_first_of(id_ends, at), line.size());  // Rodinia ignores the id
    if (line.size() >= rodinia_line_buffer)
      lenient.note(local_line, where(0) + "a line of " + std::to_string(line.size()) + " characters, which Rodinia's reader (fgets into " +
                                   std::to_string(rodinia_line_buffer) + " bytes) would split into several points; soac reads it whole");
    std::int64_t j = 0;
    // The first point fixes d (every token after its id); later points read d and ignore the rest.
    while (pts.d == 0 || j < pts.d) {
      at = line.find_first_not_of(feature_ends, at);
      if (at == std::string_view::npos) break;
      const std::size_t end = std::min(line.find_first_of(feature_ends, at), line.size());
      const std::string_view token = line.substr(at, end - at);
      const auto number = strtod_prefix(token);
      const bool line_end_cr = end == line.size() && number.length > 0 && number.length + 1 == token.size() && token.back() == '\r';
      if (number.length != token.size() && !line_end_cr)
        lenient.note(local_line, where(at) + quoted(token) +
                                     (number.length == 0 ? " is not a number: read as 0"
                                                         : " is read as its leading number " + quoted(token.substr(0, number.length))) +
                                     ", as Rodinia's atof reads it");
      const float v = float(number.value);  // Rodinia: buf[i] = atof(...), a double rounded to float
      if (!std::isfinite(v))
        throw input_error(where(at) + "feature " + std::to_string(j + 1) + " of " + point_name() + ", " + quoted(token) +
                          ", is not finite as a float (a point needs finite features to have a nearest centroid)");
      pts.features.push_back(v);
      ++j;
      at = end;
    }
    if (pts.d == 0) {
      if (j == 0) throw input_error(where(line.size()) + "the first point has no features (each line: an id, then the features)");
      pts.d = j;
      first_line = line_of(local_line);
    } else if (j < pts.d) {
      throw input_error(where(line.size()) + point_name() + " has " + std::to_string(j) + " features, the first point" +
                        (first_line ? " (line " + std::to_string(first_line) + ")" : std::string()) + " has " + std::to_string(pts.d) +
                        " (Rodinia's reader would fail on this line)");
    } else if (const std::size_t more = line.find_first_not_of(feature_ends, at); more != std::string_view::npos) {
      lenient.note(local_line, where(more) + "tokens after the " + std::to_string(pts.d) + " features of " + point_name() +
                                   " are ignored, as Rodinia reads d features per line");
    }
    ++pts.n;
  });
  return pts;
}

std::string no_points(const std::string& file) { return file + ": the file holds no points (each line: an id, then the features)"; }
}  // namespace

kmeans_points read_rodinia_kmeans_text(const std::filesystem::path& path, leniency& lenient) {
  const std::string text = read_text_file(path);
  auto pts = parse_points(text, path.string(), [] { return std::int64_t{0}; }, 0, true, lenient);
  if (pts.n == 0) throw input_error(no_points(path.string()));
  return pts;
}

std::int64_t rodinia_kmeans_text_features(const std::filesystem::path& path) {
  const std::string head = read_text_until_line(path, is_point_line);
  leniency ignored;  // the part holding the first point notes what it reads leniently
  const auto pts = parse_points(head, path.string(), [] { return std::int64_t{0}; }, 0, true, ignored);
  if (pts.n == 0) throw input_error(no_points(path.string()));
  return pts.d;
}

kmeans_points read_rodinia_kmeans_text_part(const std::filesystem::path& path, std::uint64_t begin, std::uint64_t end, std::int64_t d,
                                            leniency& lenient) {
  const text_part part = read_text_lines(path, begin, end);
  return parse_points(part.text, path.string(), [&] { return count_lines_before(path, part.offset); }, d, false, lenient);
}

std::uint64_t rodinia_kmeans_text_bytes(const std::filesystem::path& path) { return regular_file_size(path); }

rodinia_binary_shape read_rodinia_kmeans_binary_shape(const std::filesystem::path& path) {
  binary_reader in(path);
  rodinia_binary_shape s;
  s.n = in.read<std::int32_t>("the point count (int32)");
  s.d = in.read<std::int32_t>("the feature count (int32)");
  if (s.n < 1) in.fail("the header's point count is " + std::to_string(s.n) + " (at least 1)");
  if (s.d < 1) in.fail("the header's feature count is " + std::to_string(s.d) + " (at least 1)");
  in.require(std::uint64_t(s.n) * std::uint64_t(s.d), sizeof(float), "the n x d float32 features");
  s.extra_bytes = in.remaining() - std::uint64_t(s.n) * std::uint64_t(s.d) * sizeof(float);
  return s;
}

void read_rodinia_kmeans_binary_rows(const std::filesystem::path& path, const rodinia_binary_shape& shape, std::int64_t first,
                                     std::int64_t count, float* out) {
  binary_reader in(path);
  in.seek(rodinia_binary_header_bytes + std::uint64_t(first) * std::uint64_t(shape.d) * sizeof(float));
  const std::uint64_t values = std::uint64_t(count) * std::uint64_t(shape.d);
  in.read_into(out, values * sizeof(float), "the n x d float32 features");
  for (std::uint64_t i = 0; i < values; ++i)
    if (!std::isfinite(out[i]))
      in.fail("feature " + std::to_string(i % std::uint64_t(shape.d) + 1) + " of point " +
              std::to_string(std::uint64_t(first) + i / std::uint64_t(shape.d) + 1) +
              " is not finite (a point needs finite features to have a nearest centroid)");
}

void note_rodinia_binary_tail(const std::filesystem::path& path, const rodinia_binary_shape& shape, leniency& lenient) {
  if (shape.extra_bytes > 0)
    lenient.note(1, path.string() + ": " + std::to_string(shape.extra_bytes) + " bytes after the " + std::to_string(shape.n) + " x " +
                        std::to_string(shape.d) + " features are not read, as Rodinia reads n x d floats and stops");
}

kmeans_points read_rodinia_kmeans_binary(const std::filesystem::path& path, leniency& lenient) {
  const auto shape = read_rodinia_kmeans_binary_shape(path);
  note_rodinia_binary_tail(path, shape, lenient);
  kmeans_points pts;
  pts.n = shape.n, pts.d = shape.d;
  pts.features.resize(static_cast<std::size_t>(pts.n * pts.d));
  read_rodinia_kmeans_binary_rows(path, shape, 0, pts.n, pts.features.data());
  return pts;
}

kmeans_points read_rodinia_kmeans_text(const std::filesystem::path& path) {
  leniency lenient;
  return read_rodinia_kmeans_text(path, lenient);
}

kmeans_points read_rodinia_kmeans_binary(const std::filesystem::path& path) {
  leniency lenient;
  return read_rodinia_kmeans_binary(path, lenient);
}

kmeans_centroids read_rodinia_centroids(const std::filesystem::path& path) {
  const std::string text = read_text_file(path);
  kmeans_centroids c;
  for_each_line(text, true, [&](std::int64_t line_no, std::string_view line) {
    // A centroid line: digits, a colon, then numbers; anything else is another line of the output.
    const std::size_t colon = line.find(':');
    if (colon == 0 || colon == std::string_view::npos || line.find_first_not_of("0123456789") != colon) return;
    const auto where = file_line(path, line_no);
    std::int64_t index = 0;
    std::from_chars(line.data(), line.data() + colon, index);
    if (index != c.k)
      throw input_error(where + "centroid " + std::to_string(index) + " where centroid " + std::to_string(c.k) +
                        " comes next (Rodinia numbers them 0, 1, ...)");
    std::int64_t j = 0;
    for (std::size_t at = colon + 1;;) {
      at = line.find_first_not_of(" \t", at);
      if (at == std::string_view::npos) break;
      const std::size_t end = std::min(line.find_first_of(" \t", at), line.size());
      double v = 0;
      const auto r = std::from_chars(line.data() + at, line.data() + end, v);
      if (r.ec != std::errc{} || r.ptr != line.data() + end)
        throw input_error(where + "expected a coordinate of centroid " + std::to_string(index) + ", found " + quoted(line.substr(at, end - at)));
      c.values.push_back(v);
      ++j;
      at = end;
    }
    if (c.k == 0) c.d = j;
    if (j == 0 || j != c.d)
      throw input_error(where + "centroid " + std::to_string(index) + " has " + std::to_string(j) + " coordinates, centroid 0 has " +
                        std::to_string(c.d));
    ++c.k;
  });
  if (c.k == 0)
    throw input_error(path.string() + ": no centroid listing (Rodinia's kmeans prints one with -o: a line \"I: x x ...\" per centroid)");
  return c;
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

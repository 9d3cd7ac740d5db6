#include "datasets/parboil_tpacf.hpp"

#include <charconv>
#include <cmath>
#include <system_error>

#include "core/error.hpp"
#include "datasets/binary_file.hpp"
#include "datasets/text_reader.hpp"

namespace soac::datasets {

namespace fs = std::filesystem;

namespace {
// Parboil's dataset files, numbered from 1.
fs::path random_file(const fs::path& dir, std::int64_t k) { return dir / ("Randompnts." + std::to_string(k)); }
}  // namespace

sky_points read_parboil_points(const fs::path& path, std::int64_t count, std::string_view whose_count, leniency& lenient) {
  if (count < 0) throw usage_error("read_parboil_points: a negative point count");
  text_reader in(path);
  sky_points p;
  const auto at = [&](text_reader::position w) {
    return path.string() + ":" + std::to_string(w.line) + ":" + std::to_string(w.column) + ": ";
  };
  // Parboil's readdatafile: fscanf("%f %f") until `count` pairs are read or a pair cannot be.
  std::string stop;  // where that loop stops before the end of the file
  std::int64_t stop_line = 0;
  const auto stopped_at_token = [&] {
    stop_line = in.line();
    stop = at(in.here());  // before the token is read
    stop += quoted(in.read_token("a number")) + " is not a number";
  };
  while (count == 0 || std::int64_t(p.size()) < count) {
    float ra = 0, dec = 0;
    if (!in.try_scan_float(ra)) {
      if (!in.at_end()) stopped_at_token();
      break;
    }
    if (!std::isfinite(ra)) in.fail_at_token("ra (degrees) is not a finite number");
    const auto ra_at = in.token_position();
    if (!in.try_scan_float(dec)) {
      if (in.at_end()) stop_line = ra_at.line, stop = at(ra_at) + "the last number has no dec after it";
      else stopped_at_token();
      break;
    }
    if (!std::isfinite(dec)) in.fail_at_token("dec (degrees) is not a finite number");
    p.ra.push_back(ra);
    p.dec.push_back(dec);
  }
  const std::string points = std::to_string(p.size()) + (p.size() == 1 ? " point" : " points");
  if (count > 0 && std::int64_t(p.size()) < count)
    throw input_error((stop.empty() ? path.string() + ": holds " + points : stop + ": reading stops there after " + points) +
                      ", fewer than the " + std::to_string(count) + " " + std::string(whose_count));
  if (p.size() == 0) throw input_error(stop.empty() ? path.string() + ": holds no points" : stop + ": no point before it");
  if (count == 0 && !stop.empty())
    lenient.note(stop_line, stop + ": reading stops there, as Parboil's fscanf loop does, after " + points);
  return p;
}

sky_points read_parboil_points(const fs::path& path, std::int64_t count, std::string_view whose_count) {
  leniency lenient;
  return read_parboil_points(path, count, whose_count, lenient);
}

unit_vector parboil_unit_vector(float ra, float dec) {
  constexpr double d2r = M_PI / 180.0;  // Parboil's D2R
  const float rarad = float(d2r * ra), decrad = float(d2r * dec);
  // C's cos and sin take doubles (std::cos of a float would be the float function).
  const double ra_d = rarad, dec_d = decrad;
  const float cd = float(std::cos(dec_d));
  return {float(std::cos(ra_d) * cd), float(std::sin(ra_d) * cd), float(std::sin(dec_d))};
}

void write_parboil_points(const fs::path& path, std::span<const float> ra, std::span<const float> dec) {
  if (ra.size() != dec.size()) throw usage_error("write_parboil_points: ra and dec differ in length");
  std::string out;
  out.reserve(ra.size() * 24);
  char buf[32];
  // The shortest text that reads back as the same float.
  const auto put = [&](float v, char after) {
    out.append(buf, std::to_chars(buf, buf + sizeof buf, v).ptr);
    out += after;
  };
  for (std::size_t i = 0; i < ra.size(); ++i) {
    put(ra[i], ' ');
    put(dec[i], '\n');
  }
  write_file_atomically(path, out);
}

parboil_tpacf_files parboil_tpacf_folder(const fs::path& dir, std::int64_t randoms) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) throw input_error(dir.string() + ": not a folder (expected Parboil's tpacf dataset folder)");
  parboil_tpacf_files files;
  files.data = dir / "Datapnts.1";
  if (!fs::exists(files.data, ec)) throw input_error(files.data.string() + ": no such file (the data points)");
  // Found files are counted up to the most random sets tpacf takes; never an endless scan.
  constexpr std::int64_t most_randoms = 10'000;
  if (randoms == 0) {
    while (randoms <= most_randoms && fs::exists(random_file(dir, randoms + 1), ec)) ++randoms;
    // A gap (Randompnts.2 missing, .3 there) would silently drop every set after it.
    for (std::int64_t k = randoms + 2; k <= randoms + 16 && randoms <= most_randoms; ++k)
      if (fs::exists(random_file(dir, k), ec))
        throw input_error(random_file(dir, randoms + 1).string() + ": no such file, but " + random_file(dir, k).filename().string() +
                          " is there: the random files are numbered 1, 2, ... without gaps (or give --set randoms=" +
                          std::to_string(randoms) + ")");
  }
  if (randoms > most_randoms)
    throw input_error(dir.string() + ": more than " + std::to_string(most_randoms) + " random files Randompnts.N (tpacf takes at most that many)");
  if (randoms == 0) throw input_error(random_file(dir, 1).string() + ": no such file (no random points)");
  for (std::int64_t k = 1; k <= randoms; ++k) {
    files.randoms.push_back(random_file(dir, k));
    if (!fs::exists(files.randoms.back(), ec))
      throw input_error(files.randoms.back().string() + ": no such file (random set " + std::to_string(k) + " of " +
                        std::to_string(randoms) + ")");
  }
  return files;
}

std::string parboil_tpacf_output(std::span<const std::uint64_t> dd, std::span<const std::uint64_t> dr,
                                 std::span<const std::uint64_t> rr) {
  constexpr std::size_t counters = 22;
  if (dd.size() != counters || dr.size() != counters || rr.size() != counters)
    throw usage_error("parboil_tpacf_output: expected 22 counters of each kind");
  std::string out;
  for (std::size_t k = 1; k + 1 < counters; ++k)
    for (std::uint64_t v : {dd[k], dr[k], rr[k]}) out += std::to_string(v) + "\n";
  return out;
}

}  // namespace soac::datasets

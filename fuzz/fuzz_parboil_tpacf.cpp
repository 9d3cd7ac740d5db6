// Parboil tpacf's point files ("ra dec" text lines) on any bytes, reading every line or a count
// of them (the first byte picks 0 .. 7, as `-p`); accepted points must write and read back equal.
#include <cstdint>

#include "datasets/parboil_tpacf.hpp"
#include "fuzz/common.hpp"

using namespace soac;
using datasets::sky_points;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const std::int64_t count = data[0] % 8;
  fuzz::check_round_trip(
      "tpacf", "Datapnts.1", fuzz::as_text(data + 1, size - 1),
      [&](const std::filesystem::path& path) { return datasets::read_parboil_points(path, path.filename() == "again" ? 0 : count); },
      [&](const sky_points& p, const std::filesystem::path& path) {
        if (count != 0 && static_cast<std::int64_t>(p.size()) != count) std::abort();
        return datasets::write_parboil_points(path, p.ra, p.dec), true;
      },
      [](const sky_points& a, const sky_points& b) { return a.ra == b.ra && a.dec == b.dec; });
  return 0;
}

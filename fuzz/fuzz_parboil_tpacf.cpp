// Parboil tpacf's point files ("ra dec" text lines) on any bytes, reading every line or a count
// of them (the first byte picks 0 .. 7, as `-p`); accepted points must write and read back equal.
#include <cstdint>

#include "datasets/parboil_tpacf.hpp"
#include "fuzz/common.hpp"

using namespace soac;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const std::int64_t count = data[0] % 8;
  const auto dir = fuzz::fresh_dir("tpacf");
  fuzz::write_bytes_or_abort(dir / "Datapnts.1", fuzz::as_text(data + 1, size - 1));
  fuzz::accepted([&] {
    const auto p = datasets::read_parboil_points(dir / "Datapnts.1", count);
    if (count != 0 && static_cast<std::int64_t>(p.size()) != count) std::abort();
    datasets::write_parboil_points(dir / "again", p.ra, p.dec);
    const auto back = datasets::read_parboil_points(dir / "again");
    if (back.ra != p.ra || back.dec != p.dec) std::abort();
  });
  return 0;
}

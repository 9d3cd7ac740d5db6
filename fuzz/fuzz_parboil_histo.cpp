// Parboil histo's input file on any bytes; an accepted file must write back to the same bytes.
#include <cstdint>

#include "datasets/binary_file.hpp"
#include "datasets/parboil_histo.hpp"
#include "fuzz/common.hpp"

using namespace soac;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto dir = fuzz::fresh_dir("histo");
  fuzz::write_bytes_or_abort(dir / "img.bin", fuzz::as_text(data, size));
  fuzz::accepted([&] {
    const auto in = datasets::read_parboil_histo(dir / "img.bin");
    datasets::write_parboil_histo(dir / "again.bin", in);
    if (datasets::regular_file_size(dir / "again.bin") != size) std::abort();
    const auto back = datasets::read_parboil_histo(dir / "again.bin");
    if (back.bins != in.bins || back.bin_count() != in.bin_count()) std::abort();
  });
  return 0;
}

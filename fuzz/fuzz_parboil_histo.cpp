// Parboil histo's input file on any bytes; an accepted file must write back to the same bytes.
#include <cstdint>

#include "datasets/binary_file.hpp"
#include "datasets/parboil_histo.hpp"
#include "fuzz/common.hpp"

using namespace soac;
using datasets::parboil_histo_input;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  fuzz::check_round_trip(
      "histo", "img.bin", fuzz::as_text(data, size),
      [](const std::filesystem::path& path) { return datasets::read_parboil_histo(path); },
      [&](const parboil_histo_input& in, const std::filesystem::path& path) {
        datasets::write_parboil_histo(path, in);
        // What was read, the bytes after the image (not read, as in Parboil) left out.
        if (datasets::regular_file_size(path) != 16 + 4 * in.bins.size() || 16 + 4 * in.bins.size() > size) std::abort();
        return true;
      },
      [](const parboil_histo_input& a, const parboil_histo_input& b) {
        return a.bins == b.bins && a.image_width == b.image_width && a.histo_width == b.histo_width &&
               a.bin_count() == b.bin_count();
      });
  return 0;
}

// Images through stb_image (datasets/image: PNG, JPEG, BMP, GIF, PGM, ...) on any bytes; an
// accepted image must encode to PNG and decode back to the same pixels.
#include <cstdint>

#include "datasets/image.hpp"
#include "fuzz/common.hpp"

using namespace soac;
using datasets::grey_image;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  fuzz::check_round_trip(
      "image", "in.img", fuzz::as_text(data, size), datasets::read_grey_image,
      [](const grey_image& img, const std::filesystem::path& path) {
        if (img.size() <= 0 || static_cast<std::int64_t>(img.pixels.size()) != img.size()) std::abort();
        if (img.size() > (1 << 20)) return false;  // the writer's round trip is for small images (time per input)
        datasets::write_png(path, img);
        return true;
      },
      [](const grey_image& a, const grey_image& b) { return a.width == b.width && a.height == b.height && a.pixels == b.pixels; });
  return 0;
}

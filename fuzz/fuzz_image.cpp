// Images through stb_image (datasets/image: PNG, JPEG, BMP, GIF, PGM, ...) on any bytes; an
// accepted image must encode to PNG and decode back to the same pixels.
#include <cstdint>

#include "datasets/image.hpp"
#include "fuzz/common.hpp"

using namespace soac;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto dir = fuzz::fresh_dir("image");
  fuzz::write_bytes_or_abort(dir / "in.img", fuzz::as_text(data, size));
  fuzz::accepted([&] {
    const auto img = datasets::read_grey_image(dir / "in.img");
    if (img.size() <= 0 || static_cast<std::int64_t>(img.pixels.size()) != img.size()) std::abort();
    if (img.size() > (1 << 20)) return;  // the writer's round trip is for small images (time per input)
    datasets::write_png(dir / "again.png", img);
    const auto back = datasets::read_grey_image(dir / "again.png");
    if (back.width != img.width || back.height != img.height || back.pixels != img.pixels) std::abort();
  });
  return 0;
}

#include "datasets/parboil_histo.hpp"

#include <array>
#include <cmath>

#include "core/error.hpp"
#include "datasets/binary_file.hpp"

namespace soac::datasets {

namespace {
constexpr std::uint32_t bmp_headers_bytes = 2 + 12 + 40;
}  // namespace

void check_parboil_histo(const parboil_histo_input& in, const std::string& source) {
  const std::uint64_t bins = in.bin_count();
  if (bins == 0)
    throw input_error(source + ": the histogram has no bins (" + std::to_string(in.histo_width) + " x " +
                      std::to_string(in.histo_height) + ")");
  if (bins >= (std::uint64_t{1} << 32))
    throw input_error(source + ": a histogram of " + std::to_string(in.histo_width) + " x " +
                      std::to_string(in.histo_height) + " bins is beyond 32-bit bin indices");
  if (in.bins.size() != std::uint64_t(in.image_width) * in.image_height)
    throw input_error(source + ": " + std::to_string(in.bins.size()) + " pixels for a " +
                      std::to_string(in.image_width) + " x " + std::to_string(in.image_height) + " image");
  for (std::size_t i = 0; i < in.bins.size(); ++i)
    if (in.bins[i] >= bins)
      throw input_error(source + ": pixel (" + std::to_string(i % in.image_width) + ", " +
                        std::to_string(i / in.image_width) + ") holds bin " + std::to_string(in.bins[i]) +
                        ", beyond the " + std::to_string(in.histo_width) + " x " + std::to_string(in.histo_height) +
                        " histogram");
}

parboil_histo_input read_parboil_histo(const std::filesystem::path& path, leniency& lenient) {
  binary_reader r(path);
  parboil_histo_input in;
  in.image_width = r.read<std::uint32_t>("the image width");
  in.image_height = r.read<std::uint32_t>("the image height");
  in.histo_width = r.read<std::uint32_t>("the histogram width");
  in.histo_height = r.read<std::uint32_t>("the histogram height");
  if (in.image_width == 0 || in.image_height == 0)
    r.fail("the header gives a " + std::to_string(in.image_width) + " x " + std::to_string(in.image_height) + " image: no pixels");
  in.bins = r.read_array<std::uint32_t>(std::uint64_t(in.image_width) * in.image_height,
                                        "the image of " + std::to_string(in.image_width) + " x " +
                                            std::to_string(in.image_height) + " bin indices");
  if (r.remaining() > 0)
    lenient.note(1, path.string() + ": " + std::to_string(r.remaining()) + " bytes after the " + std::to_string(in.image_width) + " x " +
                        std::to_string(in.image_height) + " image are not read, as Parboil's histo reads the image and stops");
  check_parboil_histo(in, path.string());
  return in;
}

parboil_histo_input read_parboil_histo(const std::filesystem::path& path) {
  leniency lenient;
  return read_parboil_histo(path, lenient);
}

void write_parboil_histo(const std::filesystem::path& path, const parboil_histo_input& in) {
  check_parboil_histo(in, path.string());
  std::string bytes;
  bytes.reserve(16 + in.bins.size() * 4);
  for (std::uint32_t v : {in.image_width, in.image_height, in.histo_width, in.histo_height}) append_bytes(bytes, v);
  append_bytes(bytes, std::span<const std::uint32_t>(in.bins));
  write_file_atomically(path, bytes);
}

std::uint8_t parboil_histo_red(std::uint8_t counter) {
  // Parboil's expression: v = cbrt(1 + 63.0 * c / 255) / 4 in double, passed to HSVtoRGB as a
  // float, which returns R = (unsigned) (v * 255) in float (and G = B = 0 for hue 0, saturation 1).
  static const std::array<std::uint8_t, 256> red = [] {
    std::array<std::uint8_t, 256> t{};
    for (int c = 1; c < 256; ++c) {
      const float v = float(std::cbrt(1 + 63.0 * float(c) / float(255)) / 4);
      t[std::size_t(c)] = std::uint8_t(static_cast<unsigned>(v * 255));
    }
    return t;
  }();
  return red[counter];
}

std::string parboil_histo_bmp(std::span<const std::uint8_t> counters, std::uint32_t width, std::uint32_t height) {
  const std::uint64_t pixels = std::uint64_t(width) * height;
  if (counters.size() != pixels)
    throw usage_error("parboil_histo_bmp: " + std::to_string(counters.size()) + " counters for " + std::to_string(width) +
                      " x " + std::to_string(height));
  // Parboil's header sizes are 32-bit, counted without the row padding.
  const std::uint32_t image_bytes = std::uint32_t(3 * pixels);
  const std::uint64_t row_bytes = (std::uint64_t(width) * 24 + 31) / 32 * 4;
  std::string out;
  out.reserve(bmp_headers_bytes + row_bytes * height);
  out += "BM";
  append_bytes(out, std::uint32_t(bmp_headers_bytes + image_bytes));
  append_bytes(out, std::uint16_t{0});
  append_bytes(out, std::uint16_t{0});
  append_bytes(out, bmp_headers_bytes);
  for (std::uint32_t v : {std::uint32_t{40}, width, height}) append_bytes(out, v);
  append_bytes(out, std::uint16_t{1});   // planes
  append_bytes(out, std::uint16_t{24});  // bits per pixel
  for (std::uint32_t v : {std::uint32_t{0}, image_bytes, std::uint32_t{0}, std::uint32_t{0}, std::uint32_t{0}, std::uint32_t{0}})
    append_bytes(out, v);  // compression, image size, resolutions, colours, important colours
  const std::size_t pad = std::size_t(row_bytes - std::uint64_t(width) * 3);
  for (std::uint32_t y = height; y-- > 0;) {
    const std::uint8_t* row = counters.data() + std::uint64_t(y) * width;
    for (std::uint32_t x = 0; x < width; ++x) {
      const char bgr[3] = {0, 0, char(parboil_histo_red(row[x]))};
      out.append(bgr, 3);
    }
    out.append(pad, '\0');
  }
  return out;
}

}  // namespace soac::datasets

// Images through stb (stb_image reads PNG, JPEG, BMP, TGA, GIF, PSD, HDR, PIC and PNM; stb_image_write
// writes PNG): 8-bit grey only, which is what the histogram apps take and give.
#pragma once

#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <vector>

namespace soac::datasets {

struct grey_image {
  int width = 0, height = 0;
  std::vector<std::uint8_t> pixels;  // row-major, width * height
};

// Any image stb_image reads, converted to grey by stb (luma (77 r + 150 g + 29 b) / 256); an
// input_error naming the file and stb's reason when it cannot.
grey_image read_grey_image(const std::filesystem::path& path);

// A PNG of one grey frame, as bytes (for bundle_writer::add_file or write_file_atomically).
std::string encode_grey_png(int width, int height, std::span<const std::uint8_t> pixels);

// The image files of a folder (by extension, sorted by name); an input_error when there are none.
std::vector<std::filesystem::path> image_files(const std::filesystem::path& dir);

}  // namespace soac::datasets

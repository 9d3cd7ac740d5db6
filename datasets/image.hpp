// Grey-scale images in the common file formats (PNG, JPEG, BMP, TGA, PGM/PPM, GIF, ...), read
// through stb_image and written as PNG through stb_image_write (image registration's inputs and
// its registered output). Colour images become grey with stb's luma weights; 16-bit images are
// reduced to 8 bits. Every failure is an input_error naming the file.
#pragma once

#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <vector>

#include "core/error.hpp"

namespace soac::datasets {

struct grey_image {
  int width = 0, height = 0;
  std::vector<std::uint8_t> pixels;  // row-major, width * height
  std::int64_t size() const { return std::int64_t(width) * height; }
};

// Decodes an image file to 8-bit grey. input_error when the file is missing, is not an image
// stb_image can decode (the reason it gives), or holds no pixels.
grey_image read_grey_image(const std::filesystem::path& path);

// input_error naming both files unless the images have the same width and height.
void require_same_size(const grey_image& a, const std::filesystem::path& a_path, const grey_image& b,
                       const std::filesystem::path& b_path);

// The PNG encoding of an image (one grey channel); the second form for pixels held elsewhere (a
// frame of a video).
std::string encode_png(const grey_image& image);
std::string encode_png(int width, int height, std::span<const std::uint8_t> pixels);
// Writes the PNG encoding to `path` (through a temporary file and a rename).
void write_png(const std::filesystem::path& path, const grey_image& image);

// The image files of a folder (by extension), sorted by name; input_error when there are none.
std::vector<std::filesystem::path> image_files(const std::filesystem::path& dir);

}  // namespace soac::datasets

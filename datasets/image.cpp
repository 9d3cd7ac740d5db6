#include "datasets/image.hpp"

#include <algorithm>
#include <cctype>
#include <system_error>

#define STB_IMAGE_IMPLEMENTATION
#define STB_IMAGE_STATIC
#define STBI_FAILURE_USERMSG
#include <stb_image.h>
#define STB_IMAGE_WRITE_IMPLEMENTATION
#define STB_IMAGE_WRITE_STATIC
#include <stb_image_write.h>

#include "core/error.hpp"

namespace soac::datasets {

namespace fs = std::filesystem;

grey_image read_grey_image(const fs::path& path) {
  std::error_code ec;
  if (!fs::is_regular_file(path, ec)) throw input_error(path.string() + ": no such image file");
  int w = 0, h = 0, channels = 0;
  stbi_uc* data = stbi_load(path.c_str(), &w, &h, &channels, 1);
  if (!data) throw input_error(path.string() + ": cannot read the image: " + stbi_failure_reason());
  grey_image img;
  img.width = w;
  img.height = h;
  img.pixels.assign(data, data + std::size_t(w) * std::size_t(h));
  stbi_image_free(data);
  return img;
}

std::string encode_grey_png(int width, int height, std::span<const std::uint8_t> pixels) {
  if (width <= 0 || height <= 0 || pixels.size() != std::size_t(width) * std::size_t(height))
    throw usage_error("encode_grey_png: " + std::to_string(pixels.size()) + " pixels for a " + std::to_string(width) + " x " +
                      std::to_string(height) + " image");
  std::string out;
  const auto append = [](void* context, void* data, int size) {
    static_cast<std::string*>(context)->append(static_cast<const char*>(data), std::size_t(size));
  };
  if (!stbi_write_png_to_func(append, &out, width, height, 1, pixels.data(), width))
    throw resource_error("encode_grey_png: stb_image_write could not encode a " + std::to_string(width) + " x " +
                         std::to_string(height) + " image");
  return out;
}

std::vector<fs::path> image_files(const fs::path& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) throw input_error(dir.string() + ": not a folder of images");
  static const char* known[] = {".png", ".jpg", ".jpeg", ".bmp", ".tga", ".gif", ".psd", ".hdr", ".pic", ".pgm", ".ppm", ".pnm"};
  std::vector<fs::path> out;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    if (!e.is_regular_file()) continue;
    std::string ext = e.path().extension().string();
    std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return char(std::tolower(c)); });
    if (std::find(std::begin(known), std::end(known), ext) != std::end(known)) out.push_back(e.path());
  }
  if (ec) throw input_error(dir.string() + ": cannot list: " + ec.message());
  if (out.empty()) throw input_error(dir.string() + ": holds no image files (png, jpg, bmp, tga, gif, pgm, ...)");
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace soac::datasets

// The one translation unit that compiles stb_image and stb_image_write (header-only libraries:
// exactly one file defines their IMPLEMENTATION macros).
#include "datasets/image.hpp"

#include <cstring>
#include <memory>

#include "datasets/binary_file.hpp"

#define STB_IMAGE_IMPLEMENTATION
#define STBI_FAILURE_USERMSG
#include <stb_image.h>
#define STB_IMAGE_WRITE_IMPLEMENTATION
#include <stb_image_write.h>

namespace soac::datasets {

namespace fs = std::filesystem;

grey_image read_grey_image(const fs::path& path) {
  // Missing files and folders get the same messages as every other reader's.
  const std::uint64_t bytes = regular_file_size(path);
  if (bytes == 0) throw input_error(path.string() + ": empty file, not an image");
  int w = 0, h = 0, channels = 0;
  std::unique_ptr<stbi_uc, void (*)(void*)> data(stbi_load(path.string().c_str(), &w, &h, &channels, 1), stbi_image_free);
  if (!data) {
    const char* why = stbi_failure_reason();
    throw input_error(path.string() + ": not an image that stb_image can read (" + (why ? why : "unknown reason") + ")");
  }
  if (w <= 0 || h <= 0) throw input_error(path.string() + ": the image has no pixels");
  grey_image out;
  out.width = w;
  out.height = h;
  out.pixels.assign(data.get(), data.get() + std::size_t(w) * std::size_t(h));
  return out;
}

void require_same_size(const grey_image& a, const fs::path& a_path, const grey_image& b, const fs::path& b_path) {
  if (a.width == b.width && a.height == b.height) return;
  throw input_error(b_path.string() + ": the image is " + std::to_string(b.width) + " x " + std::to_string(b.height) +
                    " pixels, but " + a_path.string() + " is " + std::to_string(a.width) + " x " +
                    std::to_string(a.height) + " (both must have the same size)");
}

std::string encode_png(const grey_image& image) {
  if (image.width <= 0 || image.height <= 0 || image.pixels.size() != std::size_t(image.size()))
    throw usage_error("encode_png: the image's size and pixel count disagree");
  std::string out;
  const auto append = [](void* context, void* data, int size) {
    static_cast<std::string*>(context)->append(static_cast<const char*>(data), std::size_t(size));
  };
  if (!stbi_write_png_to_func(append, &out, image.width, image.height, 1, image.pixels.data(), image.width))
    throw resource_error("encode_png: stb_image_write could not encode a " + std::to_string(image.width) + " x " +
                         std::to_string(image.height) + " image");
  return out;
}

void write_png(const fs::path& path, const grey_image& image) { write_file_atomically(path, encode_png(image)); }

}  // namespace soac::datasets

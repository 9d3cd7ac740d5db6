// The one translation unit that compiles stb_image and stb_image_write (header-only libraries:
// exactly one file defines their IMPLEMENTATION macros).
#include "datasets/image.hpp"

#include <algorithm>
#include <cctype>
#include <cstring>
#include <limits>
#include <string_view>
#include <memory>
#include <system_error>

#include "datasets/binary_file.hpp"

#define STB_IMAGE_IMPLEMENTATION
#define STBI_FAILURE_USERMSG
#include <stb_image.h>
#define STB_IMAGE_WRITE_IMPLEMENTATION
#include <stb_image_write.h>

namespace soac::datasets {

namespace fs = std::filesystem;

namespace {

// A binary PGM/PPM ("P5"/"P6") header read as stb_image's PNM reader reads it: three numbers
// (width, height, maxval) after blanks and '#' comments, then one character before the pixels.
struct pnm_header {
  std::uint64_t width = 0, height = 0, maxval = 0;
  std::size_t data_offset = 0;
};

pnm_header read_pnm_header(std::string_view file) {
  pnm_header h;
  std::size_t pos = 2;
  const auto at_end = [&] { return pos >= file.size(); };
  const auto next = [&] { return at_end() ? '\0' : file[pos++]; };
  const auto is_space = [](char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r'; };
  char c = next();
  for (std::uint64_t* field : {&h.width, &h.height, &h.maxval}) {
    while (true) {
      while (!at_end() && is_space(c)) c = next();
      if (at_end() || c != '#') break;
      while (!at_end() && c != '\n' && c != '\r') c = next();
    }
    // Saturates far above any limit below, so no digit string overflows.
    while (!at_end() && c >= '0' && c <= '9') {
      *field = std::min<std::uint64_t>(*field * 10 + std::uint64_t(c - '0'), std::uint64_t{1} << 40);
      c = next();
    }
  }
  h.data_offset = pos;
  return h;
}

// Faults of stb_image's PNM reader (the version Debian ships) kept away from it: it overflows an
// int on a header number of ten digits or more (undefined behaviour), accepts pixel data that
// stops short of what the header promises and leaves the missing pixels uninitialised, and reads
// past its buffer when it turns a 16-bit PPM into grey (8-bit channel conversion on 16-bit data).
void check_pnm(const fs::path& path, std::string_view file) {
  if (file.size() < 2 || file[0] != 'P' || (file[1] != '5' && file[1] != '6')) return;
  const char* kind = file[1] == '5' ? "PGM" : "PPM";
  const pnm_header h = read_pnm_header(file);
  const auto bad = [&](const std::string& why) { throw input_error(path.string() + ": " + kind + " " + why); };
  constexpr std::uint64_t max_side = std::uint64_t{1} << 24;  // stb_image's STBI_MAX_DIMENSIONS
  if (h.width > max_side || h.height > max_side)
    bad("header: " + std::to_string(h.width) + " x " + std::to_string(h.height) + " pixels, more than " +
        std::to_string(max_side) + " on a side");
  if (h.maxval > 65535) bad("header: maximum value " + std::to_string(h.maxval) + " is above 65535");
  const bool wide = h.maxval > 255;
  const std::uint64_t channels = file[1] == '5' ? 1 : 3;
  if (wide && channels != 1)
    bad("with 16-bit samples is not supported (stb_image misreads it); save it with 8 bits per sample or as a grey PGM");
  const std::uint64_t need = h.width * h.height * channels * (wide ? 2 : 1);
  const std::uint64_t have = file.size() - std::min(file.size(), h.data_offset);
  if (have < need)
    throw input_error(path.string() + ": truncated: the " + kind + " header promises " + std::to_string(h.width) + " x " +
                      std::to_string(h.height) + " pixels (" + std::to_string(need) + " bytes) but only " +
                      std::to_string(have) + " bytes follow it");
}

std::uint64_t little_endian(std::string_view file, std::size_t at, int bytes) {
  std::uint64_t v = 0;
  for (int i = bytes - 1; i >= 0; --i) v = v << 8 | static_cast<unsigned char>(file[at + std::size_t(i)]);
  return v;
}

std::uint64_t big_endian(std::string_view file, std::size_t at, int bytes) {
  std::uint64_t v = 0;
  for (int i = 0; i < bytes; ++i) v = v << 8 | static_cast<unsigned char>(file[at + std::size_t(i)]);
  return v;
}

// stb_image's BMP reader, like its PNM reader, pads pixel data that stops short with zeros (a
// 102-byte file decoded into 400 MB). The formats it reads are uncompressed (RLE is refused), so
// the file must hold the pixel offset plus every 4-byte-aligned row the header promises.
void check_bmp(const fs::path& path, std::string_view file) {
  if (file.size() < 30 || file[0] != 'B' || file[1] != 'M') return;
  const std::uint64_t offset = little_endian(file, 10, 4), header = little_endian(file, 14, 4);
  std::uint64_t width = 0, height = 0, bits = 0, compression = 0;
  if (header == 12) {  // OS/2 header: 16-bit sizes
    width = little_endian(file, 18, 2), height = little_endian(file, 20, 2), bits = little_endian(file, 24, 2);
  } else {
    if (file.size() < 34) return;  // stb_image refuses it
    width = little_endian(file, 18, 4);
    const auto h = static_cast<std::int32_t>(little_endian(file, 22, 4));  // negative: rows stored top-down
    height = h < 0 ? std::uint64_t(-std::int64_t(h)) : std::uint64_t(h);
    bits = little_endian(file, 28, 2), compression = little_endian(file, 30, 4);
  }
  if (compression == 1 || compression == 2) return;  // RLE: stb_image refuses it (it reads any other value as uncompressed)
  if (width > (std::uint64_t{1} << 24) || height > (std::uint64_t{1} << 24) || bits > 32) return;  // refused too
  const std::uint64_t row = (width * bits + 31) / 32 * 4;
  const std::uint64_t need = offset + row * height;
  if (file.size() < need)
    throw input_error(path.string() + ": truncated: the BMP header promises " + std::to_string(width) + " x " +
                      std::to_string(height) + " pixels (" + std::to_string(need) + " bytes with its headers) but the file has " +
                      std::to_string(file.size()) + " bytes");
}

// Every other format stb_image reads compresses at most about 8,300 pixels into a byte (a 1-bit
// PNG at deflate's limit); a header that promises far more from a short file is truncated or not
// an image, and decoding it would only fill gigabytes with zeros.
void check_pixels_per_byte(const fs::path& path, std::string_view file) {
  int w = 0, h = 0, channels = 0;
  if (!stbi_info_from_memory(reinterpret_cast<const stbi_uc*>(file.data()), static_cast<int>(file.size()), &w, &h, &channels))
    return;  // the decoder says why
  constexpr std::uint64_t most_per_byte = 16384;
  const std::uint64_t pixels = std::uint64_t(std::max(w, 0)) * std::uint64_t(std::max(h, 0));
  if (pixels > most_per_byte * file.size())
    throw input_error(path.string() + ": truncated or not an image: its header promises " + std::to_string(w) + " x " +
                      std::to_string(h) + " pixels from a file of " + std::to_string(file.size()) + " bytes");
}

// Two PNG data chunks stb_image mishandles. An empty IDAT: it copies a leading one into its not
// yet allocated buffer (memcpy to a null pointer, undefined); they hold no data, so they are
// dropped. An IDAT that declares more bytes than the file has left: it grows its buffer to the
// declared length before reading (a 200-byte file asked for 2 GiB); that file is truncated.
void check_png_data_chunks(const fs::path& path, std::string& file) {
  static constexpr char signature[] = "\x89PNG\r\n\x1a\n";
  if (file.size() < 8 || file.compare(0, 8, signature, 8) != 0) return;
  std::size_t pos = 8;
  while (pos + 12 <= file.size()) {  // chunks: 4-byte big-endian length, type, data, CRC
    const std::uint64_t length = big_endian(file, pos, 4);
    const bool data = file.compare(pos + 4, 4, "IDAT") == 0;
    if (file.compare(pos + 4, 4, "IEND") == 0) return;  // stb_image reads nothing past it
    if (data && length > file.size() - pos - 12)
      throw input_error(path.string() + ": truncated: the PNG data chunk at byte " + std::to_string(pos) + " declares " +
                        std::to_string(length) + " bytes but " + std::to_string(file.size() - pos - 12) + " follow it");
    if (data && length == 0) file.erase(pos, 12);  // rare: edit in place
    else pos += std::size_t(std::min<std::uint64_t>(12 + length, file.size() - pos));
  }
}

}  // namespace

grey_image read_grey_image(const fs::path& path) {
  // Missing files and folders get the same messages as every other reader's.
  const std::uint64_t bytes = regular_file_size(path);
  if (bytes == 0) throw input_error(path.string() + ": empty file, not an image");
  if (bytes > std::uint64_t(std::numeric_limits<int>::max()))
    throw input_error(path.string() + ": " + std::to_string(bytes) + " bytes, more than stb_image reads (2 GiB)");
  std::string file(static_cast<std::size_t>(bytes), '\0');
  binary_reader(path).read_into(file.data(), bytes, "the image");
  check_pnm(path, file);
  check_bmp(path, file);
  check_png_data_chunks(path, file);
  check_pixels_per_byte(path, file);
  int w = 0, h = 0, channels = 0;
  std::unique_ptr<stbi_uc, void (*)(void*)> data(
      stbi_load_from_memory(reinterpret_cast<const stbi_uc*>(file.data()), static_cast<int>(file.size()), &w, &h, &channels, 1),
      stbi_image_free);
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

std::string encode_png(int width, int height, std::span<const std::uint8_t> pixels) {
  if (width <= 0 || height <= 0 || pixels.size() != std::size_t(width) * std::size_t(height))
    throw usage_error("encode_png: " + std::to_string(pixels.size()) + " pixels for a " + std::to_string(width) + " x " +
                      std::to_string(height) + " image");
  std::string out;
  const auto append = [](void* context, void* data, int size) {
    static_cast<std::string*>(context)->append(static_cast<const char*>(data), std::size_t(size));
  };
  if (!stbi_write_png_to_func(append, &out, width, height, 1, pixels.data(), width))
    throw resource_error("encode_png: stb_image_write could not encode a " + std::to_string(width) + " x " +
                         std::to_string(height) + " image");
  return out;
}

std::string encode_png(const grey_image& image) { return encode_png(image.width, image.height, image.pixels); }

void write_png(const fs::path& path, const grey_image& image) { write_file_atomically(path, encode_png(image)); }

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

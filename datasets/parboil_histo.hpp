// Parboil histo's files: the input image of bin indices and the BMP the original writes.
//
// Input (little-endian): uint32 image width, image height, histogram width, histogram height,
// then width * height uint32 bin indices, each below histogram width * height (a pixel's bin is
// the flat index y * histogram width + x of the 2D histogram).
//
// Output: Parboil's dump_histo_img / create_bmp, byte for byte: "BM", a 12-byte file header
// (uint32 file size = 54 + 3 * width * height, counted without the row padding as Parboil does;
// two uint16 zeros; uint32 pixel offset 54), a 40-byte info header (size 40, width, height, 1
// plane, 24 bits, no compression, image size 3 * width * height, resolutions 0, colours 0, 0),
// then the rows from the last histogram row to the first, each `width` B,G,R triples padded with
// zero bytes to a multiple of 4. A counter of 0 is black; c > 0 is pure red of intensity
// (unsigned) (255 * v), v = cbrt(1 + 63 c / 255) / 4 (Parboil's HSVtoRGB(0, 1, v)).
#pragma once

#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <vector>

#include "datasets/lenient.hpp"

namespace soac::datasets {

struct parboil_histo_input {
  std::uint32_t image_width = 0, image_height = 0;
  std::uint32_t histo_width = 0, histo_height = 0;
  std::vector<std::uint32_t> bins;  // image_width * image_height bin indices, row by row

  std::uint64_t bin_count() const { return std::uint64_t(histo_width) * histo_height; }
};

// Reads and checks a Parboil histo input file as Parboil's histo reads it (fread of the header,
// then of the image; bytes after it are not read: counted in `lenient`, refused when it is
// strict). input_error (naming the file) for what Parboil cannot run: a short header, data
// shorter than the header promises, a histogram of no bins or of 2^32 bins or more, and the first
// bin index outside the histogram (with its pixel's position; Parboil would write out of bounds).
parboil_histo_input read_parboil_histo(const std::filesystem::path& path, leniency& lenient);
// Lenient reading whose notes are dropped (fuzzers, tests).
parboil_histo_input read_parboil_histo(const std::filesystem::path& path);

// Checks an input built in memory the same way (`source` names it in errors).
void check_parboil_histo(const parboil_histo_input& in, const std::string& source);

// The file read_parboil_histo reads.
void write_parboil_histo(const std::filesystem::path& path, const parboil_histo_input& in);

// The red intensity Parboil gives a saturated 8-bit counter (0 for 0).
std::uint8_t parboil_histo_red(std::uint8_t counter);

// Parboil's BMP of an 8-bit histogram of width * height counters (row y at y * width).
std::string parboil_histo_bmp(std::span<const std::uint8_t> counters, std::uint32_t width, std::uint32_t height);

}  // namespace soac::datasets

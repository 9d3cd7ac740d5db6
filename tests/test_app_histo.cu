// The histo app (Parboil histo) on both backends: every variant against the sequential
// reference, Parboil's input file and BMP byte for byte, and malformed input files.
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "datasets/bundle.hpp"
#include "datasets/futhark_data.hpp"
#include "datasets/parboil_histo.hpp"
#include "tests/app_fixture.hpp"
#include "validate/histo.hpp"

namespace {

using namespace soac;
using soac::testing::app_test;
using soac::testing::error_of;
namespace fs = std::filesystem;

std::string little_endian(std::initializer_list<std::uint32_t> words) {
  std::string s;
  for (std::uint32_t w : words) s.append(reinterpret_cast<const char*>(&w), 4);
  return s;
}

class Histo : public app_test {
 protected:
  fs::path write(const std::string& name, const std::string& bytes) {
    std::ofstream(path(name), std::ios::binary) << bytes;
    return path(name);
  }
  std::string read(const fs::path& file) {
    std::ifstream f(file, std::ios::binary);
    return std::string((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  }
};

// A 3 x 2 histogram worked out by hand: rows bottom-up (row 1 first), three B,G,R triples each,
// padded from 9 to 12 bytes; red of 1, 2, 255 = (unsigned) (255 * cbrt(1 + 63 c / 255) / 4) =
// 68, 72, 255.
TEST(HistoBmp, MatchesAHandCheckedExample) {
  const std::vector<std::uint8_t> counters = {0, 1, 255, 2, 0, 255};
  std::string expected = "BM";
  expected += little_endian({54 + 18});
  expected += std::string(4, '\0');  // two reserved uint16
  expected += little_endian({54, 40, 3, 2});
  expected += std::string("\x01\x00\x18\x00", 4);  // 1 plane, 24 bits
  expected += little_endian({0, 18, 0, 0, 0, 0});
  const std::string row1 = std::string("\0\0\x48" "\0\0\0" "\0\0\xff" "\0\0\0", 12);  // counters 2, 0, 255
  const std::string row0 = std::string("\0\0\0" "\0\0\x44" "\0\0\xff" "\0\0\0", 12);  // counters 0, 1, 255
  expected += row1 + row0;
  EXPECT_EQ(datasets::parboil_histo_bmp(counters, 3, 2), expected);
  EXPECT_EQ(datasets::parboil_histo_red(0), 0);
  EXPECT_EQ(datasets::parboil_histo_red(1), 68);
  EXPECT_EQ(datasets::parboil_histo_red(2), 72);
  EXPECT_EQ(datasets::parboil_histo_red(255), 255);
}

TEST(HistoBmp, RowsOfAMultipleOfFourBytesHaveNoPadding) {
  const std::vector<std::uint8_t> counters(4 * 3, 0);
  EXPECT_EQ(datasets::parboil_histo_bmp(counters, 4, 3).size(), 54u + 4 * 3 * 3);
  EXPECT_EQ(datasets::parboil_histo_bmp(std::vector<std::uint8_t>(5 * 2, 7), 5, 2).size(), 54u + 2 * 16);
}

TEST_P(Histo, FileRoundTripAndBadFiles) {
  if (GetParam() == backend::cuda) GTEST_SKIP() << "file formats are backend-independent";
  datasets::parboil_histo_input in;
  in.image_width = 3;
  in.image_height = 2;
  in.histo_width = 4;
  in.histo_height = 2;
  in.bins = {0, 7, 7, 3, 1, 7};
  datasets::write_parboil_histo(path("ok.bin"), in);
  EXPECT_EQ(read(path("ok.bin")), little_endian({3, 2, 4, 2, 0, 7, 7, 3, 1, 7}));
  const auto back = datasets::read_parboil_histo(path("ok.bin"));
  EXPECT_EQ(back.bins, in.bins);
  EXPECT_EQ(back.bin_count(), 8u);

  const auto message = [&](const std::string& name, const std::string& bytes) {
    const auto file = write(name, bytes);
    const auto m = error_of<input_error>([&] { datasets::read_parboil_histo(file); });
    EXPECT_NE(m.find(file.string()), std::string::npos) << m;
    return m;
  };
  EXPECT_NE(message("short.bin", little_endian({3, 2})).find("too few for the histogram width"), std::string::npos);
  // The header promises 6 pixels, the file holds 5.
  EXPECT_NE(message("truncated.bin", little_endian({3, 2, 4, 2, 0, 1, 2, 3, 4})).find("too few for the image"), std::string::npos);
  EXPECT_NE(message("beyond.bin", little_endian({3, 2, 4, 2, 0, 1, 2, 3, 8, 5})).find("pixel (1, 1) holds bin 8, beyond the 4 x 2"),
            std::string::npos);
  // Bytes after the image are not read, as Parboil reads it; strict reading refuses them.
  datasets::leniency lenient;
  EXPECT_EQ(datasets::read_parboil_histo(write("trailing.bin", little_endian({1, 1, 4, 2, 0, 9})), lenient).bins, std::vector<std::uint32_t>{0});
  EXPECT_NE(lenient.first().find("4 bytes after the 1 x 1 image are not read"), std::string::npos) << lenient.first();
  datasets::leniency strict(true, "Parboil's histo");
  EXPECT_NE(error_of<input_error>([&] { datasets::read_parboil_histo(path("trailing.bin"), strict); }).find("strict=1"), std::string::npos);
  EXPECT_NE(message("nobins.bin", little_endian({1, 1, 0, 2, 0})).find("no bins"), std::string::npos);
  EXPECT_NE(message("nopixels.bin", little_endian({0, 2, 4, 2, 0, 1})).find("a 0 x 2 image: no pixels"), std::string::npos);
  EXPECT_NE(message("huge.bin", little_endian({1, 1, 65536, 65536, 0})).find("beyond 32-bit"), std::string::npos);
  // A header promising 4G pixels is refused before anything is allocated.
  EXPECT_NE(message("promise.bin", little_endian({65536, 65536, 4, 2, 0})).find("too few for the image"), std::string::npos);
  EXPECT_NE(error_of<input_error>([&] { datasets::read_parboil_histo(path("missing.bin")); }).find("no such file"),
            std::string::npos);
}

// The tiny preset saturates some bins, so the 8-bit semantics is exercised.
TEST_P(Histo, TinyPresetSaturates) {
  if (GetParam() == backend::cuda) GTEST_SKIP() << "generator is backend-independent";
  const auto file = gen("histo", "tiny", "img.bin", {}, "parboil");
  const auto in = datasets::read_parboil_histo(file);
  const auto counters = validate::saturating_counts(in.bins, in.bin_count());
  int saturated = 0, used = 0;
  for (auto c : counters) saturated += c == 255, used += c > 0;
  EXPECT_GT(saturated, 0);
  EXPECT_GT(used, 40);
}

TEST_P(Histo, EveryVariantMatchesTheReference) {
  std::vector<std::string> variants = {"counts", "saturating", "packed", "counts,strategy=global", "packed,strategy=global,M=1",
                                       "saturating,strategy=shared", "counts,strategy=shared,M=2",
                                       "packed,strategy=shared,partition=off,partials=off", "packed,S=3"};
  if (GetParam() == backend::cuda) variants.insert(variants.end(), {"cub", "naive"});
  for (const auto& v : variants) round_trip("histo", "tiny", v, {}, {{"iterations", "3"}});
  // The window variant: the whole histogram in its window, and windows the pixels overflow (the
  // rest counted in the whole histogram), each iteration from zero.
  for (const char* window : {"0", "1", "100", "629"}) round_trip("histo", "tiny", "window", {}, {{"iterations", "3"}, {"window", window}});
  round_trip("histo", "tiny", "window,strategy=global", {}, {{"iterations", "2"}, {"window", "200"}});
}

TEST_P(Histo, BaselinesNeedCuda) {
  if (GetParam() == backend::cuda) GTEST_SKIP() << "host only";
  const auto data = gen("histo", "tiny", "data");
  for (const char* v : {"cub", "naive"})
    EXPECT_NE(error_of<usage_error>([&] { run("histo", {data}, v); }).find("needs the cuda backend"), std::string::npos);
}

// Parboil's own files in, Parboil's BMP out (byte for byte against the reference's, which
// validate checks), and a corrupted result is caught.
TEST_P(Histo, ParboilFormatAndCorruptedResults) {
  const auto file = gen("histo", "tiny", "img.bin", {}, "parboil");
  const auto result = path("out");
  run("histo", {file}, "", {}, "parboil", result);
  EXPECT_TRUE(validate("histo", {file}, result, "parboil").ok);
  const auto in = datasets::read_parboil_histo(file);
  const auto expected = validate::saturating_counts(in.bins, in.bin_count());
  EXPECT_EQ(read(result / "histo.bmp"), datasets::parboil_histo_bmp(expected, in.histo_width, in.histo_height));

  // One byte of the BMP changed.
  std::string bmp = read(result / "histo.bmp");
  bmp[60] ^= 1;
  write("out/histo.bmp", bmp);
  auto report = validate("histo", {file}, result, "parboil");
  EXPECT_FALSE(report.ok);
  EXPECT_NE(report.summary.find("histo.bmp differs"), std::string::npos) << report.summary;

  // One counter changed (the result rewritten with it).
  auto counters = expected;
  counters[5] ^= 1;
  {
    datasets::bundle_writer out(result, "result", "histo");
    const std::int64_t shape[2] = {in.histo_height, in.histo_width};
    out.add("histo", datasets::dtype::u8, shape, counters.data());
    out.add_file("histo.bmp", datasets::parboil_histo_bmp(expected, in.histo_width, in.histo_height));
    out.finish();
  }
  report = validate("histo", {file}, result, "parboil");
  EXPECT_FALSE(report.ok);
  EXPECT_NE(report.summary.find("bin 5 "), std::string::npos) << report.summary;
}

// soac compare against Parboil's BMP: identical bytes, else the pixels that differ, named.
TEST_P(Histo, CompareWithParboilsBmp) {
  const auto file = gen("histo", "tiny", "img.bin", {}, "parboil");
  run("histo", {file}, "", {}, "parboil", path("out"));
  std::string bmp = read(path("out") / "histo.bmp");
  const auto parboil = write("ref.bmp", bmp);
  const auto same = compare("histo", path("out"), parboil);
  EXPECT_TRUE(same.ok) << same.summary;
  EXPECT_NE(same.summary.find("identical to ref.bmp, byte for byte"), std::string::npos) << same.summary;
  // The red byte of the first pixel of the last BMP row (the histogram's row 0) off by 40.
  bmp[54 + 2] = char(std::uint8_t(bmp[54 + 2]) ^ 40);
  write("ref.bmp", bmp);
  const auto differ = compare("histo", path("out"), parboil);
  EXPECT_FALSE(differ.ok);
  const auto in = datasets::read_parboil_histo(file);
  EXPECT_NE(differ.summary.find("about 1 pixels differ; the first at (x 0, y " + std::to_string(in.histo_height - 1) + ")"),
            std::string::npos)
      << differ.summary;
  write("ref.bmp", "P6 not a bmp");
  EXPECT_NE(error_of<input_error>([&] { compare("histo", path("out"), parboil); }).find("not a BMP"), std::string::npos);
}

// The SC20 artifact's form (benchmarks/parboil/histo.fut): gen writes it, run and validate read it,
// and compare checks the counts the Futhark program outputs.
TEST_P(Histo, FutharkFormOfTheArtifact) {
  const auto file = gen("histo", "tiny", "tiny.in", {}, "futhark");
  run("histo", {file}, "", {}, "futhark", path("out"));
  EXPECT_TRUE(validate("histo", {file}, path("out"), "futhark").ok);
  // The same image as Parboil's file gives the same counters.
  const auto parboil = gen("histo", "tiny", "img.bin", {}, "parboil");
  run("histo", {parboil}, "", {}, "parboil", path("out-parboil"));
  const auto counts = datasets::bundle::open(path("out")).read<std::uint8_t>("histo");
  EXPECT_EQ(counts, datasets::bundle::open(path("out-parboil")).read<std::uint8_t>("histo"));
  std::vector<std::int32_t> theirs(counts.begin(), counts.end());
  const auto expected = path("tiny.out");
  datasets::write_futhark_values(expected, std::vector<datasets::futhark_value>{
                                               datasets::make_futhark_value<std::int32_t>({std::int64_t(theirs.size())}, theirs)});
  EXPECT_TRUE(compare("histo", path("out"), expected, "futhark").ok);
  theirs[3] += 1;
  datasets::write_futhark_values(expected, std::vector<datasets::futhark_value>{
                                               datasets::make_futhark_value<std::int32_t>({std::int64_t(theirs.size())}, theirs)});
  const auto off = compare("histo", path("out"), expected, "futhark");
  EXPECT_FALSE(off.ok);
  EXPECT_NE(off.summary.find("1 of " + std::to_string(theirs.size()) + " counts differ; the first, bin 3"), std::string::npos) << off.summary;
}

// The Parboil-shaped preset: 1M pixels into 1M bins.
TEST_P(Histo, ParboilShape) {
  const auto summary = round_trip("histo", "parboil", "", {}, {{"iterations", "2"}});
  EXPECT_NE(summary.find("996 x 1040 pixels into 256 x 4096 bins"), std::string::npos) << summary;
}

TEST_P(Histo, BadInputsThroughTheApp) {
  if (GetParam() == backend::cuda) GTEST_SKIP() << "input checks are backend-independent";
  const auto bad = write("beyond.bin", little_endian({2, 1, 2, 2, 1, 4}));
  EXPECT_NE(error_of<input_error>([&] { run("histo", {bad}, "", {}, "parboil"); }).find("beyond the 2 x 2 histogram"),
            std::string::npos);
  const auto data = gen("histo", "tiny", "data");
  EXPECT_NE(error_of<usage_error>([&] { run("histo", {data}, "", {{"iterations", "0"}}); }).find("iterations"),
            std::string::npos);
  EXPECT_NE(error_of<usage_error>([&] { run("histo", {data}, "counts,M=x"); }).find("M"), std::string::npos);
  EXPECT_NE(error_of<usage_error>([&] { run("histo", {data, data}); }).find("one input"), std::string::npos);
}

SOAC_INSTANTIATE_APP_BACKENDS(Histo);

}  // namespace

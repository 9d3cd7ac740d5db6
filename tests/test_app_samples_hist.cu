// The samples-hist app (the CUDA samples' byte histograms) on both backends: every variant
// against the sequential reference, partial last words and vectors, raw files.
#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "datasets/bundle.hpp"
#include "tests/app_fixture.hpp"
#include "validate/histo.hpp"

namespace {

using namespace soac;
using soac::testing::app_test;
using soac::testing::error_of;
namespace fs = std::filesystem;

class SamplesHist : public app_test {
 protected:
  fs::path write(const std::string& name, const std::string& bytes) {
    std::ofstream(path(name), std::ios::binary) << bytes;
    return path(name);
  }
};

TEST(SamplesHistReference, CountsBytesAndQuarters) {
  const std::vector<std::uint8_t> bytes = {0, 3, 4, 255, 255, 128};
  const auto c256 = validate::byte_counts(bytes, 0), c64 = validate::byte_counts(bytes, 2);
  ASSERT_EQ(c256.size(), 256u);
  ASSERT_EQ(c64.size(), 64u);
  EXPECT_EQ(c256[255], 2u);
  EXPECT_EQ(c256[3], 1u);
  EXPECT_EQ(c64[0], 2u);  // 0 and 3
  EXPECT_EQ(c64[1], 1u);  // 4
  EXPECT_EQ(c64[63], 2u);
  EXPECT_EQ(c64[32], 1u);
}

TEST_P(SamplesHist, EveryVariantMatchesTheReference) {
  std::vector<std::string> variants = {"vectors", "words", "vectors,M=0", "words,M=0", "vectors,ahead=on", "vectors,private=on,M=0",
                                       "words,strategy=global,M=1"};
  if (GetParam() == backend::cuda) variants.insert(variants.end(), {"sample", "cub"});
  for (const auto& v : variants) round_trip("samples-hist", "tiny", v);
}

// Streams of every length mod 16 (partial last words and vectors), and of none.
TEST_P(SamplesHist, EveryTail) {
  std::vector<std::string> variants = {"vectors", "words"};
  if (GetParam() == backend::cuda) variants.push_back("sample");
  for (int bytes : {0, 1, 2, 3, 4, 5, 15, 16, 17, 31, 33, 1000, 16 * 63 * 128 + 7})
    for (const auto& v : variants) round_trip("samples-hist", "tiny", v, {{"bytes", std::to_string(bytes)}});
}

TEST_P(SamplesHist, RawFiles) {
  std::string bytes;
  for (int i = 0; i < 70001; ++i) bytes += char((i * 7919) >> 3);
  const auto file = write("stream.raw", bytes);
  const auto result = path("out");
  run("samples-hist", {file}, "", {}, "raw", result);
  EXPECT_TRUE(validate("samples-hist", {file}, result, "raw").ok);
  const auto got = datasets::bundle::open(result).read<std::uint32_t>("histo256");
  const auto want = validate::byte_counts(std::vector<std::uint8_t>(bytes.begin(), bytes.end()), 0);
  EXPECT_EQ(got, want);
  // A result that does not match is reported.
  bytes[5] = char(bytes[5] + 1);
  const auto other = write("other.raw", bytes);
  const auto report = validate("samples-hist", {other}, result, "raw");
  EXPECT_FALSE(report.ok);
  EXPECT_NE(report.summary.find("histo256 bin"), std::string::npos) << report.summary;
  // gen writes the raw bytes.
  const auto generated = gen("samples-hist", "tiny", "gen.raw", {}, "raw");
  EXPECT_EQ(fs::file_size(generated), 100003u);
  EXPECT_NE(error_of<input_error>([&] { run("samples-hist", {path("missing.raw")}, "", {}, "raw"); }).find("no such file"),
            std::string::npos);
}

TEST_P(SamplesHist, BaselinesNeedCudaAndBadVariants) {
  if (GetParam() == backend::cuda) GTEST_SKIP() << "host only";
  const auto data = gen("samples-hist", "tiny", "data");
  for (const char* v : {"sample", "cub"})
    EXPECT_NE(error_of<usage_error>([&] { run("samples-hist", {data}, v); }).find("needs the cuda backend"), std::string::npos);
  EXPECT_NE(error_of<usage_error>([&] { run("samples-hist", {data}, "vectors,Q=1"); }).find("unknown setting"), std::string::npos);
}

SOAC_INSTANTIATE_APP_BACKENDS(SamplesHist);

}  // namespace

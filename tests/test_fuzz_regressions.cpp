// Every input the fuzz targets (fuzz/) found crashing, hanging or misread a reader, as a test of
// the clean error it now gets. The inputs themselves are also kept in fuzz/regressions/NAME/,
// which the fuzz_corpus.NAME tests replay through the fuzz targets.
#include <filesystem>
#include <fstream>
#include <string>
#include <unistd.h>

#include <gtest/gtest.h>

#include "core/error.hpp"
#include "datasets/image.hpp"

namespace {

namespace fs = std::filesystem;
using namespace soac;

class FuzzRegressions : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("soac_fuzzreg_" + std::to_string(::getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path write(const std::string& name, const std::string& bytes) {
    std::ofstream(dir_ / name, std::ios::binary) << bytes;
    return dir_ / name;
  }
  template <class F>
  std::string input_error_of(F&& f) {
    try {
      f();
    } catch (const input_error& e) {
      return e.what();
    }
    ADD_FAILURE() << "no input_error";
    return {};
  }
  fs::path dir_;
};

// fuzz_image: a 17-byte PGM whose header promised 5252 x 5255 pixels was decoded by stb_image
// into 27 MB of uninitialised pixels (a hang in the fuzzer, garbage for a user).
TEST_F(FuzzRegressions, TruncatedPgmIsAnInputError) {
  const auto path = write("short.pgm", std::string("P5\n\n5252\n5255\n\0\xa0\xc8", 17));
  const auto e = input_error_of([&] { datasets::read_grey_image(path); });
  EXPECT_NE(e.find("short.pgm: truncated: the PGM header promises 5252 x 5255 pixels"), std::string::npos) << e;
}

// The boundary of that check: a whole PGM and PPM (a comment in the header, 16-bit samples) read,
// one byte less does not.
TEST_F(FuzzRegressions, PnmLengthBoundary) {
  const std::string grey = "P5\n# a comment\n3 2\n255\n";
  const auto whole = write("whole.pgm", grey + "abcdef");
  const auto img = datasets::read_grey_image(whole);
  EXPECT_EQ(img.width, 3);
  EXPECT_EQ(img.height, 2);
  EXPECT_EQ(img.pixels[5], 'f');
  const auto short_by_one = write("short.pgm", grey + "abcde");
  EXPECT_NE(input_error_of([&] { datasets::read_grey_image(short_by_one); }).find("(6 bytes) but only 5"), std::string::npos);
  const std::string colour = "P6 2 1 65535 ";
  EXPECT_EQ(datasets::read_grey_image(write("whole.ppm", colour + std::string(12, '\x10'))).width, 2);
  EXPECT_NE(input_error_of([&] { datasets::read_grey_image(write("short.ppm", colour + std::string(11, '\x10'))); })
                .find("(12 bytes) but only 11"),
            std::string::npos);
}

}  // namespace

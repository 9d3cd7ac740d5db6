// The shared readers of the originals' formats (datasets/text_reader, datasets/binary_file),
// extra files in bundles, and images (datasets/image): positions in errors, no allocation beyond
// what a file holds. The inputs the fuzz targets (fuzz/) found misread are tested here too; they
// are also kept in fuzz/regressions/NAME/, which the fuzz_corpus.NAME tests replay.
#include <filesystem>
#include <fstream>
#include <string>
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include "datasets/binary_file.hpp"
#include "datasets/bundle.hpp"
#include "datasets/image.hpp"
#include "datasets/text_reader.hpp"

namespace {

namespace fs = std::filesystem;
using namespace soac;
using namespace soac::datasets;

class Formats : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("soac_formats_" + std::to_string(::getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path write(const std::string& name, const std::string& bytes) {
    std::ofstream(dir_ / name, std::ios::binary) << bytes;
    return dir_ / name;
  }
  fs::path dir_;
};

std::string message_of(auto&& body) {
  try {
    body();
  } catch (const input_error& e) {
    return e.what();
  }
  return "(no input_error)";
}

TEST_F(Formats, TextReaderReadsNumbersAcrossBlankLines) {
  text_reader in(write("a.txt", "3\n\n  1 2.5\r\n+4 -1e3\n"));
  EXPECT_EQ(in.read_int("n", 0, 10), 3);
  EXPECT_EQ(in.read_int("a", 0, 10), 1);
  EXPECT_DOUBLE_EQ(in.read_double("b"), 2.5);
  EXPECT_EQ(in.read_int("c", 0, 10), 4);
  EXPECT_FLOAT_EQ(in.read_float("d"), -1000.0f);
  EXPECT_TRUE(in.at_end());
}

TEST_F(Formats, TextReaderErrorsNameFileLineAndColumn) {
  const auto bad = write("bad.txt", "1 2\n3 x7\n");
  text_reader in(bad);
  in.read_int("a", 0, 9);
  in.read_int("b", 0, 9);
  in.read_int("c", 0, 9);
  const auto m = message_of([&] { in.read_int("the degree", 0, 9); });
  EXPECT_NE(m.find(bad.string() + ":2:3: expected the degree (an integer), found 'x7'"), std::string::npos) << m;
  text_reader range(write("range.txt", "\n  -5"));
  const auto r = message_of([&] { range.read_int("the count", 0, 9); });
  EXPECT_NE(r.find(":2:3: the count is -5, outside [0, 9]"), std::string::npos) << r;
  text_reader empty(write("empty.txt", "  \n"));
  EXPECT_NE(message_of([&] { empty.read_float("a feature"); }).find("expected a feature, but the file ends"), std::string::npos);
  EXPECT_NE(message_of([] { text_reader missing("/nonexistent/soac/x.txt"); }).find("no such file"), std::string::npos);
}

TEST_F(Formats, TextReaderKeepsLinesApart) {
  text_reader in(write("lines.txt", "1 2 3\n4 5\n6 7 8 9\n"));
  int per_line[3] = {0, 0, 0};
  for (int line = 0; line < 3; ++line) {
    while (in.next_on_line()) {
      in.read_int("v", 0, 9);
      ++per_line[line];
    }
    in.end_line("the values");
  }
  EXPECT_EQ(per_line[0], 3);
  EXPECT_EQ(per_line[1], 2);
  EXPECT_EQ(per_line[2], 4);
  text_reader extra(write("extra.txt", "1 2 x\n"));
  extra.read_int("a", 0, 9);
  extra.read_int("b", 0, 9);
  const auto m = message_of([&] { extra.end_line("a point"); });
  EXPECT_NE(m.find(":1:5: unexpected 'x' after a point"), std::string::npos) << m;
}

TEST_F(Formats, BinaryReaderChecksSizesBeforeAllocating) {
  std::string bytes;
  append_bytes(bytes, std::uint32_t{2});
  append_bytes(bytes, std::uint32_t{0xffffffffu});  // a count far beyond the file
  append_bytes(bytes, 1.5f);
  const auto file = write("b.bin", bytes);
  binary_reader in(file);
  EXPECT_EQ(in.read<std::uint32_t>("n"), 2u);
  const auto count = in.read<std::uint32_t>("count");
  const auto m = message_of([&] { in.read_array<float>(std::uint64_t{count} * count, "the values"); });
  EXPECT_NE(m.find(file.string() + ": holds 4 bytes after offset 8, too few for the values"), std::string::npos) << m;
  EXPECT_EQ(in.read_array<float>(1, "one value").at(0), 1.5f);
  in.expect_end("the values");
  binary_reader again(file);
  again.read<std::uint32_t>("n");
  EXPECT_NE(message_of([&] { again.expect_end("the header"); }).find("8 unexpected bytes after the header"), std::string::npos);
  EXPECT_NE(message_of([&] { binary_reader d(dir_); }).find("not a regular file"), std::string::npos);
}

TEST_F(Formats, BundlesCarryExtraFiles) {
  {
    bundle_writer out(dir_ / "r", "result", "demo");
    out.add<int>("x", std::vector<int>{1, 2});
    out.add_file("out.txt", "0) cost:0\n");
    EXPECT_THROW(out.add_file("x.npy", "no"), usage_error);
    EXPECT_THROW(out.add_file("../escape", "no"), usage_error);
    out.finish();
  }
  const auto b = bundle::open(dir_ / "r", "result", "demo");
  ASSERT_TRUE(b.has_file("out.txt"));
  std::ifstream in(b.file_path("out.txt"));
  std::string line;
  std::getline(in, line);
  EXPECT_EQ(line, "0) cost:0");
  write("r/out.txt", "changed after the run");
  EXPECT_NE(message_of([&] { b.file_path("out.txt"); }).find("the manifest says 10 bytes"), std::string::npos);
  // Rewriting the bundle removes the files its manifest listed.
  { bundle_writer again(dir_ / "r", "result", "demo"); again.finish(); }
  EXPECT_FALSE(fs::exists(dir_ / "r" / "out.txt"));
}

// fuzz_app: a bundle whose manifest.json is a folder escaped as std::ios_base::failure (the CLI's
// internal error, exit 6); now an input error.
TEST_F(Formats, ManifestThatIsAFolderIsAnInputError) {
  fs::create_directories(dir_ / "b" / "manifest.json");
  EXPECT_NE(message_of([&] { bundle::open(dir_ / "b"); }).find("manifest.json: is a folder, not a manifest file"), std::string::npos);
}

// fuzz_image: a 17-byte PGM whose header promised 5252 x 5255 pixels was decoded by stb_image
// into 27 MB of uninitialised pixels (a hang in the fuzzer, garbage for a user).
TEST_F(Formats, TruncatedPgmIsAnInputError) {
  const auto path = write("short.pgm", std::string("P5\n\n5252\n5255\n\0\xa0\xc8", 17));
  const auto e = message_of([&] { read_grey_image(path); });
  EXPECT_NE(e.find("short.pgm: truncated: the PGM header promises 5252 x 5255 pixels"), std::string::npos) << e;
}

// The boundary of that check: whole PGMs and a PPM (a comment in the header, 16-bit samples)
// read, one byte less does not.
TEST_F(Formats, PnmLengthBoundary) {
  const std::string grey = "P5\n# a comment\n3 2\n255\n";
  const auto img = read_grey_image(write("whole.pgm", grey + "abcdef"));
  EXPECT_EQ(img.width, 3);
  EXPECT_EQ(img.height, 2);
  EXPECT_EQ(img.pixels[5], 'f');
  EXPECT_NE(message_of([&] { read_grey_image(write("short.pgm", grey + "abcde")); }).find("(6 bytes) but only 5"), std::string::npos);
  const std::string wide = "P5 2 1 65535 ";
  EXPECT_EQ(read_grey_image(write("wide.pgm", wide + std::string(4, '\x80'))).pixels[1], 0x80);
  EXPECT_NE(message_of([&] { read_grey_image(write("short-wide.pgm", wide + std::string(3, '\x80'))); }).find("(4 bytes) but only 3"),
            std::string::npos);
  EXPECT_EQ(read_grey_image(write("colour.ppm", "P6 2 1 255 " + std::string(6, '\x10'))).width, 2);
  EXPECT_NE(message_of([&] { read_grey_image(write("short.ppm", "P6 2 1 255 " + std::string(5, '\x10'))); }).find("(6 bytes) but only 5"),
            std::string::npos);
}

// fuzz_image: a 102-byte BMP whose header promised 131121 x 1022 pixels was decoded into 400 MB
// (zeros after the file's end; a timeout in the fuzzer). The boundary: a whole 3 x 2 24-bit BMP
// (rows padded to 12 bytes) reads, one byte less does not.
TEST_F(Formats, BmpLengthBoundary) {
  const auto le = [](std::uint32_t v, int bytes) {
    std::string out;
    for (int i = 0; i < bytes; ++i) out += char(v >> (8 * i) & 0xff);
    return out;
  };
  const std::string header = "BM" + le(78, 4) + le(0, 4) + le(54, 4) + le(40, 4) + le(3, 4) + le(2, 4) + le(1, 2) + le(24, 2) +
                             le(0, 4) + le(24, 4) + std::string(16, '\0');
  std::string rows;
  for (int y = 0; y < 2; ++y) rows += std::string(9, char(40 + 100 * y)) + std::string(3, '\0');
  const auto img = read_grey_image(write("whole.bmp", header + rows));
  EXPECT_EQ(img.width, 3);
  EXPECT_EQ(img.height, 2);
  EXPECT_EQ(img.pixels[0], 140);  // bottom-up rows: the first row stored is the last row of the image
  // fuzz_image: stb_image reads any compression value but RLE's (1, 2) as uncompressed; so does the check.
  std::string odd = header;
  odd.replace(30, 4, le(0x80805052u, 4));
  EXPECT_NE(message_of([&] { read_grey_image(write("odd.bmp", odd + rows.substr(0, 23))); }).find("odd.bmp: truncated"), std::string::npos);
  const auto e = message_of([&] { read_grey_image(write("short.bmp", header + rows.substr(0, 23))); });
  EXPECT_NE(e.find("short.bmp: truncated: the BMP header promises 3 x 2 pixels (78 bytes with its headers) but the file has 77"),
            std::string::npos) << e;
}

// A 33-byte PNG header that promises 20000 x 20000 pixels: more than any real PNG packs into so
// few bytes, refused before stb_image allocates 400 MB for it.
TEST_F(Formats, ImageHeaderPromisingFarMorePixelsThanItsBytes) {
  const auto be = [](std::uint32_t v) { return std::string{char(v >> 24), char(v >> 16 & 0xff), char(v >> 8 & 0xff), char(v & 0xff)}; };
  const std::string png = std::string("\x89PNG\r\n\x1a\n", 8) + be(13) + "IHDR" + be(20000) + be(20000) + std::string("\x08\0\0\0\0", 5) + be(0);
  const auto e = message_of([&] { read_grey_image(write("bomb.png", png)); });
  EXPECT_NE(e.find("bomb.png: truncated or not an image: its header promises 20000 x 20000 pixels from a file of 33 bytes"),
            std::string::npos) << e;
}

// fuzz_image (UBSan): stb_image copies a leading empty IDAT chunk into a null buffer. Such chunks
// are dropped before decoding; the image reads as it would without them.
TEST_F(Formats, PngWithAnEmptyDataChunkReads) {
  const grey_image original{3, 2, {1, 2, 3, 4, 5, 6}};
  std::string png = encode_png(original);
  const auto idat = png.find("IDAT");
  ASSERT_NE(idat, std::string::npos);
  png.insert(idat - 4, std::string("\0\0\0\0IDAT\xae\x42\x60\x82", 12));
  const auto img = read_grey_image(write("empty-idat.png", png));
  EXPECT_EQ(img.width, 3);
  EXPECT_EQ(img.pixels, original.pixels);
}

// fuzz_image: an IDAT chunk declaring more bytes than the file holds made stb_image grow its
// buffer to 2 GiB before reading; a PNG cut short inside its data is an input error.
TEST_F(Formats, PngDataChunkLongerThanTheFileIsAnInputError) {
  const std::string png = encode_png(grey_image{3, 2, {1, 2, 3, 4, 5, 6}});
  const auto idat = png.find("IDAT");
  ASSERT_NE(idat, std::string::npos);
  std::string cut = png.substr(0, idat + 8);  // the chunk's header and 4 of its bytes
  const std::string message = message_of([&] { read_grey_image(write("cut.png", cut)); });
  EXPECT_NE(message.find("cut.png: truncated: the PNG data chunk at byte " + std::to_string(idat - 4)), std::string::npos) << message;
  std::string huge = png;
  huge.replace(idat - 4, 4, std::string("\x40\0\0\0", 4));  // 1 GiB declared
  EXPECT_NE(message_of([&] { read_grey_image(write("huge.png", huge)); }).find("declares 1073741824 bytes"), std::string::npos);
  // Whole chunks read, and anything past IEND is not looked at.
  EXPECT_EQ(read_grey_image(write("tail.png", png + std::string("\xff\xff\xff\xffIDAT", 8))).pixels,
            (std::vector<std::uint8_t>{1, 2, 3, 4, 5, 6}));
}

// Found by the sanitizer build on that test: stb_image reads past its buffer when it turns a
// 16-bit colour PPM into grey; such files are refused.
TEST_F(Formats, WideColourPpmIsAnInputError) {
  EXPECT_NE(message_of([&] { read_grey_image(write("wide.ppm", "P6 2 1 65535 " + std::string(12, '\x10'))); })
                .find("wide.ppm: PPM with 16-bit samples is not supported"),
            std::string::npos);
}

// fuzz_image: stb_image's header parser overflowed an int (undefined behaviour) on a long number.
TEST_F(Formats, PnmHeaderNumbersAreBounded) {
  EXPECT_NE(message_of([&] { read_grey_image(write("long.pgm", "P5 2 2555252552 255 abcd")); }).find("more than 16777216 on a side"),
            std::string::npos);
  EXPECT_NE(message_of([&] { read_grey_image(write("deep.pgm", "P5 2 2 99999999999999999999 abcd")); }).find("maximum value"),
            std::string::npos);
}

// A device or pipe never ends or waits for a writer: the readers refuse anything but a file.
TEST_F(Formats, ReadersRefuseWhatIsNotARegularFile) {
  ASSERT_EQ(::mkfifo((dir_ / "pipe").c_str(), 0600), 0);
  EXPECT_NE(message_of([&] { text_reader in(dir_ / "pipe"); }).find("not a regular file"), std::string::npos);
  EXPECT_NE(message_of([&] { text_reader in("/dev/zero"); }).find("not a regular file"), std::string::npos);
  EXPECT_NE(message_of([&] { binary_reader in(dir_ / "pipe"); }).find("not a regular file"), std::string::npos);
}

// A rename over a device, pipe, folder or link would replace it (as root, /dev/full itself).
TEST_F(Formats, WritersReplaceOnlyRegularFiles) {
  ASSERT_EQ(::mkfifo((dir_ / "pipe").c_str(), 0600), 0);
  fs::create_directories(dir_ / "folder");
  fs::create_symlink(dir_ / "elsewhere", dir_ / "link");
  for (const char* name : {"pipe", "folder", "link"})
    EXPECT_NE(message_of([&] { write_file_atomically(dir_ / name, "x"); }).find("exists and is not a regular file"), std::string::npos)
        << name;
  EXPECT_TRUE(fs::is_fifo(dir_ / "pipe"));
  EXPECT_TRUE(fs::is_symlink(dir_ / "link"));
  write_file_atomically(dir_ / "plain", "old");
  write_file_atomically(dir_ / "plain", "new");
  std::ifstream in(dir_ / "plain");
  EXPECT_EQ(std::string(std::istreambuf_iterator<char>(in), {}), "new");
  EXPECT_NE(message_of([&] { write_file_atomically(dir_ / "no" / "such" / "folder", "x"); }).find("No such file or directory"),
            std::string::npos);
}

// A multi-file format whose writing fails part way leaves none of its files (nor the folder it
// made), so nothing partial passes for a dataset; committed, all stay.
TEST_F(Formats, FileSetsLeaveNothingPartialBehind) {
  const fs::path folder = dir_ / "set";
  try {
    file_set_writer files(folder);
    write_file_atomically(files.add("a.txt"), "1");
    write_file_atomically(files.add("b.txt"), "2");
    files.add("c.txt");
    throw input_error("the disk filled");
  } catch (const input_error&) {
  }
  EXPECT_FALSE(fs::exists(folder));
  fs::create_directories(folder);
  write_file_atomically(folder / "mine.txt", "the user's");
  try {
    file_set_writer files(folder);
    write_file_atomically(files.add("a.txt"), "1");
    throw input_error("the disk filled");
  } catch (const input_error&) {
  }
  EXPECT_FALSE(fs::exists(folder / "a.txt"));
  EXPECT_TRUE(fs::exists(folder / "mine.txt"));  // a folder that was there keeps what it held
  {
    file_set_writer files(folder);
    write_file_atomically(files.add("a.txt"), "1");
    files.commit();
  }
  EXPECT_TRUE(fs::exists(folder / "a.txt"));
}

}  // namespace

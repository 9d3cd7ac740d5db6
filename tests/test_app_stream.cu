// The streamed apps of issue 25 (stream's histogram of a file, histeq, blackscholes, conv1d) on
// both backends: gen -> run -> validate in every format, chunks that do not divide the input and
// chunks of one element, a 0-byte file, truncated and malformed inputs, an unwritable output, the
// streamed result equal to the unstreamed one (the serial loop over one chunk), and validators
// that catch a wrong result.
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "apps/app.hpp"
#include "bench/harness.hpp"
#include "core/error.hpp"
#include "datasets/bundle.hpp"
#include "tests/app_fixture.hpp"
#include "validate/blackscholes.hpp"

namespace soac {
namespace {

using testing::error_of;
namespace fs = std::filesystem;

std::string bytes_of(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

void write_bytes(const fs::path& p, const std::string& bytes) { std::ofstream(p, std::ios::binary) << bytes; }

// Flips one byte of a file in place, `from_end` bytes before its end.
void corrupt(const fs::path& p, std::size_t from_end) {
  std::string b = bytes_of(p);
  ASSERT_GT(b.size(), from_end);
  b[b.size() - 1 - from_end] ^= 0x5a;
  write_bytes(p, b);
}

class streamed_apps : public testing::app_test {};

// ---- stream: the histogram of a file ----

TEST_P(streamed_apps, StreamHistogramOfAFile) {
  round_trip("stream", "tiny", "streamed", {}, {{"chunk", "1000"}});  // 100003 bytes: the last chunk holds 3
  round_trip("stream", "tiny", "serial", {{"bytes", "10007"}}, {{"chunk", "1"}, {"readers", "3"}});
  const auto words = gen("stream", "words", "w.raw", {{"bytes", "400000"}}, "raw");
  run("stream", {words}, "", {{"dtype", "uint32"}, {"bins", "1000"}, {"chunk", "777"}}, "raw", path("w.result"));
  const auto rep = validate("stream", {words}, path("w.result"), "raw");
  EXPECT_TRUE(rep.ok) << rep.summary;
  // A wrong count is caught.
  const auto histo = path("w.result") / "histo.npy";
  corrupt(histo, 8);
  EXPECT_FALSE(validate("stream", {words}, path("w.result"), "raw").ok);
}

TEST_P(streamed_apps, StreamZeroByteAndRaggedFiles) {
  write_bytes(path("empty.raw"), "");
  run("stream", {path("empty.raw")}, "", {}, "raw", path("e.result"));
  const auto counts = datasets::bundle::open(path("e.result")).read<std::uint64_t>("histo");
  EXPECT_EQ(counts, std::vector<std::uint64_t>(256, 0));
  EXPECT_TRUE(validate("stream", {path("empty.raw")}, path("e.result"), "raw").ok);
  write_bytes(path("ragged.raw"), std::string(4001, 'x'));
  const auto msg = error_of<input_error>([&] { run("stream", {path("ragged.raw")}, "", {{"dtype", "uint32"}}, "raw"); });
  EXPECT_NE(msg.find("ragged.raw"), std::string::npos) << msg;
  EXPECT_NE(msg.find("whole number"), std::string::npos) << msg;
}

// ---- histeq ----

TEST_P(streamed_apps, HisteqBundleRawAndImages) {
  // A chunk of 1 pixel rounds up to one whole frame; 1700 pixels down to two.
  round_trip("histeq", "tiny", "streamed", {}, {{"chunk", "1"}});
  round_trip("histeq", "tiny", "serial", {}, {{"chunk", "1700"}});
  const auto raw = gen("histeq", "tiny", "v.raw", {{"frames", "7"}}, "raw");
  const std::map<std::string, std::string> size = {{"width", "37"}, {"height", "23"}, {"chunk", "3000"}, {"png", "2"}};
  run("histeq", {raw}, "", size, "raw", path("raw.result"));
  EXPECT_TRUE(validate("histeq", {raw}, path("raw.result"), "raw").ok);
  EXPECT_TRUE(fs::exists(path("raw.result") / "frame_000000.png"));
  EXPECT_TRUE(fs::exists(path("raw.result") / "frame_000006.png"));
  // Streamed equals the unstreamed program (the serial loop over one chunk), byte for byte.
  auto whole = size;
  whole["chunk"] = "1000000";
  run("histeq", {raw}, "serial", whole, "raw", path("whole.result"));
  EXPECT_EQ(bytes_of(path("raw.result") / "equalized.raw"), bytes_of(path("whole.result") / "equalized.raw"));
  // The same frames as a folder of PNGs give the same output.
  const auto images = gen("histeq", "tiny", "frames", {{"frames", "7"}}, "images");
  run("histeq", {images}, "", {{"chunk", "1"}}, "images", path("img.result"));
  EXPECT_TRUE(validate("histeq", {images}, path("img.result"), "images").ok);
  EXPECT_EQ(bytes_of(path("img.result") / "equalized.raw"), bytes_of(path("raw.result") / "equalized.raw"));
  // A wrong pixel is caught.
  corrupt(path("raw.result") / "equalized.raw", 100);
  const auto rep = validate("histeq", {raw}, path("raw.result"), "raw");
  EXPECT_FALSE(rep.ok);
  EXPECT_NE(rep.summary.find("frame 6"), std::string::npos) << rep.summary;
}

TEST_P(streamed_apps, HisteqBadInputs) {
  const auto raw = gen("histeq", "tiny", "v.raw", {}, "raw");
  // 37 x 23 x 5 bytes are not frames of 40 x 23.
  auto msg = error_of<input_error>([&] { run("histeq", {raw}, "", {{"width", "40"}, {"height", "23"}}, "raw"); });
  EXPECT_NE(msg.find("whole number"), std::string::npos) << msg;
  // Images of different sizes, and a file that is no image.
  const auto images = gen("histeq", "tiny", "frames", {{"frames", "2"}}, "images");
  const auto odd = gen("histeq", "tiny", "odd", {{"frames", "1"}, {"width", "5"}}, "images");
  fs::copy_file(odd / "frame_000000.png", images / "frame_000009.png");
  msg = error_of<input_error>([&] { run("histeq", {images}, "", {}, "images"); });
  EXPECT_NE(msg.find("5 x 23"), std::string::npos) << msg;
  write_bytes(images / "frame_000009.png", "not a png at all");
  msg = error_of<input_error>([&] { run("histeq", {images}, "", {}, "images"); });
  EXPECT_NE(msg.find("frame_000009.png"), std::string::npos) << msg;
  // An unwritable result: its folder would sit under a plain file.
  write_bytes(path("plain"), "x");
  EXPECT_THROW(run("histeq", {raw}, "", {{"width", "37"}, {"height", "23"}}, "raw", path("plain") / "out"), input_error);
}

// ---- blackscholes ----

TEST_P(streamed_apps, BlackscholesZoneForm) {
  round_trip("blackscholes", "tiny", "streamed", {}, {{"chunk", "1"}});
  round_trip("blackscholes", "tiny", "serial", {}, {{"chunk", "333"}, {"writers", "3"}});
  const auto dir = gen("blackscholes", "tiny", "raw", {{"options", "5000"}}, "raw");
  run("blackscholes", {dir}, "", {{"chunk", "999"}}, "raw", path("a.result"));
  EXPECT_TRUE(validate("blackscholes", {dir}, path("a.result"), "raw").ok);
  // Five files named one by one; streamed equals unstreamed byte for byte.
  std::vector<fs::path> files;
  for (const char* n : {"spot", "strike", "years", "rate", "volatility"}) files.push_back(dir / (std::string(n) + ".f32"));
  run("blackscholes", files, "serial", {{"chunk", "100000"}}, "raw", path("b.result"));
  EXPECT_TRUE(validate("blackscholes", files, path("b.result"), "raw").ok);
  for (const char* o : {"call.f32", "put.f32"}) EXPECT_EQ(bytes_of(path("a.result") / o), bytes_of(path("b.result") / o)) << o;
  // A wrong price is caught.
  corrupt(path("a.result") / "put.f32", 2);
  EXPECT_FALSE(validate("blackscholes", {dir}, path("a.result"), "raw").ok);
  // A truncated array.
  fs::resize_file(dir / "strike.f32", 4 * 4999);
  const auto msg = error_of<input_error>([&] { run("blackscholes", {dir}, "", {}, "raw"); });
  EXPECT_NE(msg.find("strike.f32"), std::string::npos) << msg;
}

// soac bench's table for a streamed workload: the serial loop and the bound as baselines, every
// stage alone, the host's read and write stages together, and the streamed run, whose note
// compares it with the serial loop, the bound and the host stages together.
TEST_P(streamed_apps, BenchTimesEveryStageAloneAndTheHostStagesTogether) {
  bench::suite suite(ctx(), "blackscholes", bench::settings{.warmup = 0, .runs = 1, .progress = false, .warmup_ms = 0});
  apps::bench_request req;
  req.overrides = {{"options", "5000"}, {"dir", path("bench").string()}};
  fs::create_directories(path("bench"));
  apps::find_app("blackscholes").bench(ctx(), req, suite);
  ASSERT_EQ(suite.cases().size(), 1u);
  std::vector<std::string> names;
  for (const auto& v : suite.cases()[0].variants) names.push_back(v.name);
  std::vector<std::string> expected = {"serial loop", "bound", "read alone"};
  if (ctx().is_cuda()) expected.emplace_back("host-to-device alone");
  expected.emplace_back("kernel alone");
  if (ctx().is_cuda()) expected.emplace_back("device-to-host alone");
  for (const char* n : {"write alone", "read and write together", "streamed"}) expected.emplace_back(n);
  EXPECT_EQ(names, expected);
  EXPECT_EQ(suite.cases()[0].variants[1].kind, bench::role::baseline);
  const std::string& note = suite.cases()[0].variants.back().note;
  for (const char* part : {"speedup over the serial loop", "streamed / bound", "streamed / (read and write together)"})
    EXPECT_NE(note.find(part), std::string::npos) << note;
  EXPECT_EQ(note.find("WRONG"), std::string::npos) << note;
  // The header names the stream benches' own timing (1 warm-up, the least they take), not
  // measure()'s settings (0 here).
  std::ostringstream printed;
  suite.print(printed);
  EXPECT_NE(printed.str().find("wall clock of whole runs (the first read to the last byte written), 1 timed run after 1 warm-up"),
            std::string::npos)
      << printed.str();
}

// A result of another dataset (another length) is named as such, not compared element by element
// or taken for a truncated file.
TEST_P(streamed_apps, ResultOfAnotherDatasetIsAnInputError) {
  const auto small = gen("blackscholes", "tiny", "bs100", {{"options", "100"}});
  const auto big = gen("blackscholes", "tiny", "bs300", {{"options", "300"}});
  run("blackscholes", {small});
  run("blackscholes", {big});
  for (const auto& [data, result] : {std::pair{small, big}, std::pair{big, small}})
    EXPECT_NE(error_of<input_error>([&] { validate("blackscholes", {data}, result.string() + ".result"); }).find("(a result of another dataset?)"),
              std::string::npos);
  const auto c1 = gen("conv1d", "tiny", "c1", {{"elements", "100"}});
  const auto c2 = gen("conv1d", "tiny", "c2", {{"elements", "120"}});
  run("conv1d", {c2});
  EXPECT_NE(error_of<input_error>([&] { validate("conv1d", {c1}, c2.string() + ".result"); }).find("holds 120 elements, but the dataset has 100"),
            std::string::npos);
}

// Inputs outside the formula's domain give the same NaN in the app and the reference: a match.
TEST(StreamedValidators, SameNonFiniteValuesMatch) {
  EXPECT_TRUE(validate::same_non_finite(NAN, NAN));
  EXPECT_TRUE(validate::same_non_finite(INFINITY, INFINITY));
  EXPECT_FALSE(validate::same_non_finite(INFINITY, -INFINITY));
  EXPECT_FALSE(validate::same_non_finite(NAN, 1.0));
  EXPECT_FALSE(validate::same_non_finite(1.0, 1.0));  // finite values go through the tolerance
  validate::report rep;
  double worst = 0;
  const float S[] = {NAN, 100}, X[] = {100, 100}, T[] = {1, 1}, r[] = {0.02f, 0.02f}, v[] = {0.3f, 0.3f};
  const auto ref = validate::blackscholes_reference(100, 100, 1, 0.02f, 0.3f);
  const float call[] = {NAN, float(ref.call)}, put[] = {NAN, float(ref.put)};
  validate::check_prices(rep, worst, 0, S, X, T, r, v, call, put);
  EXPECT_TRUE(rep.ok()) << rep.describe("options");
  const float wrong_call[] = {NAN, float(ref.call) + 1};
  validate::check_prices(rep, worst, 0, S, X, T, r, v, wrong_call, put);
  EXPECT_EQ(rep.mismatches, 1);
}

TEST_P(streamed_apps, BlackscholesFhpc17Form) {
  round_trip("blackscholes", "fhpc17-18", "", {{"options", "100"}, {"days", "37"}});
  EXPECT_THROW(round_trip("blackscholes", "fhpc17-18", "serial"), usage_error);
}

// ---- conv1d ----

TEST_P(streamed_apps, Conv1dHalos) {
  round_trip("conv1d", "tiny", "streamed", {}, {{"chunk", "1"}});  // halo of 3 around chunks of 1
  round_trip("conv1d", "tiny", "streamed", {}, {{"chunk", "7"}, {"radius", "10"}});
  round_trip("conv1d", "tiny", "serial", {}, {{"chunk", "250"}, {"filter", "-1,0,2,0,-1"}});
  const auto raw = gen("conv1d", "tiny", "x.f32", {{"elements", "100000"}}, "raw");
  run("conv1d", {raw}, "", {{"chunk", "4097"}}, "raw", path("a.result"));
  EXPECT_TRUE(validate("conv1d", {raw}, path("a.result"), "raw").ok);
  run("conv1d", {raw}, "serial", {{"chunk", "100000"}}, "raw", path("b.result"));
  EXPECT_EQ(bytes_of(path("a.result") / "conv.f32"), bytes_of(path("b.result") / "conv.f32"));
  corrupt(path("a.result") / "conv.f32", 4 * 50000);
  EXPECT_FALSE(validate("conv1d", {raw}, path("a.result"), "raw").ok);
  EXPECT_THROW(run("conv1d", {raw}, "", {{"filter", "1,2"}}, "raw"), usage_error);
  EXPECT_THROW(run("conv1d", {raw}, "", {{"filter", "1,x,2"}}, "raw"), usage_error);
  write_bytes(path("zero.f32"), "");
  run("conv1d", {path("zero.f32")}, "", {}, "raw", path("z.result"));
  EXPECT_EQ(fs::file_size(path("z.result") / "conv.f32"), 0u);
}

SOAC_INSTANTIATE_APP_BACKENDS(streamed_apps);

}  // namespace
}  // namespace soac

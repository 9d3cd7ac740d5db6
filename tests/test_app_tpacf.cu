// The tpacf app (Parboil tpacf) on both backends: the lookup-table binning against Parboil's
// binary search on every float where it matters, every variant and job shape against the float
// reference, Parboil's files and output, malformed files.
#include <cmath>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "apps/tpacf/tpacf_binning.hpp"
#include "datasets/bundle.hpp"
#include "datasets/futhark_data.hpp"
#include "datasets/parboil_tpacf.hpp"
#include "datasets/random.hpp"
#include "tests/app_fixture.hpp"
#include "validate/tpacf.hpp"

namespace {

using namespace soac;
using soac::testing::app_test;
using soac::testing::error_of;
namespace fs = std::filesystem;
namespace bins = soac::apps::tpacf;
namespace ref = soac::validate::tpacf;

// The table agrees with Parboil's binary search for every float from 0.25 up to just above 1
// (every boundary but the last three, and d >= 1), every float within 4096 steps of each
// boundary, and a million random floats in [-1.01, 1.01].
TEST(TpacfBinning, TableMatchesParboilsBinarySearch) {
  const bins::boundaries_f bf;
  const auto table = bins::make_cells(bf);
  std::int64_t checked = 0, wrong = 0;
  const auto check = [&](float d) {
    ++checked;
    const int want = ref::parboil_bin(d, bf.b), got = bins::bin_of(d, table.data());
    if (want != got && ++wrong < 10) ADD_FAILURE() << "d = " << d << ": table bin " << got << ", Parboil's " << want;
  };
  for (float d = 0.25f; d <= 1.0001f; d = std::nextafter(d, 2.0f)) check(d);
  for (int k = 0; k < bins::boundaries; ++k) {
    float d = bf.b[k];
    for (int s = 0; s < 4096; ++s) d = std::nextafter(d, -2.0f);
    for (int s = 0; s < 8192; ++s, d = std::nextafter(d, 2.0f)) check(d);
  }
  for (std::uint64_t i = 0; i < 1'000'000; ++i) check(float(-1.01 + 2.02 * datasets::random_unit(7, 0, i)));
  // A table for the bins of another kind counts from there.
  const auto rr_table = bins::make_cells(bf, 44);
  for (std::uint64_t i = 0; i < 1000; ++i) {
    const float d = float(-1 + 2 * datasets::random_unit(8, 0, i));
    EXPECT_EQ(bins::bin_of(d, rr_table.data()), 44 + ref::parboil_bin(d, bf.b));
  }
  for (float d : {-2.0f, -1.0f, 1.0f, 1.5f, -0.0f, 0.0f}) check(d);
  EXPECT_EQ(wrong, 0) << "of " << checked;
  EXPECT_GT(checked, 17'000'000);
  // Every bin is reachable: 0 at d = 1, 21 at d = -1.
  EXPECT_EQ(bins::bin_of(1.0f, table.data()), 0);
  EXPECT_EQ(bins::bin_of(-1.0f, table.data()), 21);
}

TEST(TpacfBinning, ParboilsUnitVectorsAndBoundaries) {
  const auto p = datasets::parboil_unit_vector(0, 0);
  EXPECT_EQ(p.x, 1.0f);
  EXPECT_EQ(p.y, 0.0f);
  EXPECT_EQ(p.z, 0.0f);
  const auto q = datasets::parboil_unit_vector(90, 45);
  EXPECT_NEAR(q.y, std::sqrt(0.5), 1e-7);
  EXPECT_NEAR(q.z, std::sqrt(0.5), 1e-7);
  EXPECT_NEAR(q.x, 0, 1e-7);
  const bins::boundaries_f bf;
  // 1 arcminute: a dot product 4.2e-8 below 1, rounded to the float just below 1.
  EXPECT_EQ(bf.b[0], std::nextafter(1.0f, 0.0f));
  EXPECT_NEAR(bf.b[20], std::cos(10000.0 / 60 * M_PI / 180), 1e-7);
  for (int k = 0; k < bins::boundaries; ++k) EXPECT_EQ(bf.b[k], float(ref::boundary(k)));
}

// Parboil's compare-output rules: relative and absolute tolerance must both be exceeded.
TEST(TpacfReference, ParboilTolerances) {
  ref::pair_counts a{}, b{};
  for (int k = 0; k < ref::counters; ++k) a.dd[k] = a.dr[k] = a.rr[k] = b.dd[k] = b.dr[k] = b.rr[k] = 100000;
  EXPECT_TRUE(ref::check_parboil_tolerances(a, b).ok());
  b.dd[1] = 100000 + 9000;  // bin 1: 10% or 3 (a surplus: the total may only fall short)
  EXPECT_TRUE(ref::check_parboil_tolerances(a, b).ok());
  b.dd[1] = 100000 + 11000;
  auto r = ref::check_parboil_tolerances(a, b);
  EXPECT_FALSE(r.ok());
  EXPECT_NE(r.describe("x").find("DD bin 1"), std::string::npos) << r.describe("x");
  b = a;
  b.rr[20] = 100000 + 5000;  // the last group: 0.1% or 10000
  EXPECT_TRUE(ref::check_parboil_tolerances(a, b).ok());
  b.rr[20] = 100000 + 20000;
  EXPECT_FALSE(ref::check_parboil_tolerances(a, b).ok());
  // The total may not fall short by more than 0.01%, though every bin is within its tolerance.
  for (int k = 0; k < ref::counters; ++k) a.dd[k] = a.dr[k] = a.rr[k] = 1000;
  b = a;
  for (int k = 1; k <= 20; ++k) b.dr[k] -= 9;
  r = ref::check_parboil_tolerances(a, b);
  EXPECT_FALSE(r.ok());
  EXPECT_EQ(r.mismatches, 1);
  EXPECT_NE(r.describe("x").find("falls short"), std::string::npos) << r.describe("x");
}

class Tpacf : public app_test {
 protected:
  fs::path write(const std::string& name, const std::string& text) {
    fs::create_directories(path(name).parent_path());
    std::ofstream(path(name)) << text;
    return path(name);
  }
};

TEST_P(Tpacf, EveryVariantMatchesTheFloatReference) {
  std::vector<std::string> variants = {"slices", "slices,private=on", "sets", "batched", "sets,private=on", "sets,block=512",
                                       "sets,strategy=global", "batched,private=on"};
  if (GetParam() == backend::cuda) variants.push_back("parboil");
  for (const auto& v : variants) round_trip("tpacf", "tiny", v);
}

// Sets of every size around the chunk of 8 points (partial chunks, one chunk, a single pair).
TEST_P(Tpacf, EveryChunkShape) {
  std::vector<std::string> variants = {"slices", "sets", "batched"};
  if (GetParam() == backend::cuda) variants.push_back("parboil");
  for (int n : {2, 3, 7, 8, 9, 16, 17, 33})
    for (const auto& v : variants)
      round_trip("tpacf", "tiny", v, {{"points", std::to_string(n)}, {"randoms", n % 2 ? "1" : "2"}, {"clusters", "2"}});
}

// A set of 1,500 points: 188 chunks, a triangle of 141K elements (the decoding's square root in
// float, corrected by integers).
TEST_P(Tpacf, LargerSets) { round_trip("tpacf", "tiny", "", {{"points", "1500"}, {"randoms", "1"}}); }

// Clustered data puts pairs in the small-angle bins too.
TEST_P(Tpacf, ClusteredDataFillsTheSmallBins) {
  const auto data = gen("tpacf", "tiny", "data", {{"points", "400"}, {"clusters", "3"}});
  const auto result = path("out");
  run("tpacf", {data}, "", {}, "", result);
  EXPECT_TRUE(validate("tpacf", {data}, result).ok);
  const auto dd = datasets::bundle::open(result).read<std::uint64_t>("dd");
  std::uint64_t small = 0, total = 0;
  for (int k = 0; k < ref::counters; ++k) total += dd[k], small += k <= 12 ? dd[k] : 0;  // under ~4 degrees
  EXPECT_EQ(total, 400u * 399 / 2);
  EXPECT_GT(small, 100u);
}

TEST_P(Tpacf, ParboilFilesAndOutput) {
  const auto folder = gen("tpacf", "tiny", "pb", {}, "parboil");
  ASSERT_TRUE(fs::exists(folder / "Datapnts.1"));
  ASSERT_TRUE(fs::exists(folder / "Randompnts.3"));
  const auto result = path("out");
  run("tpacf", {folder}, "", {}, "parboil", result);
  EXPECT_TRUE(validate("tpacf", {folder}, result, "parboil").ok);
  // The same through the file list, and through the bundle of the same data (gen is
  // deterministic), with the same counts.
  const auto listed = path("listed");
  run("tpacf", {folder / "Datapnts.1", folder / "Randompnts.1", folder / "Randompnts.2", folder / "Randompnts.3"}, "", {},
      "parboil", listed);
  const auto bundled = path("bundled");
  run("tpacf", {gen("tpacf", "tiny", "data")}, "", {}, "", bundled);
  for (const char* kind : {"dd", "dr", "rr"}) {
    const auto a = datasets::bundle::open(result).read<std::uint64_t>(kind);
    EXPECT_EQ(a, datasets::bundle::open(listed).read<std::uint64_t>(kind)) << kind;
    EXPECT_EQ(a, datasets::bundle::open(bundled).read<std::uint64_t>(kind)) << kind;
  }
  // Parboil's result file: bins 1 .. 20, DD DR RR each.
  const auto b = datasets::bundle::open(result);
  const auto dd = b.read<std::uint64_t>("dd"), dr = b.read<std::uint64_t>("dr"), rr = b.read<std::uint64_t>("rr");
  std::ostringstream want;
  for (int k = 1; k <= 20; ++k) want << dd[k] << "\n" << dr[k] << "\n" << rr[k] << "\n";
  std::ifstream f(b.file_path("tpacf.out"));
  std::stringstream have;
  have << f.rdbuf();
  EXPECT_EQ(have.str(), want.str());
  // A second gen of fewer sets into the folder leaves no stale random file behind.
  gen("tpacf", "tiny", "pb", {{"randoms", "2"}}, "parboil");
  EXPECT_TRUE(fs::exists(folder / "Randompnts.2"));
  EXPECT_FALSE(fs::exists(folder / "Randompnts.3"));
  gen("tpacf", "tiny", "pb", {}, "parboil");
  // Settings: the first 20 points of the first 2 random sets.
  const auto part = path("part");
  run("tpacf", {folder}, "", {{"points", "20"}, {"randoms", "2"}}, "parboil", part);
  EXPECT_TRUE(validate("tpacf", {folder}, part, "parboil").ok);
  const auto p = datasets::bundle::open(part);
  EXPECT_EQ(p.params()["points"], 20);
  EXPECT_EQ(p.params()["randoms"], 2);
  std::uint64_t pairs = 0;
  for (auto v : p.read<std::uint64_t>("dr")) pairs += v;
  EXPECT_EQ(pairs, 2u * 20 * 20);
}

// soac compare applies Parboil's compare-output to Parboil's own result file, against what
// Parboil prints: a count of 2^32 or more wraps there.
TEST_P(Tpacf, CompareWithParboilsResultFile) {
  const auto folder = gen("tpacf", "tiny", "pb", {}, "parboil");
  run("tpacf", {folder}, "", {}, "parboil", path("out"));
  const auto b = datasets::bundle::open(path("out"));
  auto dd = b.read<std::uint64_t>("dd"), dr = b.read<std::uint64_t>("dr"), rr = b.read<std::uint64_t>("rr");
  const auto printed = [&](std::int64_t dr20) {
    std::ostringstream s;
    for (int k = 1; k <= 20; ++k) s << dd[std::size_t(k)] << "\n" << (k == 20 ? dr20 : std::int64_t(dr[std::size_t(k)])) << "\n" << rr[std::size_t(k)] << "\n";
    return write("tpacf.out", s.str());
  };
  auto expected = printed(std::int64_t(dr[20]));
  const auto same = compare("tpacf", path("out"), expected);
  EXPECT_TRUE(same.ok) << same.summary;
  EXPECT_NE(same.summary.find("within Parboil's compare-output tolerances"), std::string::npos) << same.summary;
  // A count beyond 2^32, as in a large set: Parboil's base program prints it wrapped (%d of a
  // long long), and compare compares what it printed.
  dr[20] = 5'000'000'000ull;
  {
    datasets::bundle_writer out(path("big"), "result", "tpacf");
    out.add<std::uint64_t>("dd", dd);
    out.add<std::uint64_t>("dr", dr);
    out.add<std::uint64_t>("rr", rr);
    out.params() = b.params();
    out.finish();
  }
  expected = printed(std::int64_t(std::int32_t(std::uint32_t(5'000'000'000ull))));
  const auto wrapped = compare("tpacf", path("big"), expected);
  EXPECT_TRUE(wrapped.ok) << wrapped.summary;
  EXPECT_NE(wrapped.summary.find("DR bin 20: soac counts 5000000000, which Parboil prints as 705032704 (wrapped at 2^32)"),
            std::string::npos)
      << wrapped.summary;
  // 10 million fewer: beyond bin 20's 0.1% and 10,000 pairs.
  expected = printed(705'032'704 - 10'000'000);
  const auto off = compare("tpacf", path("big"), expected);
  EXPECT_FALSE(off.ok);
  EXPECT_NE(off.summary.find("DR bin 20"), std::string::npos) << off.summary;
  write("tpacf.out", "1\n2\n3\n");
  EXPECT_NE(error_of<input_error>([&] { compare("tpacf", path("big"), expected); }).find("holds 3 numbers, not Parboil's 60"),
            std::string::npos);
}

// The SC20 artifact's form (benchmarks/parboil/tpacf.fut: the coordinates as f64 arrays): gen
// writes it, run reads it to the same counts as Parboil's files, compare reads its [60]i32 output.
TEST_P(Tpacf, FutharkFormOfTheArtifact) {
  const auto file = gen("tpacf", "tiny", "tiny.in", {}, "futhark");
  run("tpacf", {file}, "", {}, "futhark", path("out"));
  EXPECT_TRUE(validate("tpacf", {file}, path("out"), "futhark").ok);
  run("tpacf", {gen("tpacf", "tiny", "pb", {}, "parboil")}, "", {}, "parboil", path("out-parboil"));
  const auto b = datasets::bundle::open(path("out"));
  for (const char* kind : {"dd", "dr", "rr"})
    EXPECT_EQ(b.read<std::uint64_t>(kind), datasets::bundle::open(path("out-parboil")).read<std::uint64_t>(kind)) << kind;
  const auto dd = b.read<std::uint64_t>("dd"), dr = b.read<std::uint64_t>("dr"), rr = b.read<std::uint64_t>("rr");
  std::vector<std::int32_t> printed;
  for (int k = 1; k <= 20; ++k)
    for (const auto* c : {&dd, &dr, &rr}) printed.push_back(std::int32_t((*c)[std::size_t(k)]));
  const auto expected = path("tiny.out");
  datasets::write_futhark_values(expected, std::vector<datasets::futhark_value>{datasets::make_futhark_value<std::int32_t>({60}, printed)});
  const auto same = compare("tpacf", path("out"), expected, "futhark");
  EXPECT_TRUE(same.ok) << same.summary;
  // Settings pick points and sets from this form too.
  run("tpacf", {file}, "", {{"points", "20"}, {"randoms", "2"}}, "futhark", path("part"));
  EXPECT_EQ(datasets::bundle::open(path("part")).params()["points"], 20);
}

TEST_P(Tpacf, CorruptedResultsAreCaught) {
  const auto data = gen("tpacf", "tiny", "data");
  const auto result = path("out");
  run("tpacf", {data}, "", {}, "", result);
  const auto b = datasets::bundle::open(result);
  const auto dd = b.read<std::uint64_t>("dd"), dr = b.read<std::uint64_t>("dr");
  auto rr = b.read<std::uint64_t>("rr");
  rr[19] += 1;
  {
    datasets::bundle_writer out(result, "result", "tpacf");
    out.add<std::uint64_t>("dd", dd);
    out.add<std::uint64_t>("dr", dr);
    out.add<std::uint64_t>("rr", rr);
    out.params() = b.params();
    out.finish();
  }
  const auto report = validate("tpacf", {data}, result);
  EXPECT_FALSE(report.ok);
  EXPECT_NE(report.summary.find("RR bin 19"), std::string::npos) << report.summary;
}

// What Parboil's readdatafile reads: pairs across any whitespace, numbers as fscanf's %f reads
// them, a declination beyond the pole as it is; with no count, up to where its loop stops.
TEST_P(Tpacf, PointFilesReadAsParboilReadsThem) {
  if (GetParam() == backend::cuda) GTEST_SKIP() << "input checks are backend-independent";
  const auto file = write("p.txt", "1 2 3\n4\r\n-5.5 95\n7 8x 9 10\n");
  datasets::leniency lenient;
  const auto p = datasets::read_parboil_points(file, 0, "requested", lenient);
  EXPECT_EQ(p.ra, (std::vector<float>{1, 3, -5.5f, 7}));
  EXPECT_EQ(p.dec, (std::vector<float>{2, 4, 95, 8}));
  EXPECT_EQ(lenient.count(), 1);
  EXPECT_NE(lenient.first().find("p.txt:4:4: 'x' is not a number: reading stops there, as Parboil's fscanf loop does, after 4 points"),
            std::string::npos)
      << lenient.first();
  // With a count, what follows the count is not read at all.
  EXPECT_EQ(datasets::read_parboil_points(file, 2, "requested", lenient).ra, (std::vector<float>{1, 3}));
}

TEST_P(Tpacf, MalformedFiles) {
  if (GetParam() == backend::cuda) GTEST_SKIP() << "input checks are backend-independent";
  const auto folder = gen("tpacf", "tiny", "pb", {}, "parboil");
  const auto fails = [&](const std::vector<fs::path>& inputs, const std::map<std::string, std::string>& settings,
                         const std::string& expected) {
    const auto m = error_of<input_error>([&] { run("tpacf", inputs, "", settings, "parboil"); });
    EXPECT_NE(m.find(expected), std::string::npos) << m;
  };
  const auto data = folder / "Datapnts.1";
  // Parboil's fscanf("%f %f") loop stops at the first pair it cannot read; fewer points than
  // asked for is an error there too.
  fails({data, write("r/one.txt", "1 2\n3\n")}, {{"points", "2"}},
        "one.txt:2:1: the last number has no dec after it: reading stops there after 1 point, fewer than the 2 of the data file");
  fails({data, write("r/word.txt", "1 x\n")}, {}, "word.txt:1:3: 'x' is not a number: reading stops there after 0 points, fewer than the 61");
  fails({data, write("r/nan.txt", "nan 2\n")}, {}, "nan.txt:1:1: ra (degrees) is not a finite number");
  fails({data, write("r/short.txt", "1 2\n3 4\n")}, {}, "short.txt: holds 2 points, fewer than the 61 of the data file Datapnts.1");
  fails({write("r/empty.txt", "\n\n"), data}, {}, "empty.txt: holds no points");
  fails({data, folder / "Randompnts.9"}, {}, "Randompnts.9: no such file");
  fails({folder}, {{"randoms", "5"}}, "Randompnts.4: no such file (random set 4 of 5)");
  fs::copy_file(folder / "Randompnts.2", folder / "Randompnts.9");
  fs::remove(folder / "Randompnts.3");
  fails({folder}, {}, "Randompnts.3: no such file, but Randompnts.9 is there");
  fs::remove(folder / "Datapnts.1");
  fails({folder}, {}, "Datapnts.1: no such file");
  fails({write("r/single.txt", "1 2\n"), write("r/single2.txt", "1 2\n")}, {}, "1 points per set; tpacf takes 2 to 65535");
  EXPECT_NE(error_of<usage_error>([&] { run("tpacf", {data, data}, "", {{"randoms", "2"}}, "parboil"); }).find("1 random files given"),
            std::string::npos);
  const auto bundle = gen("tpacf", "tiny", "data");
  EXPECT_NE(error_of<input_error>([&] { run("tpacf", {bundle}, "", {{"points", "100"}}); }).find("fewer than the 100 asked for by --set"),
            std::string::npos);
  EXPECT_NE(error_of<usage_error>([&] { run("tpacf", {bundle}, "", {{"points", "1"}}); }).find("not 1"), std::string::npos);
  EXPECT_NE(error_of<usage_error>([&] { run("tpacf", {bundle}, "parboil"); }).find("needs the cuda backend"), std::string::npos);
}

SOAC_INSTANTIATE_APP_BACKENDS(Tpacf);

}  // namespace

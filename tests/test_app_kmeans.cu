// The kmeans app on both backends: every variant and distance form validates against the double
// reference, Rodinia's files round-trip, and bad files and settings are clear errors. The
// validator's own rules (near-ties, means, objective) are tested on hand-made cases.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <sstream>
#include <tuple>

#include <unistd.h>

#include <gtest/gtest.h>

#include "apps/multi_scaling.hpp"
#include "bench/harness.hpp"
#include "datasets/bundle.hpp"
#include "datasets/rodinia_kmeans.hpp"
#include "tests/app_fixture.hpp"
#include "validate/kmeans.hpp"

namespace {

using namespace soac;
using soac::testing::app_test;
using soac::testing::error_of;
namespace fs = std::filesystem;

class KmeansApp : public app_test {
 protected:
  fs::path write(const std::string& name, const std::string& bytes) {
    std::ofstream(path(name), std::ios::binary) << bytes;
    return path(name);
  }
  std::string run_file(const fs::path& file, const std::string& format, const std::map<std::string, std::string>& settings = {},
                       const std::string& variant = "") {
    return run("kmeans", {file}, variant, settings, format, path("result"));
  }
};

// fuzz_app: a result whose memberships name a cluster beyond k made validate read outside the
// centroids (a segfault); now an input error naming the point.
TEST_P(KmeansApp, ResultWithAClusterBeyondKIsAnInputError) {
  const auto data = gen("kmeans", "tiny", "data");
  const auto result = path("result");
  run("kmeans", {data}, "", {}, "", result);
  auto membership = datasets::bundle::open(result).read<std::int32_t>("membership");
  membership[7] = 1 << 20;
  datasets::write_npy<std::int32_t>(result / "membership.npy", membership);
  const auto e = error_of<input_error>([&] { validate("kmeans", {data}, result); });
  EXPECT_NE(e.find("point 7 is in cluster 1048576, outside [0, k)"), std::string::npos) << e;
}

TEST_P(KmeansApp, EveryVariantValidates) {
  for (const std::string variant : {"hist", "segreduce", "rodinia", "hist,sums=vec4", "hist,distances=gemm",
                                    "segreduce,distances=gemm", "hist,distances=gemm,chunk=700,strategy=global", "hist,layout=rows",
                                    "segreduce,layout=rows", "hist,sums=split", "hist,layout=rows,sums=split,private=on",
                                    "hist,sums=batched,M=2", "hist,distances=gemm,layout=columns,sums=batched"})
    round_trip("kmeans", "tiny", variant);
}

TEST_P(KmeansApp, UniformDataWithManyClustersValidates) {
  // Uniform points: clusters touch, so this is where near-ties could appear.
  for (const std::string variant : {"hist", "hist,layout=rows", "hist,distances=gemm,sums=vec4", "segreduce,distances=gemm",
                                    "hist,layout=columns,sums=split"})
    round_trip("kmeans", "tiny-uniform", variant);
}

TEST_P(KmeansApp, EverySliceCountOfTheColumnsKernelValidates) {
  // On the H100 (132 SMs x 2048 lanes) these n give the feature-major kernel 1, 2 and 4 slices
  // per point; d = 9 leaves a short tail after the eight-load steps, k = 3 zero centroid lanes.
  for (const std::string n : {"300000", "150000", "40000"})
    round_trip("kmeans", "tiny", "hist,layout=columns", {{"n", n}, {"d", "9"}, {"k", "3"}, {"blobs", "4"}});
  // k = 16 takes the wider register array; d = 768 fills its 48 KiB of centroids.
  round_trip("kmeans", "tiny", "hist,distances=direct", {{"n", "4000"}, {"d", "768"}, {"k", "16"}, {"blobs", "16"}});
}

TEST_P(KmeansApp, EveryShapeOfTheOnePassKernelValidates) {
  // sums=fused (the default for k <= 8, d <= 256): d = 9, 40 and 200 take 4, 8 and 32 lanes a
  // point (d = 40 leaves 5 of 8 feature rounds, d = 200 7 of 8 with the last partial); k = 1, 3
  // and 8 (the whole register array); n = 1001 is not a multiple of a warp's points, and 5 points
  // leave most warps idle.
  for (const auto& [n, d, k] : {std::tuple{"1001", "9", "3"}, std::tuple{"5", "9", "2"}, std::tuple{"3000", "40", "8"},
                                std::tuple{"2000", "200", "5"}, std::tuple{"777", "256", "1"}, std::tuple{"600", "1", "4"}})
    round_trip("kmeans", "tiny", "hist,sums=fused", {{"n", n}, {"d", d}, {"k", k}, {"blobs", "4"}});
}

TEST_P(KmeansApp, TheOnePassKernelRefusesShapesItCannotHold) {
  const auto data = gen("kmeans", "tiny", "data");
  EXPECT_NE(error_of<usage_error>([&] { run("kmeans", {data}, "hist,sums=fused", {{"k", "9"}}, "", path("r")); }).find("at most 8 clusters"),
            std::string::npos);
  EXPECT_NE(error_of<usage_error>([&] { run("kmeans", {data}, "hist,sums=fused,distances=gemm", {}, "", path("r")); }).find("distances=direct"),
            std::string::npos);
  EXPECT_NE(error_of<usage_error>([&] { run("kmeans", {data}, "hist,sums=fused,layout=columns", {}, "", path("r")); }).find("layout=rows"),
            std::string::npos);
  EXPECT_NE(error_of<usage_error>([&] { run("kmeans", {data}, "hist,sums=fused,strategy=global", {}, "", path("r")); }).find("no hist options"),
            std::string::npos);
}

TEST_P(KmeansApp, StoppingAtTheThresholdUndoesTheIterationQueuedAhead) {
  // The loop queues iteration i + 1 before it reads iteration i's changes; stopping at i must leave
  // exactly what stopping by max_iterations = i leaves (same centroids, memberships, objective).
  const auto data = gen("kmeans", "tiny-uniform", "data");
  for (const std::string variant : {"hist", "segreduce,distances=gemm"}) {
    run("kmeans", {data}, variant, {{"threshold_fraction", "0.2"}}, "", path("by-threshold"));
    const auto a = datasets::bundle::open(path("by-threshold"));
    const auto iterations = a.info()["iterations"].get<std::int64_t>();
    ASSERT_GT(iterations, 1);
    ASSERT_LT(iterations, 10);
    run("kmeans", {data}, variant, {{"max_iterations", std::to_string(iterations)}, {"threshold", "-1"}}, "", path("by-count"));
    const auto b = datasets::bundle::open(path("by-count"));
    EXPECT_EQ(b.info()["iterations"].get<std::int64_t>(), iterations);
    EXPECT_EQ(a.read<float>("centroids"), b.read<float>("centroids")) << variant;
    EXPECT_EQ(a.read<std::int32_t>("membership"), b.read<std::int32_t>("membership")) << variant;
    EXPECT_EQ(a.info()["objective"], b.info()["objective"]) << variant;
    EXPECT_TRUE(validate("kmeans", {data}, path("by-threshold")).ok);
  }
}

TEST_P(KmeansApp, KmeansPlusPlusSeedsFromTheDataAndValidates) {
  const auto data = gen("kmeans", "tiny", "data");
  for (const std::string variant : {"hist", "rodinia"}) {
    run("kmeans", {data}, variant, {{"init", "kmeans++"}, {"seed", "7"}}, "", path("pp-" + variant));
    const auto report = validate("kmeans", {data}, path("pp-" + variant));
    EXPECT_TRUE(report.ok) << report.summary;
    EXPECT_NE(report.summary.find("initial centroids (kmeans++): as expected"), std::string::npos) << report.summary;
  }
  // The same seed picks the same centres on every variant (first and rodinia differ only in the update).
  const auto a = datasets::bundle::open(path("pp-hist")).read<float>("initial_centroids");
  const auto b = datasets::bundle::open(path("pp-rodinia")).read<float>("initial_centroids");
  EXPECT_EQ(a, b);
}

TEST_P(KmeansApp, ResultHoldsTheClusteringAndRodiniasListing) {
  const auto data = gen("kmeans", "tiny", "data");
  run("kmeans", {data}, "", {}, "", path("r"));
  const auto r = datasets::bundle::open(path("r"), "result", "kmeans");
  EXPECT_EQ(r.header("centroids").shape, (std::vector<std::int64_t>{5, 6}));
  EXPECT_EQ(r.read<std::int32_t>("membership").size(), 3000u);
  EXPECT_EQ(r.params()["k"], 5);
  EXPECT_EQ(r.params()["init"], "first");
  EXPECT_GE(r.info()["iterations"].get<int>(), 2);
  const auto changed = r.read<std::int64_t>("changed");
  ASSERT_EQ(std::int64_t(changed.size()), r.info()["iterations"].get<std::int64_t>());
  EXPECT_EQ(changed.front(), 3000);  // every point changes in the first iteration
  EXPECT_EQ(changed.back(), 0);  // Rodinia's rule: until no point changes cluster
  EXPECT_EQ(r.params()["threshold"], 0.001);
  EXPECT_EQ(r.params()["max_iterations"], 501);
  EXPECT_NEAR(r.info()["rmse"].get<double>(), std::sqrt(r.info()["objective"].get<double>() / 3000), 1e-12);
  ASSERT_TRUE(r.has_file("centroids.txt"));
  std::ifstream listing(r.file_path("centroids.txt"));
  std::stringstream text;
  text << listing.rdbuf();
  EXPECT_NE(text.str().find("Centroid Coordinates"), std::string::npos);
  EXPECT_NE(text.str().find("\n4:"), std::string::npos);
}

TEST_P(KmeansApp, RunSettingsOverrideTheDataset) {
  const auto data = gen("kmeans", "tiny", "data");
  run("kmeans", {data}, "", {{"k", "3"}, {"max_iterations", "2"}, {"threshold", "0"}}, "", path("r"));
  const auto r = datasets::bundle::open(path("r"));
  EXPECT_EQ(r.params()["k"], 3);
  EXPECT_EQ(r.info()["iterations"], 2);
  EXPECT_EQ(r.header("centroids").shape[0], 3);
  EXPECT_TRUE(validate("kmeans", {data}, path("r")).ok);
}

// --set devices: the points sharded over ranks (simulated on host; on cuda one GPU per rank, the
// lists beyond the machine's GPUs skipped), counts and sums all-reduced. Every rank count gives
// one context's memberships on the tiny preset (and its iteration count), and validates.
TEST_P(KmeansApp, SeveralRanksGiveTheMembershipsOfOne) {
  const auto data = gen("kmeans", "tiny", "data");
  run("kmeans", {data}, "", {}, "", path("one"));
  const auto one = datasets::bundle::open(path("one"));
  const int gpus = GetParam() == backend::cuda ? cuda_device_count() : 64;
  for (const std::string devices : {"0", "0,1", "0,1,2", "0,1,2,3,4,5,6"}) {
    const int ranks = int(std::count(devices.begin(), devices.end(), ',')) + 1;
    if (ranks > gpus) continue;
    for (const std::string variant : {"hist", "hist,sums=vec4", "hist,layout=rows,sums=split", "hist,distances=gemm"}) {
      const auto out = path("ranks" + std::to_string(ranks) + variant);
      run("kmeans", {data}, variant, {{"devices", devices}}, "", out);
      const auto r = datasets::bundle::open(out);
      EXPECT_EQ(r.info()["ranks"], ranks);
      EXPECT_EQ(r.read<std::int32_t>("membership"), one.read<std::int32_t>("membership")) << devices << " " << variant;
      EXPECT_EQ(r.read<std::int32_t>("first_membership"), one.read<std::int32_t>("first_membership")) << devices << " " << variant;
      EXPECT_EQ(r.info()["iterations"], one.info()["iterations"]) << devices << " " << variant;
      EXPECT_EQ(r.read<std::int64_t>("changed"), one.read<std::int64_t>("changed")) << devices << " " << variant;
      EXPECT_TRUE(validate("kmeans", {data}, out).ok) << devices << " " << variant;
    }
  }
}

TEST_P(KmeansApp, SeveralRanksRefuseWhatTheyCannotRun) {
  const auto data = gen("kmeans", "tiny", "data");
  // Devices that exist on any machine (one GPU; two simulated ranks): the rank path refuses these.
  const std::string devices = GetParam() == backend::cuda ? "0" : "0,1";
  const auto e1 = error_of<usage_error>([&] { run("kmeans", {data}, "segreduce", {{"devices", devices}}, "", path("r")); });
  EXPECT_NE(e1.find("hist variant"), std::string::npos) << e1;
  const auto e2 = error_of<usage_error>([&] { run("kmeans", {data}, "", {{"devices", devices}, {"init", "kmeans++"}}, "", path("r")); });
  EXPECT_NE(e2.find("init=first"), std::string::npos) << e2;
  const auto e3 = error_of<usage_error>([&] { run("kmeans", {data}, "", {{"devices", "0,0"}}, "", path("r")); });
  EXPECT_NE(e3.find("named twice"), std::string::npos) << e3;
  const auto e4 = error_of<usage_error>([&] { run("kmeans", {data}, "", {{"devices", "zero"}}, "", path("r")); });
  EXPECT_NE(e4.find("not a device number"), std::string::npos) << e4;
}

TEST_P(KmeansApp, RodiniaTextAndBinaryFilesRunAndValidate) {
  const auto bundle_data = gen("kmeans", "tiny", "data");
  const auto text = gen("kmeans", "tiny", "points.txt", {}, "rodinia");
  const auto binary = gen("kmeans", "tiny", "points.bin", {}, "rodinia-bin");
  const auto expected = datasets::bundle::open(bundle_data).read<float>("features");
  // Both files hold exactly the bundle's floats.
  EXPECT_EQ(datasets::read_rodinia_kmeans_text(text).features, expected);
  EXPECT_EQ(datasets::read_rodinia_kmeans_binary(binary).features, expected);
  for (const auto& [file, format] : {std::pair{text, std::string("rodinia")}, std::pair{binary, std::string("rodinia-bin")}}) {
    run_file(file, format);  // k = 5, Rodinia's default
    const auto r = datasets::bundle::open(path("result"));
    EXPECT_EQ(r.params()["k"], 5);
    EXPECT_EQ(r.params()["format"], format);
    const auto report = validate("kmeans", {file}, path("result"), format);
    EXPECT_TRUE(report.ok) << report.summary;
  }
}

TEST_P(KmeansApp, HandWrittenRodiniaTextFile) {
  // Blank lines, tabs, a CR before the newline, a '+' sign: what real files hold.
  const auto file = write("p.txt", "1 0 0\n2\t0.1  0\r\n\n3 10 10\n4 10.5 +10\n5 0 0.2\n");
  run_file(file, "rodinia", {{"k", "2"}});
  const auto r = datasets::bundle::open(path("result"));
  EXPECT_EQ(r.read<std::int32_t>("membership"), (std::vector<std::int32_t>{0, 0, 1, 1, 0}));
  const auto c = r.read<float>("centroids");
  EXPECT_FLOAT_EQ(c[0], 0.1f / 3);
  EXPECT_FLOAT_EQ(c[2], 10.25f);
  EXPECT_TRUE(validate("kmeans", {file}, path("result"), "rodinia").ok);
}

// Rodinia's shipped kdd_cup and 204800.txt each hold a line with the KDD Cup source's text fields
// (more tokens than the first line, words among them): Rodinia's atof reads the words as 0 and its
// loop ignores the tokens after the first d; soac reads the file the same way and says so.
TEST_P(KmeansApp, RodiniaTextIsReadAsRodiniasAtofReadsIt) {
  const auto file = write("kdd.txt", "1 0.5 1 2\n2 0 tcp 3.5x 334 1684 SF\n3 7,8,9\n\n4 1e1 -2 0x10\n5 2 3 4 extra\n");
  ::testing::internal::CaptureStderr();
  run_file(file, "rodinia", {{"k", "2"}});
  const std::string notes = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(notes.find("kdd.txt:2:5: 'tcp' is not a number: read as 0, as Rodinia's atof reads it (2 places read leniently"),
            std::string::npos)
      << notes;
  EXPECT_EQ(std::count(notes.begin(), notes.end(), '\n'), 1) << notes;
  EXPECT_EQ(datasets::read_rodinia_kmeans_text(file).features, (std::vector<float>{0.5f, 1, 2, 0, 0, 3.5f, 7, 8, 9, 10, -2, 16, 2, 3, 4}));
  EXPECT_TRUE(validate("kmeans", {file}, path("result"), "rodinia").ok);
  // strict=1 refuses the first such place.
  const auto e = error_of<input_error>([&] { run_file(file, "rodinia", {{"k", "2"}, {"strict", "1"}}); });
  EXPECT_NE(e.find("kdd.txt:2:5: 'tcp' is not a number"), std::string::npos) << e;
  EXPECT_NE(e.find("strict=1"), std::string::npos) << e;
  // Surplus tokens alone are also lenient.
  const auto surplus = write("s.txt", "1 0.5 0.5\n2 0.5 0.5 0.7\n");
  EXPECT_NE(error_of<input_error>([&] { run_file(surplus, "rodinia", {{"k", "1"}, {"strict", "1"}}); })
                .find("s.txt:2:11: tokens after the 2 features of point 2 are ignored"),
            std::string::npos);
}

// soac compare reads the centroids Rodinia prints with -o (its other output lines skipped) and
// checks each coordinate within half the printed unit (plus 1e-4 relative).
TEST_P(KmeansApp, CompareWithRodiniasPrintedCentroids) {
  const auto file = gen("kmeans", "tiny", "points.txt", {}, "rodinia");
  run_file(file, "rodinia");
  const auto centroids = datasets::bundle::open(path("result")).read<float>("centroids");
  const auto printed = [&](float shift) {
    std::string out = "\nI/O completed\n\nNumber of objects: 3000\nNumber of features: 6\niterated 9 times\n"
                      "\n================= Centroid Coordinates =================\n";
    char buf[32];
    for (int c = 0; c < 5; ++c) {
      out += std::to_string(c) + ":";
      for (int j = 0; j < 6; ++j) {
        std::snprintf(buf, sizeof buf, " %.2f", double(centroids[std::size_t(c * 6 + j)] + (c == 3 && j == 4 ? shift : 0.f)));
        out += buf;
      }
      out += "\n\n";
    }
    return write("rodinia.out", out + "Number of Iteration: 1\n");
  };
  const auto same = compare("kmeans", path("result"), printed(0));
  EXPECT_TRUE(same.ok) << same.summary;
  EXPECT_NE(same.summary.find("all 30 centroid coordinates agree with Rodinia's printed ones (5 centroids of 6)"), std::string::npos)
      << same.summary;
  const auto off = compare("kmeans", path("result"), printed(0.03f));
  EXPECT_FALSE(off.ok);
  EXPECT_NE(off.summary.find("1 of 30 centroid coordinates differ"), std::string::npos) << off.summary;
  EXPECT_NE(off.summary.find("the largest difference at centroid 3 coordinate 4"), std::string::npos) << off.summary;
  // The listing of another k, and files that hold none or number it wrongly.
  run_file(file, "rodinia", {{"k", "4"}});
  EXPECT_FALSE(compare("kmeans", path("result"), printed(0)).ok);
  EXPECT_NE(error_of<input_error>([&] { compare("kmeans", path("result"), write("none.out", "iterated 3 times\n")); })
                .find("no centroid listing"),
            std::string::npos);
  EXPECT_NE(error_of<input_error>([&] { compare("kmeans", path("result"), write("order.out", "0: 1.00\n2: 3.00\n")); })
                .find("order.out:2: centroid 2 where centroid 1 comes next"),
            std::string::npos);
}

// Ranks in separate processes read a Rodinia file in parts (a process's bytes of the file, cut at
// line starts): over any number of parts, every point is read once, as the whole file reads it.
TEST(RodiniaKmeansParts, EveryPointOnceOverAnyNumberOfParts) {
  const fs::path dir = fs::temp_directory_path() / ("soac-parts-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const auto file = dir / "p.txt";
  // Blank lines (also at the start), a CRLF line, a line of surplus tokens, no final newline.
  std::string text = "\n \n1 0.5 1\n2\t0.25 2\r\n\n";
  for (int i = 3; i < 60; ++i) text += std::to_string(i) + " " + std::to_string(i * 0.5) + (i % 7 ? " 1\n" : " 2 9 9\n");
  text += "60 3 4";
  std::ofstream(file, std::ios::binary) << text;
  const auto whole = datasets::read_rodinia_kmeans_text(file);
  ASSERT_EQ(whole.n, 60);
  EXPECT_EQ(datasets::rodinia_kmeans_text_features(file), 2);
  const std::uint64_t bytes = datasets::rodinia_kmeans_text_bytes(file);
  for (std::uint64_t parts = 1; parts <= 9; ++parts) {
    std::vector<float> joined;
    std::int64_t notes = 0;
    for (std::uint64_t p = 0; p < parts; ++p) {
      datasets::leniency lenient;
      const auto part = datasets::read_rodinia_kmeans_text_part(file, bytes * p / parts, bytes * (p + 1) / parts, 2, lenient);
      EXPECT_EQ(part.features.size(), std::size_t(part.n * 2));
      joined.insert(joined.end(), part.features.begin(), part.features.end());
      notes += lenient.count();
    }
    EXPECT_EQ(joined, whole.features) << parts << " parts";
    EXPECT_EQ(notes, 8) << parts << " parts: the lines of surplus tokens";
  }
  // An error in a later part names the file's line.
  std::ofstream(file, std::ios::binary) << "1 0 0\n2 1 1\n\n3 2 2\n4 3\n5 4 4\n";
  const auto e = error_of<input_error>([&] { datasets::leniency l; datasets::read_rodinia_kmeans_text_part(file, 12, 40, 2, l); });
  EXPECT_NE(e.find("p.txt:5:4: the point on this line has 1 features, the first point has 2"), std::string::npos) << e;
  fs::remove_all(dir);
}

TEST(RodiniaKmeansParts, BinaryRowsByOffset) {
  const fs::path dir = fs::temp_directory_path() / ("soac-bparts-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const auto file = dir / "p.bin";
  std::vector<float> x(7 * 3);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = float(i) * 0.5f;
  datasets::write_rodinia_kmeans_binary(file, 7, 3, x);
  const auto shape = datasets::read_rodinia_kmeans_binary_shape(file);
  EXPECT_EQ(shape.n, 7);
  EXPECT_EQ(shape.d, 3);
  std::vector<float> rows(2 * 3);
  datasets::read_rodinia_kmeans_binary_rows(file, shape, 4, 2, rows.data());
  EXPECT_EQ(rows, std::vector<float>(x.begin() + 12, x.begin() + 18));
  x[19] = std::numeric_limits<float>::infinity();
  datasets::write_rodinia_kmeans_binary(file, 7, 3, x);
  datasets::read_rodinia_kmeans_binary_rows(file, shape, 0, 6, std::vector<float>(18).data());  // the other rows are not read
  const auto e = error_of<input_error>([&] { datasets::read_rodinia_kmeans_binary_rows(file, shape, 5, 2, rows.data()); });
  EXPECT_NE(e.find("feature 2 of point 7 is not finite"), std::string::npos) << e;
  fs::remove_all(dir);
}

TEST_P(KmeansApp, BadTextFilesNameTheFileAndPlace) {
  struct bad_case {
    std::string text, expected;
  };
  // Only what Rodinia's reader cannot run (or no centroid can be nearest to) is refused.
  const bad_case cases[] = {
      {"1 0.5 0.5\n2 0.5\n", "p.txt:2:6: point 2 has 1 features, the first point (line 1) has 2"},
      {"1\n2\n", "p.txt:1:2: the first point has no features"},
      {"1 0.5 nan\n", "p.txt:1:7: feature 2 of point 1, 'nan', is not finite"},
      {"1 0.5 1e39\n", "p.txt:1:7: feature 2 of point 1, '1e39', is not finite as a float"},
      // A CRLF blank line is a point without features to Rodinia's strtok, which then fails.
      {"1 0.5 0.5\r\n\r\n2 1 1\r\n", "p.txt:2:2: point 2 has 0 features, the first point (line 1) has 2"},
      {"\n \n", "the file holds no points"},
  };
  for (const auto& c : cases) {
    const auto file = write("p.txt", c.text);
    const std::string message = error_of<input_error>([&] { run_file(file, "rodinia"); });
    EXPECT_NE(message.find(c.expected), std::string::npos) << "got: " << message;
    EXPECT_EQ(message.find('\n'), std::string::npos) << "one line: " << message;
  }
}

std::string binary_points(std::int32_t n, std::int32_t d, std::size_t floats) {
  std::string s(reinterpret_cast<const char*>(&n), 4);
  s.append(reinterpret_cast<const char*>(&d), 4);
  const std::vector<float> v(floats, 0.25f);
  s.append(reinterpret_cast<const char*>(v.data()), v.size() * 4);
  return s;
}

TEST_P(KmeansApp, BadBinaryFilesAreInputErrors) {
  struct bad_case {
    std::string bytes, expected;
  };
  const bad_case cases[] = {
      {binary_points(10, 4, 39), "too few for the n x d float32 features (40 x 4 bytes)"},
      {binary_points(0, 4, 0), "the header's point count is 0"},
      {binary_points(3, 0, 0), "the header's feature count is 0"},
      {binary_points(-5, 4, 0), "the header's point count is -5"},
      {std::string("\x02\x00", 2), "too few for the point count"},
      {binary_points(1000000000, 1000, 8), "too few for the n x d float32 features"},
  };
  for (const auto& c : cases) {
    const auto file = write("p.bin", c.bytes);
    const std::string message = error_of<input_error>([&] { run_file(file, "rodinia-bin"); });
    EXPECT_NE(message.find(c.expected), std::string::npos) << "got: " << message;
    EXPECT_NE(message.find("p.bin"), std::string::npos) << message;
  }
}

TEST_P(KmeansApp, RodiniaBinaryBytesAfterTheFeaturesAreNotRead) {
  const auto file = write("p.bin", binary_points(10, 4, 41));
  run_file(file, "rodinia-bin", {{"k", "2"}});
  EXPECT_EQ(datasets::bundle::open(path("result")).read<std::int32_t>("membership").size(), 10u);
  EXPECT_NE(error_of<input_error>([&] { run_file(file, "rodinia-bin", {{"k", "2"}, {"strict", "1"}}); })
                .find("4 bytes after the 10 x 4 features are not read"),
            std::string::npos);
}

TEST_P(KmeansApp, RodiniasInitialCentroidsForMoreThanHalfThePoints) {
  // Rodinia's swap loop picks points 0, 1, 2, 1, 0 as the 5 initial centroids of 5 points.
  const auto file = write("p.txt", "1 0\n2 10\n3 20\n4 30\n5 40\n");
  run_file(file, "rodinia", {{"k", "5"}, {"max_iterations", "1"}});
  const auto r = datasets::bundle::open(path("result"));
  EXPECT_EQ(r.read<float>("initial_centroids"), (std::vector<float>{0, 10, 20, 10, 0}));
  EXPECT_TRUE(validate("kmeans", {file}, path("result"), "rodinia").ok);
}

TEST_P(KmeansApp, BadSettingsAreUsageErrors) {
  const auto file = write("p.txt", "1 0\n2 1\n3 2\n");
  EXPECT_NE(error_of<usage_error>([&] { run_file(file, "rodinia", {{"k", "4"}}); }).find("k = 4 exceeds the 3 points"),
            std::string::npos);
  EXPECT_NE(error_of<usage_error>([&] { run_file(file, "rodinia", {{"k", "0"}}); }).find("parameter k = 0 is outside [1,"),
            std::string::npos);
  EXPECT_NE(error_of<usage_error>([&] { run_file(file, "rodinia", {{"k", "two"}}); }).find("is not a number"), std::string::npos);
  EXPECT_NE(error_of<usage_error>([&] { run_file(file, "rodinia", {{"k", "2"}, {"init", "random"}}); }).find("init must be first or kmeans++"),
            std::string::npos);
  EXPECT_NE(error_of<usage_error>([&] { run_file(file, "rodinia", {{"k", "2"}, {"threshold_fraction", "2"}}); }).find("threshold_fraction"),
            std::string::npos);
  EXPECT_NE(error_of<usage_error>([&] { run_file(file, "rodinia", {{"k", "2"}}, "rodinia,distances=gemm"); }).find("takes no settings"),
            std::string::npos);
  EXPECT_NE(error_of<usage_error>([&] { run_file(file, "rodinia", {{"k", "2"}}, "hist,distances=fast"); }).find("distances must be"),
            std::string::npos);
  // A hist option's bad value is named as such, not as an option kmeans does not take.
  EXPECT_NE(error_of<usage_error>([&] { run_file(file, "rodinia", {{"k", "2"}}, "hist,M=-1"); }).find("setting M takes a whole number"),
            std::string::npos);
  EXPECT_NE(error_of<usage_error>([&] { run_file(file, "rodinia", {{"k", "2"}}, "hist,strategy=bogus"); }).find("unknown hist strategy 'bogus'"),
            std::string::npos);
  EXPECT_NE(error_of<usage_error>([&] { run_file(file, "rodinia", {{"k", "2"}}, "hist,bogus=1"); }).find("not 'bogus=1'"), std::string::npos);
  EXPECT_NE(error_of<usage_error>([&] { run_file(file, "rodinia", {{"k", "2"}}, "hist,sums=flat,partition=on"); }).find("not 'partition'"),
            std::string::npos);
  EXPECT_NE(error_of<usage_error>([&] { run_file(file, "rodinia", {{"k", "2"}}, "hist,layout=rows,sums=batched"); }).find("needs layout=columns"),
            std::string::npos);
  EXPECT_NE(error_of<usage_error>([&] { run_file(file, "rodinia", {{"k", "2"}}, "hist,layout=sideways"); }).find("layout must be"),
            std::string::npos);
  EXPECT_NE(error_of<usage_error>([&] { run_file(file, "rodinia", {{"k", "2"}}, "segreduce,sums=vec4"); }).find("not 'sums'"),
            std::string::npos);
  EXPECT_NE(error_of<usage_error>([&] { gen("kmeans", "tiny", "g", {{"k", "5000"}}); }).find("k = 5000 exceeds the 3000 points"),
            std::string::npos);
  EXPECT_NE(error_of<usage_error>([&] { gen("kmeans", "tiny", "g", {{"d", "0"}}); }).find("parameter d = 0"), std::string::npos);
}

TEST_P(KmeansApp, ValidateCatchesWrongResults) {
  const auto data = gen("kmeans", "tiny", "data");
  const auto result = path("r");
  run("kmeans", {data}, "", {}, "", result);
  const auto r = datasets::bundle::open(result);
  auto membership = r.read<std::int32_t>("first_membership");
  auto centroids = r.read<float>("centroids");
  auto rewrite = [&](const std::vector<std::int32_t>& first, const std::vector<float>& c) {
    datasets::bundle_writer w(path("bad"), "result", "kmeans");
    const std::int64_t shape[2] = {5, 6};
    w.add("centroids", datasets::dtype::f32, shape, c.data());
    const auto initial = r.read<float>("initial_centroids");
    w.add("initial_centroids", datasets::dtype::f32, shape, initial.data());
    w.add<std::int32_t>("membership", r.read<std::int32_t>("membership"));
    w.add<std::int32_t>("first_membership", first);
    w.params() = r.params();
    w.info() = r.info();
    w.finish();
    return validate("kmeans", {data}, path("bad"));
  };
  EXPECT_TRUE(rewrite(membership, centroids).ok);
  auto moved = membership;
  moved[17] = (moved[17] + 1) % 5;
  const auto wrong_member = rewrite(moved, centroids);
  EXPECT_FALSE(wrong_member.ok);
  EXPECT_NE(wrong_member.summary.find("point 17: cluster"), std::string::npos) << wrong_member.summary;
  auto shifted = centroids;
  shifted[7] += 1e-3f;
  const auto wrong_centroid = rewrite(membership, shifted);
  EXPECT_FALSE(wrong_centroid.ok);
  EXPECT_NE(wrong_centroid.summary.find("centroid 1 coordinate 1"), std::string::npos) << wrong_centroid.summary;
}

TEST_P(KmeansApp, BenchTimesEveryVariantWithRodiniaAsTheBaseline) {
  bench::suite suite(ctx(), "kmeans", bench::settings{.warmup = 0, .runs = 1, .progress = false, .warmup_ms = 0});
  apps::bench_request req;
  req.presets = {"tiny"};
  apps::find_app("kmeans").bench(ctx(), req, suite);
  ASSERT_EQ(suite.cases().size(), 2u);
  const auto& iteration = suite.cases()[0];
  EXPECT_EQ(iteration.name, "tiny: one iteration");
  std::vector<std::string> names;
  for (const auto& v : iteration.variants) names.push_back(v.name);
  // tiny (k = 5, d = 6) runs the one-pass kernel by default, so the separate passes come with it.
  EXPECT_EQ(names, (std::vector<std::string>{"rodinia", "hist", "segreduce", "hist,distances=gemm", "hist,layout=columns",
                                             "hist,layout=rows,sums=flat"}));
  EXPECT_EQ(iteration.variants[0].kind, bench::role::baseline);
  const auto& whole = suite.cases()[1];
  ASSERT_EQ(whole.variants.size(), 3u);
  for (const auto& v : whole.variants) {
    EXPECT_NE(v.note.find("iterations"), std::string::npos) << v.note;
    EXPECT_EQ(v.note.find("DIFFERS"), std::string::npos) << v.note;
  }
}

// soac bench kmeans --devices: one case with a row per rank count (1, 2, 3 of "0,1,2" on host;
// on cuda the machine's GPUs), one device as the baseline, speedup and efficiency in the notes.
TEST_P(KmeansApp, BenchDevicesPrintsAScalingTable) {
  bench::suite suite(ctx(), "kmeans", bench::settings{.warmup = 0, .runs = 1, .progress = false, .warmup_ms = 0});
  apps::bench_request req;
  req.devices = GetParam() == backend::cuda ? "all" : "0,1,2";
  req.overrides = {{"n", "2000"}, {"d", "8"}, {"k", "16"}, {"max_iterations", "2"}};
  apps::find_app("kmeans").bench(ctx(), req, suite);
  ASSERT_EQ(suite.cases().size(), 1u);
  const auto& rows = suite.cases()[0].variants;
  const std::vector<int> counts = GetParam() == backend::cuda ? apps::scaling_rank_counts(cuda_device_count()) : std::vector<int>{1, 2, 3};
  ASSERT_EQ(rows.size(), counts.size());
  EXPECT_EQ(rows[0].name, "1 device");
  EXPECT_EQ(rows[0].kind, bench::role::baseline);
  for (std::size_t i = 0; i < rows.size(); ++i) {
    EXPECT_NE(rows[i].note.find("parallel efficiency"), std::string::npos) << rows[i].note;
    EXPECT_NE(rows[i].note.find(std::to_string(counts[i]) + (counts[i] == 1 ? " rank" : " ranks")), std::string::npos) << rows[i].note;
  }
  req.devices = "0,0";
  EXPECT_THROW(apps::find_app("kmeans").bench(ctx(), req, suite), usage_error);
}

SOAC_INSTANTIATE_APP_BACKENDS(KmeansApp);

// ---- The validator's rules on hand-made cases (no backend involved)

TEST(KmeansValidator, NearTiesWithinTheFloatBoundAreAccepted) {
  // Point 0 sits exactly between centroids 0 and 1; point 1 is 1e-9 closer to centroid 1 than
  // to centroid 0 (far below float resolution at distance ~1); point 2 is clearly nearer 1.
  const std::vector<float> x = {0.5f, 0.f, 0.5f + 1e-9f, 0.f, 0.9f, 0.f};
  const std::vector<float> c = {0.f, 0.f, 1.f, 0.f};
  const std::vector<std::int32_t> all_zero = {0, 0, 0};
  auto check = validate::check_kmeans_membership(x, 3, 2, c, 2, all_zero, validate::kmeans_form::direct);
  EXPECT_EQ(check.near_ties, 0);  // point 1 rounds to 0.5f in float: an exact tie, 0 is the nearest
  EXPECT_EQ(check.rep.mismatches, 1);  // point 2
  const std::vector<std::int32_t> tie_to_one = {1, 1, 1};
  check = validate::check_kmeans_membership(x, 3, 2, c, 2, tie_to_one, validate::kmeans_form::direct);
  EXPECT_EQ(check.near_ties, 2);  // points 0 and 1: exact ties, either centroid is right
  EXPECT_TRUE(check.rep.ok());
}

TEST(KmeansValidator, TheGemmBoundScalesWithTheNorms) {
  // Far from the origin, |x|^2 - 2 x.c + |c|^2 cancels: a difference of 1e-4 in distances of ~1
  // is inside the GEMM form's bound (|x| + |c|)^2 gamma(d + 2) at |x| ~ 1000, not the direct form's.
  const std::vector<float> x = {1000.5f, 1000.f};
  const std::vector<float> c = {1000.f, 1000.f, 1001.0001f, 1000.f};
  const std::vector<std::int32_t> second = {1};
  EXPECT_EQ(validate::check_kmeans_membership(x, 1, 2, c, 2, second, validate::kmeans_form::gemm).near_ties, 1);
  EXPECT_FALSE(validate::check_kmeans_membership(x, 1, 2, c, 2, second, validate::kmeans_form::direct).rep.ok());
}

TEST(KmeansValidator, MeansAllowTheFloatSumsRoundingOnly) {
  const std::vector<float> x = {1.f, 2.f, 3.f, 10.f};
  const std::vector<std::int32_t> m = {0, 0, 0, 1};
  std::int64_t empty = -1;
  EXPECT_TRUE(validate::check_kmeans_means(x, 4, 1, 3, m, std::vector<float>{2.f, 10.f, 123.f}, &empty).ok());
  EXPECT_EQ(empty, 1);
  EXPECT_FALSE(validate::check_kmeans_means(x, 4, 1, 3, m, std::vector<float>{2.0001f, 10.f, 0.f}).ok());
}

TEST(KmeansValidator, ReferenceStopsAtTheThreshold) {
  // Two clusters, both initial centroids in the left one.
  const std::vector<float> x = {0.f, 0.1f, 5.f, 5.1f};
  const std::vector<float> initial = {0.f, 0.1f};
  const auto run = validate::kmeans_reference(x, 4, 1, 2, initial, {.threshold = 0.0, .max_iterations = 100});
  // 4 changes (from none), then point 1 moves to the left cluster, then nothing changes.
  EXPECT_EQ(run.changed, (std::vector<std::int64_t>{4, 1, 0}));
  EXPECT_EQ(run.iterations, 3);
  EXPECT_EQ(run.membership, (std::vector<std::int32_t>{0, 0, 1, 1}));
  EXPECT_EQ(run.first_membership, (std::vector<std::int32_t>{0, 1, 1, 1}));
  EXPECT_NEAR(run.objective, 4 * 0.0025, 1e-7);  // every point 0.05 from its centroid
}

TEST(KmeansValidator, RodiniasStoppingRuleAndInitialPick) {
  const validate::kmeans_stop_rule rodinia;  // the defaults: -t 0.001 against a count, 501 iterations
  EXPECT_FALSE(rodinia.converged(1, 1'000'000));
  EXPECT_TRUE(rodinia.converged(0, 1'000'000));
  EXPECT_EQ(rodinia.max_iterations, 501);
  const validate::kmeans_stop_rule fraction{.threshold = -1, .threshold_fraction = 0.001};
  EXPECT_TRUE(fraction.converged(1000, 1'000'000));
  EXPECT_FALSE(fraction.converged(1001, 1'000'000));
  std::vector<std::int64_t> picks;
  for (int i = 0; i < 6; ++i) picks.push_back(validate::rodinia_initial_point(6, i));
  EXPECT_EQ(picks, (std::vector<std::int64_t>{0, 1, 2, 2, 1, 0}));
}

}  // namespace

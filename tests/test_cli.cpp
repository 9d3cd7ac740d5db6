// The soac executable end to end: gen -> run -> validate, and its error paths with exit codes.
#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <sys/wait.h>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "core/context.hpp"
#include "core/error.hpp"
#include "tests/cli_runner.hpp"
#include "datasets/npy.hpp"

namespace {

namespace fs = std::filesystem;
using namespace soac;

using soac::testing::outcome;
using soac::testing::soac_cli;

class Cli : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("soac_cli_" + std::to_string(::getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  // A tiny scatter dataset at path(name).
  void gen(const std::string& name, const std::string& extra = "") {
    const auto r = soac_cli("gen scatter --preset tiny -o " + path(name) + " " + extra);
    ASSERT_EQ(r.code, 0) << r.output;
  }
  fs::path dir_;
};

#define EXPECT_OUTCOME(r, exit, text)                                           \
  do {                                                                          \
    EXPECT_EQ((r).code, exit) << (r).output;                                    \
    EXPECT_NE((r).output.find(text), std::string::npos) << (r).output;          \
  } while (0)

TEST_F(Cli, HelpForEveryCommand) {
  EXPECT_OUTCOME(soac_cli("--help"), 0, "usage: soac <command>");
  for (const char* c : {"list", "info", "gen", "run", "validate", "compare", "bench"})
    EXPECT_OUTCOME(soac_cli(std::string(c) + " --help"), 0, "--backend");
  EXPECT_OUTCOME(soac_cli(""), exit_code::usage, "usage: soac <command>");
  EXPECT_OUTCOME(soac_cli("--version"), 0, "soac ");
}

TEST_F(Cli, ListShowsScatterWithPresetsAndVariants) {
  const auto r = soac_cli("list");
  EXPECT_OUTCOME(r, 0, "scatter:");
  EXPECT_NE(r.output.find("fig15b"), std::string::npos);
  EXPECT_NE(r.output.find("thrust"), std::string::npos);
}

TEST_F(Cli, GenRunValidateOnTheHostBackend) {
  gen("data");
  const auto run = soac_cli("run scatter --backend host -i " + path("data") + " -o " + path("out"));
  EXPECT_OUTCOME(run, 0, "out of range, ignored");
  EXPECT_OUTCOME(soac_cli("validate scatter -i " + path("data") + " -r " + path("out")), 0, "VALID");
  for (const char* v : {"plain", "chunked", "blocked"}) {
    EXPECT_OUTCOME(soac_cli("run scatter --backend host --variant " + std::string(v) + " -i " + path("data") + " -o " +
                            path(v)), 0, v);
    EXPECT_OUTCOME(soac_cli("validate scatter -i " + path("data") + " -r " + path(v)), 0, "VALID");
  }
}

TEST_F(Cli, EveryAppGeneratesRunsAndValidatesOnTheHost) {
  const std::vector<std::pair<std::string, std::string>> app_presets = {
      {"scatter", "tiny"}, {"hist", "tiny"}, {"segreduce", "tiny"}, {"scan", "small"}, {"radixsort", "tiny"},
      {"kmeans", "tiny"},  {"backprop", "tiny"}};
  for (const auto& [app, preset] : app_presets) {
    const auto data = path(app), out = path(app + ".out");
    EXPECT_OUTCOME(soac_cli("gen " + app + " --preset " + preset + " -o " + data), 0, "dataset written");
    EXPECT_OUTCOME(soac_cli("run " + app + " --backend host -i " + data + " -o " + out), 0, "result written");
    EXPECT_OUTCOME(soac_cli("validate " + app + " -i " + data + " -r " + out), 0, "VALID");
    // A dataset of another app is refused with the app named.
    EXPECT_OUTCOME(soac_cli("run " + std::string(app == "scatter" ? "hist" : "scatter") + " --backend host -i " + data),
                   exit_code::input, app);
  }
}

TEST_F(Cli, KmeansOnRodiniasFilesAndTheirErrors) {
  EXPECT_OUTCOME(soac_cli("gen kmeans --preset tiny --format rodinia -o " + path("p.txt")), 0, "dataset written");
  EXPECT_OUTCOME(soac_cli("run kmeans --backend host --format rodinia -i " + path("p.txt") + " --set k=4 -v -o " + path("r")), 0,
                 "iteration 1: 3000 of 3000 points changed cluster");
  EXPECT_OUTCOME(soac_cli("validate kmeans --format rodinia -i " + path("p.txt") + " -r " + path("r")), 0, "VALID");
  std::ofstream(path("ragged.txt")) << "1 0.5 0.5\n2 0.5\n";
  EXPECT_OUTCOME(soac_cli("run kmeans --backend host --format rodinia -i " + path("ragged.txt")), exit_code::input,
                 "ragged.txt:2:6: point 2 has 1 features, the first point (line 1) has 2");
  // What Rodinia reads leniently is one note on stderr, and strict=1 refuses it.
  std::ofstream(path("word.txt")) << "1 0.5 0.5\n2 0.5 tcp\n3 1 1\n";
  EXPECT_OUTCOME(soac_cli("run kmeans --backend host --format rodinia -i " + path("word.txt") + " --set k=2 -o " + path("w")), 0,
                 "word.txt:2:7: 'tcp' is not a number: read as 0, as Rodinia's atof reads it (--set strict=1 refuses such input)");
  EXPECT_OUTCOME(soac_cli("run kmeans --backend host --format rodinia -i " + path("word.txt") + " --set k=2 --set strict=1"),
                 exit_code::input, "refused by strict=1");
  std::ofstream(path("short.bin"), std::ios::binary) << std::string("\x05\x00\x00\x00\x02\x00\x00\x00", 8);
  EXPECT_OUTCOME(soac_cli("run kmeans --backend host --format rodinia-bin -i " + path("short.bin")), exit_code::input,
                 "too few for the n x d float32 features");
  EXPECT_OUTCOME(soac_cli("run kmeans --backend host --format rodinia -i " + path("p.txt") + " --set k=0"), exit_code::usage,
                 "parameter k = 0");
  EXPECT_OUTCOME(soac_cli("gen backprop --set layer_size=0 -o " + path("bp")), exit_code::usage, "layer_size = 0");
}

TEST_F(Cli, ValidateCatchesAWrongResult) {
  gen("data");
  ASSERT_EQ(soac_cli("run scatter --backend host -i " + path("data") + " -o " + path("out")).code, 0);
  auto dest = datasets::read_npy<std::int32_t>(path("out") + "/dest.npy");
  dest[17] ^= 0x5a5a;
  datasets::write_npy<std::int32_t>(path("out") + "/dest.npy", dest);
  EXPECT_OUTCOME(soac_cli("validate scatter -i " + path("data") + " -r " + path("out")), exit_code::invalid_result,
                 "element 17");
}

TEST_F(Cli, GeneratorIsDeterministicGivenTheSeed) {
  gen("a", "--seed 5");
  gen("b", "--seed 5");
  gen("c", "--seed 6");
  auto bytes = [&](const std::string& d) {
    std::ifstream in(path(d) + "/indexes.npy", std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
  };
  EXPECT_EQ(bytes("a"), bytes("b"));
  EXPECT_NE(bytes("a"), bytes("c"));
}

TEST_F(Cli, UnknownAppCommandBackendVariantAndParameter) {
  EXPECT_OUTCOME(soac_cli("run nosuchapp -i x"), exit_code::usage, "unknown app 'nosuchapp'");
  EXPECT_OUTCOME(soac_cli("frobnicate"), exit_code::usage, "unknown command");
  EXPECT_OUTCOME(soac_cli("info --backend gpu"), exit_code::usage, "unknown backend 'gpu'");
  EXPECT_OUTCOME(soac_cli("gen scatter --set q=3 -o " + path("x")), exit_code::usage, "unknown parameter 'q'");
  EXPECT_OUTCOME(soac_cli("gen scatter --set n=lots -o " + path("x")), exit_code::usage, "not a number");
  // Numbers too large for any parameter are named so, not "not a number" or "not an integer".
  for (const char* huge : {"2^64", "1e400"})
    EXPECT_OUTCOME(soac_cli("gen scatter --set n=" + std::string(huge) + " -o " + path("x")), exit_code::usage, "beyond the largest value");
  EXPECT_OUTCOME(soac_cli("gen scatter --set n=9223372036854775807 -o " + path("x")), exit_code::usage, "is outside [");
  EXPECT_OUTCOME(soac_cli("gen scatter --set n=1.5 -o " + path("x")), exit_code::usage, "must be a whole number");
  EXPECT_OUTCOME(soac_cli("gen scatter --set k=2000 --preset tiny -o " + path("x")), exit_code::usage, "outside");
  EXPECT_OUTCOME(soac_cli("gen scatter --preset huge -o " + path("x")), exit_code::usage, "unknown preset");
  EXPECT_OUTCOME(soac_cli("gen scatter"), exit_code::usage, "missing --output");
  EXPECT_OUTCOME(soac_cli("run scatter --bogus"), exit_code::usage, "bogus");
  gen("data");
  EXPECT_OUTCOME(soac_cli("run scatter --backend host --variant fastest -i " + path("data")), exit_code::usage,
                 "unknown variant");
  EXPECT_OUTCOME(soac_cli("run scatter --backend host --variant thrust -i " + path("data")), exit_code::usage,
                 "out of range");
}

TEST_F(Cli, VariantSettings) {
  // hist takes settings after a variant's name (any fixed shape); scatter takes none.
  ASSERT_EQ(soac_cli("gen hist --preset small --set n=5000 -o " + path("h")).code, 0);
  EXPECT_OUTCOME(soac_cli("run hist --backend host --variant shared,M=1,S=2 -i " + path("h") + " -o " + path("h.out")), 0,
                 "shared,M=1,S=2");
  EXPECT_EQ(soac_cli("validate hist -i " + path("h") + " -r " + path("h.out")).code, 0);
  EXPECT_OUTCOME(soac_cli("run hist --backend host --variant shared,Q=1 -i " + path("h")), exit_code::usage,
                 "unknown setting 'Q'");
  EXPECT_OUTCOME(soac_cli("run hist --backend host --variant fast,M=1 -i " + path("h")), exit_code::usage,
                 "unknown variant 'fast'");
  gen("data");
  EXPECT_OUTCOME(soac_cli("run scatter --backend host --variant plain,M=1 -i " + path("data")), exit_code::usage,
                 "takes no settings");
  EXPECT_OUTCOME(soac_cli("list"), 0, "variant settings");
}

TEST_F(Cli, MissingDataset) {
  EXPECT_OUTCOME(soac_cli("run scatter --backend host -i " + path("nowhere")), exit_code::input, path("nowhere"));
}

TEST_F(Cli, TruncatedFile) {
  gen("data");
  const auto f = path("data") + "/values.npy";
  fs::resize_file(f, fs::file_size(f) - 5);
  EXPECT_OUTCOME(soac_cli("run scatter --backend host -i " + path("data")), exit_code::input, "truncated");
}

TEST_F(Cli, WrongMagic) {
  gen("data");
  std::fstream f(path("data") + "/dest.npy", std::ios::in | std::ios::out | std::ios::binary);
  f.write("GIF89", 5);
  f.close();
  EXPECT_OUTCOME(soac_cli("run scatter --backend host -i " + path("data")), exit_code::input, "magic");
}

TEST_F(Cli, WrongDtype) {
  gen("data");
  // values.npy rewritten as float32, manifest updated to match: the app must refuse the dtype.
  const auto values = datasets::read_npy<std::int32_t>(path("data") + "/values.npy");
  std::vector<float> as_float(values.begin(), values.end());
  datasets::write_npy<float>(path("data") + "/values.npy", as_float);
  EXPECT_OUTCOME(soac_cli("run scatter --backend host -i " + path("data")), exit_code::input, "float32");
  nlohmann::json manifest;
  std::ifstream(path("data") + "/manifest.json") >> manifest;
  manifest["arrays"]["values"]["dtype"] = "float32";
  std::ofstream(path("data") + "/manifest.json") << manifest.dump();
  EXPECT_OUTCOME(soac_cli("run scatter --backend host -i " + path("data")), exit_code::input, "float32");
}

TEST_F(Cli, LengthsThatDisagree) {
  gen("data");
  const auto values = datasets::read_npy<std::int32_t>(path("data") + "/values.npy");
  datasets::write_npy<std::int32_t>(path("data") + "/values.npy",
                                    std::span<const std::int32_t>(values.data(), values.size() - 1));
  nlohmann::json manifest;
  std::ifstream(path("data") + "/manifest.json") >> manifest;
  manifest["arrays"]["values"]["shape"] = {values.size() - 1};
  std::ofstream(path("data") + "/manifest.json") << manifest.dump();
  EXPECT_OUTCOME(soac_cli("run scatter --backend host -i " + path("data")), exit_code::input, "299 elements, but the manifest's k says 300");
}

// The defects issue 28 names, through the CLI as a user meets them.
TEST_F(Cli, ManifestParametersAreCheckedWhereTheyEnter) {
  const auto hist_with = [&](const std::string& name, const std::string& key, const nlohmann::json& value) {
    const auto r = soac_cli("gen hist --preset tiny -o " + path(name));
    EXPECT_EQ(r.code, 0) << r.output;
    nlohmann::json manifest;
    std::ifstream(path(name) + "/manifest.json") >> manifest;
    manifest["params"][key] = value;
    std::ofstream(path(name) + "/manifest.json") << manifest.dump();
    return path(name);
  };
  // RF = 0 divided by zero (SIGFPE) in run and validate.
  const auto rf0 = hist_with("rf0", "RF", 0);
  EXPECT_OUTCOME(soac_cli("run hist --backend host -i " + rf0 + " -o " + path("out")), exit_code::input, "parameter RF = 0 is outside [1,");
  ASSERT_EQ(soac_cli("gen hist --preset tiny -o " + path("good")).code, 0);
  ASSERT_EQ(soac_cli("run hist --backend host -i " + path("good") + " -o " + path("good.out")).code, 0);
  EXPECT_OUTCOME(soac_cli("validate hist -i " + rf0 + " -r " + path("good.out")), exit_code::input, "manifest.json");
  // n that is not the array's length ran on the array's length.
  EXPECT_OUTCOME(soac_cli("run hist --backend host -i " + hist_with("n", "n", 19'999) + " -o " + path("out")), exit_code::input,
                 "the manifest's n says 19999");
  EXPECT_OUTCOME(soac_cli("run hist --backend host -i " + hist_with("type", "H", "127") + " -o " + path("out")), exit_code::input,
                 "parameter H must be an integer");
  // H = 2^31 allocated until the OOM killer came; here the 2^31 argmax bins (16 GiB) and their
  // copy exceed the 4 GiB this run may map. Not under AddressSanitizer (scripts/sanitize.sh),
  // whose shadow memory alone needs terabytes of address space.
#if !defined(__SANITIZE_ADDRESS__)
  {
    const std::string limited = "bash -c 'ulimit -v 4000000; exec " + std::string(SOAC_EXE) + " run hist --backend host -i " +
                                hist_with("huge", "H", std::int64_t{1} << 31) + " -o " + path("out") + "' 2>&1";
    FILE* pipe = popen(limited.c_str(), "r");
    ASSERT_NE(pipe, nullptr);
    std::string said;
    for (std::array<char, 512> buf; std::fgets(buf.data(), int(buf.size()), pipe);) said += buf.data();
    const int status = pclose(pipe);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == exit_code::resource) << said;
    EXPECT_NE(said.find("GiB"), std::string::npos) << said;
  }
#endif
  // gen writes what run refuses: the same check refuses it in gen.
  EXPECT_OUTCOME(soac_cli("gen hist --preset tiny --set op=foo -o " + path("foo")), exit_code::usage, "op must be");
  EXPECT_FALSE(fs::exists(path("foo") + "/manifest.json"));
}

// A dataset is checked for what its computation needs, never for the generator's settings: a
// capture of SPEC's inl1100 input has 19 atom types and no density, which gen would refuse.
TEST_F(Cli, DatasetsAreNotCheckedForTheGeneratorsSettings) {
  ASSERT_EQ(soac_cli("gen gromacs --preset tiny -o " + path("g")).code, 0);
  nlohmann::json manifest;
  std::ifstream(path("g") + "/manifest.json") >> manifest;
  manifest["params"]["types"] = 19;
  manifest["params"]["density"] = 1e6;
  manifest["params"].erase("pairs");
  std::ofstream(path("g") + "/manifest.json") << manifest.dump();
  EXPECT_OUTCOME(soac_cli("run gromacs --backend host -i " + path("g") + " -o " + path("g.out")), exit_code::ok, "gromacs inl1100");
  EXPECT_OUTCOME(soac_cli("validate gromacs -i " + path("g") + " -r " + path("g.out")), exit_code::ok, "VALID");
  // What the computation reads is still checked: the particles the manifest counts.
  manifest["params"]["particles"] = 301;
  std::ofstream(path("g") + "/manifest.json") << manifest.dump();
  EXPECT_OUTCOME(soac_cli("run gromacs --backend host -i " + path("g") + " -o " + path("g.out")), exit_code::input,
                 "the manifest's particles says 301");
  // gen itself still checks them.
  EXPECT_OUTCOME(soac_cli("gen gromacs --preset tiny --set types=19 -o " + path("g2")), exit_code::usage, "types");
}

TEST_F(Cli, CompareNamesWhatItCannotDo) {
  ASSERT_EQ(soac_cli("gen scatter --preset tiny -o " + path("s")).code, 0);
  ASSERT_EQ(soac_cli("run scatter --backend host -i " + path("s") + " -o " + path("s.out")).code, 0);
  EXPECT_OUTCOME(soac_cli("compare scatter -r " + path("s.out") + " --expected " + path("s.out")), exit_code::usage,
                 "scatter has no original program's output to compare with");
  EXPECT_OUTCOME(soac_cli("compare bfs -r " + path("s.out")), exit_code::usage, "expected");
  EXPECT_OUTCOME(soac_cli("compare bfs -r " + path("s.out") + " --expected x --format parboil"), exit_code::usage,
                 "unknown --format 'parboil' (known: rodinia)");
  const auto list = soac_cli("list");
  EXPECT_NE(list.output.find("original outputs (soac compare"), std::string::npos);
}

// Integer sums that overflow int32 were undefined on the host and wrapped on the GPU; such data is
// now an input error. Each operator is judged by the sums it can form: the sum may add the three
// values below in any grouping (2^31 overflows), the maximum subarray sum only consecutive runs
// (2^30 at most fits), until two large values stand side by side.
TEST_F(Cli, SegreduceRefusesDataWhoseSumsOverflowInt32) {
  const auto with_values = [&](const std::string& name, const std::string& op, std::vector<std::int32_t> head) {
    const auto r = soac_cli("gen segreduce --preset tiny --set operator=" + op + " -o " + path(name));
    EXPECT_EQ(r.code, 0) << r.output;
    auto data = datasets::read_npy<std::int32_t>(path(name) + "/data.npy");
    std::copy(head.begin(), head.end(), data.begin() + 37 * 4);  // segment 4 of 100 x 37
    datasets::write_npy<std::int32_t>(path(name) + "/data.npy", data);
    return path(name);
  };
  const std::int32_t big = 1 << 30;
  const auto run = [&](const std::string& dataset) { return soac_cli("run segreduce --backend host -i " + dataset + " -o " + path("out")); };
  EXPECT_OUTCOME(run(with_values("sum", "sum", {big, -big, big})), exit_code::input, "segment 4 of 'data' overflows int32 under operator sum");
  EXPECT_EQ(run(with_values("mss-fits", "mss", {big, -big, big})).code, 0);
  EXPECT_OUTCOME(soac_cli("validate segreduce -i " + path("mss-fits") + " -r " + path("out")), 0, "VALID");
  EXPECT_OUTCOME(run(with_values("mss", "mss", {big, 1, big})), exit_code::input, "segment 4 of 'data' overflows int32 under operator mss");
}

// The same for the scan app (fuzz_app): every prefix sum of a segment, or of the whole array for
// the plain scan, must fit. Two large values side by side overflow the plain scan; a segment
// starting between them keeps the segmented scan within int32.
TEST_F(Cli, ScanRefusesDataWhosePrefixSumsOverflowInt32) {
  ASSERT_EQ(soac_cli("gen scan --preset small -o " + path("d")).code, 0);
  auto values = datasets::read_npy<std::int32_t>(path("d") + "/values.npy");
  auto flags = datasets::read_npy<std::uint8_t>(path("d") + "/flags.npy");
  values[0] = values[1] = 1 << 30;
  flags[1] = 1;
  datasets::write_npy<std::int32_t>(path("d") + "/values.npy", values);
  datasets::write_npy<std::uint8_t>(path("d") + "/flags.npy", flags);
  EXPECT_OUTCOME(soac_cli("run scan --backend host --variant scan -i " + path("d") + " -o " + path("plain")), exit_code::input,
                 "have prefix sums beyond int32");
  ASSERT_EQ(soac_cli("run scan --backend host --variant segscan -i " + path("d") + " -o " + path("seg")).code, 0);
  EXPECT_OUTCOME(soac_cli("validate scan -i " + path("d") + " -r " + path("seg")), 0, "VALID");
}

// fuzz_options (UBSan): "-6^31" became a double beyond int64 that was cast to it (undefined).
TEST_F(Cli, PowersBeyondInt64AreUsageErrors) {
  for (const char* value : {"-6^31", "6^31"})
    EXPECT_EQ(soac_cli("gen backprop --preset tiny --set layer_size=" + std::string(value) + " -o " + path("g")).code, exit_code::usage);
}

// An output over the input would destroy the dataset (a folder of images, a bundle), and an
// option given twice with two values leaves which one counts to a guess.
TEST_F(Cli, OutputOverTheInputAndOptionsGivenTwice) {
  gen("data");
  EXPECT_OUTCOME(soac_cli("run scatter --backend host -i " + path("data") + " -o " + path("data")), exit_code::usage,
                 "is the input");
  EXPECT_TRUE(fs::exists(path("data") + "/dest.npy"));
  EXPECT_OUTCOME(soac_cli("run scatter --backend host -i " + path("data") + " -o " + path("a") + " -o " + path("b")),
                 exit_code::usage, "--output given twice");
  EXPECT_OUTCOME(soac_cli("run bfs --app scatter --backend host -i " + path("data")), exit_code::usage, "APP given twice");
  EXPECT_OUTCOME(soac_cli("run scatter --backend host --device abc -i " + path("data")), exit_code::usage,
                 "--device takes a CUDA device ordinal");
  EXPECT_EQ(soac_cli("run scatter --backend host -i " + path("data") + " -o " + path("a") + " -o " + path("a")).code, 0);
  fs::create_directories(path("empty"));
  EXPECT_OUTCOME(soac_cli("validate scatter -i " + path("data") + " -r " + path("empty")), exit_code::input, "`soac run` writes results");
}

TEST_F(Cli, CudaBackendWithoutAGpu) {
  if (cuda_device_count() > 0) GTEST_SKIP() << "a CUDA device is present";
  gen("data");
  EXPECT_OUTCOME(soac_cli("run scatter --backend cuda -i " + path("data")), exit_code::usage, "needs a CUDA device");
}

TEST_F(Cli, BenchOnTheHostWritesTableAndJson) {
  const auto r = soac_cli("bench scatter --backend host --preset tiny --runs 3 --warmup 1 --no-progress --json " +
                          path("bench.json"));
  EXPECT_OUTCOME(r, 0, "x floor");
  nlohmann::json j;
  std::ifstream(path("bench.json")) >> j;
  EXPECT_EQ(j["suite"], "scatter");
  ASSERT_EQ(j["cases"].size(), 1u);
  EXPECT_GE(j["cases"][0]["variants"].size(), 5u);
}

}  // namespace

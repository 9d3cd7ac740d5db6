// Tests of datasets/: the .npy reader/writer, bundles, and deterministic random generation.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <numeric>
#include <set>
#include <string>
#include <vector>

#ifdef _OPENMP
#include <omp.h>
#endif
#include <unistd.h>

#include "core/error.hpp"
#include "datasets/bundle.hpp"
#include "datasets/npy.hpp"
#include "datasets/random.hpp"

namespace fs = std::filesystem;
using namespace soac::datasets;

namespace {

// A fresh directory per test, removed afterwards.
class DatasetsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    static std::atomic<int> counter{0};
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = fs::temp_directory_path() / ("soac_test_datasets_" + std::to_string(::getpid()) + "_" +
                                        std::to_string(counter++) + "_" + info->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  fs::path path(const std::string& name) const { return dir_ / name; }
  fs::path dir_;
};

void write_bytes(const fs::path& p, const std::string& bytes) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  ASSERT_TRUE(out.good());
}

std::string read_bytes(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// Builds a .npy file by hand: magic, version, header length, dict padded with spaces to a
// 64-byte boundary and ending in '\n', then the raw data bytes.
std::string make_npy(int major, const std::string& dict, const std::string& data) {
  const std::size_t prelude = major == 1 ? 10 : 12;
  std::string header = dict;
  while ((prelude + header.size() + 1) % 64 != 0) header += ' ';
  header += '\n';
  std::string out = "\x93NUMPY";
  out += static_cast<char>(major);
  out += '\0';
  for (std::size_t i = 0; i < prelude - 8; ++i) out += static_cast<char>((header.size() >> (8 * i)) & 0xff);
  return out + header + data;
}

template <class T>
std::string raw(const std::vector<T>& v) {
  return std::string(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(T));
}

// Runs f and checks it throws exactly soac::input_error whose message holds every needle.
// Returns the message ("" if nothing suitable was thrown).
template <class F>
std::string expect_input_error(F&& f, const std::vector<std::string>& needles) {
  try {
    f();
    ADD_FAILURE() << "expected soac::input_error, nothing was thrown";
  } catch (const soac::input_error& e) {
    const std::string msg = e.what();
    for (const auto& n : needles) EXPECT_NE(msg.find(n), std::string::npos) << "'" << n << "' not in: " << msg;
    return msg;
  } catch (const std::exception& e) {
    ADD_FAILURE() << "expected soac::input_error, got another exception: " << e.what();
  }
  return "";
}

const std::string arange5_dict = "{'descr': '<i4', 'fortran_order': False, 'shape': (5,), }";
const std::vector<std::int32_t> arange5 = {0, 1, 2, 3, 4};

// --- npy ------------------------------------------------------------------------------------------

template <class T>
void check_round_trip(const fs::path& p) {
  std::vector<T> v(37);
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<T>(static_cast<int>(i) * 7 - 50);
  write_npy(p, std::span<const T>(v));
  npy_header h;
  const std::vector<T> back = read_npy<T>(p, &h);
  EXPECT_EQ(back, v) << dtype_name(dtype_of<T>());
  EXPECT_EQ(h.type, dtype_of<T>());
  EXPECT_EQ(h.shape, std::vector<std::int64_t>{37});
  EXPECT_EQ(h.data_offset % 64, 0u);
  EXPECT_EQ(parse_dtype_name(dtype_name(dtype_of<T>())), dtype_of<T>());
  EXPECT_EQ(dtype_size(dtype_of<T>()), sizeof(T));
}

TEST_F(DatasetsTest, NpyRoundTripEveryDtype) {
  check_round_trip<std::int8_t>(path("i8.npy"));
  check_round_trip<std::uint8_t>(path("u8.npy"));
  check_round_trip<std::int16_t>(path("i16.npy"));
  check_round_trip<std::uint16_t>(path("u16.npy"));
  check_round_trip<std::int32_t>(path("i32.npy"));
  check_round_trip<std::uint32_t>(path("u32.npy"));
  check_round_trip<std::int64_t>(path("i64.npy"));
  check_round_trip<std::uint64_t>(path("u64.npy"));
  check_round_trip<float>(path("f32.npy"));
  check_round_trip<double>(path("f64.npy"));

  const bool flags[] = {true, false, false, true, true};
  write_npy(path("b.npy"), std::span<const bool>(flags));
  EXPECT_EQ(read_npy<bool>(path("b.npy")), (std::vector<bool>{true, false, false, true, true}));
  EXPECT_EQ(dtype_descr(dtype::b1), "|b1");
  EXPECT_EQ(dtype_descr(dtype::u8), "|u1");
  EXPECT_EQ(dtype_descr(dtype::f64), "<f8");
  EXPECT_THROW(parse_dtype_name("complex64"), soac::usage_error);
}

TEST_F(DatasetsTest, NpyShapes) {
  // 0-d scalar
  const double scalar = 2.5;
  write_npy(path("s.npy"), dtype::f64, {}, &scalar);
  npy_header h = read_npy_header(path("s.npy"));
  EXPECT_TRUE(h.shape.empty());
  EXPECT_EQ(h.element_count(), 1);
  EXPECT_EQ(read_npy<double>(path("s.npy")), std::vector<double>{2.5});
  EXPECT_NE(read_bytes(path("s.npy")).find("'shape': (), }"), std::string::npos);

  // 2-d
  std::vector<std::int16_t> m(12);
  std::iota(m.begin(), m.end(), -3);
  const std::int64_t shape2[] = {3, 4};
  write_npy(path("m.npy"), dtype::i16, shape2, m.data());
  h = read_npy_header(path("m.npy"));
  EXPECT_EQ(h.shape, (std::vector<std::int64_t>{3, 4}));
  EXPECT_EQ(h.data_bytes(), 24u);
  EXPECT_EQ(h.data_offset % 64, 0u);
  std::vector<std::int16_t> back(12);
  read_npy_data(path("m.npy"), h, back.data());
  EXPECT_EQ(back, m);
  EXPECT_NE(read_bytes(path("m.npy")).find("'shape': (3, 4), }"), std::string::npos);

  // empty 1-d
  const std::int64_t shape0[] = {0};
  write_npy(path("e.npy"), dtype::u32, shape0, nullptr);
  EXPECT_TRUE(read_npy<std::uint32_t>(path("e.npy")).empty());
}

TEST_F(DatasetsTest, NpyMatchesNumpyBytes) {
  // np.save of np.arange(5, dtype='<i4'): 10-byte prelude + 118-byte header, data at 128.
  const std::string expected = make_npy(1, arange5_dict, raw(arange5));
  ASSERT_EQ(expected.size(), 128u + 20u);
  ASSERT_EQ(expected.substr(0, 10), std::string("\x93NUMPY\x01\x00v\x00", 10));
  write_bytes(path("numpy.npy"), expected);
  npy_header h;
  EXPECT_EQ(read_npy<std::int32_t>(path("numpy.npy"), &h), arange5);
  EXPECT_EQ(h.major_version, 1);
  EXPECT_EQ(h.data_offset, 128u);
  EXPECT_EQ(h.type, dtype::i32);

  // And our writer produces the same bytes.
  write_npy(path("ours.npy"), std::span<const std::int32_t>(arange5));
  EXPECT_EQ(read_bytes(path("ours.npy")), expected);
}

TEST_F(DatasetsTest, NpyVersions2And3) {
  for (int major : {2, 3}) {
    const fs::path p = path(std::string("v").append(std::to_string(major)).append(".npy"));
    write_bytes(p, make_npy(major, arange5_dict, raw(arange5)));
    npy_header h;
    EXPECT_EQ(read_npy<std::int32_t>(p, &h), arange5);
    EXPECT_EQ(h.major_version, major);
    EXPECT_EQ(h.data_offset, 128u);
  }
}

TEST_F(DatasetsTest, NpyHeaderVariants) {
  const std::vector<float> six = {1, 2, 3, 4, 5, 6};
  const std::pair<std::string, std::vector<std::int64_t>> cases[] = {
      {"{\"shape\": (2, 3), \"descr\": \"<f4\", \"fortran_order\": False}", {2, 3}},
      {"{'fortran_order':False,'shape':(6,),'descr':'=f4'}", {6}},
      {"{'descr': '<f4', 'fortran_order': True, 'shape': (6,), }", {6}},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (6L,), }", {6}},
      {"{ 'descr' : '<f4' , 'fortran_order' : False , 'shape' : ( 1 , 6 , ) , }", {1, 6}},
  };
  int i = 0;
  for (const auto& [dict, shape] : cases) {
    const fs::path p = path(std::string("h").append(std::to_string(i++)).append(".npy"));
    write_bytes(p, make_npy(1, dict, raw(six)));
    npy_header h;
    EXPECT_EQ(read_npy<float>(p, &h), six) << dict;
    EXPECT_EQ(h.shape, shape) << dict;
  }
  const std::vector<std::uint8_t> bytes = {1, 2, 3};
  for (const char* d : {"|u1", "=u1", "<u1"}) {
    write_bytes(path("u1.npy"), make_npy(1, std::string("{'descr': '") + d +
                                                "', 'fortran_order': False, 'shape': (3,), }",
                                            raw(bytes)));
    EXPECT_EQ(read_npy<std::uint8_t>(path("u1.npy")), bytes) << d;
  }
  const std::int64_t one = 42;
  write_bytes(path("scalar.npy"),
              make_npy(1, "{'descr': '<i8', 'fortran_order': False, 'shape': (), }", raw(std::vector{one})));
  EXPECT_EQ(read_npy<std::int64_t>(path("scalar.npy")), std::vector<std::int64_t>{42});
}

TEST_F(DatasetsTest, NpyRejectsBadFiles) {
  const auto header_for = [](const std::string& descr, const std::string& shape, bool fortran = false) {
    return "{'descr': '" + descr + "', 'fortran_order': " + (fortran ? "True" : "False") +
           ", 'shape': " + shape + ", }";
  };
  const auto expect_rejected = [&](const std::string& name, const std::string& bytes,
                                   const std::vector<std::string>& words) {
    SCOPED_TRACE(name);
    const fs::path p = path(name);
    write_bytes(p, bytes);
    const std::string msg = expect_input_error([&] { read_npy_header(p); }, words);
    EXPECT_EQ(msg.rfind(p.string() + ": ", 0), 0u) << msg;  // starts with the path
  };

  expect_input_error([&] { read_npy_header(path("missing.npy")); }, {"missing.npy", "no such file"});
  expect_input_error([&] { read_npy<std::int32_t>(path("missing.npy")); }, {"missing.npy", "no such file"});

  const std::string good = make_npy(1, arange5_dict, raw(arange5));
  expect_rejected("truncated_data.npy", good.substr(0, good.size() - 3),
                  {"truncated", "20 bytes of int32", "(5,)", "only 17 bytes follow"});
  expect_rejected("truncated_header.npy", good.substr(0, 60), {"truncated header", "runs past"});
  expect_rejected("short.npy", good.substr(0, 4), {"truncated"});
  expect_rejected("tiny.npy", good.substr(0, 9), {"truncated header"});
  expect_rejected("empty.npy", "", {"bad magic"});
  expect_rejected("magic.npy", "PK\x03\x04" + good.substr(4), {"not a .npy file (bad magic)"});
  std::string v9 = good;
  v9[6] = 9;
  expect_rejected("version.npy", v9, {"unsupported", "version 9.0"});
  expect_rejected("bigendian.npy", make_npy(1, header_for(">i4", "(5,)"), raw(arange5)),
                  {"big-endian", "'>i4'"});
  expect_rejected("complex.npy", make_npy(1, header_for("<c8", "(5,)"), raw(arange5) + raw(arange5)),
                  {"unsupported dtype", "'<c8'"});
  expect_rejected("fortran.npy", make_npy(1, header_for("<i4", "(2, 2)", true), raw(std::vector<int>{1, 2, 3, 4})),
                  {"fortran_order"});
  expect_rejected("trailing.npy", good + "xyz", {"3 unexpected trailing bytes"});
  expect_rejected("garbage.npy", make_npy(1, "hello world", raw(arange5)), {"invalid .npy header", "dict"});
  expect_rejected("nokey.npy", make_npy(1, "{'descr': '<i4', 'fortran_order': False}", raw(arange5)),
                  {"invalid .npy header", "'shape'"});
  expect_rejected("negative.npy", make_npy(1, header_for("<i4", "(-5,)"), ""), {"negative dimension"});
  expect_rejected("unterminated.npy", make_npy(1, "{'descr': '<i4", ""), {"invalid .npy header"});

  // Wrong dtype on a typed read.
  write_bytes(path("float.npy"), make_npy(1, header_for("<f4", "(5,)"), raw(std::vector<float>(5))));
  expect_input_error([&] { read_npy<std::int32_t>(path("float.npy")); },
                     {"float.npy", "has dtype float32, expected int32"});

  // A directory is not a file.
  expect_input_error([&] { read_npy_header(dir_); }, {"directory"});
}

// --- bundle ---------------------------------------------------------------------------------------

void write_sample_bundle(const fs::path& dir, const std::string& kind = "dataset",
                         const std::string& app = "scatter") {
  bundle_writer w(dir, kind, app);
  w.params()["n"] = 4;
  w.params()["dist"] = "uniform";
  w.info()["note"] = "test";
  const std::vector<std::int32_t> dest = {3, 1, 2, 0};
  const std::vector<double> src = {0.5, 1.5, 2.5, 3.5};
  w.add("dest", std::span<const std::int32_t>(dest));
  w.add("src", std::span<const double>(src));
  const std::vector<std::uint8_t> grid(6, 7);
  const std::int64_t shape[] = {2, 3};
  w.add("grid", dtype::u8, shape, grid.data());
  w.finish();
}

TEST_F(DatasetsTest, BundleRoundTrip) {
  const fs::path d = path("nested/data");
  write_sample_bundle(d);
  const bundle b = bundle::open(d, "dataset", "scatter");
  EXPECT_EQ(b.kind(), "dataset");
  EXPECT_EQ(b.app(), "scatter");
  EXPECT_EQ(b.dir(), d);
  EXPECT_EQ(b.params()["n"], 4);
  EXPECT_EQ(b.params()["dist"], "uniform");
  EXPECT_EQ(b.info()["note"], "test");
  EXPECT_EQ(b.array_names(), (std::vector<std::string>{"dest", "grid", "src"}));
  EXPECT_TRUE(b.has("dest"));
  EXPECT_FALSE(b.has("nope"));
  EXPECT_EQ(b.read<std::int32_t>("dest"), (std::vector<std::int32_t>{3, 1, 2, 0}));
  EXPECT_EQ(b.read<double>("src"), (std::vector<double>{0.5, 1.5, 2.5, 3.5}));
  EXPECT_EQ(b.path_of("dest"), d / "dest.npy");
  const npy_header h = b.header("grid");
  EXPECT_EQ(h.shape, (std::vector<std::int64_t>{2, 3}));
  std::vector<std::uint8_t> grid(h.data_bytes());
  b.read_into("grid", grid.data());
  EXPECT_EQ(grid, std::vector<std::uint8_t>(6, 7));
  // Rows by offset (a process's part of a big array): rows 1-2 of dest, row 1 of the 2 x 3 grid.
  std::vector<std::int32_t> middle(2);
  b.read_rows_into("dest", 1, 2, middle.data());
  EXPECT_EQ(middle, (std::vector<std::int32_t>{1, 2}));
  std::vector<std::uint8_t> row(3, 0);
  b.read_rows_into("grid", 1, 1, row.data());
  EXPECT_EQ(row, std::vector<std::uint8_t>(3, 7));
  EXPECT_NO_THROW(b.read_rows_into("dest", 4, 0, nullptr));
  EXPECT_THROW(b.read_rows_into("dest", 3, 2, middle.data()), soac::usage_error);
  EXPECT_THROW(b.read_rows_into("dest", -1, 1, middle.data()), soac::usage_error);
  EXPECT_NO_THROW(require_same_length(b, {"dest", "src"}));
  EXPECT_NO_THROW(bundle::open(d));
  expect_input_error([&] { b.read<float>("dest"); }, {"dest.npy", "has dtype int32, expected float32"});

  // The manifest is what the format says.
  const auto m = nlohmann::json::parse(read_bytes(d / "manifest.json"));
  EXPECT_EQ(m["format"], "soac-bundle");
  EXPECT_EQ(m["version"], 1);
  EXPECT_EQ(m["arrays"]["dest"]["file"], "dest.npy");
  EXPECT_EQ(m["arrays"]["dest"]["dtype"], "int32");
  EXPECT_EQ(m["arrays"]["dest"]["shape"], nlohmann::json::array({4}));
}

// An array in parts (one file per process of an MPI run): readers see one array; the manifest's
// rows and the parts' headers must agree; a rewrite removes the old parts.
TEST_F(DatasetsTest, BundleArrayInParts) {
  const fs::path d = path("parts");
  const std::vector<std::vector<std::int32_t>> parts = {{0, 1, 2}, {}, {3, 4}, {5}};
  std::vector<std::int64_t> rows;
  {
    bundle_writer w(d, "result", "kmeans");
    for (std::size_t p = 0; p < parts.size(); ++p) {
      write_npy(bundle_part_path(d, "membership", int(p)), std::span<const std::int32_t>(parts[p]));
      rows.push_back(std::int64_t(parts[p].size()));
    }
    const std::int64_t shape[1] = {6};
    w.add_parts("membership", dtype::i32, shape, rows);
    const std::int64_t wrong[1] = {7};
    EXPECT_THROW(w.add_parts("other", dtype::i32, wrong, rows), soac::usage_error);
    for (std::size_t p = 0; p < parts.size(); ++p)
      write_npy(bundle_part_path(d, "again", int(p)), std::span<const std::int32_t>(parts[p]));
    expect_input_error([&] { w.add_parts("again", dtype::i64, shape, rows); }, {"again.part-0.npy", "expected int64 (3,)"});
    w.finish();
  }
  const bundle b = bundle::open(d, "result", "kmeans");
  EXPECT_EQ(b.parts("membership"), 4u);
  EXPECT_EQ(b.read<std::int32_t>("membership"), (std::vector<std::int32_t>{0, 1, 2, 3, 4, 5}));
  EXPECT_EQ(b.header("membership").shape, (std::vector<std::int64_t>{6}));
  std::vector<std::int32_t> across(4);
  b.read_rows_into("membership", 1, 4, across.data());  // rows of the first, third and (none of) the second part
  EXPECT_EQ(across, (std::vector<std::int32_t>{1, 2, 3, 4}));
  // A part whose header disagrees with the manifest's rows.
  write_npy(bundle_part_path(d, "membership", 2), std::span<const std::int32_t>(parts[0]));
  expect_input_error([&] { b.read<std::int32_t>("membership"); }, {"membership.part-2.npy", "a part of array 'membership' holds int32 (3,)"});
  // A manifest whose parts do not add up to its shape.
  auto m = nlohmann::json::parse(read_bytes(d / "manifest.json"));
  m["arrays"]["membership"]["parts"][0]["rows"] = 2;
  write_bytes(d / "manifest.json", m.dump());
  expect_input_error([&] { bundle::open(d); }, {"its parts hold 5 rows, its shape is (6,)"});
  m["arrays"]["membership"]["parts"][0]["file"] = "../x.npy";
  write_bytes(d / "manifest.json", m.dump());
  expect_input_error([&] { bundle::open(d); }, {"each part must be"});
  m["arrays"]["membership"]["parts"][0]["file"] = "membership.part-0.npy";
  m["arrays"]["membership"]["parts"][0]["rows"] = 3;
  write_bytes(d / "manifest.json", m.dump());
  // Rewriting the bundle removes the parts its manifest listed.
  {
    bundle_writer w(d, "result", "kmeans");
    w.finish();
  }
  for (int p = 0; p < 4; ++p) EXPECT_FALSE(fs::exists(bundle_part_path(d, "membership", p))) << p;
}

TEST_F(DatasetsTest, BundleKindAndAppMismatch) {
  write_sample_bundle(path("b"), "dataset", "hist");
  expect_input_error([&] { bundle::open(path("b"), "dataset", "scatter"); },
                     {path("b").string(), "is a dataset for app 'hist', not 'scatter'"});
  expect_input_error([&] { bundle::open(path("b"), "result", "hist"); }, {"is a dataset", "not a result"});
}

TEST_F(DatasetsTest, BundleShapeDisagreement) {
  write_sample_bundle(path("b"));
  const std::vector<std::int32_t> longer(7, 1);
  write_npy(path("b") / "dest.npy", std::span<const std::int32_t>(longer));
  const bundle b = bundle::open(path("b"));
  expect_input_error([&] { b.header("dest"); }, {"dest.npy", "disagree", "(4,)", "(7,)"});
  expect_input_error([&] { b.read<std::int32_t>("dest"); }, {"dest.npy", "disagree"});
  const std::vector<float> wrong_type(4);
  write_npy(path("b") / "dest.npy", std::span<const float>(wrong_type));
  expect_input_error([&] { b.header("dest"); }, {"dest.npy", "disagree", "int32", "float32"});
}

TEST_F(DatasetsTest, BundleMissingArray) {
  write_sample_bundle(path("b"));
  const bundle b = bundle::open(path("b"));
  expect_input_error([&] { b.read<std::int32_t>("weights"); }, {"'weights'", "dest, grid, src"});
  expect_input_error([&] { b.path_of("weights"); }, {"'weights'"});
}

TEST_F(DatasetsTest, BundleNotABundle) {
  fs::create_directories(path("plain"));
  expect_input_error([&] { bundle::open(path("plain")); },
                     {path("plain").string(), "is not a soac bundle (no manifest.json)", "soac gen"});
  write_bytes(path("file.npy"), make_npy(1, arange5_dict, raw(arange5)));
  expect_input_error([&] { bundle::open(path("file.npy")); }, {"file.npy", "is a file"});
  expect_input_error([&] { bundle::open(path("nowhere")); }, {"nowhere", "no such directory"});
  fs::create_directories(path("badjson"));
  write_bytes(path("badjson/manifest.json"), "{not json");
  expect_input_error([&] { bundle::open(path("badjson")); }, {"manifest.json", "invalid JSON"});
}

TEST_F(DatasetsTest, BundleRequireSameLength) {
  bundle_writer w(path("b"), "dataset", "scatter");
  const std::vector<std::int32_t> a(10), c(10);
  const std::vector<std::int64_t> b5(5);
  w.add("src", std::span<const std::int32_t>(a));
  w.add("dest", std::span<const std::int64_t>(b5));
  w.add("val", std::span<const std::int32_t>(c));
  w.finish();
  const bundle b = bundle::open(path("b"));
  EXPECT_NO_THROW(require_same_length(b, {"src", "val"}));
  expect_input_error([&] { require_same_length(b, {"src", "dest", "val"}); },
                     {"same length", "src has 10", "dest has 5", "val has 10"});
}

TEST_F(DatasetsTest, BundleNewerVersionRejected) {
  write_sample_bundle(path("b"));
  auto m = nlohmann::json::parse(read_bytes(path("b/manifest.json")));
  m["version"] = 2;
  write_bytes(path("b/manifest.json"), m.dump());
  expect_input_error([&] { bundle::open(path("b")); }, {"manifest.json", "version 2", "newer", "(1)"});
  m["version"] = 1;
  m["format"] = "something-else";
  write_bytes(path("b/manifest.json"), m.dump());
  expect_input_error([&] { bundle::open(path("b")); }, {"soac-bundle"});
}

TEST_F(DatasetsTest, BundleRewriteRemovesOnlyOwnFiles) {
  write_sample_bundle(path("b"));
  write_bytes(path("b/notes.txt"), "keep me");
  {
    bundle_writer w(path("b"), "result", "scatter");
    // The old bundle is gone at once: no manifest, no old arrays; the user's file stays.
    EXPECT_FALSE(fs::exists(path("b/manifest.json")));
    EXPECT_FALSE(fs::exists(path("b/dest.npy")));
    EXPECT_FALSE(fs::exists(path("b/grid.npy")));
    EXPECT_TRUE(fs::exists(path("b/notes.txt")));
    const std::vector<std::int32_t> out = {1};
    w.add("out", std::span<const std::int32_t>(out));
    EXPECT_THROW(w.add("out", std::span<const std::int32_t>(out)), soac::usage_error);
    EXPECT_THROW(w.add("../evil", std::span<const std::int32_t>(out)), soac::usage_error);
    w.finish();
  }
  const bundle b = bundle::open(path("b"), "result");
  EXPECT_EQ(b.array_names(), std::vector<std::string>{"out"});
  EXPECT_EQ(read_bytes(path("b/notes.txt")), "keep me");

  // A directory whose manifest.json is not a bundle's is not touched.
  fs::create_directories(path("other"));
  write_bytes(path("other/manifest.json"), "{\"name\": \"some web app\"}");
  EXPECT_THROW(bundle_writer(path("other"), "dataset", "x"), soac::input_error);
  EXPECT_TRUE(fs::exists(path("other/manifest.json")));
}

// --- random ---------------------------------------------------------------------------------------

static_assert(splitmix64(0) == 0xe220a8397b1dcdafull, "SplitMix64 reference value");
static_assert(random_permutation(10, 1).size() == 10);

TEST(Random, Deterministic) {
  std::vector<std::uint32_t> a(1000), b(1000), c(1000), d(1000);
  fill_random_u32(a, 42, 0);
  fill_random_u32(b, 42, 0);
  fill_random_u32(c, 43, 0);
  fill_random_u32(d, 42, 1);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
  EXPECT_NE(a, d);
  for (std::size_t i = 0; i < a.size(); ++i) EXPECT_EQ(a[i], random_u32(42, 0, i));
  EXPECT_EQ(random_word(1, 2, 3), random_word(1, 2, 3));
  EXPECT_NE(random_word(1, 2, 3), random_word(1, 2, 4));
  for (std::uint64_t i = 0; i < 1000; ++i) {
    const double u = random_unit(7, 0, i);
    EXPECT_GE(u, 0.0);
    EXPECT_LT(u, 1.0);
  }
}

TEST(Random, ThreadCountIndependent) {
#ifdef _OPENMP
  const int saved = omp_get_max_threads();
  const std::size_t n = 100003;
  std::vector<std::uint32_t> u1(n), u2(n);
  std::vector<std::int64_t> i1(n), i2(n);
  std::vector<std::uint32_t> d1(n), d2(n);
  omp_set_num_threads(1);
  fill_random_u32(u1, 5, 1);
  fill_random_int<std::int64_t>(i1, -1000, 1000, 5, 2);
  fill_distinct_indices<std::uint32_t>(d1, 3 * n, 5);
  omp_set_num_threads(2);
  fill_random_u32(u2, 5, 1);
  fill_random_int<std::int64_t>(i2, -1000, 1000, 5, 2);
  fill_distinct_indices<std::uint32_t>(d2, 3 * n, 5);
  omp_set_num_threads(saved);
  EXPECT_EQ(u1, u2);
  EXPECT_EQ(i1, i2);
  EXPECT_EQ(d1, d2);
#else
  GTEST_SKIP() << "built without OpenMP";
#endif
}

TEST(Random, PermutationIsBijection) {
  for (std::uint64_t n : {1ull, 2ull, 3ull, 7ull, 1000ull, 4097ull}) {
    for (std::uint64_t seed : {0ull, 99ull}) {
      const random_permutation p(n, seed);
      EXPECT_EQ(p.size(), n);
      std::vector<bool> seen(n, false);
      for (std::uint64_t i = 0; i < n; ++i) {
        const std::uint64_t v = p(i);
        ASSERT_LT(v, n) << "n=" << n;
        ASSERT_FALSE(seen[v]) << "n=" << n << " value " << v << " repeated";
        seen[v] = true;
      }
    }
  }
  // Not the identity, and seed-dependent.
  const random_permutation a(1000, 1), b(1000, 2);
  int fixed = 0, same = 0;
  for (std::uint64_t i = 0; i < 1000; ++i) {
    fixed += a(i) == i;
    same += a(i) == b(i);
  }
  EXPECT_LT(fixed, 20);
  EXPECT_LT(same, 20);
}

TEST(Random, DistinctIndices) {
  std::vector<std::int32_t> v(5000);
  fill_distinct_indices<std::int32_t>(v, 6000, 11);
  const std::set<std::int32_t> s(v.begin(), v.end());
  EXPECT_EQ(s.size(), v.size());
  EXPECT_GE(*s.begin(), 0);
  EXPECT_LT(*s.rbegin(), 6000);
  std::vector<std::int32_t> all(300);
  fill_distinct_indices<std::int32_t>(all, 300, 3);
  std::sort(all.begin(), all.end());
  for (int i = 0; i < 300; ++i) EXPECT_EQ(all[i], i);
  std::vector<std::uint8_t> small(10);
  EXPECT_THROW(fill_distinct_indices<std::uint8_t>(small, 1000, 1), soac::usage_error);
  EXPECT_THROW(fill_distinct_indices<std::int32_t>(v, 100, 1), soac::usage_error);
}

TEST(Random, RandomIntBounds) {
  std::vector<std::int32_t> v(10000);
  fill_random_int<std::int32_t>(v, -5, 17, 1, 0);
  const auto [lo, hi] = std::minmax_element(v.begin(), v.end());
  EXPECT_EQ(*lo, -5);  // 10000 draws from 23 values hit both ends
  EXPECT_EQ(*hi, 17);

  std::vector<std::int8_t> b(2000);
  fill_random_int<std::int8_t>(b, -128, 127, 2, 0);
  EXPECT_GT(std::set<std::int8_t>(b.begin(), b.end()).size(), 200u);

  std::vector<std::uint64_t> u(1000);
  fill_random_int<std::uint64_t>(u, 0, ~0ull, 3, 0);
  EXPECT_GT(std::set<std::uint64_t>(u.begin(), u.end()).size(), 990u);

  std::vector<std::int64_t> w(1000);
  fill_random_int<std::int64_t>(w, std::numeric_limits<std::int64_t>::min(),
                                std::numeric_limits<std::int64_t>::max(), 4, 0);
  EXPECT_TRUE(std::any_of(w.begin(), w.end(), [](auto x) { return x < 0; }));
  EXPECT_TRUE(std::any_of(w.begin(), w.end(), [](auto x) { return x > 0; }));

  std::vector<std::uint16_t> one(50);
  fill_random_int<std::uint16_t>(one, 9, 9, 5, 0);
  EXPECT_TRUE(std::all_of(one.begin(), one.end(), [](auto x) { return x == 9; }));
  EXPECT_THROW(fill_random_int<std::int32_t>(v, 3, 2, 1, 0), soac::usage_error);
}

}  // namespace

// Tests of datasets/futhark_data: Futhark's data files, text and binary, read and written.
#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <string>
#include <vector>

#include <unistd.h>

#include "core/error.hpp"
#include "datasets/futhark_data.hpp"

namespace fs = std::filesystem;
using namespace soac::datasets;

namespace {

class FutharkDataTest : public ::testing::Test {
 protected:
  void SetUp() override {
    static std::atomic<int> counter{0};
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = fs::temp_directory_path() /
           ("soac_test_futhark_" + std::to_string(::getpid()) + "_" + std::to_string(counter++) + "_" + info->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  fs::path file(const std::string& name, const std::string& bytes) const {
    const fs::path p = dir_ / name;
    std::ofstream out(p, std::ios::binary | std::ios::trunc);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    return p;
  }
  std::vector<futhark_value> read(const std::string& bytes) { return read_futhark_values(file("values.in", bytes)); }
  // The message of the input_error reading `bytes` throws; every needle must be in it.
  std::string refused(const std::string& bytes, const std::vector<std::string>& needles, const std::string& name = "bad.in") {
    const fs::path p = file(name, bytes);
    try {
      read_futhark_values(p);
      ADD_FAILURE() << "accepted: " << bytes.substr(0, 60);
    } catch (const soac::input_error& e) {
      const std::string msg = e.what();
      for (const auto& n : needles) EXPECT_NE(msg.find(n), std::string::npos) << "'" << n << "' not in: " << msg;
      return msg;
    } catch (const std::exception& e) {
      ADD_FAILURE() << "another exception: " << e.what();
    }
    return "";
  }
  fs::path dir_;
};

template <class T>
T element(const futhark_value& v, std::size_t i = 0) {
  EXPECT_EQ(v.type, futhark_type_of<T>());
  EXPECT_GE(v.data.size(), (i + 1) * sizeof(T));
  T x{};
  if (v.data.size() >= (i + 1) * sizeof(T)) std::memcpy(&x, v.data.data() + i * sizeof(T), sizeof(T));
  return x;
}

std::uint16_t half_bits(const futhark_value& v, std::size_t i = 0) {
  EXPECT_EQ(v.type, "f16");
  std::uint16_t h = 0;
  std::memcpy(&h, v.data.data() + 2 * i, 2);
  return h;
}

template <class T>
futhark_value array(std::vector<std::int64_t> shape, std::vector<T> elements) {
  return make_futhark_value<T>(std::move(shape), std::span<const T>(elements));
}

futhark_value bools(std::vector<std::int64_t> shape, std::vector<std::uint8_t> bits) {
  std::vector<std::byte> bytes;
  for (const auto b : bits) bytes.push_back(std::byte{b});
  return make_futhark_value("bool", std::move(shape), std::move(bytes));
}

futhark_value halves(std::vector<std::int64_t> shape, std::vector<std::uint16_t> bits) {
  std::vector<std::byte> bytes(bits.size() * 2);
  std::memcpy(bytes.data(), bits.data(), bytes.size());
  return make_futhark_value("f16", std::move(shape), std::move(bytes));
}

// Same type, shape and bytes (NaNs compared by bits: the writers keep them in binary).
void expect_same(const std::vector<futhark_value>& a, const std::vector<futhark_value>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].type, b[i].type) << "value " << i + 1;
    EXPECT_EQ(a[i].shape, b[i].shape) << "value " << i + 1;
    EXPECT_EQ(a[i].data, b[i].data) << "value " << i + 1 << " " << a[i].type_text();
  }
}

// One of every type and several shapes, no NaN (text writes every NaN as the quiet one).
std::vector<futhark_value> sample_values() {
  std::vector<futhark_value> v;
  v.push_back(make_futhark_scalar<std::int8_t>(-128));
  v.push_back(make_futhark_scalar<std::int16_t>(32767));
  v.push_back(make_futhark_scalar<std::int32_t>(std::numeric_limits<std::int32_t>::min()));
  v.push_back(make_futhark_scalar<std::int64_t>(std::numeric_limits<std::int64_t>::min()));
  v.push_back(make_futhark_scalar<std::uint8_t>(255));
  v.push_back(make_futhark_scalar<std::uint16_t>(65535));
  v.push_back(make_futhark_scalar<std::uint32_t>(4294967295u));
  v.push_back(make_futhark_scalar<std::uint64_t>(std::numeric_limits<std::uint64_t>::max()));
  v.push_back(halves({}, {0x3555}));  // 0.333252
  v.push_back(make_futhark_scalar<float>(0.1f));
  v.push_back(make_futhark_scalar<double>(1.0 / 3.0));
  v.push_back(make_futhark_scalar<bool>(true));
  v.push_back(array<float>({2, 3}, {1.5f, -0.0f, std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity(),
                                    std::numeric_limits<float>::denorm_min(), std::numeric_limits<float>::max()}));
  v.push_back(array<double>({4}, {1e300, -2.5e-310, 0.0, 123456789.125}));
  v.push_back(array<std::int32_t>({2, 2, 2}, {1, -2, 3, -4, 5, -6, 7, -8}));
  v.push_back(halves({3}, {0x0001, 0x7bff, 0xfc00}));  // smallest subnormal, 65504, -inf
  v.push_back(bools({2, 2}, {1, 0, 0, 1}));
  v.push_back(array<std::uint8_t>({0}, {}));
  v.push_back(array<std::int64_t>({0, 3}, {}));
  v.push_back(array<std::uint16_t>({3, 0, 2}, {}));
  v.push_back(array<std::int8_t>({1, 1, 1, 1}, {-7}));
  return v;
}

// --- reading text ---------------------------------------------------------------------------------

TEST_F(FutharkDataTest, TextScalarsOfEveryType) {
  const auto v = read("1i8 -2i16 3i32 -4i64 5u8 6u16 7u32 8u64 1.5f16 2.5f32 3.25f64 true false 42 1.5 7e2");
  ASSERT_EQ(v.size(), 16u);
  EXPECT_EQ(element<std::int8_t>(v[0]), 1);
  EXPECT_EQ(element<std::int16_t>(v[1]), -2);
  EXPECT_EQ(element<std::int32_t>(v[2]), 3);
  EXPECT_EQ(element<std::int64_t>(v[3]), -4);
  EXPECT_EQ(element<std::uint8_t>(v[4]), 5u);
  EXPECT_EQ(element<std::uint16_t>(v[5]), 6u);
  EXPECT_EQ(element<std::uint32_t>(v[6]), 7u);
  EXPECT_EQ(element<std::uint64_t>(v[7]), 8u);
  EXPECT_EQ(half_bits(v[8]), 0x3e00);  // 1.5
  EXPECT_EQ(element<float>(v[9]), 2.5f);
  EXPECT_EQ(element<double>(v[10]), 3.25);
  EXPECT_EQ(v[11].type, "bool");
  EXPECT_EQ(v[11].data, std::vector<std::byte>{std::byte{1}});
  EXPECT_EQ(v[12].data, std::vector<std::byte>{std::byte{0}});
  EXPECT_EQ(element<std::int32_t>(v[13]), 42);  // no suffix: i32
  EXPECT_EQ(element<double>(v[14]), 1.5);       // no suffix: f64
  EXPECT_EQ(element<double>(v[15]), 700.0);
  for (std::size_t i = 0; i < v.size(); ++i) {
    EXPECT_TRUE(v[i].shape.empty());
    EXPECT_EQ(v[i].position, i + 1);
    EXPECT_EQ(v[i].file, (dir_ / "values.in").string());
  }
}

TEST_F(FutharkDataTest, TextNumberForms) {
  const auto v = read("1_000 0x1F 0xffu8 -0x80i8 0b101 +7 1_0.2_5 1e-3f32 2.5E+2 -0f32 -0.0 f32.nan f64.inf -f16.inf 0x10f32");
  ASSERT_EQ(v.size(), 15u);
  EXPECT_EQ(element<std::int32_t>(v[0]), 1000);
  EXPECT_EQ(element<std::int32_t>(v[1]), 31);
  EXPECT_EQ(element<std::uint8_t>(v[2]), 255u);
  EXPECT_EQ(element<std::int8_t>(v[3]), -128);
  EXPECT_EQ(element<std::int32_t>(v[4]), 5);
  EXPECT_EQ(element<std::int32_t>(v[5]), 7);
  EXPECT_EQ(element<double>(v[6]), 10.25);
  EXPECT_EQ(element<float>(v[7]), 1e-3f);
  EXPECT_EQ(element<double>(v[8]), 250.0);
  EXPECT_TRUE(std::signbit(element<float>(v[9])));
  EXPECT_TRUE(std::signbit(element<double>(v[10])));
  EXPECT_TRUE(std::isnan(element<float>(v[11])));
  EXPECT_EQ(element<double>(v[12]), std::numeric_limits<double>::infinity());
  EXPECT_EQ(half_bits(v[13]), 0xfc00);
  EXPECT_EQ(element<std::int32_t>(v[14]), 0x10f32);  // f, 3 and 2 are hexadecimal digits
}

TEST_F(FutharkDataTest, TextRangesAndRounding) {
  const auto v = read("127i8 -128i8 255u8 -0u8 9223372036854775807i64 -9223372036854775808i64 18446744073709551615u64 "
                      "3.4028234e38f32 1e-50f32 1e-400 65504f16 0.1f16 6e-8f16 2049f16 2051f16 1e-9f16");
  ASSERT_EQ(v.size(), 16u);
  EXPECT_EQ(element<std::int8_t>(v[0]), 127);
  EXPECT_EQ(element<std::int8_t>(v[1]), -128);
  EXPECT_EQ(element<std::uint8_t>(v[2]), 255u);
  EXPECT_EQ(element<std::uint8_t>(v[3]), 0u);
  EXPECT_EQ(element<std::int64_t>(v[4]), std::numeric_limits<std::int64_t>::max());
  EXPECT_EQ(element<std::int64_t>(v[5]), std::numeric_limits<std::int64_t>::min());
  EXPECT_EQ(element<std::uint64_t>(v[6]), std::numeric_limits<std::uint64_t>::max());
  EXPECT_EQ(element<float>(v[7]), std::numeric_limits<float>::max());
  EXPECT_EQ(element<float>(v[8]), 0.0f);  // below the smallest subnormal: zero, as in C
  EXPECT_EQ(element<double>(v[9]), 0.0);
  EXPECT_EQ(half_bits(v[10]), 0x7bff);
  EXPECT_EQ(half_bits(v[11]), 0x2e66);
  EXPECT_EQ(half_bits(v[12]), 0x0001);  // 2^-24, the smallest subnormal
  EXPECT_EQ(half_bits(v[13]), 0x6800);  // a tie: to the even 2048
  EXPECT_EQ(half_bits(v[14]), 0x6802);  // a tie: to the even 2052
  EXPECT_EQ(half_bits(v[15]), 0x0000);

  refused("128i8", {"bad.in:1:1:", "'128i8' is out of range for i8 [-128, 127]"});
  refused("-129i8", {"out of range for i8"});
  refused("256u8", {"out of range for u8 [0, 255]"});
  refused("-1u8", {"'-1u8' is out of range for u8"});
  refused("2147483648", {"out of range for i32"});
  refused("18446744073709551616u64", {"out of range for u64"});
  refused("3.5e38f32", {"'3.5e38f32' is out of range for f32"});
  refused("1e400", {"out of range for f64"});
  refused("65520f16", {"out of range for f16"});
}

TEST_F(FutharkDataTest, TextArraysAndComments) {
  const auto v = read("-- a comment\n[1, 2, 3]  -- another\n[[1f32, 2f32], [3f32, 4f32],]\n"
                      "[ [ true ] , [false] ]\nempty([0][3]i32) [empty([0]u8), empty([0]u8)]\n[[[7i64]]]--end");
  ASSERT_EQ(v.size(), 6u);
  EXPECT_EQ(v[0].type_text(), "[3]i32");
  EXPECT_EQ(v[0].i32_elements(1), (std::vector<std::int32_t>{1, 2, 3}));
  EXPECT_EQ(v[1].type_text(), "[2][2]f32");
  EXPECT_EQ(v[1].f32_elements(2), (std::vector<float>{1, 2, 3, 4}));
  EXPECT_EQ(v[2].type_text(), "[2][1]bool");
  EXPECT_EQ(v[2].data, (std::vector<std::byte>{std::byte{1}, std::byte{0}}));
  EXPECT_EQ(v[3].type_text(), "[0][3]i32");
  EXPECT_TRUE(v[3].data.empty());
  EXPECT_EQ(v[4].type_text(), "[2][0]u8");
  EXPECT_EQ(v[5].type_text(), "[1][1][1]i64");
  EXPECT_EQ(element<std::int64_t>(v[5]), 7);
  EXPECT_TRUE(read("").empty());
  EXPECT_TRUE(read(" \n-- only a comment\n\t\r\n").empty());
}

// --- damaged text ---------------------------------------------------------------------------------

TEST_F(FutharkDataTest, RaggedAndMixedArraysAreRefused) {
  refused("[[1,2],\n [3]]", {"bad.in:2:2: row 2 of the array opened at 1:1 has shape [1]i32, row 1 has [2]i32 (a ragged array)"});
  refused("[[1,2],[[3,4]]]", {"bad.in:1:8:", "has shape [1][2]i32, row 1 has [2]i32"});
  refused("[1, [2]]", {"bad.in:1:5:", "row 2", "ragged"});
  refused("[1, 2i64]", {"bad.in:1:5: element 2 of the array opened at 1:1 is i64, element 1 is i32"});
  refused("[1.5f32, 2.5]", {"is f64, element 1 is f32"});
  refused("[]", {"bad.in:1:1: an empty array [] has no type", "empty([0]i32)"});
  refused("[[1],[]]", {"an empty array [] has no type"});
}

TEST_F(FutharkDataTest, BadTextIsRefusedWithItsPosition) {
  refused("1 2\n  5i31", {"bad.in:2:3: unknown type suffix 'i31' in '5i31'"});
  refused("1.5i32", {"'1.5i32' has a fraction or an exponent, so it cannot be i32"});
  refused("0x10i8 0b2", {"bad.in:1:8: expected a digit after '0b'"});
  refused("0b11f32", {"a hexadecimal or binary number is an integer"});
  refused("5bool", {"unknown type suffix 'bool'"});
  refused("12ab", {"unknown type suffix 'ab'"});
  refused("12U8", {"unexpected 'U' after the number '12'"});
  refused("1.", {"expected a digit after the '.'"});
  refused("1e", {"expected the exponent's digits"});
  refused("[1, 2", {"bad.in:1:6: the array opened at 1:1 is not closed: the file ends"});
  refused("[[1, 2]\n", {"bad.in:2:1: the array opened at 1:1 is not closed"});
  refused("[1 2]", {"bad.in:1:4: expected ',' or ']' after element 1 of the array opened at 1:1, found '2'"});
  refused("[1,,2]", {"bad.in:1:4: expected a value"});
  refused("]", {"bad.in:1:1: expected a value (a number, true, false, '[' or empty(...)), found ']'"});
  refused("trueish", {"expected a value"});
  refused("-f32.nan", {"expected a value"});
  refused("\"abc\"", {"string literals are not supported"});
  refused("empty(i32)", {"bad.in:1:1: empty(i32) needs a dimension of 0"});
  refused("empty([2][3]f32)", {"empty([2][3]f32) needs a dimension of 0"});
  refused("empty([0]i31)", {"expected a type (i8 ... u64, f16, f32, f64 or bool) in empty(...), found 'i31'"});
  refused("empty([0]i32", {"expected ')' to close empty(...)"});
  refused("empty([-1]i32)", {"expected a dimension"});
  refused(std::string(300, '[') + "1" + std::string(300, ']'), {"more than 255 nested arrays"});
}

// --- binary ---------------------------------------------------------------------------------------

std::string binary_header(int version, int rank, const std::string& type, const std::vector<std::uint64_t>& dims) {
  std::string out = "b";
  out += static_cast<char>(version);
  out += static_cast<char>(rank);
  out += type;
  for (const auto d : dims) out.append(reinterpret_cast<const char*>(&d), 8);
  return out;
}

TEST_F(FutharkDataTest, BinaryValues) {
  const std::int32_t xs[3] = {7, -8, 9};
  const float f = 2.5f;
  std::string bytes = binary_header(2, 1, " i32", {3}) + std::string(reinterpret_cast<const char*>(xs), 12);
  bytes += "\n  " + binary_header(2, 0, " f32", {}) + std::string(reinterpret_cast<const char*>(&f), 4);
  bytes += binary_header(2, 2, "bool", {2, 1}) + std::string("\x01\x00", 2);
  bytes += binary_header(2, 2, " u16", {0, 5});
  const auto v = read(bytes);
  ASSERT_EQ(v.size(), 4u);
  EXPECT_EQ(v[0].type_text(), "[3]i32");
  EXPECT_EQ(v[0].i32_elements(1), (std::vector<std::int32_t>{7, -8, 9}));
  EXPECT_EQ(v[1].type_text(), "f32");
  EXPECT_EQ(v[1].f64_scalar(), 2.5);
  EXPECT_EQ(v[2].type_text(), "[2][1]bool");
  EXPECT_EQ(v[3].type_text(), "[0][5]u16");
  EXPECT_EQ(v[3].position, 4u);
}

TEST_F(FutharkDataTest, DamagedBinaryIsRefusedWithTheByte) {
  const std::int32_t xs[2] = {1, 2};
  const std::string two = std::string(reinterpret_cast<const char*>(xs), 8);
  refused(binary_header(2, 1, " i32", {10}) + two,
          {"bad.in: at byte 15: the file holds 8 bytes after the header, too few for a [10]i32 array (40 bytes)"});
  refused("1 " + binary_header(2, 1, " i32", {3}) + two, {"bad.in: at byte 17: the file holds 8 bytes", "[3]i32"});
  refused(binary_header(1, 1, " i32", {2}) + two, {"bad.in: at byte 1: binary format version 1 (only version 2 is known)"});
  refused(binary_header(2, 1, "i32 ", {2}) + two, {"bad.in: at byte 3: unknown element type 'i32 '"});
  refused(binary_header(2, 1, " i31", {2}) + two, {"at byte 3: unknown element type ' i31'"});
  refused("b\x02\x01 i3", {"bad.in: at byte 0: a binary value's header", "needs 7 bytes, the file holds 6"});
  refused(binary_header(2, 2, " i32", {2}), {"bad.in: at byte 7: the file ends inside the shape (2 dimensions of 8 bytes)"});
  refused(binary_header(2, 1, " i32", {std::uint64_t{1} << 63}), {"at byte 7: dimension 1 is 9223372036854775808, more than 2^63-1"});
  refused(binary_header(2, 2, " i64", {std::uint64_t{1} << 62, 4}), {"at byte 23:", "too few for a [4611686018427387904][4]i64 array"});
  refused(binary_header(2, 1, "bool", {3}) + std::string("\x01\x00\x02", 3), {"bad.in: at byte 17: a bool byte is 2"});
  refused("B" + binary_header(2, 1, " i32", {2}).substr(1) + two, {"bad.in:1:1: expected a value"});
}

// --- writing and round trips ----------------------------------------------------------------------

TEST_F(FutharkDataTest, RoundTripsTextAndBinary) {
  const auto values = sample_values();
  for (const bool binary : {true, false}) {
    const fs::path p = dir_ / (binary ? "all.bin" : "all.txt");
    write_futhark_values(p, values, binary);
    const auto back = read_futhark_values(p);
    SCOPED_TRACE(binary ? "binary" : "text");
    expect_same(values, back);
  }
  // A file mixing both: the text of some values, the binary of others.
  const std::span<const futhark_value> all(values);
  const std::string mixed = futhark_values_text(all.subspan(0, 7)) + futhark_values_binary(all.subspan(7, 5)) + "\n-- text again\n" +
                            futhark_values_text(all.subspan(12));
  const auto back = read(mixed);
  expect_same(values, back);
  EXPECT_EQ(back.back().position, values.size());
}

TEST_F(FutharkDataTest, TextWriterSpelling) {
  const float inf = std::numeric_limits<float>::infinity();
  const std::vector<futhark_value> v = {array<float>({2, 2}, {1, 2.5f, -0.0f, inf}), make_futhark_scalar<std::uint8_t>(200),
                                        array<std::int64_t>({2, 0}, {}), halves({2}, {0x3e00, 0x7e01}),
                                        make_futhark_scalar<double>(std::nan("")), bools({2}, {0, 1})};
  EXPECT_EQ(futhark_values_text(v),
            "[[1f32, 2.5f32], [-0f32, f32.inf]]\n200u8\nempty([2][0]i64)\n[1.5f16, f16.nan]\nf64.nan\n[false, true]\n");
  const auto bin = futhark_values_binary(std::span<const futhark_value>(v).subspan(1, 1));
  EXPECT_EQ(bin, std::string("b\x02\x00  u8\xc8", 8));
}

TEST_F(FutharkDataTest, ValuesAreChecked) {
  EXPECT_THROW(make_futhark_value("i31", {}, std::vector<std::byte>(4)), soac::usage_error);
  EXPECT_THROW(make_futhark_value("i32", {3}, std::vector<std::byte>(8)), soac::usage_error);
  EXPECT_THROW(make_futhark_value("i32", {-1, 0}, {}), soac::usage_error);
  EXPECT_THROW(bools({1}, {2}), soac::usage_error);
  futhark_value bad = make_futhark_scalar<std::int32_t>(1);
  bad.data.pop_back();
  const std::vector<futhark_value> one = {bad};
  EXPECT_THROW(write_futhark_values(dir_ / "x", one), soac::usage_error);
  EXPECT_FALSE(fs::exists(dir_ / "x"));
  EXPECT_THROW(read_futhark_values(dir_ / "missing.in"), soac::input_error);
  EXPECT_THROW(read_futhark_values(dir_), soac::input_error);
}

// --- accessors ------------------------------------------------------------------------------------

TEST_F(FutharkDataTest, AccessorsConvertOnlyWithoutLoss) {
  const auto v = read("[1.5f32, 2f32] [3, 4] [1.5f16, -2f16] [200u8, 7u8] 2.5f32 7u32 [[1i16]] 1u64 [1u32] 1.5");
  ASSERT_EQ(v.size(), 10u);
  EXPECT_EQ(v[0].f32_elements(1), (std::vector<float>{1.5f, 2}));
  EXPECT_EQ(v[2].f32_elements(1), (std::vector<float>{1.5f, -2}));
  EXPECT_EQ(v[3].i32_elements(1), (std::vector<std::int32_t>{200, 7}));
  EXPECT_EQ(v[6].i32_elements(2), (std::vector<std::int32_t>{1}));
  EXPECT_EQ(v[4].f64_scalar(), 2.5);
  EXPECT_EQ(v[9].f64_scalar(), 1.5);
  EXPECT_EQ(v[5].i64_scalar(), 7);

  const std::string f = (dir_ / "values.in").string();
  const auto wrong = [](auto&& call, const std::string& expected) {
    try {
      call();
      ADD_FAILURE() << "accepted; expected: " << expected;
    } catch (const soac::input_error& e) {
      EXPECT_EQ(std::string(e.what()), expected);
    }
  };
  wrong([&] { (void)v[1].f32_elements(1); }, f + ": value 2 is [2]i32, expected []f32 (f32 or f16, rank 1)");
  wrong([&] { (void)v[0].f32_elements(2); }, f + ": value 1 is [2]f32, expected [][]f32 (f32 or f16, rank 2)");
  wrong([&] { (void)v[8].i32_elements(1); }, f + ": value 9 is [1]u32, expected []i32 (i32, i16, i8, u16 or u8, rank 1)");
  wrong([&] { (void)v[0].i32_elements(1); }, f + ": value 1 is [2]f32, expected []i32 (i32, i16, i8, u16 or u8, rank 1)");
  wrong([&] { (void)v[1].f64_scalar(); }, f + ": value 2 is [2]i32, expected a scalar f64 (f64, f32 or f16)");
  wrong([&] { (void)v[5].f64_scalar(); }, f + ": value 6 is u32, expected a scalar f64 (f64, f32 or f16)");
  wrong([&] { (void)v[7].i64_scalar(); }, f + ": value 8 is u64, expected a scalar i64 (i64, i32, i16, i8, u32, u16 or u8)");
  wrong([&] { (void)v[4].i64_scalar(); }, f + ": value 5 is f32, expected a scalar i64 (i64, i32, i16, i8, u32, u16 or u8)");
  wrong([&] { (void)make_futhark_scalar<bool>(true).i64_scalar(); },
        "a value in memory is bool, expected a scalar i64 (i64, i32, i16, i8, u32, u16 or u8)");
}

// The SC20 artifact's gromacs input (not in the repository; docs in the artifact's MANIFEST.md):
// SOAC_SC20_DATA=<folder of futhark-sc20> runs it.
TEST_F(FutharkDataTest, Sc20GromacsInputWhenPresent) {
  const char* root = std::getenv("SOAC_SC20_DATA");
  if (root == nullptr) GTEST_SKIP() << "SOAC_SC20_DATA is not set";
  const auto v = read_futhark_values(fs::path(root) / "benchmarks/435.gromacs/data/all-largest.in.text-part");
  ASSERT_EQ(v.size(), 7u);
  const auto jindex = v[0].i32_elements(1);
  EXPECT_EQ(jindex.size(), 1433u);
  EXPECT_EQ(v[1].i32_elements(1).size(), 1432u);
  EXPECT_EQ(v[2].i32_elements(1).size(), 63446u);
  EXPECT_EQ(v[3].i32_elements(1).size(), 1432u);
  EXPECT_EQ(v[4].i32_elements(1).size(), 23178u);
  EXPECT_EQ(v[5].i64_scalar(), 19);
  EXPECT_EQ(v[6].f64_scalar(), 0.5);
  EXPECT_EQ(jindex.back(), 63385);
}

}  // namespace

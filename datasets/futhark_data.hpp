// Futhark's data files: what `futhark dataset` writes and what a compiled Futhark program reads as
// its arguments (the inputs and outputs of the SC20 artifact's benchmarks). A file is a sequence
// of values, each a scalar or a regular array of one primitive type, each in text or in binary;
// the two forms may be mixed in one file. Written from Futhark's documentation ("Binary Data
// Format") and its textual value grammar:
//
//   text     5  -5i64  250u8  0x1F  0b101  1_000  1.5  2.5f32  1e-3f64  7f16  true  false
//            f32.nan  f64.inf  -f32.inf  [1, 2, 3]  [[1f32, 2f32], [3f32, 4f32]]  empty([0][3]i32)
//            An integer without a suffix is i32, a float without one f64; underscores may follow
//            the first digit; an array's elements all have one type and one shape (trailing comma
//            allowed); `--` starts a comment that runs to the end of the line.
//   binary   'b', version 2 (one byte), rank (one byte), the type as 4 ASCII characters ("  i8",
//            " i32", " f32", "bool", ...), rank dimensions as unsigned 64-bit integers, then the
//            elements row-major; everything little-endian, bools one byte, 0 or 1.
//
// soac is stricter than Futhark's own reader where that one is silent: an integer out of its
// type's range (300u8, Futhark wraps it), a finite float that overflows its type (1e40f32), a
// bool byte other than 0 or 1, and an empty `[]` (no type) are refused. String literals ("..."),
// which Futhark reads as u8 arrays, are not supported. Every problem is an input_error:
// "FILE:LINE:COLUMN: ..." in text, "FILE: at byte N: ..." in binary (N counts from 0).
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

namespace soac::datasets {

// Elements are kept as little-endian bytes and copied without swapping.
static_assert(std::endian::native == std::endian::little, "soac supports little-endian hosts only");

// The 12 primitive types by their Futhark names; futhark_element_bytes is 0 for any other name.
inline constexpr std::string_view futhark_types[] = {"i8", "i16", "i32", "i64", "u8",  "u16",
                                                     "u32", "u64", "f16", "f32", "f64", "bool"};
std::size_t futhark_element_bytes(std::string_view type);

struct futhark_value {
  std::string type;                 // one of futhark_types
  std::vector<std::int64_t> shape;  // empty for a scalar
  std::vector<std::byte> data;      // element_count() elements, row-major, little-endian
  // Where the value came from, for the accessors' errors: the file and its 1-based position
  // among the file's values ("" and 0 for a value built in memory).
  std::string file;
  std::size_t position = 0;

  std::size_t rank() const { return shape.size(); }
  std::int64_t element_count() const;  // 1 for a scalar
  // "[1432]i32", "[2][0]f32", "i32"; `futhark dataset`'s spelling of a value's type.
  std::string type_text() const;

  // The elements, when the value has `rank` dimensions and its type converts without loss;
  // otherwise an input_error naming the file, the position, and what was expected and found:
  //   f32_elements  f32, or f16 (widened exactly)
  //   i32_elements  i32, or i8 / i16 / u8 / u16
  //   f64_scalar    a scalar f64, f32 or f16
  //   i64_scalar    a scalar i64, or any narrower integer (i8 ... i32, u8 ... u32); not u64
  // Integers never convert to floats nor floats to integers: a Futhark program would refuse them.
  std::vector<float> f32_elements(std::size_t rank) const;
  std::vector<std::int32_t> i32_elements(std::size_t rank) const;
  double f64_scalar() const;
  std::int64_t i64_scalar() const;
};

// The Futhark type name of a C++ element type (by size and signedness; bool is "bool").
template <class T>
constexpr std::string_view futhark_type_of() {
  using U = std::remove_cv_t<T>;
  if constexpr (std::is_same_v<U, bool>) {
    return "bool";
  } else if constexpr (std::is_same_v<U, float>) {
    return "f32";
  } else if constexpr (std::is_same_v<U, double>) {
    return "f64";
  } else if constexpr (std::is_integral_v<U> && sizeof(U) == 1) {
    return std::is_signed_v<U> ? "i8" : "u8";
  } else if constexpr (std::is_integral_v<U> && sizeof(U) == 2) {
    return std::is_signed_v<U> ? "i16" : "u16";
  } else if constexpr (std::is_integral_v<U> && sizeof(U) == 4) {
    return std::is_signed_v<U> ? "i32" : "u32";
  } else if constexpr (std::is_integral_v<U> && sizeof(U) == 8) {
    return std::is_signed_v<U> ? "i64" : "u64";
  } else {
    static_assert(sizeof(U) == 0, "no Futhark type for this element type");
    return "";
  }
}

// A value from raw bytes; usage_error unless the type is known, no dimension is negative and
// `data` holds exactly element_count() elements. For f16, whose elements have no C++ type here.
futhark_value make_futhark_value(std::string type, std::vector<std::int64_t> shape, std::vector<std::byte> data);

// A value from typed elements (`shape` empty for a scalar); usage_error as above.
template <class T>
futhark_value make_futhark_value(std::vector<std::int64_t> shape, std::span<const T> elements) {
  std::vector<std::byte> bytes(elements.size() * sizeof(T));
  if constexpr (std::is_same_v<std::remove_cv_t<T>, bool>) {
    for (std::size_t i = 0; i < elements.size(); ++i) bytes[i] = std::byte{elements[i] ? std::uint8_t{1} : std::uint8_t{0}};
  } else if (!bytes.empty()) {
    std::memcpy(bytes.data(), elements.data(), bytes.size());
  }
  return make_futhark_value(std::string(futhark_type_of<T>()), std::move(shape), std::move(bytes));
}
template <class T>
futhark_value make_futhark_scalar(T v) {
  return make_futhark_value<T>({}, std::span<const T>(&v, 1));
}

// Every value in the file, in order, each tagged with the file and its position. The file may
// hold none (only spaces and comments). Sizes are checked against the file before anything is
// allocated, and the memory a read needs against the host's (resource_error beyond it).
std::vector<futhark_value> read_futhark_values(const std::filesystem::path& path);

// Writes `values` one per line (text) or back to back (binary); text writes every number with its
// type suffix and floats so that they read back to the same bits (NaNs read back as a quiet NaN).
// usage_error for a value make_futhark_value would refuse; input_error when the file cannot be
// written (through a temporary file and a rename, as every soac writer).
void write_futhark_values(const std::filesystem::path& path, std::span<const futhark_value> values, bool binary = true);
// The same, to a string (tests, and `soac gen` writing several values).
std::string futhark_values_text(std::span<const futhark_value> values);
std::string futhark_values_binary(std::span<const futhark_value> values);

}  // namespace soac::datasets

// NumPy .npy reading and writing: the on-disk array format of every soac dataset and result.
// Reads format versions 1.0, 2.0 and 3.0; writes 1.0 (2.0 only when the header needs it), laid out
// byte for byte as numpy >= 1.24 writes it. Only little-endian data is supported.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "core/error.hpp"

namespace soac::datasets {

// Data is read straight into memory with no byte swapping, which is only right on a
// little-endian host.
static_assert(std::endian::native == std::endian::little, "soac supports little-endian hosts only");

enum class dtype { b1, i8, u8, i16, u16, i32, u32, i64, u64, f32, f64 };

std::size_t dtype_size(dtype t);
std::string_view dtype_name(dtype t);        // "bool", "int8", ..., "float64"
std::string_view dtype_descr(dtype t);       // numpy descr as numpy writes it: "|b1", "<i4", "<f8"
dtype parse_dtype_name(std::string_view name);  // inverse of dtype_name; usage_error if unknown

// dtype of a C++ element type. Integers map by size and signedness, so `long long` works too.
template <class T>
constexpr dtype dtype_of() {
  using U = std::remove_cv_t<T>;
  if constexpr (std::is_same_v<U, bool>) {
    return dtype::b1;
  } else if constexpr (std::is_same_v<U, float>) {
    return dtype::f32;
  } else if constexpr (std::is_same_v<U, double>) {
    return dtype::f64;
  } else if constexpr (std::is_integral_v<U> && sizeof(U) == 1) {
    return std::is_signed_v<U> ? dtype::i8 : dtype::u8;
  } else if constexpr (std::is_integral_v<U> && sizeof(U) == 2) {
    return std::is_signed_v<U> ? dtype::i16 : dtype::u16;
  } else if constexpr (std::is_integral_v<U> && sizeof(U) == 4) {
    return std::is_signed_v<U> ? dtype::i32 : dtype::u32;
  } else if constexpr (std::is_integral_v<U> && sizeof(U) == 8) {
    return std::is_signed_v<U> ? dtype::i64 : dtype::u64;
  } else {
    static_assert(sizeof(U) == 0, "no .npy dtype for this element type");
    return dtype::b1;
  }
}

// numpy's repr of a shape: "()", "(5,)", "(3, 4)". Used in headers and error messages.
std::string shape_string(std::span<const std::int64_t> shape);

struct npy_header {
  int major_version = 1;
  dtype type{};
  std::vector<std::int64_t> shape;  // C order; empty = scalar (0-d)
  std::size_t data_offset = 0;      // bytes from file start to the data
  std::int64_t element_count() const;
  std::size_t data_bytes() const;
};

// Parses and checks the header, and checks that the file holds exactly data_bytes() after it.
// Every problem is an input_error whose message starts with the path.
npy_header read_npy_header(const std::filesystem::path& path);

// Reads exactly header.data_bytes() bytes of data into dst (for big or pinned buffers).
void read_npy_data(const std::filesystem::path& path, const npy_header& header, void* dst);
// Reads `bytes` bytes of the data starting `offset` bytes into it (a part of a big array);
// offset + bytes must lie within header.data_bytes().
void read_npy_range(const std::filesystem::path& path, const npy_header& header, std::size_t offset, std::size_t bytes, void* dst);

// The header write_npy puts before an array's data (its length a multiple of 64), for writers
// that stream the data themselves.
std::string npy_header_bytes(dtype type, std::span<const std::int64_t> shape);

// Writes an array of `shape` (C order) whose bytes are at `data`; input_error on any write failure.
void write_npy(const std::filesystem::path& path, dtype type, std::span<const std::int64_t> shape,
               const void* data);

namespace detail {
[[noreturn]] void throw_dtype_mismatch(const std::filesystem::path& path, dtype found, dtype expected);
// Reads the data of a bool array into a std::vector<bool>, which has no contiguous storage.
std::vector<bool> read_bool_data(const std::filesystem::path& path, const npy_header& header);
}  // namespace detail

// Reads a whole array whose dtype must be exactly T.
template <class T>
std::vector<T> read_npy(const std::filesystem::path& path, npy_header* header_out = nullptr) {
  npy_header h = read_npy_header(path);
  if (h.type != dtype_of<T>()) detail::throw_dtype_mismatch(path, h.type, dtype_of<T>());
  std::vector<T> out;
  if constexpr (std::is_same_v<T, bool>) {
    out = detail::read_bool_data(path, h);
  } else {
    out.resize(static_cast<std::size_t>(h.element_count()));
    read_npy_data(path, h, out.data());
  }
  if (header_out) *header_out = std::move(h);
  return out;
}

// Writes a 1-d array.
template <class T>
void write_npy(const std::filesystem::path& path, std::span<const T> data) {
  const std::int64_t shape[1] = {static_cast<std::int64_t>(data.size())};
  write_npy(path, dtype_of<T>(), shape, data.data());
}

}  // namespace soac::datasets

// Raw binary files of the original suites (Parboil histo's image, Rodinia k-means' binary points,
// a byte stream) and files written whole. Reads are little-endian and checked against the bytes
// the file really holds before anything is allocated, so a header that promises more than the
// file has is an input_error naming the file, never a huge allocation or a short read.
#pragma once

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "core/error.hpp"

namespace soac::datasets {

// Size of a regular file; input_error when it is missing or not a regular file.
std::uint64_t regular_file_size(const std::filesystem::path& path);

class binary_reader {
 public:
  explicit binary_reader(std::filesystem::path path);

  const std::filesystem::path& path() const { return path_; }
  std::uint64_t size() const { return size_; }
  std::uint64_t offset() const { return offset_; }
  std::uint64_t remaining() const { return size_ - offset_; }

  // The next sizeof(T) bytes as a little-endian value; `what` names it in errors.
  template <class T>
  T read(std::string_view what) {
    static_assert(std::is_trivially_copyable_v<T>);
    T v;
    read_into(&v, sizeof(T), what);
    return v;
  }
  // `count` values; checks that the file holds them before allocating.
  template <class T>
  std::vector<T> read_array(std::uint64_t count, std::string_view what) {
    require(count, sizeof(T), what);
    std::vector<T> out(static_cast<std::size_t>(count));
    read_into(out.data(), count * sizeof(T), what);
    return out;
  }
  // input_error unless `count` elements of `element_bytes` remain (overflow-safe).
  void require(std::uint64_t count, std::uint64_t element_bytes, std::string_view what) const;
  void read_into(void* dst, std::uint64_t bytes, std::string_view what);
  // Moves to `offset` from the file's start (at most its size).
  void seek(std::uint64_t offset);
  // input_error when bytes remain after `what`, the last thing the file should hold.
  void expect_end(std::string_view what) const;

  [[noreturn]] void fail(std::string_view message) const;

 private:
  std::filesystem::path path_;
  std::ifstream in_;
  std::uint64_t size_ = 0, offset_ = 0;
};

// input_error when `path` exists and is not a regular file (a folder, a device such as /dev/full,
// a pipe, a symbolic link): a rename over it would replace it.
void require_replaceable(const std::filesystem::path& path);

// Writes `bytes` to `path` through a temporary file in the same folder and a rename, so a
// failure (disk full) never leaves a half-written file under the final name. input_error (with
// the system's reason) when it cannot, and for a `path` require_replaceable refuses.
void write_file_atomically(const std::filesystem::path& path, std::string_view bytes);
inline void write_file_atomically(const std::filesystem::path& path, std::span<const std::byte> bytes) {
  write_file_atomically(path, std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()));
}

// The files of a multi-file format (Parboil tpacf's point files, a folder of frames) written into
// one folder: unless commit() is reached, the destructor removes those already written (and the
// folder, if this created it and it is left empty), so a failed gen never leaves a partial dataset
// that a later run would take for a whole one.
class file_set_writer {
 public:
  explicit file_set_writer(std::filesystem::path folder);  // creates it; input_error when impossible
  ~file_set_writer();
  file_set_writer(const file_set_writer&) = delete;
  file_set_writer& operator=(const file_set_writer&) = delete;
  // The path of file `name` in the folder, removed on failure from now on. Thread-safe.
  std::filesystem::path add(const std::string& name);
  void commit() { committed_ = true; }

 private:
  std::filesystem::path folder_;
  std::vector<std::filesystem::path> files_;
  std::mutex mutex_;
  bool created_folder_ = false, committed_ = false;
};

// Appends a value's little-endian bytes (for building headers of the originals' formats).
template <class T>
void append_bytes(std::string& out, const T& v) {
  static_assert(std::is_trivially_copyable_v<T>);
  out.append(reinterpret_cast<const char*>(&v), sizeof(T));
}
template <class T>
void append_bytes(std::string& out, std::span<const T> values) {
  out.append(reinterpret_cast<const char*>(values.data()), values.size_bytes());
}

}  // namespace soac::datasets

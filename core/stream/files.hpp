// The file ends of soac::stream: positioned reads and writes that many threads share (pread and
// pwrite on one descriptor), errors as soac error types naming the file, and outputs written under
// a temporary name that only a complete file leaves.
#pragma once

#include <cstdint>
#include <filesystem>

namespace soac::detail {

class stream_input_file {
 public:
  // input_error when the file is missing, not a regular file or unreadable.
  explicit stream_input_file(std::filesystem::path path);
  ~stream_input_file();
  stream_input_file(const stream_input_file&) = delete;
  stream_input_file& operator=(const stream_input_file&) = delete;

  const std::filesystem::path& path() const { return path_; }
  std::uint64_t size() const { return size_; }
  // Exactly `bytes` at `offset`, or an input_error saying where the file ended (it shrank while
  // streamed). Safe to call from several threads at once.
  void read_at(void* dst, std::uint64_t bytes, std::uint64_t offset) const;

 private:
  std::filesystem::path path_;
  int fd_ = -1;
  std::uint64_t size_ = 0;
};

class stream_output_file {
 public:
  // Creates (truncates) `<path>.tmp-<pid>`; input_error when that is impossible (a missing or
  // unwritable folder), so a bad output path fails before anything is read.
  explicit stream_output_file(std::filesystem::path path);
  ~stream_output_file();  // removes the temporary file unless committed
  stream_output_file(const stream_output_file&) = delete;
  stream_output_file& operator=(const stream_output_file&) = delete;

  const std::filesystem::path& path() const { return path_; }
  // Safe from several threads at once. resource_error when the disk (or a file size limit) is
  // full, input_error for other failures.
  void write_at(const void* src, std::uint64_t bytes, std::uint64_t offset) const;
  // Closes and renames the temporary file to path().
  void commit();
  // Closes and removes the temporary file (idempotent, never throws).
  void abandon() noexcept;

 private:
  std::filesystem::path path_, temp_;
  int fd_ = -1;
  bool committed_ = false;
};

}  // namespace soac::detail

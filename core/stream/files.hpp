// The file ends of soac::stream: positioned reads and writes that many threads share (pread on one
// descriptor; writes through a shared mapping of the output, else pwrite), errors as soac error
// types naming the file, and outputs written under a temporary name that only a complete file leaves.
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
  // Sizes the file to `bytes` and maps it, so that write_at copies into the page cache from many
  // threads at once: pwrite to one file is serialised by the kernel's inode lock (more writers
  // wrote no faster, on tmpfs and on disk alike; docs/tuning/stream.md).
  // Where the file cannot be sized or mapped (a file size limit, a file system without mmap, a
  // kernel before 5.14 without MADV_POPULATE_WRITE) write_at keeps using pwrite, which reports any
  // error at the byte where it happens.
  void map(std::uint64_t bytes);
  bool mapped() const { return map_ != nullptr; }
  // Safe from several threads at once. resource_error when the disk (or a file size limit) is
  // full, input_error for other failures.
  void write_at(const void* src, std::uint64_t bytes, std::uint64_t offset) const;
  // Closes and renames the temporary file to path().
  void commit();
  // Closes and removes the temporary file (idempotent, never throws).
  void abandon() noexcept;

 private:
  void unmap() noexcept;
  [[noreturn]] void write_failed(int err, std::uint64_t at, const char* how) const;
  std::filesystem::path path_, temp_;
  int fd_ = -1;
  char* map_ = nullptr;
  std::uint64_t map_bytes_ = 0;
  bool committed_ = false;
};

}  // namespace soac::detail

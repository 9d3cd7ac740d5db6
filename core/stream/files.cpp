#include "core/stream/files.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string>
#include <system_error>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/error.hpp"

namespace soac::detail {

namespace fs = std::filesystem;

namespace {

// Linux moves at most 0x7ffff000 bytes per read or write call.
constexpr std::uint64_t max_io_bytes = 0x7ffff000;

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23  // Linux 5.14
#endif

// A mapped write populates (allocates) its pages a block at a time, then copies into them while
// the pages just zeroed are still in cache; the populate reports a full disk as an error where a
// plain store into the mapping would raise SIGBUS.
constexpr std::uint64_t populate_block = std::uint64_t{256} << 10;

std::uint64_t page_size() {
  static const auto page = std::uint64_t(::sysconf(_SC_PAGESIZE));
  return page;
}

int populate(char* from, char* to) {
  char* const lo = from - std::uintptr_t(from) % page_size();
  while (::madvise(lo, std::size_t(to - lo), MADV_POPULATE_WRITE) != 0)
    if (errno != EINTR) return errno;
  return 0;
}

std::string errno_text(int err) { return std::strerror(err); }

}  // namespace

stream_input_file::stream_input_file(fs::path path) : path_(std::move(path)) {
  // Opening a pipe with no writer would wait for one: refuse what is not a file before opening
  // (fstat below checks again what was opened).
  {
    std::error_code ec;
    const auto st = fs::status(path_, ec);
    if (fs::exists(st) && !fs::is_regular_file(st)) throw input_error(path_.string() + ": not a regular file");
  }
  fd_ = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd_ < 0) {
    const int err = errno;
    throw input_error(path_.string() + ": " + (err == ENOENT ? std::string("no such file") : "cannot open: " + errno_text(err)));
  }
  struct stat st {};
  if (::fstat(fd_, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd_);
    fd_ = -1;
    throw input_error(path_.string() + ": not a regular file");
  }
  size_ = static_cast<std::uint64_t>(st.st_size);
}

stream_input_file::~stream_input_file() {
  if (fd_ >= 0) ::close(fd_);
}

void stream_input_file::read_at(void* dst, std::uint64_t bytes, std::uint64_t offset) const {
  auto* out = static_cast<char*>(dst);
  for (std::uint64_t done = 0; done < bytes;) {
    const auto got = ::pread(fd_, out + done, std::min(bytes - done, max_io_bytes), static_cast<off_t>(offset + done));
    if (got < 0) {
      if (errno == EINTR) continue;
      throw input_error(path_.string() + ": read error at byte " + std::to_string(offset + done) + ": " + errno_text(errno));
    }
    if (got == 0)
      throw input_error(path_.string() + ": ends at byte " + std::to_string(offset + done) + ", expected " +
                        std::to_string(offset + bytes) + " (truncated while being read?)");
    done += static_cast<std::uint64_t>(got);
  }
}

stream_output_file::stream_output_file(fs::path path)
    : path_(std::move(path)), temp_(path_.string() + ".tmp-" + std::to_string(::getpid())) {
  // The rename at commit would replace whatever is there: only ever a regular file.
  std::error_code ec;
  const auto st = fs::symlink_status(path_, ec);
  if (fs::exists(st) && !fs::is_regular_file(st))
    throw input_error(path_.string() + ": exists and is not a regular file (a folder, link, device or pipe); give another output path");
  fd_ = ::open(temp_.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);  // a shared mapping needs read access
  if (fd_ < 0) throw input_error(path_.string() + ": cannot create " + temp_.filename().string() + ": " + errno_text(errno));
}

stream_output_file::~stream_output_file() {
  if (!committed_) abandon();
}

void stream_output_file::map(std::uint64_t bytes) {
  if (map_ || bytes == 0) return;
  // Any failure here leaves pwrite in charge (ftruncate fails beyond a file size limit, mmap on
  // file systems without it); pwrite then reports the real error where it happens.
  if (::ftruncate(fd_, static_cast<off_t>(bytes)) != 0) return;
  void* p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd_, 0);
  if (p == MAP_FAILED) return;
  map_ = static_cast<char*>(p);
  map_bytes_ = bytes;
  if (const int err = populate(map_, map_ + std::min(bytes, page_size())); err != 0) {
    unmap();
    if (err != EINVAL) write_failed(err, 0, "populate");  // EINVAL: a kernel without MADV_POPULATE_WRITE
  }
}

void stream_output_file::unmap() noexcept {
  if (map_) ::munmap(map_, map_bytes_);
  map_ = nullptr;
  map_bytes_ = 0;
}

void stream_output_file::write_failed(int err, std::uint64_t at, const char* how) const {
  const std::string where = path_.string() + ": write failed at byte " + std::to_string(at) + ": ";
  // A page of the mapped file that cannot be had (EFAULT: the fault would raise SIGBUS) is a full
  // file system; errno's "Bad address" would point at soac.
  if (err == EFAULT) throw resource_error(where + "no space left on the device (" + how + " could not get a page of the mapped file)");
  if (err == ENOSPC || err == EDQUOT || err == EFBIG || err == ENOMEM) throw resource_error(where + errno_text(err));
  throw input_error(where + errno_text(err));
}

void stream_output_file::write_at(const void* src, std::uint64_t bytes, std::uint64_t offset) const {
  const auto* in = static_cast<const char*>(src);
  if (map_) {
    if (offset > map_bytes_ || bytes > map_bytes_ - offset)
      throw input_error(path_.string() + ": write of " + std::to_string(bytes) + " bytes at byte " + std::to_string(offset) +
                        " past the file's " + std::to_string(map_bytes_) + " bytes");
    for (std::uint64_t done = 0; done < bytes;) {
      const std::uint64_t step = std::min(bytes - done, populate_block - (offset + done) % populate_block);
      char* dst = map_ + offset + done;
      if (const int err = populate(dst, dst + step); err != 0) write_failed(err, offset + done, "populate");
      std::memcpy(dst, in + done, step);
      done += step;
    }
    return;
  }
  for (std::uint64_t done = 0; done < bytes;) {
    const auto put = ::pwrite(fd_, in + done, std::min(bytes - done, max_io_bytes), static_cast<off_t>(offset + done));
    if (put < 0) {
      if (errno == EINTR) continue;
      write_failed(errno, offset + done, "pwrite");
    }
    done += static_cast<std::uint64_t>(put);
  }
}

void stream_output_file::commit() {
  unmap();  // the page cache keeps what was copied; close and rename make it the file
  if (::close(fd_) != 0) {
    const int err = errno;
    fd_ = -1;
    abandon();
    throw input_error(path_.string() + ": write failed on close: " + errno_text(err));
  }
  fd_ = -1;
  std::error_code ec;
  fs::rename(temp_, path_, ec);
  if (ec) {
    abandon();
    throw input_error(path_.string() + ": cannot move the finished " + temp_.filename().string() + " into place: " + ec.message());
  }
  committed_ = true;
}

void stream_output_file::abandon() noexcept {
  unmap();
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  if (committed_) return;
  std::error_code ec;
  fs::remove(temp_, ec);
}

}  // namespace soac::detail

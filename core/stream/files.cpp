#include "core/stream/files.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string>
#include <system_error>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/error.hpp"

namespace soac::detail {

namespace fs = std::filesystem;

namespace {

// Linux moves at most 0x7ffff000 bytes per read or write call.
constexpr std::uint64_t max_io_bytes = 0x7ffff000;

std::string errno_text(int err) { return std::strerror(err); }

}  // namespace

stream_input_file::stream_input_file(fs::path path) : path_(std::move(path)) {
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
  fd_ = ::open(temp_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd_ < 0) throw input_error(path_.string() + ": cannot create " + temp_.filename().string() + ": " + errno_text(errno));
}

stream_output_file::~stream_output_file() {
  if (!committed_) abandon();
}

void stream_output_file::write_at(const void* src, std::uint64_t bytes, std::uint64_t offset) const {
  const auto* in = static_cast<const char*>(src);
  for (std::uint64_t done = 0; done < bytes;) {
    const auto put = ::pwrite(fd_, in + done, std::min(bytes - done, max_io_bytes), static_cast<off_t>(offset + done));
    if (put < 0) {
      const int err = errno;
      if (err == EINTR) continue;
      const std::string where = path_.string() + ": write failed at byte " + std::to_string(offset + done) + ": " + errno_text(err);
      if (err == ENOSPC || err == EDQUOT || err == EFBIG) throw resource_error(where);
      throw input_error(where);
    }
    done += static_cast<std::uint64_t>(put);
  }
}

void stream_output_file::commit() {
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
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  if (committed_) return;
  std::error_code ec;
  fs::remove(temp_, ec);
}

}  // namespace soac::detail

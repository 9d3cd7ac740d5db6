#include "datasets/binary_file.hpp"

#include <cerrno>
#include <cstring>
#include <system_error>

#include <fcntl.h>
#include <unistd.h>

namespace soac::datasets {

namespace fs = std::filesystem;

std::uint64_t regular_file_size(const fs::path& path) {
  std::error_code ec;
  const auto st = fs::status(path, ec);
  if (!fs::exists(st)) throw input_error(path.string() + ": no such file");
  if (!fs::is_regular_file(st)) throw input_error(path.string() + ": not a regular file");
  const auto size = fs::file_size(path, ec);
  if (ec) throw input_error(path.string() + ": cannot read its size: " + ec.message());
  return size;
}

binary_reader::binary_reader(fs::path path) : path_(std::move(path)) {
  size_ = regular_file_size(path_);
  in_.open(path_, std::ios::binary);
  if (!in_) throw input_error(path_.string() + ": cannot open for reading");
}

void binary_reader::require(std::uint64_t count, std::uint64_t element_bytes, std::string_view what) const {
  const std::uint64_t have = remaining();
  if (element_bytes != 0 && count > have / element_bytes)
    fail("holds " + std::to_string(have) + " bytes after offset " + std::to_string(offset_) + ", too few for " +
         std::string(what) + " (" + std::to_string(count) + " x " + std::to_string(element_bytes) + " bytes)");
}

void binary_reader::read_into(void* dst, std::uint64_t bytes, std::string_view what) {
  require(bytes, 1, what);
  in_.read(static_cast<char*>(dst), static_cast<std::streamsize>(bytes));
  if (static_cast<std::uint64_t>(in_.gcount()) != bytes) fail("read error in " + std::string(what));
  offset_ += bytes;
}

void binary_reader::seek(std::uint64_t offset) {
  if (offset > size_) fail("offset " + std::to_string(offset) + " is past the end (file size " + std::to_string(size_) + ")");
  in_.seekg(static_cast<std::streamoff>(offset));
  if (!in_) fail("cannot seek to offset " + std::to_string(offset));
  offset_ = offset;
}

void binary_reader::expect_end(std::string_view what) const {
  if (remaining() != 0)
    fail(std::to_string(remaining()) + " unexpected bytes after " + std::string(what) + " (file size " +
         std::to_string(size_) + ")");
}

void binary_reader::fail(std::string_view message) const { throw input_error(path_.string() + ": " + std::string(message)); }

void require_replaceable(const fs::path& path) {
  std::error_code ec;
  const auto st = fs::symlink_status(path, ec);
  if (fs::exists(st) && !fs::is_regular_file(st))
    throw input_error(path.string() + ": exists and is not a regular file (" +
                      (fs::is_directory(st) ? "a folder" : fs::is_symlink(st) ? "a symbolic link" : "a device, pipe or socket") +
                      "); soac writes a new file there only in place of a regular one");
}

void write_file_atomically(const fs::path& path, std::string_view bytes) {
  require_replaceable(path);
  const fs::path tmp = path.string() + ".tmp-" + std::to_string(::getpid());
  const auto failed = [&](const char* what, int err) {
    std::error_code ec;
    fs::remove(tmp, ec);
    const std::string why = path.string() + ": " + what + ": " + std::strerror(err);
    if (err == ENOSPC || err == EDQUOT || err == EFBIG) throw resource_error(why);  // as the streamed writers say it
    throw input_error(why);
  };
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) throw input_error(path.string() + ": cannot create it (as " + tmp.filename().string() + "): " + std::strerror(errno));
  for (std::size_t done = 0; done < bytes.size();) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int err = n < 0 ? errno : EIO;
      ::close(fd);
      failed("write failed", err);
    }
    done += std::size_t(n);
  }
  if (::close(fd) != 0) failed("write failed", errno);
  std::error_code ec;
  fs::rename(tmp, path, ec);
  if (ec) failed("cannot move the finished file into place", ec.value());
}

file_set_writer::file_set_writer(fs::path folder) : folder_(std::move(folder)) {
  std::error_code ec;
  created_folder_ = !fs::exists(folder_, ec);
  fs::create_directories(folder_, ec);
  if (ec || !fs::is_directory(folder_, ec))
    throw input_error(folder_.string() + ": cannot create the folder" + (ec ? ": " + ec.message() : std::string(" (a file is there)")));
}

fs::path file_set_writer::add(const std::string& name) {
  std::lock_guard lock(mutex_);
  files_.push_back(folder_ / name);
  return files_.back();
}

file_set_writer::~file_set_writer() {
  if (committed_) return;
  std::error_code ec;
  for (const auto& f : files_) fs::remove(f, ec);
  if (created_folder_) fs::remove(folder_, ec);  // only when empty: a file of the user's stays
}

}  // namespace soac::datasets

#include "datasets/binary_file.hpp"

#include <system_error>
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

void binary_reader::expect_end(std::string_view what) const {
  if (remaining() != 0)
    fail(std::to_string(remaining()) + " unexpected bytes after " + std::string(what) + " (file size " +
         std::to_string(size_) + ")");
}

void binary_reader::fail(std::string_view message) const { throw input_error(path_.string() + ": " + std::string(message)); }

void write_file_atomically(const fs::path& path, std::string_view bytes) {
  const fs::path tmp = path.string() + ".tmp-" + std::to_string(::getpid());
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) throw input_error(tmp.string() + ": cannot open for writing");
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    out.flush();
    if (!out) {
      out.close();
      std::error_code ec;
      fs::remove(tmp, ec);
      throw input_error(tmp.string() + ": write failed (disk full?)");
    }
  }
  std::error_code ec;
  fs::rename(tmp, path, ec);
  if (ec) {
    fs::remove(tmp, ec);
    throw input_error(path.string() + ": cannot move the finished file into place: " + ec.message());
  }
}

}  // namespace soac::datasets

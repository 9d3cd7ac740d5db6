#include "fuzz/common.hpp"

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <system_error>

#include <unistd.h>

namespace soac::fuzz {

namespace fs = std::filesystem;

const fs::path& scratch_dir() {
  static const fs::path dir = [] {
    fs::path base = "/tmp";
    if (const char* t = std::getenv("TMPDIR"); t && *t) base = t;
    else if (::access("/dev/shm", W_OK) == 0) base = "/dev/shm";  // no disk I/O per input
    fs::path d = base / ("soac-fuzz." + std::to_string(::getpid()));
    fs::create_directories(d);
    return d;
  }();
  return dir;
}

fs::path fresh_dir(std::string_view sub) {
  const fs::path d = scratch_dir() / sub;
  std::error_code ec;
  fs::remove_all(d, ec);
  fs::create_directories(d);
  return d;
}

bool write_bytes(const fs::path& path, std::string_view bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  out.close();
  return static_cast<bool>(out);
}

void write_bytes_or_abort(const fs::path& path, std::string_view bytes) {
  if (!write_bytes(path, bytes)) std::abort();  // the scratch folder must be writable; nothing to fuzz otherwise
}

void note_rejection(const char* what) {
  static const bool verbose = std::getenv("SOAC_FUZZ_VERBOSE") != nullptr;
  if (verbose) std::fprintf(stderr, "  rejected: %s\n", what);
}

}  // namespace soac::fuzz

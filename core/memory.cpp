#include "core/memory.hpp"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>

#include "core/error.hpp"

namespace soac {

namespace {

constexpr std::uint64_t unlimited = std::numeric_limits<std::uint64_t>::max();

// The value of "KEY: N kB" in a /proc file, in bytes (unlimited when absent).
std::uint64_t proc_kib(const char* file, std::string_view key) {
  std::ifstream in(file);
  std::string line;
  while (std::getline(in, line)) {
    if (line.compare(0, key.size(), key) != 0 || line.size() <= key.size() || line[key.size()] != ':') continue;
    std::istringstream value(line.substr(key.size() + 1));
    std::uint64_t kib = 0;
    if (value >> kib) return kib * 1024;
  }
  return unlimited;
}

// One number in a cgroup v2 file ("max" or missing: unlimited).
std::uint64_t cgroup_value(const char* file) {
  std::ifstream in(file);
  std::uint64_t v = 0;
  return in >> v ? v : unlimited;
}

}  // namespace

std::uint64_t host_memory_available() {
  std::uint64_t available = proc_kib("/proc/meminfo", "MemAvailable");
  if (available == unlimited) {  // no /proc (or a kernel before 3.14): the free pages
    const long pages = ::sysconf(_SC_AVPHYS_PAGES), page = ::sysconf(_SC_PAGESIZE);
    if (pages > 0 && page > 0) available = std::uint64_t(pages) * std::uint64_t(page);
  }
  const std::uint64_t limit = cgroup_value("/sys/fs/cgroup/memory.max");
  if (limit != unlimited) {
    const std::uint64_t used = cgroup_value("/sys/fs/cgroup/memory.current");
    available = std::min(available, used == unlimited || used >= limit ? 0 : limit - used);
  }
  rlimit as{};
  if (getrlimit(RLIMIT_AS, &as) == 0 && as.rlim_cur != RLIM_INFINITY) {
    const std::uint64_t mapped = proc_kib("/proc/self/status", "VmSize");
    const std::uint64_t cap = std::uint64_t(as.rlim_cur);
    available = std::min(available, mapped == unlimited || mapped >= cap ? 0 : cap - mapped);
  }
  return available;
}

void require_host_memory(std::uint64_t bytes, std::string_view what) {
  if (bytes < memory_check_threshold) return;
  const std::uint64_t available = host_memory_available();
  if (bytes > available)
    throw resource_error(std::string(what) + ": cannot allocate " + bytes_text(bytes) + " of host memory, " +
                         bytes_text(available) + " are available");
}

void require_file_space(const std::string& path, std::uint64_t bytes, std::string_view what) {
  if (bytes < memory_check_threshold) return;
  std::error_code ec;
  std::filesystem::path dir = std::filesystem::absolute(path, ec).parent_path();
  while (!dir.empty() && !std::filesystem::exists(dir, ec) && dir != dir.root_path()) dir = dir.parent_path();
  std::uint64_t available = unlimited;
  if (const auto space = std::filesystem::space(dir, ec); !ec) available = space.available;
  rlimit fsize{};
  if (getrlimit(RLIMIT_FSIZE, &fsize) == 0 && fsize.rlim_cur != RLIM_INFINITY) available = std::min<std::uint64_t>(available, fsize.rlim_cur);
  if (bytes > available)
    throw resource_error(std::string(what) + ": " + path + " would need " + bytes_text(bytes) + ", " + bytes_text(available) +
                         " can be written there");
}

std::uint64_t checked_bytes(std::uint64_t count, std::uint64_t size, std::string_view what) {
  if (size != 0 && count > unlimited / size)
    throw resource_error(std::string(what) + ": " + std::to_string(count) + " elements of " + std::to_string(size) +
                         " bytes overflow 64 bits");
  return count * size;
}

std::string bytes_text(std::uint64_t bytes) {
  std::ostringstream s;
  s.precision(3);
  if (bytes >= (std::uint64_t{1} << 30)) s << double(bytes) / double(1 << 30) << " GiB";
  else if (bytes >= (std::uint64_t{1} << 20)) s << double(bytes) / double(1 << 20) << " MiB";
  else s << bytes << " bytes";
  return s.str();
}

}  // namespace soac

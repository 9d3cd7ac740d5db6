// Sizes asked for by input (a manifest's H, a --set n, a file's header) are checked against the
// memory there is before anything is allocated, so that a size beyond it is a resource_error
// (exit code 5) naming what asked, never the kernel's OOM killer: with overcommit a huge
// malloc succeeds and the process dies later, when it touches the pages.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace soac {

// Bytes of host memory this process can still take: the kernel's MemAvailable (free memory plus
// the page cache it can drop; else the free pages), capped by the cgroup's memory limit
// (containers) and the address-space limit (ulimit -v).
std::uint64_t host_memory_available();

// Requests below this pass without looking (reading /proc for every small vector would cost
// more than the check is worth, and a small request cannot be what kills the process).
inline constexpr std::uint64_t memory_check_threshold = std::uint64_t{64} << 20;

// resource_error "what: cannot allocate N GiB of host memory, M GiB are available" unless `bytes` fit.
void require_host_memory(std::uint64_t bytes, std::string_view what);

// resource_error naming `what` unless a file of `bytes` fits where `path` goes: the free space of
// its file system, capped by the file-size limit (ulimit -f). For generators of big files.
void require_file_space(const std::string& path, std::uint64_t bytes, std::string_view what);

// count * size, or a resource_error naming `what` when the product does not fit 64 bits.
std::uint64_t checked_bytes(std::uint64_t count, std::uint64_t size, std::string_view what);

// "1.5 GiB", "12 MiB", "300 bytes".
std::string bytes_text(std::uint64_t bytes);

}  // namespace soac

// What every fuzz target shares: a scratch folder for the files a reader opens, and the rule that
// an input is either accepted or rejected with one of soac's documented errors.
//
// The rule is the CLI's (cli/main.cpp): usage_error (exit 2), input_error (3), resource_error and
// std::bad_alloc (5) are clean rejections. Anything else that escapes a target (another exception
// type, the CLI's "internal error", exit 6) reaches libFuzzer as an uncaught exception, and every
// signal and sanitizer report is a crash, so each of those is a finding.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <new>
#include <string>
#include <string_view>

#include "core/error.hpp"

namespace soac::fuzz {

// This process's scratch folder (under $TMPDIR, else /dev/shm when writable, else /tmp), made on
// first use; the files of one input are written into it.
const std::filesystem::path& scratch_dir();

// Empties scratch_dir() / sub (creating it) and returns it: each input starts from nothing.
std::filesystem::path fresh_dir(std::string_view sub);

// Writes `bytes` to `path` (whole, replacing what was there); false when it cannot (a fuzzed file
// name too long for the file system, say). write_bytes_or_abort: for names a target chose.
bool write_bytes(const std::filesystem::path& path, std::string_view bytes);
void write_bytes_or_abort(const std::filesystem::path& path, std::string_view bytes);

inline std::string_view as_text(const std::uint8_t* data, std::size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

// With SOAC_FUZZ_VERBOSE set, prints each clean rejection's message on stderr (to see what a
// seed or a replayed input reaches).
void note_rejection(const char* what);

// Runs f; a clean rejection (see above) is swallowed and reported as false, success as true.
template <class F>
bool accepted(F&& f) {
  try {
    f();
    return true;
  } catch (const usage_error& e) {
    note_rejection(e.what());
  } catch (const input_error& e) {
    note_rejection(e.what());
  } catch (const resource_error& e) {
    note_rejection(e.what());
  } catch (const std::bad_alloc& e) {
    note_rejection(e.what());
  }
  return false;
}

// The target of a reader whose format soac also writes: the input becomes the file
// scratch_dir()/sub/name, `read(path)` reads it, and what it accepts must survive
// `write(value, path)` then `read` again unchanged (`same(a, b)`); a difference aborts.
template <class Read, class Write, class Same>
void check_round_trip(std::string_view sub, const char* name, std::string_view bytes, Read read, Write write, Same same) {
  const auto dir = fresh_dir(sub);
  write_bytes_or_abort(dir / name, bytes);
  accepted([&] {
    const auto value = read(dir / name);
    if (!write(value, dir / "again")) return;  // the target chose not to write this one back
    if (!same(value, read(dir / "again"))) std::abort();
  });
}

}  // namespace soac::fuzz

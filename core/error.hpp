// Error types shared by the whole suite. Every failure becomes one of these, so the CLI can
// print one clear line and pick an exit code from the type (see cli/main.cpp).
#pragma once

#include <stdexcept>
#include <string>

namespace soac {

// Base of every error soac throws on purpose.
class error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Wrong use of the command line or the API: unknown app, bad option, bad parameter.
class usage_error : public error {
 public:
  using error::error;
};

// A data file that cannot be used: missing, truncated, wrong magic/dtype/shape.
class input_error : public error {
 public:
  using error::error;
};

// Not enough memory (device or host) or disk space for what was asked.
class resource_error : public error {
 public:
  using error::error;
};

// A CUDA runtime call failed. Carries the call's text, where it was made and CUDA's message.
class cuda_error : public error {
 public:
  cuda_error(int code, std::string call, std::string where, std::string cuda_message);
  int code() const noexcept { return code_; }
  const std::string& call() const noexcept { return call_; }
  const std::string& where() const noexcept { return where_; }
  const std::string& cuda_message() const noexcept { return cuda_message_; }

 private:
  int code_;
  std::string call_, where_, cuda_message_;
};

// Exit codes of the soac executable, one per error class (documented in README.md).
namespace exit_code {
inline constexpr int ok = 0;
inline constexpr int invalid_result = 1;  // validate found mismatches
inline constexpr int usage = 2;
inline constexpr int input = 3;
inline constexpr int cuda = 4;
inline constexpr int resource = 5;
inline constexpr int internal = 6;
}  // namespace exit_code

}  // namespace soac

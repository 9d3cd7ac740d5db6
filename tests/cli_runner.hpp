// Runs the soac executable of the build (SOAC_EXE, defined by tests/CMakeLists.txt for the
// tests that use it) and captures its exit code and output.
#pragma once

#include <array>
#include <cstdio>
#include <string>
#include <sys/wait.h>

namespace soac::testing {

struct outcome {
  int code;
  std::string output;  // stdout and stderr together
};

inline outcome soac_cli(const std::string& args) {
  const std::string cmd = std::string(SOAC_EXE) + " " + args + " 2>&1";
  FILE* pipe = popen(cmd.c_str(), "r");
  if (!pipe) return {-1, "popen failed"};
  std::string out;
  std::array<char, 4096> buf;
  while (std::fgets(buf.data(), int(buf.size()), pipe)) out += buf.data();
  const int status = pclose(pipe);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out};
}

}  // namespace soac::testing

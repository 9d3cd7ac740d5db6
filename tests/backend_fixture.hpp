// Parameterises a test over both backends. The cuda instance skips itself when no device is
// present; CTest runs instances named ".../cuda" under the label `gpu`, the rest under `host`.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <memory>
#include <ostream>
#include <string>

#include <gtest/gtest.h>

#include "core/context.hpp"

namespace soac {
// Lets GoogleTest print a backend parameter by name.
inline void PrintTo(backend b, std::ostream* os) { *os << to_string(b); }
}  // namespace soac

namespace soac::testing {

class backend_test : public ::testing::TestWithParam<backend> {
 protected:
  void SetUp() override {
    if (GetParam() == backend::cuda && cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device";
    ctx_ = std::make_unique<context>(GetParam());
  }
  context& ctx() { return *ctx_; }

 private:
  std::unique_ptr<context> ctx_;
};

// scripts/gpu-check.sh sets SOAC_UNDER_SANITIZER for its compute-sanitizer sweep, where every
// launch costs far more: tests whose size only adds repetitions shrink there.
inline bool under_sanitizer() {
  const char* v = std::getenv("SOAC_UNDER_SANITIZER");
  return v != nullptr && *v != '\0' && std::string(v) != "0";
}

// A contended test's element count: an eighth of it under the sanitizers (same code paths, the
// strategies are forced), where racecheck tracks every shared-memory atomic.
inline std::int64_t sanitizer_scaled(std::int64_t n) { return under_sanitizer() ? (n + 7) / 8 : n; }

inline std::string backend_name(const ::testing::TestParamInfo<backend>& info) {
  return std::string(to_string(info.param));
}

}  // namespace soac::testing

#define SOAC_INSTANTIATE_BACKENDS(suite) \
  INSTANTIATE_TEST_SUITE_P(Backends, suite, ::testing::Values(::soac::backend::host, ::soac::backend::cuda), \
                           ::soac::testing::backend_name)

// Tests of an app through its soac::apps::app interface (gen -> run -> validate in a temporary
// folder), over both backends. Link with soac_apps: name the test file tests/test_app_*.cu.
#pragma once

#include <filesystem>
#include <map>
#include <string>
#include <unistd.h>
#include <vector>

#include <gtest/gtest.h>

#include "apps/app.hpp"
#include "core/error.hpp"
#include "tests/backend_fixture.hpp"

namespace soac::testing {

class app_test : public backend_test {
 protected:
  void SetUp() override {
    backend_test::SetUp();
    if (IsSkipped()) return;
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    std::string name = std::string(info->test_suite_name()) + "_" + info->name();
    for (auto& c : name)
      if (c == '/') c = '_';
    dir_ = std::filesystem::temp_directory_path() / ("soac_app_" + std::to_string(::getpid()) + "_" + name);
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override {
    if (!dir_.empty()) std::filesystem::remove_all(dir_);
  }

  std::filesystem::path path(const std::string& name) const { return dir_ / name; }

  // Generates `preset` of `app` (with --set overrides, and --format when given) at path(name).
  std::filesystem::path gen(const std::string& app, const std::string& preset, const std::string& name,
                            const std::map<std::string, std::string>& overrides = {}, const std::string& format = "",
                            std::uint64_t seed = 1) {
    const auto& a = apps::find_app(app);
    apps::gen_request r;
    r.preset = preset;
    r.params = a.resolve_params(preset, overrides);
    r.seed = seed;
    r.output = path(name);
    r.format = format;
    a.generate(r);
    return r.output;
  }

  // Runs `app` on ctx() and writes the result to `result` (default: input + ".result").
  std::string run(const std::string& app, const std::vector<std::filesystem::path>& inputs, const std::string& variant = "",
                  const std::map<std::string, std::string>& settings = {}, const std::string& format = "",
                  std::filesystem::path result = {}) {
    const auto& a = apps::find_app(app);
    apps::run_request r;
    r.inputs = inputs;
    r.input = inputs.front();
    r.format = format;
    r.settings = a.resolve_settings(settings);
    r.output = result.empty() ? std::filesystem::path(inputs.front().string() + ".result") : result;
    r.variant = variant;
    return a.run(ctx(), r);
  }

  apps::validate_report validate(const std::string& app, const std::vector<std::filesystem::path>& inputs,
                                 const std::filesystem::path& result, const std::string& format = "") {
    apps::validate_request r;
    r.inputs = inputs;
    r.input = inputs.front();
    r.format = format;
    r.result = result;
    return apps::find_app(app).validate(r);
  }

  apps::validate_report compare(const std::string& app, const std::filesystem::path& result, const std::filesystem::path& expected,
                                const std::string& format = "") {
    apps::compare_request r;
    r.result = result;
    r.expected = expected;
    r.format = format;
    return apps::find_app(app).compare(r);
  }

  // gen (bundle) -> run -> validate; expects a valid result and returns the run's summary.
  std::string round_trip(const std::string& app, const std::string& preset, const std::string& variant = "",
                         const std::map<std::string, std::string>& overrides = {},
                         const std::map<std::string, std::string>& settings = {}) {
    const auto data = gen(app, preset, "data", overrides);
    const auto result = path("result-" + (variant.empty() ? std::string("default") : variant));
    const std::string summary = run(app, {data}, variant, settings, "", result);
    const auto report = validate(app, {data}, result);
    EXPECT_TRUE(report.ok) << app << " " << preset << " " << variant << ": " << report.summary;
    return summary;
  }

 private:
  std::filesystem::path dir_;
};

// The message of the soac::error that `body` throws (of type E), or a failure when it throws none.
template <class E, class F>
std::string error_of(F&& body) {
  try {
    body();
  } catch (const E& e) {
    return e.what();
  }
  ADD_FAILURE() << "expected an exception";
  return {};
}

}  // namespace soac::testing

// Instantiates an app_test suite over both backends (cuda instances skip without a GPU).
#define SOAC_INSTANTIATE_APP_BACKENDS(suite) SOAC_INSTANTIATE_BACKENDS(suite)

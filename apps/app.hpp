// What an app is to the `soac` CLI. An app is one folder under apps/ with a class derived from
// soac::apps::app and one SOAC_REGISTER_APP line; the CLI finds it through the registry.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench/harness.hpp"
#include "core/context.hpp"
#include "core/error.hpp"
#include "datasets/bundle.hpp"

namespace soac::apps {

// A named parameter set for the generator (and the benchmark).
struct preset {
  std::string name;
  std::string description;
  nlohmann::json params;  // every parameter the app takes, with its value
};

// A file format an app reads besides its soac bundle: the original program's (`--format NAME`).
// `soac gen APP --format NAME` writes a generated dataset in it, so the original program and soac
// can run on the same files.
struct file_format {
  std::string name;         // e.g. "rodinia", "rodinia-bin", "parboil"
  std::string description;  // what the -i paths (or the -o path of gen) are
};

// A run-time setting, `soac run APP --set KEY=VALUE` (e.g. k-means' k or threshold).
struct setting {
  std::string name;
  nlohmann::json default_value;  // a number or a string; --set values are parsed to match
  std::string description;
};

struct gen_request {
  std::string preset;
  nlohmann::json params;  // preset values with --set overrides applied
  std::uint64_t seed = 1;
  std::filesystem::path output;
  std::string format;  // empty: a soac bundle; else one of the app's input_formats()
};

struct run_request {
  std::filesystem::path input;                // the first of inputs
  std::vector<std::filesystem::path> inputs;  // every -i, in order
  std::string format;                         // empty: a soac bundle
  nlohmann::json settings = nlohmann::json::object();  // every run_settings() key, --set applied
  std::filesystem::path output;
  std::string variant;  // empty: the app's default
  bool verbose = false;
};

struct validate_request {
  std::filesystem::path input;                // the first of inputs
  std::vector<std::filesystem::path> inputs;  // every -i, in order
  std::string format;                         // the inputs' format; empty: a soac bundle
  std::filesystem::path result;
};

struct validate_report {
  bool ok = false;
  std::string summary;  // one line; details on following lines
};

struct bench_request {
  std::vector<std::string> presets;  // empty: the app's bench_presets()
  std::map<std::string, std::string> overrides;
  std::uint64_t seed = 1;
  // Files to measure instead of generated presets (`soac bench APP -i FILE [--format F]`), for
  // apps whose input_formats() are not empty.
  std::vector<std::filesystem::path> inputs;
  std::string format;
  // `--devices all|LIST`: a scaling table over 1, 2, 4, ... of these devices instead of the
  // app's usual cases (apps whose scales_over_devices() is true); empty: one context.
  std::string devices;
};

class app {
 public:
  virtual ~app() = default;
  virtual std::string name() const = 0;
  virtual std::string summary() const = 0;
  // First is the default of `soac gen`.
  virtual std::vector<preset> presets() const = 0;
  // Variants of `soac run --variant`; the first is the default.
  virtual std::vector<std::string> variants() const = 0;
  // Settings a variant may take after its name (--variant NAME,KEY=VALUE,...), described for
  // `soac list`; empty: none.
  virtual std::string variant_settings() const { return {}; }
  // Presets `soac bench` sweeps when none are named.
  virtual std::vector<std::string> bench_presets() const = 0;
  // The original programs' formats the app reads (and gen writes) besides soac bundles.
  virtual std::vector<file_format> input_formats() const { return {}; }
  // Settings of `soac run APP --set KEY=VALUE`, with their defaults.
  virtual std::vector<setting> run_settings() const { return {}; }
  // Whether `soac bench APP --devices` has a scaling table over several GPUs (apps/multi_scaling.hpp).
  virtual bool scales_over_devices() const { return false; }

  // Checks a dataset's parameters, each against its range and against the others (throws
  // usage_error naming the parameter; sizes beyond memory may throw resource_error). `soac gen`
  // calls it before generate() and open_dataset() on every dataset bundle, so gen rejects
  // exactly what run and validate would. Keys it does not know (seed, preset) are ignored.
  virtual void check_params(const nlohmann::json& params) const = 0;
  // Checks a dataset bundle's arrays against its (checked) parameters: lengths and dtypes the
  // parameters imply (a manifest's n that disagrees with its array's length is an input_error,
  // not a run on n elements). open_dataset() calls it after check_params().
  virtual void check_arrays([[maybe_unused]] const datasets::bundle& dataset) const {}

  virtual void generate(const gen_request& request) const = 0;
  // Runs on ctx and writes the result bundle; returns a short human summary.
  virtual std::string run(context& ctx, const run_request& request) const = 0;
  virtual validate_report validate(const validate_request& request) const = 0;
  virtual void bench(context& ctx, const bench_request& request, bench::suite& suite) const = 0;

  // The preset's parameters with `overrides` applied (unknown preset or key -> usage_error).
  nlohmann::json resolve_params(std::string_view preset_name, const std::map<std::string, std::string>& overrides) const;
  preset find_preset(std::string_view name) const;
  // Every run_settings() key with its default, `given` applied (unknown key -> usage_error).
  nlohmann::json resolve_settings(const std::map<std::string, std::string>& given) const;
  // usage_error unless `format` is empty or one of input_formats().
  void check_format(std::string_view format) const;
  // Opens a dataset bundle of this app and checks its parameters with check_params() (a bad one
  // is an input_error naming the manifest: the file is wrong, not the command line) and its
  // arrays with check_arrays().
  datasets::bundle open_dataset(const std::filesystem::path& dir) const;
  // usage_error unless `variant` is empty, one of variants(), or NAME,SETTINGS for an app that
  // takes variant settings (the settings themselves are the app's to check when it runs).
  void check_variant(std::string_view variant) const;
};

void register_app(std::unique_ptr<app> a);
// Throws usage_error naming the known apps.
const app& find_app(std::string_view name);
std::vector<const app*> all_apps();

// --set's KEY=VALUE texts as a map (a later KEY wins); usage_error for one without '=' or key.
std::map<std::string, std::string> parse_overrides(const std::vector<std::string>& assignments);

// "1e7", "2^20", "1000000", "0.25" -> a JSON number (integer when exact).
nlohmann::json parse_number(std::string_view key, std::string_view text);

// Records the request (parameters, seed, preset) in the dataset's manifest and finishes it.
void finish_dataset(datasets::bundle_writer& out, const gen_request& request);

// Runs check(params) and turns its usage_error into an input_error naming `manifest`: for the
// parameters a run reads back from a bundle (a dataset's or a result's).
template <class Check>
decltype(auto) params_of_file(const std::filesystem::path& manifest, Check&& check) {
  try {
    return check();
  } catch (const usage_error& e) {
    throw input_error(manifest.string() + ": " + e.what());
  }
}

// Reads an integer parameter, checking it lies in [lo, hi].
std::int64_t int_param(const nlohmann::json& params, const std::string& key, std::int64_t lo, std::int64_t hi);
double real_param(const nlohmann::json& params, const std::string& key, double lo, double hi);

}  // namespace soac::apps

#define SOAC_REGISTER_APP(type)                                      \
  namespace {                                                        \
  const bool soac_registered_app = (::soac::apps::register_app(std::make_unique<type>()), true); \
  }

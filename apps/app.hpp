// What an app is to the `soac` CLI. An app is one folder under apps/ with a class derived from
// soac::apps::app and one SOAC_REGISTER_APP line; the CLI finds it through the registry.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench/harness.hpp"
#include "core/context.hpp"
#include "core/error.hpp"
#include "datasets/bundle.hpp"
#include "datasets/lenient.hpp"

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

// `soac compare APP -r RESULT --expected FILE [--format F]`: a result against the original
// program's own output file.
struct compare_request {
  std::filesystem::path result;
  std::filesystem::path expected;
  std::string format;  // one of expected_formats(); empty: the first
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
  // `--ranks mpi`: the same table over the processes of the MPI world this one belongs to (one
  // rank each), against rank 0 alone.
  bool mpi = false;
  bool scaling() const { return !devices.empty() || mpi; }
};

// What an app is and takes, set once by its constructor: what `soac list` shows and the CLI
// checks requests against.
struct app_info {
  std::string name;
  std::string summary;
  std::vector<preset> presets;           // the first is `soac gen`'s default
  std::vector<std::string> variants;     // of `soac run --variant`; the first is the default
  // Settings a variant may take after its name (--variant NAME,KEY=VALUE,...), described for
  // `soac list`; empty: none.
  std::string variant_settings;
  std::vector<file_format> input_formats;    // the originals' formats read (and written by gen)
  std::vector<file_format> expected_formats; // the originals' outputs `soac compare` reads
  std::vector<setting> run_settings;         // `soac run APP --set KEY=VALUE`, with defaults
  bool scales_over_devices = false;          // `soac bench APP --devices` has a scaling table
  // What `soac bench` sweeps when none are named. Every app names them, so designated
  // initializers end here and leave no member they skip at the end.
  std::vector<std::string> bench_presets;

  // The start of every app's describe(): its name and one-line summary, the rest to fill in.
  static app_info named(std::string name, std::string summary) {
    app_info a;
    a.name = std::move(name);
    a.summary = std::move(summary);
    return a;
  }
};

class app {
 public:
  explicit app(app_info info) : info_(std::move(info)) {}
  virtual ~app() = default;
  std::string name() const { return info_.name; }
  std::string summary() const { return info_.summary; }
  std::vector<preset> presets() const { return info_.presets; }
  std::vector<std::string> variants() const { return info_.variants; }
  std::string variant_settings() const { return info_.variant_settings; }
  std::vector<std::string> bench_presets() const { return info_.bench_presets; }
  std::vector<file_format> input_formats() const { return info_.input_formats; }
  std::vector<setting> run_settings() const { return info_.run_settings; }
  std::vector<file_format> expected_formats() const { return info_.expected_formats; }
  bool scales_over_devices() const { return info_.scales_over_devices; }
  // A result against an original program's output file, by that program's own rule (ok: within
  // it); the summary names the largest deviation and where. input_error for a malformed file.
  // Apps without expected_formats() refuse (usage_error).
  virtual validate_report compare(const compare_request& request) const;

  // Checks `soac gen`'s parameters: the generator's settings and the run settings a dataset
  // records, each against its range and the others (throws usage_error naming the parameter;
  // sizes beyond memory may throw resource_error). Keys it does not know (seed, preset) are
  // ignored. Only gen calls it: a dataset is checked by check_dataset, for what its computation
  // needs, since a dataset need not come from soac's generator.
  virtual void check_params(const nlohmann::json& params) const = 0;
  // Checks a dataset bundle for what a run needs and nothing more: the manifest parameters the
  // computation reads (sizes, the run settings it records), the arrays' dtypes and lengths (a
  // manifest's n that disagrees with its array's length is an input_error, not a run on n
  // elements), index ranges, finite values, sizes against memory; never a generator's setting
  // (a density, a number of atom types). open_dataset() calls it; a usage_error it throws
  // becomes an input_error naming the manifest.
  virtual void check_dataset(const datasets::bundle& dataset) const = 0;

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
  // Opens a dataset bundle of this app and checks it with check_dataset() (a bad parameter is an
  // input_error naming the manifest: the file is wrong, not the command line).
  datasets::bundle open_dataset(const std::filesystem::path& dir) const;
  // usage_error unless `variant` is empty, one of variants(), or NAME,SETTINGS for an app that
  // takes variant settings (the settings themselves are the app's to check when it runs).
  void check_variant(std::string_view variant) const;

 private:
  app_info info_;
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

// Reading an original program's files (--format F): soac reads what the original reads, as it
// reads it; --set strict=1 refuses what it reads leniently instead (datasets/lenient.hpp).
setting strict_setting(const std::string& original);
// The leniency of a run: strict when its settings say strict=1 (apps without the setting: never).
datasets::leniency leniency_of(const nlohmann::json& settings, const std::string& original);
// The one line on stderr saying what was read leniently, if anything was.
void report_leniency(const datasets::leniency& lenient);

// Reads an integer parameter, checking it lies in [lo, hi].
std::int64_t int_param(const nlohmann::json& params, const std::string& key, std::int64_t lo, std::int64_t hi);
double real_param(const nlohmann::json& params, const std::string& key, double lo, double hi);

}  // namespace soac::apps

#define SOAC_REGISTER_APP(type)                                      \
  namespace {                                                        \
  const bool soac_registered_app = (::soac::apps::register_app(std::make_unique<type>()), true); \
  }

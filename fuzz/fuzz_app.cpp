// What `soac run` and `soac validate` do with a user's files, on the host backend, for every app:
// a fuzzed dataset (a soac bundle's manifest.json and .npy arrays, or the original program's
// files with a format) goes through the app's reading, parameter resolution and checks, then
// the run itself and the validation of its result.
//
// An input is a small text header, then the files, each after a line "==> NAME <==" (as `head`
// prints several files; fuzz/pack-input.sh writes this from a folder):
//   app: hist                 which app (required)
//   format: parboil           the files' format; absent: a soac bundle
//   variant: shared,M=1       --variant (absent: the app's default)
//   set: k=3                  --set, repeatable
//   inputs: Datapnts.1 .     the -i paths in order ("." is the folder holding the files); absent:
//                             every file in order for a format, the folder for a bundle
//   ==> manifest.json <==
//   {...}
//   ==> result/dest.npy <==  a file under result/ goes to a result bundle that validate checks
//                             instead of the run's own
// A file's bytes end where the "\n==> " of the next file begins.
#include <cstdint>
#include <sstream>
#include <string>
#include <vector>

#include "apps/app.hpp"
#include "core/context.hpp"
#include "fuzz/common.hpp"

using namespace soac;
namespace fs = std::filesystem;

namespace {

struct fuzz_input {
  std::string app, format, variant;
  std::vector<std::string> sets, inputs;
  bool inputs_given = false;
  std::vector<std::pair<std::string, std::string_view>> files;  // name (maybe "result/NAME"), bytes
};

bool plain_name(std::string_view s) {
  return !s.empty() && s != "." && s != ".." && s.find('/') == std::string_view::npos && s.find('\0') == std::string_view::npos;
}

// Parses the header and splits the files; false for an input that is not of this form.
bool parse(std::string_view text, fuzz_input& in) {
  constexpr std::string_view separator = "\n==> ", name_end = " <==\n";
  std::size_t at = text.find(separator);
  std::istringstream header(std::string(text.substr(0, at)));
  for (std::string line; std::getline(header, line);) {
    const auto colon = line.find(": ");
    if (colon == std::string::npos) return false;
    const std::string key = line.substr(0, colon), value = line.substr(colon + 2);
    if (key == "app") in.app = value;
    else if (key == "format") in.format = value;
    else if (key == "variant") in.variant = value;
    else if (key == "set") in.sets.push_back(value);
    else if (key == "inputs") {
      in.inputs_given = true;
      std::istringstream words(value);
      for (std::string w; words >> w;) {
        // A command line cannot hold a NUL; a path with one names a shorter path to the system.
        if (w.find('\0') != std::string::npos) return false;
        in.inputs.push_back(w);
      }
    } else return false;
  }
  while (at != std::string_view::npos) {
    const std::size_t name_at = at + separator.size();
    const std::size_t end_of_name = text.find(name_end, name_at);
    if (end_of_name == std::string_view::npos) return false;
    std::string name(text.substr(name_at, end_of_name - name_at));
    const std::size_t bytes_at = end_of_name + name_end.size();
    at = text.find(separator, bytes_at);
    const std::string_view file = name.starts_with("result/") ? std::string_view(name).substr(7) : std::string_view(name);
    if (!plain_name(file)) return false;
    in.files.emplace_back(std::move(name), text.substr(bytes_at, at == std::string_view::npos ? std::string_view::npos : at - bytes_at));
  }
  return !in.app.empty();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  fuzz_input in;
  if (!parse(fuzz::as_text(data, size), in)) return -1;  // not kept in the corpus
  static context ctx("host");
  const fs::path dir = fuzz::fresh_dir("app"), files = dir / "in", given_result = dir / "given-result", result = dir / "result";
  fs::create_directories(files);
  bool result_given = false;
  for (const auto& [name, bytes] : in.files) {
    const bool to_result = name.starts_with("result/");
    if (to_result && !result_given) fs::create_directories(given_result);
    result_given |= to_result;
    if (!fuzz::write_bytes(to_result ? given_result / name.substr(7) : files / name, bytes)) return -1;
  }
  std::vector<fs::path> inputs;
  for (const auto& i : in.inputs) inputs.push_back(i == "." ? files : files / i);
  if (!in.inputs_given) {
    if (in.format.empty()) inputs.push_back(files);
    else
      for (const auto& [name, bytes] : in.files)
        if (!name.starts_with("result/")) inputs.push_back(files / name);
  }
  if (inputs.empty()) return 0;

  fuzz::accepted([&] {
    // As cmd_run builds its request (cli/main.cpp).
    const auto& app = apps::find_app(in.app);
    app.check_format(in.format);
    apps::run_request run;
    run.format = in.format == "bundle" ? std::string() : in.format;
    run.inputs = inputs;
    run.input = inputs.front();
    run.settings = app.resolve_settings(apps::parse_overrides(in.sets));
    run.output = result;
    run.variant = in.variant;
    app.check_variant(run.variant);
    const bool ran = fuzz::accepted([&] { app.run(ctx, run); });
    if (!ran && !result_given) return;
    apps::validate_request check;
    check.format = run.format;
    check.inputs = inputs;
    check.input = inputs.front();
    check.result = result_given ? given_result : result;
    const auto report = app.validate(check);  // INVALID (exit 1) is a clean answer too
    if (!report.ok) fuzz::note_rejection(("validate: INVALID: " + report.summary).c_str());
  });
  return 0;
}

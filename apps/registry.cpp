#include <algorithm>
#include <charconv>
#include <cmath>
#include <iostream>

#include "apps/app.hpp"
#include "core/error.hpp"

namespace soac::apps {

namespace {
std::vector<std::unique_ptr<app>>& registry() {
  static std::vector<std::unique_ptr<app>> apps;  // function-local: safe across static init order
  return apps;
}
}  // namespace

void register_app(std::unique_ptr<app> a) { registry().push_back(std::move(a)); }

std::vector<const app*> all_apps() {
  std::vector<const app*> out;
  for (auto& a : registry()) out.push_back(a.get());
  std::sort(out.begin(), out.end(), [](auto* x, auto* y) { return x->name() < y->name(); });
  return out;
}

const app& find_app(std::string_view name) {
  for (auto* a : all_apps())
    if (a->name() == name) return *a;
  std::string known;
  for (auto* a : all_apps()) known += (known.empty() ? "" : ", ") + a->name();
  throw usage_error("unknown app '" + std::string(name) + "' (known: " + known + "; see `soac list`)");
}

preset app::find_preset(std::string_view name) const {
  const auto all = presets();
  for (auto& p : all)
    if (p.name == name) return p;
  std::string known;
  for (auto& p : all) known += (known.empty() ? "" : ", ") + p.name;
  throw usage_error(this->name() + ": unknown preset '" + std::string(name) + "' (known: " + known + ")");
}

nlohmann::json app::resolve_params(std::string_view preset_name, const std::map<std::string, std::string>& overrides) const {
  nlohmann::json params = find_preset(preset_name.empty() ? presets().front().name : preset_name).params;
  for (const auto& [key, value] : overrides) {
    if (!params.contains(key)) {
      std::string known;
      for (auto& [k, v] : params.items()) known += (known.empty() ? "" : ", ") + k;
      throw usage_error(name() + ": unknown parameter '" + key + "' (parameters: " + known + ")");
    }
    params[key] = params[key].is_string() ? nlohmann::json(value) : parse_number(key, value);
  }
  return params;
}

nlohmann::json app::resolve_settings(const std::map<std::string, std::string>& given) const {
  nlohmann::json out = nlohmann::json::object();
  for (const auto& s : run_settings()) out[s.name] = s.default_value;
  for (const auto& [key, value] : given) {
    if (!out.contains(key)) {
      std::string known;
      for (const auto& s : run_settings()) known += (known.empty() ? "" : ", ") + s.name;
      throw usage_error(name() + ": unknown setting '" + key + "' (settings: " + (known.empty() ? "none" : known) + ")");
    }
    out[key] = out[key].is_string() ? nlohmann::json(value) : parse_number(key, value);
  }
  return out;
}

void app::check_format(std::string_view format) const {
  if (format.empty() || format == "bundle") return;
  std::string known = "bundle";
  for (const auto& f : input_formats()) {
    if (f.name == format) return;
    known += ", " + f.name;
  }
  throw usage_error(name() + ": unknown format '" + std::string(format) + "' (formats: " + known + ")");
}

datasets::bundle app::open_dataset(const std::filesystem::path& dir) const {
  auto b = datasets::bundle::open(dir, "dataset", name());
  params_of_file(dir / "manifest.json", [&] { check_dataset(b); });
  return b;
}

void app::check_variant(std::string_view variant) const {
  if (variant.empty()) return;
  const std::string_view chosen = variant.substr(0, variant.find(','));
  const auto vs = variants();
  if (std::find(vs.begin(), vs.end(), chosen) == vs.end()) {
    std::string known;
    for (auto& v : vs) known += (known.empty() ? "" : ", ") + v;
    throw usage_error(name() + ": unknown variant '" + std::string(chosen) + "' (known: " + known + ")");
  }
  if (chosen.size() != variant.size() && variant_settings().empty())
    throw usage_error(name() + ": variant '" + std::string(chosen) + "' takes no settings (got '" + std::string(variant) + "')");
}

std::map<std::string, std::string> parse_overrides(const std::vector<std::string>& assignments) {
  std::map<std::string, std::string> out;
  for (const auto& kv : assignments) {
    const auto eq = kv.find('=');
    if (eq == std::string::npos || eq == 0) throw usage_error("--set expects KEY=VALUE, got '" + kv + "'");
    out[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  return out;
}

nlohmann::json parse_number(std::string_view key, std::string_view text) {
  auto bad = [&] {
    return usage_error("parameter " + std::string(key) + ": '" + std::string(text) +
                       "' is not a number (examples: 1000, 1e7, 2^20, 0.25)");
  };
  auto too_large = [&] {
    return usage_error("parameter " + std::string(key) + ": '" + std::string(text) + "' is beyond the largest value taken (about 9.2e18)");
  };
  if (auto caret = text.find('^'); caret != std::string_view::npos) {
    long long base = 0, exp = 0;
    auto b = std::from_chars(text.data(), text.data() + caret, base);
    auto e = std::from_chars(text.data() + caret + 1, text.data() + text.size(), exp);
    if (b.ec != std::errc{} || b.ptr != text.data() + caret || e.ec != std::errc{} ||
        e.ptr != text.data() + text.size() || exp < 0)
      throw bad();
    if (exp > 62 && base != 0 && base != 1 && base != -1) throw too_large();
    long double v = std::pow(static_cast<long double>(base), static_cast<long double>(exp));
    if (std::fabs(v) > 9.2e18L) throw too_large();  // a negative base too: the cast beyond int64 is undefined
    return static_cast<std::int64_t>(v);
  }
  double v = 0;
  auto r = std::from_chars(text.data(), text.data() + text.size(), v);
  if (r.ptr != text.data() + text.size()) throw bad();
  if (r.ec == std::errc::result_out_of_range) throw too_large();  // 1e400 (or a denormal's underflow)
  if (r.ec != std::errc{} || !std::isfinite(v)) throw bad();
  if (v == std::floor(v) && std::fabs(v) < 9.2e18) return static_cast<std::int64_t>(v);
  return v;
}

void finish_dataset(datasets::bundle_writer& out, const gen_request& request) {
  out.params() = request.params;
  out.params()["seed"] = request.seed;
  out.params()["preset"] = request.preset;
  out.finish();
}

std::int64_t int_param(const nlohmann::json& params, const std::string& key, std::int64_t lo, std::int64_t hi) {
  const auto range = [&] { return "[" + std::to_string(lo) + ", " + std::to_string(hi) + "]"; };
  if (params.contains(key) && params[key].is_number_float()) {
    const double v = params[key].get<double>();
    if (v == std::floor(v))  // a whole number beyond int64 (9223372036854775807 parses as 9.2e18)
      throw usage_error("parameter " + key + " = " + params[key].dump() + " is outside " + range());
    throw usage_error("parameter " + key + " must be a whole number in " + range() + ", not " + params[key].dump());
  }
  if (!params.contains(key) || !params[key].is_number_integer())
    throw usage_error("parameter " + key + " must be an integer");
  const auto v = params[key].get<std::int64_t>();
  if (v < lo || v > hi)
    throw usage_error("parameter " + key + " = " + std::to_string(v) + " is outside [" + std::to_string(lo) + ", " +
                      std::to_string(hi) + "]");
  return v;
}

double real_param(const nlohmann::json& params, const std::string& key, double lo, double hi) {
  if (!params.contains(key) || !params[key].is_number()) throw usage_error("parameter " + key + " must be a number");
  const auto v = params[key].get<double>();
  if (!(v >= lo && v <= hi))
    throw usage_error("parameter " + key + " = " + std::to_string(v) + " is outside [" + std::to_string(lo) + ", " +
                      std::to_string(hi) + "]");
  return v;
}

validate_report app::compare(const compare_request&) const {
  throw usage_error(name() + " has no original program's output to compare with (soac validate checks a result against the "
                             "sequential reference; soac list names the apps that compare)");
}

setting strict_setting(const std::string& original) {
  return {"strict", 0, "1: refuse what " + original + " reads leniently (words read as 0, what follows the data) instead of reading it so"};
}

datasets::leniency leniency_of(const nlohmann::json& settings, const std::string& original) {
  const bool strict = settings.contains("strict") && int_param(settings, "strict", 0, 1) == 1;
  return datasets::leniency(strict, original);
}

void report_leniency(const datasets::leniency& lenient) {
  if (const auto line = lenient.summary()) std::cerr << *line << "\n";
}

}  // namespace soac::apps

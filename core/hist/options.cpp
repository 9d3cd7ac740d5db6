#include "core/hist/options.hpp"

#include <charconv>
#include <initializer_list>

#include "core/enum_names.hpp"
#include "core/error.hpp"
#include "core/hist/tuning.hpp"

namespace soac {

namespace {
constexpr enum_name<hist_strategy> strategy_names[] = {
    {hist_strategy::automatic, "auto"}, {hist_strategy::shared, "shared"}, {hist_strategy::global, "global"}};
constexpr enum_name<atomic_kind> atomic_names[] = {{atomic_kind::hdw, "hdw"}, {atomic_kind::cas, "cas"}, {atomic_kind::xcg, "xcg"}};
constexpr enum_name<hist_toggle> toggle_names[] = {{hist_toggle::automatic, "auto"}, {hist_toggle::on, "on"}, {hist_toggle::off, "off"}};

int int_setting(std::string_view key, std::string_view value) {
  int v = 0;
  const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), v);
  if (ec != std::errc() || end != value.data() + value.size() || v < 0)
    throw usage_error("hist: setting " + std::string(key) + " takes a whole number in [0, 2147483647], not '" + std::string(value) + "'");
  return v;
}

hist_toggle toggle_setting(std::string_view key, std::string_view value) {
  for (const auto& t : toggle_names)
    if (t.name == value) return t.value;
  throw usage_error("hist: setting " + std::string(key) + " takes " + names_text<hist_toggle>(toggle_names) + ", not '" +
                    std::string(value) + "'");
}

// The settings `KEY=VALUE` of parse_hist_options, once: the parser, its error and the help text
// (hist_settings_text) all read this table.
struct setting_key {
  std::string_view key, takes;
  void (*set)(hist_options&, std::string_view key, std::string_view value);
};
constexpr setting_key setting_keys[] = {
    {"strategy", "auto|shared|global", [](hist_options& o, std::string_view, std::string_view v) { o.strategy = parse_hist_strategy(v); }},
    {"M", "N", [](hist_options& o, std::string_view k, std::string_view v) { o.multi = int_setting(k, v); }},
    {"S", "N", [](hist_options& o, std::string_view k, std::string_view v) { o.passes = int_setting(k, v); }},
    {"RF", "X",
     [](hist_options& o, std::string_view, std::string_view v) {
       double x = 0;
       const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), x);
       if (ec != std::errc() || end != v.data() + v.size() || !(x >= 0))
         throw usage_error("hist: setting RF takes a number >= 0, not '" + std::string(v) + "'");
       o.race_factor = x;
     }},
    {"atomic", "hdw|cas|xcg",
     [](hist_options& o, std::string_view, std::string_view v) {
       o.force_atomic = true;
       o.atomic = parse_atomic_kind(v);
     }},
    {"private", "auto|on|off", [](hist_options& o, std::string_view k, std::string_view v) { o.overrides.thread_private = toggle_setting(k, v); }},
    {"partials", "auto|on|off", [](hist_options& o, std::string_view k, std::string_view v) { o.overrides.block_partials = toggle_setting(k, v); }},
    {"partition", "auto|on|off", [](hist_options& o, std::string_view k, std::string_view v) { o.overrides.partition = toggle_setting(k, v); }},
    {"ahead", "auto|on|off", [](hist_options& o, std::string_view k, std::string_view v) { o.overrides.load_ahead = toggle_setting(k, v); }},
    {"cluster", "N", [](hist_options& o, std::string_view k, std::string_view v) { o.overrides.cluster = int_setting(k, v); }},
    {"split", "N", [](hist_options& o, std::string_view k, std::string_view v) { o.overrides.split = int_setting(k, v); }},
    {"block", "THREADS", [](hist_options& o, std::string_view k, std::string_view v) { o.overrides.block = int_setting(k, v); }},
};
}  // namespace

std::string_view to_string(hist_strategy s) { return name_of<hist_strategy>(strategy_names, s); }
std::string_view to_string(atomic_kind k) { return name_of<atomic_kind>(atomic_names, k); }
std::string_view to_string(hist_toggle t) { return name_of<hist_toggle>(toggle_names, t); }
hist_toggle parse_hist_toggle(std::string_view s) { return parse_name<hist_toggle>(toggle_names, s, "setting"); }
hist_strategy parse_hist_strategy(std::string_view s) { return parse_name<hist_strategy>(strategy_names, s, "hist strategy"); }
atomic_kind parse_atomic_kind(std::string_view s) { return parse_name<atomic_kind>(atomic_names, s, "atomic kind"); }

void set_hist_option(hist_options& o, std::string_view key, std::string_view value) {
  std::string keys;
  for (const auto& k : setting_keys) {
    if (k.key == key) return k.set(o, key, value);
    keys += (keys.empty() ? "" : ", ") + std::string(k.key);
  }
  throw usage_error("hist: unknown setting '" + std::string(key) + "' (settings: " + keys + ")");
}

std::string hist_settings_text() {
  std::string out;
  for (const auto& k : setting_keys) out += (out.empty() ? "" : ", ") + std::string(k.key) + "=" + std::string(k.takes);
  return out;
}

hist_options parse_hist_options(std::string_view settings, hist_options o) {
  while (!settings.empty()) {
    const std::size_t comma = settings.find(',');
    const std::string_view term = settings.substr(0, comma);
    settings = comma == std::string_view::npos ? std::string_view{} : settings.substr(comma + 1);
    const std::size_t eq = term.find('=');
    if (eq == std::string_view::npos || eq == 0)
      throw usage_error("hist: expected key=value in the settings, not '" + std::string(term) + "'");
    set_hist_option(o, term.substr(0, eq), term.substr(eq + 1));
  }
  check_hist_options(o);
  return o;
}

void check_hist_options(const hist_options& o) {
  if (o.multi < 0) throw usage_error("hist: M (multi) must be at least 1, or 0 for the model");
  if (o.passes < 0) throw usage_error("hist: S (passes) must be at least 1, or 0 for the model");
  if (o.race_factor < 0) throw usage_error("hist: the race factor must be positive, or 0 for the inspector");
  if (o.overrides.cluster < 0 || o.overrides.cluster > 8 || (o.overrides.cluster & (o.overrides.cluster - 1)) != 0)
    throw usage_error("hist: the cluster size must be 1, 2, 4 or 8 blocks, or 0 for the model");
  if (o.overrides.split < 0 || o.overrides.split > 16)
    throw usage_error("hist: the split cluster size must be 1 to 16 blocks, or 0 for the model");
  if (o.overrides.block < 0 || o.overrides.block % 32 != 0 || o.overrides.block > hist_tuning::shared_block)
    throw usage_error("hist: the block size must be a multiple of 32 up to " + std::to_string(hist_tuning::shared_block) +
                      " threads, or 0 for the default");
}

}  // namespace soac

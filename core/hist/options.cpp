#include "core/hist/options.hpp"

#include <charconv>
#include <initializer_list>

#include "core/error.hpp"
#include "core/hist/tuning.hpp"

namespace soac {

std::string_view to_string(hist_strategy s) {
  switch (s) {
    case hist_strategy::automatic: return "auto";
    case hist_strategy::shared: return "shared";
    case hist_strategy::global: return "global";
  }
  return "?";
}

std::string_view to_string(atomic_kind k) {
  switch (k) {
    case atomic_kind::hdw: return "hdw";
    case atomic_kind::cas: return "cas";
    case atomic_kind::xcg: return "xcg";
  }
  return "?";
}

std::string_view to_string(hist_toggle t) {
  switch (t) {
    case hist_toggle::automatic: return "auto";
    case hist_toggle::on: return "on";
    case hist_toggle::off: return "off";
  }
  return "?";
}

namespace {
// The value among `values` whose to_string is s; a usage error naming `what` and the choices
// otherwise.
template <class E>
E parse_choice(std::string_view s, std::initializer_list<E> values, const char* what) {
  std::string choices;
  for (auto v : values) {
    if (s == to_string(v)) return v;
    choices += (choices.empty() ? "" : ", ") + std::string(to_string(v));
  }
  throw usage_error("unknown " + std::string(what) + " '" + std::string(s) + "' (expected " + choices + ")");
}
}  // namespace

hist_toggle parse_hist_toggle(std::string_view s) {
  return parse_choice(s, {hist_toggle::automatic, hist_toggle::on, hist_toggle::off}, "setting");
}

hist_strategy parse_hist_strategy(std::string_view s) {
  return parse_choice(s, {hist_strategy::automatic, hist_strategy::shared, hist_strategy::global}, "hist strategy");
}

atomic_kind parse_atomic_kind(std::string_view s) {
  return parse_choice(s, {atomic_kind::hdw, atomic_kind::cas, atomic_kind::xcg}, "atomic kind");
}

namespace {
int int_setting(std::string_view key, std::string_view value) {
  int v = 0;
  const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), v);
  if (ec != std::errc() || end != value.data() + value.size() || v < 0)
    throw usage_error("hist: setting " + std::string(key) + " takes a whole number in [0, 2147483647], not '" + std::string(value) + "'");
  return v;
}
}  // namespace

namespace {
hist_toggle toggle_setting(std::string_view key, std::string_view value) {
  if (value == "auto" || value == "on" || value == "off") return parse_hist_toggle(value);
  throw usage_error("hist: setting " + std::string(key) + " takes auto, on or off, not '" + std::string(value) + "'");
}
}  // namespace

void set_hist_option(hist_options& o, std::string_view key, std::string_view value) {
  if (key == "strategy") o.strategy = parse_hist_strategy(value);
  else if (key == "M") o.multi = int_setting(key, value);
  else if (key == "S") o.passes = int_setting(key, value);
  else if (key == "RF") {
    double v = 0;
    const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), v);
    if (ec != std::errc() || end != value.data() + value.size() || !(v >= 0))
      throw usage_error("hist: setting RF takes a number >= 0, not '" + std::string(value) + "'");
    o.race_factor = v;
  } else if (key == "atomic") {
    o.force_atomic = true;
    o.atomic = parse_atomic_kind(value);
  } else if (key == "private") o.thread_private = toggle_setting(key, value);
  else if (key == "partials") o.block_partials = toggle_setting(key, value);
  else if (key == "partition") o.partition = toggle_setting(key, value);
  else if (key == "ahead") o.load_ahead = toggle_setting(key, value);
  else if (key == "cluster") o.cluster = int_setting(key, value);
  else if (key == "split") o.split = int_setting(key, value);
  else if (key == "block") o.block = int_setting(key, value);
  else
    throw usage_error("hist: unknown setting '" + std::string(key) +
                      "' (settings: strategy, M, S, RF, atomic, private, partials, partition, ahead, cluster, "
                      "split, block)");
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
  if (o.cluster < 0 || o.cluster > 8 || (o.cluster & (o.cluster - 1)) != 0)
    throw usage_error("hist: the cluster size must be 1, 2, 4 or 8 blocks, or 0 for the model");
  if (o.split < 0 || o.split > 16)
    throw usage_error("hist: the split cluster size must be 1 to 16 blocks, or 0 for the model");
  if (o.block < 0 || o.block % 32 != 0 || o.block > hist_tuning::shared_block)
    throw usage_error("hist: the block size must be a multiple of 32 up to " + std::to_string(hist_tuning::shared_block) +
                      " threads, or 0 for the default");
}

}  // namespace soac

// Variants of the apps built on soac::hist (histo, tpacf, samples-hist): a formulation's name,
// optionally followed by hist settings that force a shape, "NAME[,KEY=VALUE...]" (the keys of
// soac::set_hist_option: strategy, M, S, private, ahead, block, ...), e.g. "counts,strategy=global".
// `soac bench` takes a list of them separated by ';' (the `variants` parameter).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/error.hpp"
#include "core/hist/strategy.hpp"

namespace soac::apps {

struct hist_variant {
  std::string name;     // the formulation
  hist_options options;  // the settings after it
  std::string text;      // as given
};

// `known` lists the formulation names; an empty text is the first. usage_error naming the app for
// an unknown name or setting.
inline hist_variant parse_hist_variant(std::string_view text, const std::vector<std::string>& known, std::string_view app) {
  hist_variant v;
  v.text = text.empty() ? known.front() : std::string(text);
  const std::size_t comma = v.text.find(',');
  v.name = v.text.substr(0, comma);
  bool found = false;
  std::string names;
  for (const auto& k : known) {
    found |= k == v.name;
    names += (names.empty() ? "" : ", ") + k;
  }
  if (!found) throw usage_error(std::string(app) + ": unknown variant '" + v.name + "' (expected " + names + ")");
  if (comma != std::string::npos) v.options = parse_hist_options(std::string_view(v.text).substr(comma + 1));
  return v;
}

// "a;b,M=2;c" -> {"a", "b,M=2", "c"}; empty entries are dropped.
inline std::vector<std::string> split_variant_list(std::string_view list) {
  std::vector<std::string> out;
  while (!list.empty()) {
    const std::size_t semi = list.find(';');
    if (semi != 0) out.emplace_back(list.substr(0, semi));
    list = semi == std::string_view::npos ? std::string_view{} : list.substr(semi + 1);
  }
  return out;
}

inline constexpr const char* hist_variant_settings =
    "after a variant's name, hist settings: strategy=auto|shared|global, M=N, S=N, RF=X, combine|private|partials|"
    "partition|ahead=auto|on|off, cluster=N, split=N, block=THREADS (e.g. NAME,strategy=global)";

}  // namespace soac::apps

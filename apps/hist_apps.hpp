// What the apps built on soac::hist (histo, tpacf, samples-hist) share: variants, a formulation's
// name optionally followed by hist settings that force a shape, "NAME[,KEY=VALUE...]" (the keys of
// soac::set_hist_option: strategy, M, S, private, ahead, block, ...), e.g. "counts,strategy=global",
// which `soac bench` takes as a list separated by ';' (the `variants` parameter); and the pieces
// of their benches.
#pragma once

#include <iostream>
#include <string>
#include <string_view>
#include <vector>

#include "apps/app.hpp"
#include "core/error.hpp"
#include "core/hist/plan.hpp"

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

// What a formulation's first hist call chose (its later calls plan the same; describing a plan
// costs host time, so it is done once).
class first_plan {
 public:
  const std::string& plan() const { return plan_; }

 protected:
  void keep(const hist_plan& p) {
    if (plan_.empty()) plan_ = p.describe();
  }

 private:
  std::string plan_;
};

// Runs one bench variant (its setup, timing and check); a usage_error (a forced shape that the
// device or the input rules out) leaves it out with a line on stderr.
template <class Body>
void unless_ruled_out(const std::string& label, Body&& body) {
  try {
    body();
  } catch (const usage_error& e) {
    std::cerr << "  " << label << ": not run (" << e.what() << ")\n";
  }
}

// One input a bench measures, with the variants its preset names (empty: the app's list).
template <class Input>
struct bench_input {
  std::string label;
  Input input;
  std::string variants;
};

// The bench's presets (the request's, or the app's bench_presets()), each made by make(params).
template <class Input, class Make>
std::vector<bench_input<Input>> preset_inputs(const app& a, const bench_request& r, Make&& make) {
  std::vector<bench_input<Input>> out;
  for (const auto& p : r.presets.empty() ? a.bench_presets() : r.presets) {
    const auto params = a.resolve_params(p, r.overrides);
    out.push_back({p, make(params), params.value("variants", "")});
  }
  return out;
}

inline const std::string hist_variant_settings =
    "after a variant's name, hist settings: " + hist_settings_text() + " (e.g. NAME,strategy=global)";

}  // namespace soac::apps

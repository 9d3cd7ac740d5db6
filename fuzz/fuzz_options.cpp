// The text forms of options on any text: --set KEY=VALUE (numbers like 1e7 and 2^20) through every
// app's parameter and setting resolution, --variant NAME,KEY=VALUE through every app's variant
// check, hist's settings (parse_hist_options, as in --variant shared,M=1,S=2) and bfs's variant
// settings, --format names. The first byte picks the app and its preset; each line is one value.
#include <cstdint>
#include <string>
#include <vector>

#include "apps/app.hpp"
#include "apps/bfs/bfs.hpp"
#include "core/hist/plan.hpp"
#include "fuzz/common.hpp"

using namespace soac;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  static const auto apps = soac::apps::all_apps();
  const auto& app = *apps[data[0] % apps.size()];
  const auto presets = app.presets();
  const auto& preset = presets[(data[0] / apps.size()) % presets.size()].name;

  std::vector<std::string> lines;
  const std::string_view text = fuzz::as_text(data + 1, size - 1);
  for (std::size_t start = 0; start <= text.size();) {
    const std::size_t end = std::min(text.find('\n', start), text.size());
    lines.emplace_back(text.substr(start, end - start));
    start = end + 1;
  }
  for (const auto& line : lines) {
    fuzz::accepted([&] { apps::parse_number("key", line); });
    fuzz::accepted([&] { app.check_variant(line); });
    fuzz::accepted([&] { app.check_format(line); });
    fuzz::accepted([&] { parse_hist_options(line); });
    fuzz::accepted([&] { apps::bfs::parse_variant(line); });
  }
  fuzz::accepted([&] {
    const auto overrides = apps::parse_overrides(lines);
    fuzz::accepted([&] { app.resolve_params(preset, overrides); });
    fuzz::accepted([&] { app.resolve_settings(overrides); });
  });
  return 0;
}

// FHPC17 (regular segmented reductions): the microbenchmarks of Figs 9, 11, 13 and 15, and the
// Rodinia applications of Fig 16.
#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

#include "reproduce/analysis.hpp"
#include "reproduce/tables.hpp"

namespace soac::reproduce {
namespace {

const std::vector<std::string> strategies = {"sequential", "large", "small"};
constexpr const char* micro_source = "FHPC17 3.2";

struct micro_figure {
  std::string id, op, what, figure;
  bool has_cub;
};

std::string run_id(const micro_figure& f, bool large) { return "segreduce-" + f.op + (large ? "-large" : "-small"); }

std::vector<run_spec> micro_runs(const micro_figure& f, mode m) {
  const std::string why = "segreduce's bench compares with CUB (DeviceReduce, DeviceSegmentedReduce, a segmented scan)";
  run_spec small{run_id(f, false), "segreduce", {"--preset", f.op + "18"}};
  run_spec large{run_id(f, true), "segreduce", {"--preset", f.op}};
  for (run_spec* r : {&small, &large}) {
    r->gpu_only = why;
    r->runs = m == mode::full ? 11 : 5;
  }
  small.estimate_s = 3;
  large.estimate_s = m == mode::full ? (f.op == "blackscholes" ? 20 : 9) : 3;
  if (m != mode::full) large.args.insert(large.args.end(), {"--set", "m=2048", "--set", "n=2048"});
  return {small, large};
}

// The case's forced strategy times (strategies skipped as hopeless are absent).
std::map<std::string, double> forced(const json& c) {
  std::map<std::string, double> out;
  for (const auto& s : strategies)
    if (const json* v = variant(c, "soac " + s)) out[s] = median_ms(*v);
  return out;
}

std::string fastest(const std::map<std::string, double>& t) {
  return t.empty() ? "" : std::min_element(t.begin(), t.end(), [](auto& a, auto& b) { return a.second < b.second; })->first;
}

// The strategy auto chose: its plan description starts with it ("large (256 threads/block ...").
std::string chosen(const json& v) {
  const std::string note = note_of(v);
  return note.substr(0, note.find_first_of(" (;|"));
}

std::vector<const json*> sorted_cases(const json& bench) {
  std::vector<const json*> out;
  for (const auto& c : cases_of(bench)) out.push_back(&c);
  std::sort(out.begin(), out.end(), [](const json* a, const json* b) { return param(*a, "m") < param(*b, "m"); });
  return out;
}

void micro(table_builder& b, const micro_figure& f) {
  const json* runs[2] = {b.bench(run_id(f, false)), b.bench(run_id(f, true))};
  b.results_checked({run_id(f, false), run_id(f, true)});
  json panels = json::array();
  double worst_auto = 0;
  std::string worst_at;
  int points = 0;
  bool small_best_on_small = false, small_best_on_large = false;
  for (int large = 0; large < 2; ++large) {
    if (!runs[large]) continue;
    const auto cs = sorted_cases(*runs[large]);
    if (cs.empty()) continue;
    const double total = param(*cs.front(), "m") * param(*cs.front(), "n");
    std::vector<std::vector<std::string>> rows;
    std::map<std::string, std::pair<std::vector<double>, std::vector<double>>> lines;
    for (const json* c : cs) {
      const double m = param(*c, "m"), n = param(*c, "n");
      const auto t = forced(*c);
      const json* a = variant(*c, "soac auto");
      std::vector<std::string> row = {fmt_count(m), fmt_count(n)};
      for (const auto& s : strategies) row.push_back(t.count(s) ? fmt_ms(t.at(s)) : "skipped");
      row.push_back(a ? fmt_ms(median_ms(*a)) + " (" + chosen(*a) + ")" : "-");
      for (const std::string base : {"CUB segmented", "plain reduce", "scan+last"}) {
        const json* v = variant(*c, base);
        row.push_back(v ? fmt_ms(median_ms(*v)) : "-");
      }
      const std::string best = fastest(t);
      if (a && !best.empty()) {
        const double r = median_ms(*a) / t.at(best);
        row.push_back(fmt_ratio(r) + " (" + best + ")");
        ++points;
        if (r > worst_auto) worst_auto = r, worst_at = fmt_count(total) + " elements, m = " + fmt_count(m);
      } else {
        row.push_back("-");
      }
      if (best == "small") (large ? small_best_on_large : small_best_on_small) = true;
      rows.push_back(row);
      for (const auto& v : (*c)["variants"]) {
        lines[name_of(v)].first.push_back(m);
        lines[name_of(v)].second.push_back(median_ms(v));
      }
    }
    b.section(f.figure + ": " + f.what + ", " + fmt_count(total) + " elements",
              "ms per variant; m segments of n elements; \"skipped\": the bench leaves out a strategy that would run for seconds there.",
              {"m", "n", "sequential", "large", "small", "auto (chose)", "CUB segmented", "plain reduce", "scan+last", "auto / best forced"}, rows);
    json s = json::array();
    for (const auto& [name, xy] : lines) s.push_back(series(name, xy.first, xy.second));
    panels.push_back({{"title", fmt_count(total) + " elements"}, {"xlabel", "segments m (n = total / m)"}, {"ylabel", "ms"},
                      {"xlog", true}, {"ylog", true}, {"kind", "lines"}, {"series", s}});
  }
  if (!panels.empty()) b.plot("plot", "FHPC17 " + f.figure + " on this GPU: " + f.what, panels);

  // Claims over both sizes.
  {
    std::string evidence;
    bool held = true;
    int seen = 0;
    for (int large = 0; large < 2; ++large) {
      if (!runs[large] || cases_of(*runs[large]).empty()) continue;
      const json* c = sorted_cases(*runs[large]).front();
      const auto t = forced(*c);
      if (!t.count("large")) continue;
      ++seen;
      held = held && fastest(t) == "large";
      evidence += (evidence.empty() ? "" : "; ") + std::string(large ? "large input" : "small input") + ", m = " + fmt_count(param(*c, "m")) +
                  ": fastest " + fastest(t) + " (large " + fmt_ms(t.at("large")) + " ms)";
    }
    const std::string what = "the large-segment strategy is the best for few big segments (fewest segments, both inputs)";
    if (seen) b.claim(what, micro_source, held, evidence);
    else b.claim(what, micro_source, verdict::not_checked, "no run of this figure completed");
  }
  {
    const std::string what = "on the large input the sequential-segment strategy is the best for the most segments";
    const json* c = runs[1] && !cases_of(*runs[1]).empty() ? sorted_cases(*runs[1]).back() : nullptr;
    const auto t = c ? forced(*c) : std::map<std::string, double>{};
    if (c && t.count("sequential"))
      b.claim(what, micro_source, fastest(t) == "sequential",
              "m = " + fmt_count(param(*c, "m")) + ": fastest " + fastest(t) + " (sequential " + fmt_ms(t.at("sequential")) + " ms)");
    else
      b.claim(what, micro_source, verdict::not_checked, "the large input's run or its sequential strategy is missing");
  }
  if (runs[0] && runs[1])
    b.claim("the small-segment strategy pays off only on the small input (best somewhere on it, nowhere on the large one)", micro_source,
            small_best_on_small && !small_best_on_large,
            std::string("small is the fastest forced strategy somewhere on the small input: ") + (small_best_on_small ? "yes" : "no") +
                "; on the large input: " + (small_best_on_large ? "yes" : "no"));
  else
    b.claim("the small-segment strategy pays off only on the small input", micro_source, verdict::not_checked, "a run is missing");
  if (points)
    b.claim("auto picks a strategy within 10% of the best forced one at every point (paper: the heuristic \"performs acceptably well\")",
            micro_source + std::string(" (3.1)"), worst_auto <= 1.10, "worst auto / best forced " + fmt_ratio(worst_auto) + " at " + worst_at);
  else
    b.claim("auto picks a strategy within 10% of the best forced one", micro_source, verdict::not_checked, "no point has auto and a forced strategy");
  if (f.has_cub) {
    const std::string what = "CUB's segmented reduction is poor at the edges: slower than soac auto with the fewest and with the most segments of the large input";
    const auto cs = runs[1] ? sorted_cases(*runs[1]) : std::vector<const json*>{};
    std::string evidence;
    bool held = true;
    int seen = 0;
    for (const json* c : {cs.empty() ? nullptr : cs.front(), cs.empty() ? nullptr : cs.back()}) {
      const json* cub = c ? variant(*c, "CUB segmented") : nullptr;
      const json* a = c ? variant(*c, "soac auto") : nullptr;
      if (!cub || !a) continue;
      ++seen;
      const double r = median_ms(*cub) / median_ms(*a);
      held = held && r > 1;
      evidence += (evidence.empty() ? "" : "; ") + std::string("m = ") + fmt_count(param(*c, "m")) + ": CUB / auto " + fmt_ratio(r);
    }
    if (seen == 2) b.claim(what, micro_source, held, evidence);
    else b.claim(what, micro_source, verdict::not_checked, "CUB or auto is missing at an edge of the large input");
  }
  {
    const std::string what = "with few large segments (n >= 2^16, large input) the large-segment strategy runs about as fast as a non-segmented reduction (within 15%)";
    double worst = 0;
    std::string at;
    for (const json* c : runs[1] ? sorted_cases(*runs[1]) : std::vector<const json*>{}) {
      if (param(*c, "n") < 65536) continue;
      const json* l = variant(*c, "soac large");
      const json* p = variant(*c, "plain reduce");
      if (!l || !p) continue;
      const double r = median_ms(*l) / median_ms(*p);
      if (r > worst) worst = r, at = "m = " + fmt_count(param(*c, "m"));
    }
    if (worst > 0) b.claim(what, micro_source, worst <= 1.15, "worst large / plain reduce " + fmt_ratio(worst) + " at " + at);
    else b.claim(what, micro_source, verdict::not_checked, "no such case in this run");
  }
}

// ---- Fig 16: backprop and k-means against Rodinia

std::vector<run_spec> fig16_runs(mode m) {
  run_spec bp{"backprop-fhpc17", "backprop", {"--preset", m == mode::full ? "2^20" : "rodinia-65536"}};
  run_spec k204{"kmeans-204800", "kmeans", {"--preset", "rodinia-204800", "--set", "k=8"}};
  run_spec kdd{"kmeans-kdd", "kmeans", {"--preset", "kdd"}};
  bp.estimate_s = m == mode::full ? 7 : 1, k204.estimate_s = 2, kdd.estimate_s = m == mode::full ? 5 : 1;
  for (run_spec* r : {&bp, &k204, &kdd}) r->runs = m == mode::full ? 11 : 3;
  if (m == mode::quick) {
    k204.args.insert(k204.args.end(), {"--set", "n=51200"});
    kdd.args.insert(kdd.args.end(), {"--set", "n=49402"});
  }
  if (m == mode::host) {
    k204.args.insert(k204.args.end(), {"--set", "n=10240"});
    kdd.args.insert(kdd.args.end(), {"--set", "n=10000"});
    for (run_spec* r : {&bp, &k204, &kdd}) r->warmup = 1, r->estimate_s = 5;
  }
  return {bp, k204, kdd};
}

void fig16(table_builder& b) {
  const json& paper = b.paper_numbers("fhpc17_fig16");
  std::vector<std::vector<std::string>> rows;
  json cats = json::array();
  std::map<std::string, std::vector<double>> bars;
  double k204_speedup = 0;
  for (const std::string id : {"backprop-fhpc17", "kmeans-204800", "kmeans-kdd"}) {
    const json* bench = b.bench(id);
    if (!bench) continue;
    for (const auto& c : cases_of(*bench)) {
      const json* rod = first_of_role(c, "baseline");
      const json* seg = variant_starting(c, "segreduce");
      const json* hist = variant(c, "hist");
      std::vector<std::string> row = {c.value("name", ""), rod ? name_of(*rod) + " " + fmt_ms(median_ms(*rod)) : "-",
                                      seg ? fmt_ms(median_ms(*seg)) : "-", rod && seg ? fmt_ratio(median_ms(*rod) / median_ms(*seg)) : "-",
                                      hist ? fmt_ms(median_ms(*hist)) : "-", rod && hist ? fmt_ratio(median_ms(*rod) / median_ms(*hist)) : "-"};
      rows.push_back(row);
      const std::string name = c.value("name", "");
      const bool whole = name.find("whole clustering") != std::string::npos || name.find("end to end") != std::string::npos;
      if (whole && rod && seg) {
        cats.push_back(name);
        bars["Rodinia's structure"].push_back(median_ms(*rod));
        bars["soac segreduce"].push_back(median_ms(*seg));
        bars["soac hist"].push_back(hist ? median_ms(*hist) : 0.0);
        if (id == "kmeans-204800") k204_speedup = median_ms(*rod) / median_ms(*seg);
      }
    }
  }
  b.results_checked({"backprop-fhpc17", "kmeans-204800", "kmeans-kdd"});
  if (!rows.empty())
    b.section("Fig 16: Rodinia's backprop and k-means",
              "ms; speedup = Rodinia's structure (the in-run baseline) / soac's variant. The paper compared Futhark's segmented reductions "
              "with its earlier scan-based ones and with Rodinia's OpenCL programs on a K40; its 204800 run used k = 8 (as here), kdd_cup k = 5.",
              {"case", "baseline ms", "soac segreduce ms", "speedup", "soac hist ms", "speedup"}, rows);
  if (!cats.empty()) {
    json s = json::array();
    for (const auto& [name, y] : bars) s.push_back({{"name", name}, {"y", y}, {"paper", false}});
    b.plot("fig16", "FHPC17 Fig 16 on this GPU: whole runs against Rodinia's structure",
           json::array({{{"title", "end to end"}, {"ylabel", "ms"}, {"ylog", true}, {"kind", "bars"}, {"categories", cats}, {"series", s}}}));
  }
  const std::string src = "FHPC17 4";
  if (k204_speedup > 0)
    b.claim("k-means on 204800 points: the segmented-reduction version beats Rodinia's (paper: " +
                fmt_num(paper.value("kmeans_204800_speedup_over_rodinia", 1.29), 2) + "x faster, where the scan-based one was " +
                fmt_num(paper.value("kmeans_204800_scan_based_slowdown_vs_rodinia", 1.35), 2) + "x slower)",
            src, k204_speedup > 1, "whole clustering: Rodinia / segreduce = " + fmt_ratio(k204_speedup));
  else
    b.claim("k-means on 204800 points: the segmented-reduction version beats Rodinia's", src, verdict::not_checked,
            "the whole-clustering case is not in this run");
  b.claim("the segmented reductions are 1.3-1.7x faster than a scan-based implementation (abstract)", src, verdict::not_checked,
          "soac has no scan-based segmented reduction to compare with (the `scan+last` baseline of the microbenchmarks is the closest)");
}

}  // namespace

std::vector<table_spec> fhpc17_tables() {
  const std::vector<micro_figure> figs = {{"fhpc17-fig9", "sum", "segmented int32 sum", "Fig 9", true},
                                          {"fhpc17-fig11", "argmax", "index of the largest element", "Fig 11", true},
                                          {"fhpc17-fig13", "mss", "maximum subarray sum (non-commutative)", "Fig 13", false},
                                          {"fhpc17-fig15", "blackscholes", "Black-Scholes pricing over m options x n days", "Fig 15", true}};
  std::vector<table_spec> out;
  for (const auto& f : figs)
    out.push_back({f.id, "FHPC17 " + f.figure + ": " + f.what + ", every strategy against the number of segments", "fhpc17",
                   [f](mode m) { return micro_runs(f, m); }, [f](table_builder& b) { micro(b, f); }});
  out.push_back({"fhpc17-fig16", "FHPC17 Fig 16: Rodinia's backprop and k-means on segmented reductions", "fhpc17", fig16_runs, fig16});
  return out;
}

}  // namespace soac::reproduce

// The markdown report of a reproduction (reproduce.json): environment, a summary, and per table
// the runs, the sections (the paper's numbers beside this run's), the plots and the claims.
#include <algorithm>
#include <set>
#include <sstream>

#include "reproduce/analysis.hpp"

namespace soac::reproduce {
namespace {

// A cell of a markdown table: no pipes or line breaks.
std::string cell(std::string s) {
  for (std::size_t p = 0; (p = s.find('|', p)) != std::string::npos; p += 2) s.replace(p, 1, "\\|");
  std::replace(s.begin(), s.end(), '\n', ' ');
  return s;
}

void table(std::ostringstream& md, const std::vector<std::string>& columns, const json& rows) {
  md << "|";
  for (const auto& c : columns) md << " " << cell(c) << " |";
  md << "\n|";
  for (std::size_t i = 0; i < columns.size(); ++i) md << (i == 0 ? "---|" : "---:|");
  md << "\n";
  for (const auto& r : rows) {
    md << "|";
    for (std::size_t i = 0; i < columns.size(); ++i) md << " " << cell(i < r.size() ? r[i].get<std::string>() : "") << " |";
    md << "\n";
  }
  md << "\n";
}

std::string minutes(double s) {
  std::ostringstream o;
  if (s < 60) o << int(s + 0.5) << " s";
  else o << int(s / 60) << " min " << int(s) % 60 << " s";
  return o.str();
}

void environment(std::ostringstream& md, const json& r) {
  const json& env = member(r, "environment");
  const json& build = member(env, "build");
  std::vector<std::vector<std::string>> rows;
  if (env.contains("device")) {
    const json& d = env["device"];
    rows.push_back({"device", d.value("name", "?") + " (compute capability " + d.value("compute_capability", "?") + ", " +
                                  std::to_string(d.value("sm_count", 0)) + " SMs, " + std::to_string(d.value("l2_bytes", 0L) >> 20) + " MiB L2, " +
                                  std::to_string(d.value("global_bytes", 0L) >> 30) + " GiB)"});
    auto version = [](int v) { return std::to_string(v / 1000) + "." + std::to_string(v % 1000 / 10); };
    rows.push_back({"driver", env.value("driver", "unknown") + " (CUDA driver API " + version(env.value("cuda_driver_api", 0)) + ")"});
    rows.push_back({"CUDA runtime", version(env.value("cuda_runtime", 0))});
  } else {
    rows.push_back({"device", "none: the host backend (" + std::to_string(env.value("host_threads", 0)) + " OpenMP threads)"});
  }
  rows.push_back({"soac", build.value("version", "?") + ", commit " + build.value("commit", "unknown") + (build.value("dirty", false) ? " (modified)" : "") +
                              ", " + build.value("build_type", "?") + ", sm_" + build.value("cuda_architectures", "?")});
  rows.push_back({"host threads", std::to_string(env.value("host_threads", 0))});
  rows.push_back({"date", r.value("date", "?")});
  json jr = json::array();
  for (auto& row : rows) jr.push_back(row);
  table(md, {"", ""}, jr);
}

}  // namespace

std::string markdown(const json& r) {
  std::ostringstream md;
  const json& env = member(r, "environment");
  const std::string device = env.contains("device") ? env["device"].value("name", "?") : "the host backend";
  const mode m = parse_mode(r.value("mode", "full"));
  md << "# soac reproduce: the papers' tables and figures on " << device << "\n\n";
  md << "Made by `" << r.value("command", std::string("soac reproduce")) << "`. ";
  if (m == mode::quick) md << "**--quick**: reduced sizes for a first look; claims about sizes are checked at the sizes that ran. ";
  if (m == mode::host)
    md << "**No CUDA GPU**: the host backend ran what it can at reduced host sizes; tables whose benches compare with CUDA programs are "
          "marked missing. ";
  md << "Every number below comes from this run's `soac bench` JSON (kept in reproduce.json, with each bench's log under runs/), "
        "beside the papers' numbers from reproduce/papers.json. Times are medians; ratios are computed in the same run.\n\n";
  environment(md, r);

  const json& plots = member(r, "plots");
  const bool drawn = plots.value("drawn", false);
  std::set<std::string> files;
  for (const auto& f : member(plots, "files")) files.insert(f.get<std::string>());
  md << (drawn ? "Plots drawn with " + plots.value("python", std::string("python3")) + " and matplotlib (PNG and SVG under plots/).\n\n"
               : "**Plots not drawn**: " + plots.value("note", std::string("not attempted")) + ". The tables below hold every number.\n\n");

  // Summary.
  md << "## Summary\n\n";
  std::map<std::string, double> run_seconds;
  for (const auto& run : member(r, "runs")) run_seconds[run.value("id", "")] = run.value("seconds", 0.0);
  json rows = json::array();
  int held_all = 0, not_held_all = 0, unchecked_all = 0;
  for (const auto& t : member(r, "tables")) {
    int counts[3] = {0, 0, 0};
    for (const auto& c : t["claims"]) {
      const std::string v = c.value("verdict", "");
      ++counts[v == "held" ? 0 : v == "not held" ? 1 : 2];
    }
    held_all += counts[0], not_held_all += counts[1], unchecked_all += counts[2];
    double seconds = 0;
    std::set<std::string> seen;
    for (const auto& id : t["runs"])
      if (seen.insert(id.get<std::string>()).second) seconds += run_seconds[id.get<std::string>()];
    const std::string id = t.value("id", "");
    std::string link = "[";
    link.append(id).append("](#").append(id).append(")");
    rows.push_back({link, t.value("title", ""), t.value("status", ""),
                    std::to_string(counts[0]), std::to_string(counts[1]), std::to_string(counts[2]), minutes(seconds)});
  }
  table(md, {"table", "what", "status", "held", "not held", "not checked", "bench time"}, rows);
  md << "Claims: " << held_all << " held, " << not_held_all << " not held, " << unchecked_all << " not checked. "
     << "\"bench time\" counts the runs a table used (a run shared by two tables counts in both).\n\n";

  std::map<std::string, const json*> runs;
  for (const auto& run : member(r, "runs")) runs[run.value("id", "")] = &run;
  const json& aliases = member(r, "aliases");
  for (const auto& t : member(r, "tables")) {
    md << "<a id=\"" << t.value("id", "") << "\"></a>\n\n## " << t.value("title", "") << "\n\n";
    const json& paper = papers()["papers"].value(t.value("paper", ""), json::object());
    md << "Paper: " << paper.value("title", "?") << ", measured on " << paper.value("gpu", "?") << " (" << paper.value("setting", "") << ").\n\n";
    md << "This run:\n\n";
    std::set<std::string> seen;
    for (const auto& id_json : t["runs"]) {
      std::string id = id_json.get<std::string>();
      if (!seen.insert(id).second) continue;
      if (aliases.contains(id)) id = aliases[id].get<std::string>();
      const auto it = runs.find(id);
      if (it == runs.end()) continue;
      const json& run = *it->second;
      md << "- `" << command_text(run) << "`: " << run.value("status", "?");
      if (run.value("status", "") == "ok") md << ", " << minutes(run.value("seconds", 0.0)) << " (log: " << run.value("log", "") << ")";
      else if (run.contains("log")) md << " (log: " << run.value("log", "") << ")";
      md << "\n";
    }
    md << "\n";
    if (!t["missing"].empty()) {
      md << "**Missing**:\n\n";
      for (const auto& m : t["missing"]) md << "- " << m.get<std::string>() << "\n";
      md << "\n";
    }
    for (const auto& s : t["sections"]) {
      md << "### " << s.value("title", "") << "\n\n";
      if (!s.value("note", "").empty()) md << s.value("note", "") << "\n\n";
      std::vector<std::string> cols;
      for (const auto& c : s["columns"]) cols.push_back(c.get<std::string>());
      if (!cols.empty()) table(md, cols, s["rows"]);
    }
    for (const auto& p : t["plots"]) {
      const std::string file = p.value("file", "");
      if (files.count(file))
        md << "![" << p.value("title", "") << "](plots/" << file << ".png)\n\n(" << "[SVG](plots/" << file << ".svg))\n\n";
      else
        md << "*Plot \"" << p.value("title", "") << "\" not drawn (see above); its data is in reproduce.json.*\n\n";
    }
    if (!t["claims"].empty()) {
      md << "### Claims\n\n";
      json crows = json::array();
      for (const auto& c : t["claims"]) {
        const std::string v = c.value("verdict", "");
        crows.push_back({v == "held" ? "**held**" : v == "not held" ? "**not held**" : "not checked", c.value("claim", ""), c.value("source", ""),
                         c.value("evidence", "")});
      }
      table(md, {"verdict", "claim", "source", "numbers"}, crows);
    }
  }
  return md.str();
}

}  // namespace soac::reproduce

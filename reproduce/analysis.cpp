#include "reproduce/analysis.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <iomanip>
#include <set>
#include <sstream>

#include "core/error.hpp"

namespace soac::reproduce {

std::string_view to_string(mode m) {
  switch (m) {
    case mode::full: return "full";
    case mode::quick: return "quick";
    case mode::host: return "host";
  }
  return "full";
}

mode parse_mode(std::string_view text) {
  if (text == "full") return mode::full;
  if (text == "quick") return mode::quick;
  if (text == "host") return mode::host;
  throw input_error("reproduce: unknown mode '" + std::string(text) + "' (full, quick, host)");
}

std::string_view to_string(verdict v) {
  switch (v) {
    case verdict::held: return "held";
    case verdict::not_held: return "not held";
    case verdict::not_checked: return "not checked";
  }
  return "not checked";
}

std::vector<std::string> run_spec::command() const {
  std::vector<std::string> out = {"bench", app};
  out.insert(out.end(), args.begin(), args.end());
  out.insert(out.end(), {"--runs", std::to_string(runs), "--warmup", std::to_string(warmup)});
  return out;
}

std::vector<const table_spec*> select_tables(const std::vector<std::string>& names) {
  const auto& all = catalogue();
  std::set<std::string> wanted;
  for (const auto& n : names) {
    if (n == "all") {
      for (const auto& t : all) wanted.insert(t.id);
      continue;
    }
    if (std::none_of(all.begin(), all.end(), [&](const table_spec& t) { return t.id == n; })) {
      std::string known;
      for (const auto& t : all) known += (known.empty() ? "" : ", ") + t.id;
      throw usage_error("reproduce: unknown table '" + n + "' (tables: " + known + ", or all; see soac reproduce --list)");
    }
    wanted.insert(n);
  }
  if (wanted.empty()) throw usage_error("reproduce: name a TABLE or all (see soac reproduce --list)");
  std::vector<const table_spec*> out;
  for (const auto& t : all)
    if (wanted.count(t.id)) out.push_back(&t);
  return out;
}

std::vector<run_spec> plan_runs(const std::vector<const table_spec*>& tables, mode m,
                                std::map<std::string, std::string>& aliases) {
  std::vector<run_spec> out;
  auto planned = [&](const std::string& id) {
    return std::any_of(out.begin(), out.end(), [&](const run_spec& r) { return r.id == id; });
  };
  for (const auto* t : tables)
    for (const auto& r : t->runs(m)) {
      if (planned(r.id)) continue;
      const auto by = std::find_if(r.served_by.begin(), r.served_by.end(), planned);
      if (by != r.served_by.end()) {
        aliases[r.id] = *by;
        continue;
      }
      out.push_back(r);
    }
  return out;
}

const json& member(const json& j, const std::string& key) {
  static const json none = json::object();
  return j.is_object() && j.contains(key) ? j[key] : none;
}

// ---- bench JSON

const json& cases_of(const json& bench) {
  static const json none = json::array();
  return bench.is_object() && bench.contains("cases") ? bench["cases"] : none;
}

namespace {
const json& variants_of(const json& c) {
  static const json none = json::array();
  return c.is_object() && c.contains("variants") ? c["variants"] : none;
}
}  // namespace

const json* variant(const json& c, std::string_view name) {
  for (const auto& v : variants_of(c))
    if (v.value("name", "") == name) return &v;
  return nullptr;
}

const json* variant_starting(const json& c, std::string_view prefix) {
  for (const auto& v : variants_of(c))
    if (v.value("name", "").starts_with(prefix)) return &v;
  return nullptr;
}

const json* first_of_role(const json& c, std::string_view role) {
  for (const auto& v : variants_of(c))
    if (v.value("role", "") == role) return &v;
  return nullptr;
}

const json* fastest_of_role(const json& c, std::string_view role) {
  const json* best = nullptr;
  for (const auto& v : variants_of(c))
    if (v.value("role", "") == role && (!best || median_ms(v) < median_ms(*best))) best = &v;
  return best;
}

double median_ms(const json& v) { return v.value("median_ms", 0.0); }
std::string name_of(const json& v) { return v.value("name", ""); }
std::string note_of(const json& v) { return v.value("note", ""); }

std::string variant_names(const json& c) {
  std::string out;
  for (const auto& v : variants_of(c)) out += (out.empty() ? "" : ", ") + name_of(v);
  return out.empty() ? "none" : out;
}

double param(const json& c, const std::string& key) {
  if (!c.contains("params") || !c["params"].contains(key) || !c["params"][key].is_number()) return 0;
  return c["params"][key].get<double>();
}

// ---- formatting

std::string fmt_num(double v, int digits) {
  std::ostringstream s;
  s << std::fixed << std::setprecision(digits) << v;
  return s.str();
}

std::string fmt_ms(double ms) {
  if (!(ms > 0)) return "-";
  if (ms >= 100) return fmt_num(ms, 1);
  if (ms >= 1) return fmt_num(ms, 3);
  const int digits = std::clamp(3 - int(std::floor(std::log10(ms))), 3, 8);
  return fmt_num(ms, digits);
}

std::string fmt_ratio(double r) { return r > 0 && std::isfinite(r) ? fmt_num(r, 2) + "x" : "-"; }

std::string fmt_count(double v) {
  const auto i = static_cast<std::uint64_t>(v);
  if (double(i) == v && i >= 1024 && std::has_single_bit(i)) return "2^" + std::to_string(std::countr_zero(i));
  std::ostringstream s;
  s << std::fixed << std::setprecision(0) << v;
  return s.str();
}

json series(const std::string& name, const std::vector<double>& x, const std::vector<double>& y, bool from_paper) {
  return {{"name", name}, {"x", x}, {"y", y}, {"paper", from_paper}};
}

// ---- table_builder

table_builder::table_builder(const table_spec& spec, const std::map<std::string, json>& runs, mode m)
    : spec_(spec), runs_(runs), mode_(m) {
  out_ = {{"id", spec.id},
          {"title", spec.title},
          {"paper", spec.paper},
          {"gpu", paper().value("gpu", "")},
          {"missing", json::array()},
          {"runs", json::array()},
          {"sections", json::array()},
          {"claims", json::array()},
          {"plots", json::array()}};
}

const json& table_builder::paper_numbers(const std::string& key) const {
  static const json none = json::object();
  return papers().contains(key) ? papers()[key] : none;
}

const json& table_builder::paper() const {
  static const json none = json::object();
  const auto& p = papers()["papers"];
  return p.contains(spec_.paper) ? p[spec_.paper] : none;
}

const json* table_builder::bench(const std::string& run_id) {
  const auto it = runs_.find(run_id);
  if (it == runs_.end()) {
    missing("run " + run_id + " is not part of this reproduction");
    return nullptr;
  }
  const json& r = it->second;
  const std::string id = r.value("id", run_id);
  if (std::find(out_["runs"].begin(), out_["runs"].end(), id) == out_["runs"].end()) out_["runs"].push_back(id);
  if (r.value("status", "") == "ok" && r.contains("bench") && r["bench"].is_object()) return &r["bench"];
  std::string why = "`";
  why.append(command_text(r)).append("`: ").append(r.value("reason", std::string("did not run")));
  missing(why);
  return nullptr;
}

std::string command_text(const json& run) {
  std::string cmd = "soac";
  for (const auto& a : member(run, "command")) cmd.append(" ").append(a.get<std::string>());
  return cmd;
}

void table_builder::section(std::string title, std::string note, std::vector<std::string> columns,
                            std::vector<std::vector<std::string>> rows) {
  out_["sections"].push_back({{"title", std::move(title)}, {"note", std::move(note)}, {"columns", std::move(columns)}, {"rows", std::move(rows)}});
}

void table_builder::text(std::string title, std::string body) {
  out_["sections"].push_back({{"title", std::move(title)}, {"note", std::move(body)}, {"columns", json::array()}, {"rows", json::array()}});
}

void table_builder::claim(std::string statement, std::string source, verdict v, std::string evidence) {
  out_["claims"].push_back({{"claim", std::move(statement)}, {"source", std::move(source)},
                            {"verdict", std::string(to_string(v))}, {"evidence", std::move(evidence)}});
}

void table_builder::plot(std::string name, std::string title, json panels) {
  out_["plots"].push_back({{"file", spec_.id + "-" + name}, {"title", std::move(title)}, {"panels", std::move(panels)}});
}

void table_builder::missing(std::string reason) {
  for (const auto& m : out_["missing"])
    if (m == reason) return;
  out_["missing"].push_back(std::move(reason));
}

void table_builder::results_checked(const std::vector<std::string>& run_ids) {
  int checked = 0;
  std::vector<std::string> wrong;
  for (const auto& id : run_ids) {
    const auto it = runs_.find(id);
    if (it == runs_.end() || it->second.value("status", "") != "ok") continue;
    for (const auto& c : cases_of(it->second["bench"]))
      for (const auto& v : variants_of(c)) {
        ++checked;
        const std::string note = note_of(v);
        if (note.find("WRONG") != std::string::npos || note.find("MISMATCH") != std::string::npos ||
            note.find("INVALID") != std::string::npos)
          wrong.push_back(c.value("name", "") + ": " + name_of(v));
      }
  }
  const std::string what = "every result measured matches the bench's reference (a sequential one or a baseline)";
  if (checked == 0) {
    claim(what, "this run", verdict::not_checked, "no run of this table completed");
    return;
  }
  std::string evidence = std::to_string(checked) + " variant results";
  if (!wrong.empty()) {
    evidence += "; wrong: ";
    for (std::size_t i = 0; i < wrong.size() && i < 5; ++i) evidence += (i ? "; " : "") + wrong[i];
    if (wrong.size() > 5) evidence += " and " + std::to_string(wrong.size() - 5) + " more";
  }
  claim(what, "this run", wrong.empty(), evidence);
}

json table_builder::finish() {
  const bool any_data = !out_["sections"].empty();
  out_["status"] = out_["missing"].empty() ? "complete" : any_data ? "partial" : "missing";
  // A table with no data checks nothing: its claims would all say "not checked".
  if (!any_data) out_["claims"] = json::array();
  return std::move(out_);
}

json analyze_table(const table_spec& t, const std::map<std::string, json>& runs, mode m) {
  table_builder b(t, runs, m);
  try {
    t.analyze(b);
  } catch (const std::exception& e) {
    // An analysis that trips over a bench whose output changed shape must not lose the report.
    b.missing(std::string("the analysis failed: ") + e.what());
  }
  return b.finish();
}

void analyze(json& reproduction, const std::vector<const table_spec*>& tables) {
  const mode m = parse_mode(reproduction.value("mode", "full"));
  std::map<std::string, json> runs;
  for (const auto& r : member(reproduction, "runs")) runs[r.value("id", "")] = r;
  const json& aliases = member(reproduction, "aliases");
  for (const auto& [alias, target] : aliases.items())
    if (runs.count(target.get<std::string>())) runs[alias] = runs[target.get<std::string>()];
  reproduction["tables"] = json::array();
  for (const auto* t : tables) reproduction["tables"].push_back(analyze_table(*t, runs, m));
}

}  // namespace soac::reproduce

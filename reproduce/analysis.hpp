// What a table's analysis works with: the bench JSON of its runs (queries that survive small
// renames of variants: by role, by prefix), the papers' numbers, and a builder for the table's
// sections (markdown tables), claims and plots.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "reproduce/reproduce.hpp"

namespace soac::reproduce {

// j[key] by reference, or an empty object when j has no such member (value() would copy).
const json& member(const json& j, const std::string& key);

// ---- bench JSON (bench::suite::to_json)

// The cases of a bench run.
const json& cases_of(const json& bench);
// The variant named exactly `name`, or null.
const json* variant(const json& c, std::string_view name);
// The first variant whose name starts with `prefix`, or null.
const json* variant_starting(const json& c, std::string_view prefix);
// The first / the fastest variant of a role ("soac" or "baseline"), or null.
const json* first_of_role(const json& c, std::string_view role);
const json* fastest_of_role(const json& c, std::string_view role);
double median_ms(const json& v);
std::string name_of(const json& v);
std::string note_of(const json& v);
// The variants' names, for "not found" messages.
std::string variant_names(const json& c);
// A number from the case's params (0 when absent).
double param(const json& c, const std::string& key);

// "soac bench ..." of a run's result (its "command").
std::string command_text(const json& run);

// ---- formatting

// Milliseconds with 3-4 significant digits ("0.0311", "1.383", "191.6").
std::string fmt_ms(double ms);
std::string fmt_ratio(double r);  // "1.23x"; "-" when not positive
std::string fmt_num(double v, int digits = 2);
std::string fmt_count(double v);  // "2^20" for powers of two from 2^10, else the integer

// ---- claims

enum class verdict { held, not_held, not_checked };

// Builds one table's result JSON (see analyze_table in reproduce.hpp).
class table_builder {
 public:
  table_builder(const table_spec& spec, const std::map<std::string, json>& runs, mode m);

  mode which_mode() const { return mode_; }
  const json& paper_numbers(const std::string& key) const;  // papers.json[key]
  const json& paper() const;                                 // papers.json["papers"][spec.paper]

  // The bench JSON of a run, or null (its absence is recorded in the table's "missing" with
  // the run's reason).
  const json* bench(const std::string& run_id);
  // bench(run_id), with the table's claim that every result the run checked was right
  // (results_checked) for a table of one run.
  const json* checked_bench(const std::string& run_id) {
    results_checked({run_id});
    return bench(run_id);
  }

  // A markdown table (a title, a note under it, columns, rows of cells).
  void section(std::string title, std::string note, std::vector<std::string> columns,
               std::vector<std::vector<std::string>> rows);
  // A paragraph of text only.
  void text(std::string title, std::string body);
  void claim(std::string statement, std::string source, verdict v, std::string evidence);
  void claim(std::string statement, std::string source, bool held, std::string evidence) {
    claim(std::move(statement), std::move(source), held ? verdict::held : verdict::not_held, std::move(evidence));
  }
  // A figure of panels (see plot.py): {"title", "xlabel", "ylabel", "xlog", "ylog", "kind":
  // "lines" | "bars", "series": [{"name", "x": [...], "y": [...], "paper": bool}], "categories"
  // for bars}.
  void plot(std::string name, std::string title, json panels);
  void missing(std::string reason);

  // Results checked in the run: a claim from every variant note that says WRONG, MISMATCH or
  // INVALID (the benches check every result against a reference or a baseline).
  void results_checked(const std::vector<std::string>& run_ids);

  json finish();

 private:
  const table_spec& spec_;
  const std::map<std::string, json>& runs_;
  mode mode_;
  json out_;
};

std::string_view to_string(verdict v);

// A series for a plot panel.
json series(const std::string& name, const std::vector<double>& x, const std::vector<double>& y, bool from_paper = false);

}  // namespace soac::reproduce

// `soac reproduce`: the papers' tables and figures regenerated on this machine. A table (one of
// the papers' tables or figures) names the `soac bench` runs it needs; the runs are made as
// subprocesses of the soac executable, each writing its bench JSON; each table's analysis puts
// this run's numbers beside the papers' (reproduce/papers.json), checks the papers' claims
// (held / not held / not checked) and describes its plots; a markdown report and a JSON file
// hold everything, and reproduce/plot.py draws the plots.
//
// Why subprocesses rather than calling the apps in-process: one bench that fails (a CUDA error
// leaves the process's context unusable, an allocation fails) cannot take the other tables with
// it, every bench starts with the whole GPU memory free, each run leaves a log and a command a
// user can rerun alone, and the progress line reads the bench's own progress output.
#pragma once

#include <filesystem>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace soac::reproduce {

using json = nlohmann::json;

// full: the papers' sizes on the GPU; quick: reduced sizes for a first look; host: no GPU, the
// tables whose benches run on the host backend, at quick sizes or smaller.
enum class mode { full, quick, host };
std::string_view to_string(mode m);
mode parse_mode(std::string_view text);

// One `soac bench APP ARGS... --runs R --json FILE` a table needs.
struct run_spec {
  run_spec(std::string run_id, std::string bench_app, std::vector<std::string> bench_args)
      : id(std::move(run_id)), app(std::move(bench_app)), args(std::move(bench_args)) {}
  std::string id;                 // unique within a reproduction, e.g. "hist-fig7"
  std::string app;
  std::vector<std::string> args;  // after `soac bench APP`
  int runs = 11;                  // timed runs per variant (median reported)
  int warmup = 5;                 // untimed runs first
  std::string gpu_only;           // non-empty: why the bench needs a GPU (the host mode skips it)
  double estimate_s = 10;         // wall seconds measured on an H100 (full, quick), guessed for 2 host cores
  // Runs whose JSON serves this one as well when they are part of the same reproduction (the
  // Fig 7 sweep holds everything Table II needs).
  std::vector<std::string> served_by;
  // The arguments after `soac`, --json and the backend excluded.
  std::vector<std::string> command() const;
};

struct table_spec {
  std::string id;       // the TABLE argument, e.g. "sc20-fig7"
  std::string title;    // e.g. "SC20 Fig 7 and Table I: ..."
  std::string paper;    // key in papers.json's "papers"
  std::function<std::vector<run_spec>(mode)> runs;
  // Builds the table's result (see table_builder in analysis.hpp) from the runs' results.
  std::function<void(class table_builder&)> analyze;
};

// Every table, in the order `all` runs them.
const std::vector<table_spec>& catalogue();
// The tables named ("all" for every one), in catalogue order; unknown -> usage_error naming them.
std::vector<const table_spec*> select_tables(const std::vector<std::string>& names);

// reproduce/papers.json and reproduce/plot.py, compiled in (the binary works from any folder).
const json& papers();
std::string_view plot_script();

// The runs the tables need in `m`, each once: a run served by an earlier one (served_by) is
// left out, and `aliases` maps its id to the run that serves it.
std::vector<run_spec> plan_runs(const std::vector<const table_spec*>& tables, mode m,
                                std::map<std::string, std::string>& aliases);

// A run's result as recorded in reproduce.json:
// {"id", "app", "command": [...], "status": "ok" | "failed" | "skipped", "reason", "exit_code",
//  "seconds", "log", "bench": the bench's JSON (ok only)}.
// One table's result: {"id", "title", "paper", "gpu", "status": "complete" | "partial" |
// "missing", "missing": [reasons], "runs": [ids], "sections": [...], "claims": [...],
// "plots": [...]} (see table_builder).
json analyze_table(const table_spec& t, const std::map<std::string, json>& runs, mode m);

// The whole reproduction: {"format": "soac-reproduce", "version": 1, "date", "command", "mode",
// "environment", "runs": [...], "aliases", "tables": [...], "plots": {"drawn", "note"}}.
// analyze() (re)computes "tables" from "runs".
void analyze(json& reproduction, const std::vector<const table_spec*>& tables);
std::string markdown(const json& reproduction);

// ---- running (runner.cpp)

struct runner_options {
  std::filesystem::path exe;  // the soac executable
  std::filesystem::path dir;  // output folder
  std::string backend = "cuda";
  int device = 0;
  int runs = 0;  // > 0: --runs for every bench instead of each run's own
  bool progress = true;
};

// Runs every spec (skipping GPU-only ones in host mode), writing DIR/runs/ID.json and ID.log,
// with a progress line and an estimate of the time left on stderr. `after_each` sees every
// result as it comes (to save partial results).
std::vector<json> run_all(const std::vector<run_spec>& specs, mode m, const runner_options& o,
                          const std::function<void(const json&)>& after_each);

// Draws the reproduction's plots with python3 and matplotlib (DIR/plot.py, written from the
// compiled-in script): returns {"drawn": bool, "python": PATH, "note": why not, or what ran}.
json draw_plots(const std::filesystem::path& dir, const std::filesystem::path& reproduction_json);

}  // namespace soac::reproduce

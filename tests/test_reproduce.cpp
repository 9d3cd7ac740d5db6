// soac reproduce: the catalogue, the report generator on a small real host run (through the CLI,
// as users run it), the claim checker (held / not held), the plots, and the CLI's errors.
#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include "core/error.hpp"
#include "tests/cli_runner.hpp"
#include "reproduce/analysis.hpp"
#include "reproduce/reproduce.hpp"

namespace {

namespace fs = std::filesystem;
using namespace soac;
using namespace soac::reproduce;

using soac::testing::outcome;
using soac::testing::soac_cli;

std::string read_text(const fs::path& p) {
  std::ifstream in(p);
  return {std::istreambuf_iterator<char>(in), {}};
}

bool contains(const std::string& text, const std::string& what) { return text.find(what) != std::string::npos; }

const table_spec& table(const std::string& id) { return *select_tables({id}).front(); }

// The claim of a table result whose text starts with `prefix`.
const json& claim_of(const json& t, const std::string& prefix) {
  for (const auto& c : t["claims"])
    if (c["claim"].get<std::string>().starts_with(prefix)) return c;
  static const json none = {{"verdict", "absent"}};
  ADD_FAILURE() << "no claim starting with '" << prefix << "' in " << t["claims"].dump(1);
  return none;
}

// ---- the catalogue

TEST(ReproduceCatalogue, EveryTableOfTheIssueWithRunsInEveryMode) {
  const std::set<std::string> issue = {"sc20-fig7", "sc20-table2", "sc20-table3", "fhpc17-fig9", "fhpc17-fig11", "fhpc17-fig13",
                                       "fhpc17-fig15", "fhpc17-fig16", "report-fig15", "report-bfs", "thesis-scan", "zone-stream"};
  std::set<std::string> ids;
  for (const auto& t : catalogue()) {
    EXPECT_TRUE(ids.insert(t.id).second) << "duplicate " << t.id;
    EXPECT_TRUE(papers()["papers"].contains(t.paper)) << t.id;
    for (const mode m : {mode::full, mode::quick, mode::host}) {
      const auto runs = t.runs(m);
      EXPECT_FALSE(runs.empty()) << t.id;
      for (const auto& r : runs) EXPECT_GT(r.estimate_s, 0) << r.id;
    }
  }
  EXPECT_EQ(ids, issue);
}

TEST(ReproduceCatalogue, PaperNumbersAsTheTablesNeedThem) {
  const json& t2 = papers()["sc20_table2"];
  EXPECT_EQ(t2["H"].size(), 12u);
  for (const auto& [row, values] : t2["speedup"].items()) EXPECT_EQ(values.size(), 12u) << row;
  EXPECT_EQ(papers()["sc20_table3"]["rows"].size(), 10u);
  EXPECT_EQ(papers()["write_bfs"]["rodinia"].size(), papers()["write_bfs"]["datasets"].size());
  EXPECT_DOUBLE_EQ(papers()["sc20_table3"]["rows"][1]["speedup"].get<double>(), 2.65);  // gromacs CAS
}

TEST(ReproduceCatalogue, SelectionAndSharedRuns) {
  EXPECT_EQ(select_tables({"all"}).size(), catalogue().size());
  EXPECT_THROW(select_tables({"sc20-fig8"}), usage_error);
  EXPECT_THROW(select_tables({}), usage_error);
  // Table II reuses the Fig 7 sweep when both run; alone it runs its own.
  std::map<std::string, std::string> aliases;
  const auto both = plan_runs(select_tables({"sc20-table2", "sc20-fig7"}), mode::full, aliases);
  ASSERT_EQ(both.size(), 1u);
  EXPECT_EQ(both[0].id, "hist-fig7");
  EXPECT_EQ(aliases["hist-table2"], "hist-fig7");
  aliases.clear();
  const auto alone = plan_runs(select_tables({"sc20-table2"}), mode::full, aliases);
  ASSERT_EQ(alone.size(), 1u);
  EXPECT_EQ(alone[0].id, "hist-table2");
  EXPECT_TRUE(aliases.empty());
}

// ---- the report generator on a small real host run

class ReproduceHostRun : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = fs::temp_directory_path() / ("soac_reproduce_" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    // Small and quick: the scatter kernels, BFS on the host, and one GPU-only table.
    run_ = new outcome(soac_cli("reproduce report-fig15 report-bfs sc20-fig7 --backend host --runs 1 --no-progress -o " + dir_.string()));
  }
  static void TearDownTestSuite() {
    fs::remove_all(dir_);
    delete run_;
  }
  static json reproduction() {
    std::ifstream in(dir_ / "reproduce.json");
    return json::parse(in);
  }
  // The runs of the reproduction by id, as analyze_table takes them.
  static std::map<std::string, json> runs() {
    std::map<std::string, json> out;
    const json all = reproduction();
    for (const auto& r : all["runs"]) out[r["id"].get<std::string>()] = r;
    return out;
  }
  static fs::path dir_;
  static outcome* run_;
};
fs::path ReproduceHostRun::dir_;
outcome* ReproduceHostRun::run_ = nullptr;

TEST_F(ReproduceHostRun, WritesTheReportWithEveryTablePresentOrMissing) {
  ASSERT_EQ(run_->code, 0) << run_->output;
  EXPECT_TRUE(contains(run_->output, "no CUDA GPU")) << run_->output;
  const json r = reproduction();
  EXPECT_EQ(r["format"], "soac-reproduce");
  EXPECT_EQ(r["mode"], "host");
  EXPECT_EQ(r["environment"]["backend"], "host");
  ASSERT_EQ(r["tables"].size(), 3u);
  std::map<std::string, std::string> status;
  for (const auto& t : r["tables"]) status[t["id"]] = t["status"];
  EXPECT_EQ(status["report-fig15"], "complete");
  EXPECT_EQ(status["report-bfs"], "complete");
  EXPECT_EQ(status["sc20-fig7"], "missing");
  for (const auto& run : r["runs"]) {
    if (run["id"] == "hist-fig7") {
      EXPECT_EQ(run["status"], "skipped");
      EXPECT_TRUE(contains(run["reason"], "needs a CUDA GPU"));
    } else {
      EXPECT_EQ(run["status"], "ok") << run.dump(1);
      EXPECT_TRUE(run["bench"].contains("cases"));
      EXPECT_TRUE(fs::exists(dir_ / run["log"].get<std::string>()));
    }
  }
  const std::string md = read_text(dir_ / "report.md");
  for (const std::string heading : {"## Summary", "## Write report Fig 15", "## Write report Figs 22-26", "## SC20 Fig 7",
                                    "### Fig 22: this run beside the report", "### Claims", "**Missing**", "needs a CUDA GPU"})
    EXPECT_TRUE(contains(md, heading)) << heading;
  // The paper's number beside this run's: the report's 1M Rodinia time (10942 us) in ms.
  EXPECT_TRUE(contains(md, "| 1M | 10.942 |")) << md;
  // Every claim of the complete tables is decided on the real run (none left unchecked here).
  for (const auto& t : r["tables"]) {
    if (t["status"] != "complete") continue;
    for (const auto& c : t["claims"]) {
      const std::string text = c["claim"];
      if (text.starts_with("padded BFS is slower") || text.starts_with("the chunked kernel")) {
        EXPECT_NE(c["verdict"], "not checked") << c.dump();
      }
    }
  }
}

TEST_F(ReproduceHostRun, PlotsWrittenWhenMatplotlibIsThere) {
  ASSERT_EQ(run_->code, 0) << run_->output;
  const json r = reproduction();
  const std::string md = read_text(dir_ / "report.md");
  // The same search as soac's: SOAC_PYTHON when set, else PATH's python3, then the system's.
  const char* forced = std::getenv("SOAC_PYTHON");
  const std::vector<std::string> pythons =
      forced && *forced ? std::vector<std::string>{forced} : std::vector<std::string>{"python3", "/usr/bin/python3"};
  bool matplotlib = false;
  for (const auto& python : pythons)
    matplotlib = matplotlib || std::system((python + " -c 'import matplotlib' >/dev/null 2>&1").c_str()) == 0;
  if (matplotlib) {
    ASSERT_TRUE(r["plots"]["drawn"]) << r["plots"].dump();
    for (const std::string f : {"report-bfs-fig22.png", "report-bfs-fig22.svg"}) EXPECT_GT(fs::file_size(dir_ / "plots" / f), 1000u) << f;
    EXPECT_TRUE(contains(md, "![Write report Fig 22: BFS ports against Rodinia](plots/report-bfs-fig22.png)"));
  } else {
    EXPECT_FALSE(r["plots"]["drawn"]);
    EXPECT_TRUE(contains(md, "**Plots not drawn**"));
  }
}

TEST_F(ReproduceHostRun, WithoutPythonTheReportSaysSoAndKeepsTheTables) {
  ASSERT_EQ(run_->code, 0) << run_->output;
  const fs::path copy = dir_ / "nopython";
  fs::create_directories(copy);
  fs::copy_file(dir_ / "reproduce.json", copy / "reproduce.json");
  for (const auto& [python, note] : {std::pair<std::string, std::string>{"/nonexistent/python3", "python3 was not found"},
                                     {"/bin/false", "python3 has no matplotlib"}}) {
    ::setenv("SOAC_PYTHON", python.c_str(), 1);
    const auto run = soac_cli("reproduce report-fig15 report-bfs sc20-fig7 --report-only -o " + copy.string());
    ::unsetenv("SOAC_PYTHON");
    ASSERT_EQ(run.code, 0) << run.output;
    const std::string md = read_text(copy / "report.md");
    EXPECT_TRUE(contains(md, "**Plots not drawn**: " + note)) << python;
    EXPECT_TRUE(contains(md, "### Fig 22: this run beside the report")) << python;
  }
}

// A reproduce.json edited by hand (or from another version) is bad input: exit 3 naming the file,
// never an internal error.
TEST_F(ReproduceHostRun, ReportOnlyOnAMalformedReproductionIsAnInputError) {
  ASSERT_EQ(run_->code, 0) << run_->output;
  const json good = reproduction();
  const fs::path copy = dir_ / "malformed";
  fs::create_directories(copy);
  json wrong_environment = good, wrong_run_id = good;
  wrong_environment["environment"] = nullptr;
  wrong_run_id["runs"][0]["id"] = nullptr;
  for (const json& bad : {json::array(), wrong_environment, wrong_run_id}) {
    std::ofstream(copy / "reproduce.json") << bad.dump();
    const auto run = soac_cli("reproduce all --report-only --no-plots -o " + copy.string());
    EXPECT_EQ(run.code, 3) << bad.dump().substr(0, 200) << "\n" << run.output;
    EXPECT_TRUE(contains(run.output, "reproduce.json")) << run.output;
  }
}

// The claim checker on the real run, with one median changed so the claim must flip.
void set_median(std::map<std::string, json>& runs, const std::string& run, const std::string& case_prefix, const std::string& variant,
                double ms) {
  for (auto& c : runs[run]["bench"]["cases"])
    if (c["name"].get<std::string>().starts_with(case_prefix))
      for (auto& v : c["variants"])
        if (v["name"] == variant) v["median_ms"] = ms;
}

double median_of(std::map<std::string, json>& runs, const std::string& run, const std::string& case_prefix, const std::string& variant) {
  for (auto& c : runs[run]["bench"]["cases"])
    if (c["name"].get<std::string>().starts_with(case_prefix))
      for (auto& v : c["variants"])
        if (v["name"] == variant) return v["median_ms"];
  ADD_FAILURE() << variant << " not in " << case_prefix;
  return 0;
}

TEST_F(ReproduceHostRun, ClaimsHeldAndNotHeldFollowTheNumbers) {
  ASSERT_EQ(run_->code, 0) << run_->output;
  auto rs = runs();
  const double rodinia = median_of(rs, "bfs-report", "1M:", "rodinia");
  const std::string slower = "padded BFS is slower than Rodinia's on 1M";
  set_median(rs, "bfs-report", "1M:", "padded", 3 * rodinia);
  EXPECT_EQ(claim_of(analyze_table(table("report-bfs"), rs, mode::host), slower)["verdict"], "held");
  set_median(rs, "bfs-report", "1M:", "padded", 0.5 * rodinia);
  EXPECT_EQ(claim_of(analyze_table(table("report-bfs"), rs, mode::host), slower)["verdict"], "not held");

  const double plain = median_of(rs, "scatter-fig15", "fig15a", "soac plain");
  const std::string chunked = "the chunked kernel is not faster";
  set_median(rs, "scatter-fig15", "fig15a", "soac chunked-10", 1.02 * plain);
  EXPECT_EQ(claim_of(analyze_table(table("report-fig15"), rs, mode::host), chunked)["verdict"], "held");
  set_median(rs, "scatter-fig15", "fig15a", "soac chunked-10", 0.5 * plain);
  const json t = analyze_table(table("report-fig15"), rs, mode::host);
  EXPECT_EQ(claim_of(t, chunked)["verdict"], "not held");
  EXPECT_TRUE(contains(claim_of(t, chunked)["evidence"], "0.50x")) << claim_of(t, chunked).dump();

  // A wrong result reported by a bench fails the table's check.
  for (auto& c : rs["scatter-fig15"]["bench"]["cases"]) c["variants"][0]["note"] = "WRONG: 3 elements differ";
  EXPECT_EQ(claim_of(analyze_table(table("report-fig15"), rs, mode::host), "every result measured")["verdict"], "not held");
}

TEST_F(ReproduceHostRun, RenamedVariantsLeaveClaimsUncheckedNotCrashed) {
  ASSERT_EQ(run_->code, 0) << run_->output;
  auto rs = runs();
  for (auto& c : rs["bfs-report"]["bench"]["cases"])
    for (auto& v : c["variants"])
      if (v["name"] == "padded") v["name"] = "padded (renamed)";
  const json t = analyze_table(table("report-bfs"), rs, mode::host);
  EXPECT_EQ(claim_of(t, "padded BFS is slower")["verdict"], "not checked");
  EXPECT_EQ(t["status"], "complete");
  // A bench JSON of the wrong shape: the analysis failure is reported, the table kept.
  rs["bfs-report"]["bench"]["cases"] = json::array({{{"name", "1M: traversal"}, {"variants", json::array({{{"name", "rodinia"}, {"median_ms", "x"}}})}}});
  const json broken = analyze_table(table("report-bfs"), rs, mode::host);
  EXPECT_NE(broken["status"], "complete");
  EXPECT_TRUE(contains(broken["missing"].dump(), "the analysis failed")) << broken.dump(1);
}

// A real H100 run (`soac bench bfs --json`, commit 993fa3b, the lead's measurement for issue 24):
// every claim of the BFS table decided on GPU numbers, and the environment as the report shows it.
TEST(ReproduceH100Run, BfsTableFromARealBenchJson) {
  std::ifstream in(fs::path(SOAC_TEST_DATA) / "bench-bfs-h100.json");
  ASSERT_TRUE(in) << SOAC_TEST_DATA;
  const json bench = json::parse(in);
  std::map<std::string, json> runs = {{"bfs-report", {{"id", "bfs-report"}, {"status", "ok"}, {"command", {"bench", "bfs"}}, {"bench", bench}}}};
  const json t = analyze_table(table("report-bfs"), runs, mode::full);
  EXPECT_EQ(t["status"], "complete");
  for (const auto& c : t["claims"]) EXPECT_EQ(c["verdict"], "held") << c.dump();
  EXPECT_TRUE(contains(claim_of(t, "padded BFS is slower than Rodinia's on 1M")["evidence"], "1.93x"));
  json rep = {{"format", "soac-reproduce"}, {"mode", "full"}, {"environment", bench["environment"]}, {"runs", json::array({runs["bfs-report"]})}};
  analyze(rep, select_tables({"report-bfs"}));
  const std::string md = markdown(rep);
  EXPECT_TRUE(contains(md, "# soac reproduce: the papers' tables and figures on NVIDIA H100 80GB HBM3")) << md.substr(0, 300);
  EXPECT_TRUE(contains(md, "| HH5K | 52.401 | 18.092 | 48.919 | 0.35x | 5.303 | 0.9504 | 1.097 | 0.05907 | 0.18x |")) << md;
}

// ---- the GPU-only tables' checkers, on synthetic bench JSON shaped as their benches write it
// (no GPU here; these numbers exist only to drive the checks both ways and never reach a report).

json variant_json(const std::string& name, const std::string& role, double ms, const std::string& note = "") {
  json v = {{"name", name}, {"role", role}, {"median_ms", ms}};
  if (!note.empty()) v["note"] = note;
  return v;
}

// One case of `soac bench hist` over n elements, with its read floor where floor_ms > 0.
json hist_case_json(const std::string& op, double H, double rf, json variants, double floor_ms = 0, double n = 50000000) {
  json c = {{"name", op + " H=" + std::to_string(std::int64_t(H)) + " RF=" + std::to_string(std::int64_t(rf))},
            {"params", {{"op", op}, {"H", H}, {"RF", rf}, {"n", n}}},
            {"variants", std::move(variants)}};
  if (floor_ms > 0) c["floor_ms"] = floor_ms;
  return c;
}

std::map<std::string, json> ok_run(const std::string& id, json cases) {
  return {{id, {{"id", id}, {"status", "ok"}, {"command", {"bench"}}, {"bench", {{"cases", cases}, {"environment", {{"backend", "cuda"}}}}}}}};
}

TEST(ReproduceCheckers, Fig7AutoAgainstTheBestFixedChoice) {
  auto runs_with = [](double auto_ms) {
    json cases = json::array();
    for (const std::string op : {"HDW", "CAS", "XCG(argmax)"})
      for (double rf : {1.0, 63.0})
        cases.push_back(hist_case_json(op, 2048, rf,
                                       json::array({variant_json("CUB HistogramEven", "baseline", 1.0),
                                                    variant_json("soac auto", "soac", auto_ms, "shared M=" + std::string(rf > 1 ? "24" : "6") + " S=1 Hchk=2048"),
                                                    variant_json("shared M0=1", "soac", 0.3), variant_json("shared M1=6", "soac", 0.1),
                                                    variant_json("shared M3=18", "soac", 0.2)})));
    return ok_run("hist-fig7", cases);
  };
  const std::string within = "auto's (M,S) is within 5%";
  EXPECT_EQ(claim_of(analyze_table(table("sc20-fig7"), runs_with(0.104), mode::full), within)["verdict"], "held");
  const json t = analyze_table(table("sc20-fig7"), runs_with(0.2), mode::full);
  EXPECT_EQ(claim_of(t, within)["verdict"], "not held");
  EXPECT_TRUE(contains(claim_of(t, within)["evidence"], "2.00x")) << claim_of(t, within).dump();
  EXPECT_TRUE(contains(t.dump(), "sh 24,1")) << "Table I shows auto's plan";
  EXPECT_EQ(t["plots"].size(), 1u);
}

// soac's own bars from issue 40: HDW near the read floor up to 48K, CAS at RF = 63 5x ahead of the sort.
TEST(ReproduceCheckers, HdwAgainstTheReadFloorAndCasAgainstTheSort) {
  auto fig7_runs = [](double auto_ms, double n = 50000000) {
    json cases = json::array();
    for (double H : {2048.0, 49152.0, 196608.0})
      // beyond 48K the bar does not apply: a slow multi-pass case must not count
      cases.push_back(hist_case_json("HDW", H, 1,
                                     json::array({variant_json("soac auto", "soac", H > 49152 ? 0.5 : auto_ms, "shared M=1 S=1"),
                                                  variant_json("shared M0=1", "soac", 0.12)}),
                                     0.1, n));
    return ok_run("hist-fig7", cases);
  };
  const std::string floor_bar = "soac: HDW in shared memory (H <= 48K) takes at most 1.25x";
  EXPECT_EQ(claim_of(analyze_table(table("sc20-fig7"), fig7_runs(0.12), mode::full), floor_bar)["verdict"], "held");
  const json slow = analyze_table(table("sc20-fig7"), fig7_runs(0.13), mode::full);
  EXPECT_EQ(claim_of(slow, floor_bar)["verdict"], "not held");
  EXPECT_TRUE(contains(claim_of(slow, floor_bar)["evidence"], "1.30x the floor")) << claim_of(slow, floor_bar).dump();
  EXPECT_TRUE(contains(slow.dump(), "\"1.30x\"")) << "the Fig 7 rows show auto x floor";
  // --quick's 2^22 elements are launch-bound: the bar, set at 50M, is not checked there
  EXPECT_EQ(claim_of(analyze_table(table("sc20-fig7"), fig7_runs(0.13, 1 << 22), mode::quick), floor_bar)["verdict"], "not checked");

  auto table2_runs = [](double cas48k_auto_ms) {
    json cases = json::array();
    for (double H : {505.0, 2048.0, 12288.0, 49152.0, 196608.0})
      // 505 and 192K lie outside the bar's range: their slowness must not count
      cases.push_back(hist_case_json("CAS", H, 63,
                                     json::array({variant_json("CUB sort + ReduceByKey", "baseline", 1.0),
                                                  variant_json("soac auto", "soac", H == 49152 ? cas48k_auto_ms : H < 2048 || H > 49152 ? 0.5 : 0.19)})));
    return ok_run("hist-table2", cases);
  };
  const std::string cas_bar = "soac: CAS at RF = 63 is at least 5.00x faster";
  EXPECT_EQ(claim_of(analyze_table(table("sc20-table2"), table2_runs(0.2), mode::full), cas_bar)["verdict"], "held");
  const json t2 = analyze_table(table("sc20-table2"), table2_runs(0.25), mode::full);
  EXPECT_EQ(claim_of(t2, cas_bar)["verdict"], "not held");
  EXPECT_TRUE(contains(claim_of(t2, cas_bar)["evidence"], "4.00x at H = 48K")) << claim_of(t2, cas_bar).dump();
}

TEST(ReproduceCheckers, SegreduceLargeStrategyForFewSegments) {
  auto runs_with = [](double large_ms) {
    json small = json::array(), large = json::array();
    for (int k : {0, 9, 18})
      small.push_back({{"name", "sum 2^18"}, {"params", {{"m", 1 << k}, {"n", 1 << (18 - k)}}},
                       {"variants", json::array({variant_json("plain reduce", "baseline", 0.01), variant_json("soac sequential", "soac", 0.5),
                                                 variant_json("soac large", "soac", k == 0 ? large_ms : 0.5),
                                                 variant_json("soac small", "soac", k == 9 ? 0.01 : 0.3), variant_json("soac auto", "soac", 0.02, "large (...)")})}});
    for (int k : {0, 13, 26})
      large.push_back({{"name", "sum 2^26"}, {"params", {{"m", 1 << k}, {"n", 1 << (26 - k)}}},
                       {"variants", json::array({variant_json("plain reduce", "baseline", 0.1), variant_json("soac sequential", "soac", k == 26 ? 0.1 : 0.5),
                                                 variant_json("soac large", "soac", k == 0 ? 0.11 : 0.5), variant_json("soac auto", "soac", 0.12, "large (...)")})}});
    auto rs = ok_run("segreduce-sum-small", small);
    rs.merge(ok_run("segreduce-sum-large", large));
    return rs;
  };
  const std::string few = "the large-segment strategy is the best for few big segments";
  EXPECT_EQ(claim_of(analyze_table(table("fhpc17-fig9"), runs_with(0.02), mode::full), few)["verdict"], "held");
  EXPECT_EQ(claim_of(analyze_table(table("fhpc17-fig9"), runs_with(0.9), mode::full), few)["verdict"], "not held");
  EXPECT_EQ(claim_of(analyze_table(table("fhpc17-fig9"), runs_with(0.02), mode::full), "the small-segment strategy pays off only")["verdict"], "held");
}

TEST(ReproduceCheckers, TablesWithoutTheirRunsAreMissingWithTheReason) {
  std::map<std::string, json> runs = {{"scan-thesis", {{"id", "scan-thesis"}, {"status", "failed"}, {"command", {"bench", "scan"}},
                                                       {"reason", "CUDA error: an illegal memory access"}}}};
  const json t = analyze_table(table("thesis-scan"), runs, mode::full);
  EXPECT_EQ(t["status"], "missing");
  EXPECT_TRUE(contains(t["missing"][0], "`soac bench scan`: CUDA error: an illegal memory access")) << t.dump(1);
  EXPECT_TRUE(t["claims"].empty());
}

TEST(ReproduceCli, AddKeepsTheTablesAlreadyThere) {
  const fs::path dir = fs::temp_directory_path() / ("soac_reproduce_add_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  auto r = soac_cli("reproduce report-fig15 --backend host --runs 1 --no-progress --no-plots -o " + dir.string());
  ASSERT_EQ(r.code, 0) << r.output;
  r = soac_cli("reproduce sc20-fig7 --add --backend host --no-progress --no-plots -o " + dir.string());
  ASSERT_EQ(r.code, 0) << r.output;
  std::ifstream in(dir / "reproduce.json");
  const json rep = json::parse(in);
  std::set<std::string> tables, ok;
  for (const auto& t : rep["tables"]) tables.insert(t["id"]);
  for (const auto& run : rep["runs"])
    if (run["status"] == "ok") ok.insert(run["id"]);
  EXPECT_EQ(tables, (std::set<std::string>{"report-fig15", "sc20-fig7"}));
  EXPECT_EQ(ok, std::set<std::string>{"scatter-fig15"});
  EXPECT_TRUE(contains(rep["command"], "; soac reproduce sc20-fig7 --add")) << rep["command"];
  const std::string md = read_text(dir / "report.md");
  EXPECT_TRUE(contains(md, "## Write report Fig 15")) << md;
  EXPECT_TRUE(contains(md, "## SC20 Fig 7")) << md;
  fs::remove_all(dir);
}

// ---- the CLI's errors

TEST(ReproduceCli, UnknownTableNoTableAndNoPreviousRun) {
  auto r = soac_cli("reproduce sc20-table9");
  EXPECT_EQ(r.code, exit_code::usage) << r.output;
  EXPECT_TRUE(contains(r.output, "unknown table 'sc20-table9'")) << r.output;
  EXPECT_TRUE(contains(r.output, "sc20-fig7")) << "names the known tables: " << r.output;
  r = soac_cli("reproduce --quick");
  EXPECT_EQ(r.code, exit_code::usage) << r.output;
  r = soac_cli("reproduce all --report-only -o /nonexistent/soac-report");
  EXPECT_EQ(r.code, exit_code::input) << r.output;
  EXPECT_TRUE(contains(r.output, "/nonexistent/soac-report/reproduce.json")) << r.output;
  r = soac_cli("reproduce --list");
  EXPECT_EQ(r.code, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "soac bench hist --preset fig7")) << r.output;
}

}  // namespace

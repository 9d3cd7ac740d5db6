// soac: one executable, subcommands over the app registry. Every failure ends here as one line
// on stderr and an exit code that names its class (core/error.hpp).
#include <algorithm>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <iostream>
#include <map>
#include <new>
#include <set>
#include <string>
#include <vector>

#include <unistd.h>

// Repeatable options take one value per use: a value may hold commas (--set variants=shared,M=1).
#define CXXOPTS_VECTOR_DELIMITER '\0'
#include <cxxopts.hpp>

#include "apps/app.hpp"
#include "bench/harness.hpp"
#include "core/build_info.hpp"
#include "core/context.hpp"
#include "core/error.hpp"
#include "core/multi/mpi_world.hpp"
#include "reproduce/reproduce.hpp"

namespace {

using namespace soac;

constexpr const char* overview = R"(soac: generalized histograms, segmented reductions, scans and scatters on the GPU

usage: soac <command> [options]     (soac <command> --help for each command's options)

commands:
  list       the apps, their dataset presets and run variants
  info       the backend and device a run would use
  gen        generate a dataset:     soac gen APP [--preset P] [--set KEY=VALUE] [--format F] -o DIR
  run        run an app:             soac run APP -i DATASET [--format F] [--set KEY=VALUE] [-o RESULT] [--variant V]
  validate   check a result:         soac validate APP -i DATASET [--format F] -r RESULT
  compare    a result against the original program's output file, by the original's rule:
                                     soac compare APP -r RESULT --expected FILE [--format F]
  bench      benchmark with in-run baselines:
                                     soac bench APP [--preset P | -i FILE [--format F]] [--runs R] [--json FILE] [--devices all|0,1,... | --ranks mpi]
  reproduce  the papers' tables and figures on this machine, as JSON and a markdown report with plots:
                                     soac reproduce TABLE... | all [--quick] [-o DIR]   (soac reproduce --list)

DATASET is a soac bundle (from soac gen) or, with --format, the original program's files
(Rodinia's, Parboil's: soac list names each app's formats).

every command takes --backend auto|cuda|host (auto: cuda when a GPU is present) and --device N.

exit codes: 0 ok, 1 result does not validate (compare: differs beyond the rule), 2 usage error, 3 bad input file,
            4 CUDA error, 5 out of memory or disk space, 6 internal error
)";

struct command_line {
  cxxopts::Options options;
  cxxopts::ParseResult result;
};

cxxopts::Options make_options(const std::string& command, const std::string& positional_help, const std::string& what) {
  cxxopts::Options o("soac " + command, what);
  o.positional_help(positional_help).show_positional_help();
  o.add_options("common")
      ("backend", "auto, cuda or host", cxxopts::value<std::string>()->default_value("auto"))
      ("device", "CUDA device ordinal", cxxopts::value<std::string>()->default_value("0"))
      ("h,help", "show this help");
  return o;
}

void add_app_positional(cxxopts::Options& o) {
  o.add_options()("app", "app name (see soac list)", cxxopts::value<std::string>());
  o.parse_positional({"app"});
}

// Parses; prints help and exits 0 on --help; turns cxxopts errors into usage_error.
cxxopts::ParseResult parse(cxxopts::Options& o, std::vector<std::string>& args) {
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  cxxopts::ParseResult r;
  try {
    r = o.parse(static_cast<int>(argv.size()), argv.data());
  } catch (const cxxopts::exceptions::exception& e) {
    throw usage_error(o.program() + ": " + e.what() + " (see " + o.program() + " --help)");
  }
  if (r.count("help")) {
    std::cout << o.help() << std::endl;
    std::exit(exit_code::ok);
  }
  if (!r.unmatched().empty()) throw usage_error(o.program() + ": unexpected argument '" + r.unmatched().front() + "'");
  // An option that takes one value, given twice with different values (-o A -o B, --app X beside
  // the positional APP): which one counts would be a guess.
  static const std::set<std::string> repeatable = {"input", "set", "preset", "tables"};
  std::map<std::string, std::string> seen;
  for (const auto& kv : r.arguments()) {
    if (repeatable.count(kv.key())) continue;
    const auto [it, first] = seen.emplace(kv.key(), kv.value());
    if (!first && it->second != kv.value())
      throw usage_error(o.program() + ": " + (kv.key() == "app" ? std::string("APP") : "--" + kv.key()) + " given twice ('" +
                        it->second + "' and '" + kv.value() + "'); give it once");
  }
  return r;
}

template <class T>
T required(const cxxopts::ParseResult& r, const cxxopts::Options& o, const std::string& key) {
  if (!r.count(key)) throw usage_error(o.program() + ": missing " + (key == "app" ? "APP" : "--" + key) + " (see " + o.program() + " --help)");
  return r[key].as<T>();
}

std::map<std::string, std::string> overrides_of(const cxxopts::ParseResult& r) {
  return apps::parse_overrides(r.count("set") ? r["set"].as<std::vector<std::string>>() : std::vector<std::string>{});
}

// --format, with "bundle" meaning the default (empty); checked against the app's formats.
std::string format_of(const cxxopts::ParseResult& r, const apps::app& a) {
  if (!r.count("format")) return {};
  std::string f = r["format"].as<std::string>();
  a.check_format(f);
  return f == "bundle" ? std::string() : f;
}

// Every -i in order; a soac bundle (no --format) is one directory.
std::vector<std::filesystem::path> inputs_of(const cxxopts::ParseResult& r, const std::string& format) {
  std::vector<std::filesystem::path> out;
  if (r.count("input"))
    for (const auto& p : r["input"].as<std::vector<std::string>>()) out.emplace_back(p);
  if (format.empty() && out.size() > 1)
    throw usage_error("a soac bundle is one directory: give -i once (or name the files' --format)");
  return out;
}

// --device as a string, so that a bad value is an error naming the option (cxxopts' own says
// only that an argument failed to parse).
int device_of(const cxxopts::ParseResult& r) {
  const std::string v = r["device"].as<std::string>();
  int device = -1;
  const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), device);
  if (v.empty() || ec != std::errc() || end != v.data() + v.size() || device < 0)
    throw usage_error("--device takes a CUDA device ordinal (0, 1, ...), not '" + v + "'");
  return device;
}

context make_context(const cxxopts::ParseResult& r) {
  return context(r["backend"].as<std::string>(), device_of(r));
}

// A file the command will write at its end: a usage error now, not after minutes of work.
void require_writable_file(const std::filesystem::path& file, const std::string& option) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (fs::is_directory(file, ec)) throw usage_error(option + " " + file.string() + ": is a folder; name a file");
  const fs::path folder = file.has_parent_path() ? file.parent_path() : fs::path(".");
  if (!fs::is_directory(folder, ec)) throw usage_error(option + " " + file.string() + ": no folder " + folder.string());
  if (::access(folder.c_str(), W_OK) != 0)
    throw usage_error(option + " " + file.string() + ": cannot write in " + folder.string() + ": " + std::strerror(errno));
}

int cmd_list(std::vector<std::string>& args) {
  auto o = make_options("list", "", "List the apps with their presets and variants.");
  parse(o, args);
  for (const auto* a : apps::all_apps()) {
    std::cout << a->name() << ": " << a->summary() << "\n  presets (first is the default):\n";
    for (const auto& p : a->presets()) std::cout << "    " << p.name << ": " << p.description << "  " << p.params.dump() << "\n";
    std::cout << "  variants:";
    for (const auto& v : a->variants()) std::cout << " " << v;
    if (!a->variant_settings().empty()) std::cout << "\n  variant settings (--variant NAME,KEY=VALUE,...): " << a->variant_settings();
    if (!a->input_formats().empty()) {
      std::cout << "\n  formats (--format; gen writes them too):";
      for (const auto& f : a->input_formats()) std::cout << "\n    " << f.name << ": " << f.description;
    }
    if (!a->expected_formats().empty()) {
      std::cout << "\n  original outputs (soac compare --expected FILE --format F; the first is the default):";
      for (const auto& f : a->expected_formats()) std::cout << "\n    " << f.name << ": " << f.description;
    }
    if (!a->run_settings().empty()) {
      std::cout << "\n  run settings (soac run --set KEY=VALUE):";
      for (const auto& st : a->run_settings())
        std::cout << "\n    " << st.name << " (default " << (st.default_value.is_string() ? st.default_value.get<std::string>() : st.default_value.dump())
                  << "): " << st.description;
    }
    std::cout << "\n  bench presets:";
    for (const auto& v : a->bench_presets()) std::cout << " " << v;
    std::cout << "\n";
  }
  return exit_code::ok;
}

int cmd_info(std::vector<std::string>& args) {
  auto o = make_options("info", "", "Show the backend and device a command would use.");
  const auto r = parse(o, args);
  const int devices = cuda_device_count();
  std::cout << "CUDA devices: " << devices << "\n";
  std::cout << "MPI: " << (mpi_world::built_with_mpi() ? "built with MPI (ranks in separate processes)" : "not in this build") << "\n";
  context ctx = make_context(r);
  std::cout << "backend " << ctx.describe() << "\n" << bench::environment(ctx).dump(2) << "\n";
  return exit_code::ok;
}

int cmd_gen(std::vector<std::string>& args) {
  auto o = make_options("gen", "APP -o DIR", "Generate a dataset (deterministic given --seed).");
  add_app_positional(o);
  o.add_options()
      ("p,preset", "dataset preset (default: the app's first, see soac list)", cxxopts::value<std::string>())
      ("set", "override a preset parameter, KEY=VALUE (repeatable)", cxxopts::value<std::vector<std::string>>())
      ("seed", "random seed", cxxopts::value<std::uint64_t>()->default_value("1"))
      ("format", "write the original program's format instead of a soac bundle (see soac list)", cxxopts::value<std::string>())
      ("o,output", "output dataset directory (or file, with --format)", cxxopts::value<std::string>());
  const auto r = parse(o, args);
  const auto& a = apps::find_app(required<std::string>(r, o, "app"));
  apps::gen_request req;
  req.format = format_of(r, a);
  req.preset = r.count("preset") ? r["preset"].as<std::string>() : a.presets().front().name;
  req.params = a.resolve_params(req.preset, overrides_of(r));
  a.check_params(req.params);  // what run would refuse is refused here, before anything is written
  req.seed = r["seed"].as<std::uint64_t>();
  req.output = required<std::string>(r, o, "output");
  std::cerr << "soac gen " << a.name() << ": preset " << req.preset << " " << req.params.dump() << " seed " << req.seed
            << " -> " << req.output.string() << "\n";
  const auto t0 = std::chrono::steady_clock::now();
  a.generate(req);
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::cout << "dataset written to " << req.output.string() << " (" << s << " s)\n";
  return exit_code::ok;
}

int cmd_run(std::vector<std::string>& args) {
  auto o = make_options("run", "APP -i DATASET [-o RESULT]", "Run an app on a dataset and write its result.");
  add_app_positional(o);
  o.add_options()
      ("i,input", "dataset directory (from soac gen), or with --format the original's file(s) (repeatable)",
       cxxopts::value<std::vector<std::string>>())
      ("format", "format of the input: bundle (default) or the original program's (see soac list)", cxxopts::value<std::string>())
      ("set", "run setting, KEY=VALUE (repeatable; see soac list)", cxxopts::value<std::vector<std::string>>())
      ("o,output", "result directory (default: DATASET.result)", cxxopts::value<std::string>())
      ("variant", "algorithm variant, NAME or NAME,KEY=VALUE,... (default: the app's first, see soac list)", cxxopts::value<std::string>())
      ("v,verbose", "print what the primitives chose, and progress");
  const auto r = parse(o, args);
  const auto& a = apps::find_app(required<std::string>(r, o, "app"));
  apps::run_request req;
  required<std::vector<std::string>>(r, o, "input");
  req.format = format_of(r, a);
  req.inputs = inputs_of(r, req.format);
  req.input = req.inputs.front();
  req.settings = a.resolve_settings(overrides_of(r));
  req.output = r.count("output") ? std::filesystem::path(r["output"].as<std::string>())
                                 : std::filesystem::path(req.input.string() + ".result");
  for (const auto& in : req.inputs) {
    std::error_code ec;
    if (std::filesystem::equivalent(in, req.output, ec))
      throw usage_error("soac run: the output " + req.output.string() + " is the input " + in.string() +
                        ", which the result would overwrite; give -o another path");
  }
  if (r.count("variant")) {
    req.variant = r["variant"].as<std::string>();
    a.check_variant(req.variant);  // NAME, or NAME,SETTINGS for apps that take settings (see soac list)
  }
  req.verbose = r.count("verbose") > 0;
  context ctx = make_context(r);
  const std::string message = a.run(ctx, req);
  // Ranks in separate processes (kmeans --set devices=mpi): rank 0 writes the result and reports.
  if (const mpi_world* w = mpi_world::joined(); w && w->rank() != 0) return exit_code::ok;
  std::cout << message << "\nresult written to " << req.output.string() << "\n";
  return exit_code::ok;
}

int cmd_validate(std::vector<std::string>& args) {
  auto o = make_options("validate", "APP -i DATASET -r RESULT", "Check a result against the sequential reference.");
  add_app_positional(o);
  o.add_options()
      ("i,input", "dataset directory, or with --format the original's file(s) (repeatable)", cxxopts::value<std::vector<std::string>>())
      ("format", "format of the input: bundle (default) or the original program's (see soac list)", cxxopts::value<std::string>())
      ("r,result", "result directory (from soac run)", cxxopts::value<std::string>());
  const auto r = parse(o, args);
  const auto& a = apps::find_app(required<std::string>(r, o, "app"));
  apps::validate_request req;
  required<std::vector<std::string>>(r, o, "input");
  req.format = format_of(r, a);
  req.inputs = inputs_of(r, req.format);
  req.input = req.inputs.front();
  req.result = required<std::string>(r, o, "result");
  const auto rep = a.validate(req);
  std::cout << a.name() << ": " << (rep.ok ? "VALID: " : "INVALID: ") << rep.summary << "\n";
  return rep.ok ? exit_code::ok : exit_code::invalid_result;
}

int cmd_compare(std::vector<std::string>& args) {
  auto o = make_options("compare", "APP -r RESULT --expected FILE",
                        "Compare a result with the original program's output file, by the original's own rule: exit 0 within "
                        "it, 1 beyond it (the largest deviation and where are printed), 3 for a malformed file.");
  add_app_positional(o);
  o.add_options()
      ("r,result", "result directory (from soac run)", cxxopts::value<std::string>())
      ("expected", "the original program's output file (soac list names each app's)", cxxopts::value<std::string>())
      ("format", "which original's output the file is (default: the app's first; see soac list)", cxxopts::value<std::string>());
  const auto r = parse(o, args);
  const auto& a = apps::find_app(required<std::string>(r, o, "app"));
  apps::compare_request req;
  req.result = required<std::string>(r, o, "result");
  req.expected = required<std::string>(r, o, "expected");
  const auto formats = a.expected_formats();
  if (formats.empty()) return a.compare(req), exit_code::usage;  // its usage_error names the apps that compare
  req.format = r.count("format") ? r["format"].as<std::string>() : formats.front().name;
  if (std::none_of(formats.begin(), formats.end(), [&](const apps::file_format& f) { return f.name == req.format; })) {
    std::string known;
    for (const auto& f : formats) known += (known.empty() ? "" : ", ") + f.name;
    throw usage_error(a.name() + " compare: unknown --format '" + req.format + "' (known: " + known + ")");
  }
  const auto rep = a.compare(req);
  std::cout << a.name() << ": " << (rep.ok ? "MATCHES: " : "DIFFERS: ") << rep.summary << "\n";
  return rep.ok ? exit_code::ok : exit_code::invalid_result;
}

int cmd_bench(std::vector<std::string>& args) {
  auto o = make_options("bench", "APP", "Benchmark an app's variants against in-run baselines and the memory floor.");
  add_app_positional(o);
  o.add_options()
      ("p,preset", "preset to measure (repeatable; default: the app's bench presets)", cxxopts::value<std::vector<std::string>>())
      ("set", "override a preset parameter, KEY=VALUE (repeatable)", cxxopts::value<std::vector<std::string>>())
      ("seed", "random seed of the generated inputs", cxxopts::value<std::uint64_t>()->default_value("1"))
      ("i,input", "measure these files instead of presets (repeatable; apps with --format support)", cxxopts::value<std::vector<std::string>>())
      ("format", "format of the -i files (see soac list)", cxxopts::value<std::string>())
      ("runs", "timed runs per variant (median reported)", cxxopts::value<int>()->default_value("31"))
      ("warmup", "untimed runs before timing", cxxopts::value<int>()->default_value("5"))
      ("warmup-ms", "... and more untimed runs until they took this many ms", cxxopts::value<double>()->default_value("20"))
      ("json", "also write every figure as JSON to FILE", cxxopts::value<std::string>())
      ("devices", "all or a list such as 0,1,2,3: a scaling table over 1, 2, 4, ... of these GPUs (hist, segreduce, kmeans; "
                  "the host backend simulates that many ranks)", cxxopts::value<std::string>())
      ("ranks", "mpi: under mpirun/srun, one rank per process (its host's GPU number = its host-local rank), a scaling "
                "table of every process against rank 0 alone (hist, segreduce, kmeans); rank 0 prints", cxxopts::value<std::string>())
      ("launch-latency", "time each run from when the host starts launching it (default: the GPU's work only, queued behind a held stream)")
      ("no-progress", "no progress lines on stderr");
  const auto r = parse(o, args);
  if (r.count("json")) require_writable_file(r["json"].as<std::string>(), "--json");  // before the benches, not after
  const auto& a = apps::find_app(required<std::string>(r, o, "app"));
  apps::bench_request req;
  if (r.count("preset")) req.presets = r["preset"].as<std::vector<std::string>>();
  for (const auto& p : req.presets) a.find_preset(p);  // fail before any measuring
  req.overrides = overrides_of(r);
  req.seed = r["seed"].as<std::uint64_t>();
  req.format = format_of(r, a);
  req.inputs = inputs_of(r, req.format);
  if (!req.inputs.empty() && a.input_formats().empty())
    throw usage_error(a.name() + ": bench measures generated presets only (no -i)");
  if (r.count("devices")) {
    req.devices = r["devices"].as<std::string>();
    if (!a.scales_over_devices()) throw usage_error(a.name() + ": bench has no --devices scaling table (hist, segreduce and kmeans have)");
    if (req.devices.empty()) throw usage_error("--devices: expected all or a list such as 0,1");
  }
  const mpi_world* world = nullptr;
  if (r.count("ranks")) {
    if (r["ranks"].as<std::string>() != "mpi") throw usage_error("--ranks: expected mpi");
    if (r.count("devices")) throw usage_error("--ranks mpi and --devices: give one (processes, or GPUs of this process)");
    if (!a.scales_over_devices()) throw usage_error(a.name() + ": bench has no scaling table over ranks (hist, segreduce and kmeans have)");
    world = &mpi_world::get();
    req.mpi = true;
  }
  bench::settings s;
  s.runs = r["runs"].as<int>();
  s.warmup = r["warmup"].as<int>();
  s.warmup_ms = r["warmup-ms"].as<double>();
  s.progress = r.count("no-progress") == 0;
  s.launch_latency = r.count("launch-latency") > 0;
  // Under MPI every process measures, rank 0 alone reports; each process opens its host's GPU.
  const bool reports = !world || world->rank() == 0;
  if (!reports) s.progress = false;
  context ctx = world ? context(r["backend"].as<std::string>(), cuda_device_count() > 0 ? world->local_rank() % cuda_device_count() : 0)
                      : make_context(r);
  bench::suite suite(ctx, a.name(), s);
  a.bench(ctx, req, suite);
  if (!reports) return exit_code::ok;
  suite.print(std::cout);
  if (r.count("json")) {
    suite.write_json(r["json"].as<std::string>());
    std::cout << "\nJSON written to " << r["json"].as<std::string>() << "\n";
  }
  return exit_code::ok;
}

std::string utc_now() {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return text;
}

void write_text(const std::filesystem::path& file, const std::string& text) {
  std::ofstream out(file);
  out << text;
  if (!out.flush()) throw input_error(file.string() + ": cannot write");
}

nlohmann::json read_reproduction(const std::filesystem::path& file) {
  std::ifstream in(file);
  if (!in) throw input_error(file.string() + ": cannot open");
  nlohmann::json rep;
  try {
    rep = nlohmann::json::parse(in);
  } catch (const std::exception& e) {
    throw input_error(file.string() + ": not JSON: " + e.what());
  }
  if (!rep.is_object() || rep.value("format", "") != "soac-reproduce" || !rep.contains("runs") || !rep["runs"].is_array())
    throw input_error(file.string() + ": not a soac reproduce result");
  if (!rep.contains("tables")) rep["tables"] = nlohmann::json::array();
  return rep;
}

// Analyses the runs in `r`, draws the plots, writes DIR/reproduce.json and DIR/report.md.
void finish_reproduction(nlohmann::json& r, const std::vector<const reproduce::table_spec*>& tables,
                         const std::filesystem::path& dir, bool plots) {
  reproduce::analyze(r, tables);
  const auto json_file = dir / "reproduce.json";
  write_text(json_file, r.dump(1) + "\n");
  r["plots"] = plots ? reproduce::draw_plots(dir, json_file) : nlohmann::json{{"drawn", false}, {"note", "--no-plots was given"}};
  write_text(json_file, r.dump(1) + "\n");
  write_text(dir / "report.md", reproduce::markdown(r));
  int status[3] = {0, 0, 0}, verdicts[3] = {0, 0, 0};
  for (const auto& t : r["tables"]) {
    const std::string s = t["status"];
    ++status[s == "complete" ? 0 : s == "partial" ? 1 : 2];
    for (const auto& c : t["claims"]) {
      const std::string v = c["verdict"];
      ++verdicts[v == "held" ? 0 : v == "not held" ? 1 : 2];
    }
  }
  std::cout << "report: " << (dir / "report.md").string() << " (tables: " << status[0] << " complete, " << status[1] << " partial, "
            << status[2] << " missing; claims: " << verdicts[0] << " held, " << verdicts[1] << " not held, " << verdicts[2]
            << " not checked; plots: " << (r["plots"].value("drawn", false) ? "drawn" : r["plots"].value("note", std::string("none")))
            << ")\n";
}

int cmd_reproduce(std::vector<std::string>& args) {
  auto o = make_options("reproduce", "TABLE... | all",
                        "Regenerate the papers' tables and figures on this machine: runs the soac benches each table needs, puts "
                        "the papers' numbers beside this run's, checks the papers' claims, and writes DIR/reproduce.json, "
                        "DIR/report.md and DIR/plots/. Without a GPU it runs what the host backend can, at sizes of its own below --quick's.");
  o.add_options()
      ("tables", "tables to reproduce (see --list), or all", cxxopts::value<std::vector<std::string>>())
      ("quick", "reduced sizes for a first look (1.5 minutes instead of 4 on an H100)")
      ("o,output", "folder for the report", cxxopts::value<std::string>()->default_value("reproduce-report"))
      ("runs", "timed runs per variant in every bench (default: each table's own)", cxxopts::value<int>()->default_value("0"))
      ("list", "list the tables with their benches and rough times")
      ("report-only", "recompute the tables, plots and report from DIR/reproduce.json without measuring")
      ("add", "add these tables to the reproduction already in DIR (their runs replace its runs of them)")
      ("no-plots", "do not run python3 for the plots")
      ("no-progress", "no progress line on stderr");
  o.parse_positional({"tables"});
  const auto r = parse(o, args);
  namespace rp = reproduce;
  if (r.count("list")) {
    for (const auto& t : rp::catalogue()) {
      std::cout << t.id << ": " << t.title << "\n";
      for (const rp::mode m : {rp::mode::full, rp::mode::quick}) {
        double seconds = 0;
        for (const auto& run : t.runs(m)) seconds += run.estimate_s;
        std::cout << "  " << (m == rp::mode::full ? "full " : "quick") << " (roughly "
                  << (seconds < 45 ? "under a minute" : std::to_string(int(seconds / 60 + 0.5)) + " min") << " on an H100):";
        for (const auto& run : t.runs(m)) {
          std::cout << "\n    soac";
          for (const auto& a : run.command()) std::cout << " " << a;
          if (!run.served_by.empty()) std::cout << "   (or the run of " << run.served_by.front() << ")";
        }
        std::cout << "\n";
      }
      const auto host = t.runs(rp::mode::host);
      const bool gpu_only = std::all_of(host.begin(), host.end(), [](const rp::run_spec& s) { return !s.gpu_only.empty(); });
      std::cout << "  host backend: " << (gpu_only ? "missing (" + host.front().gpu_only + ")" : std::string("runs at reduced sizes")) << "\n";
    }
    return exit_code::ok;
  }
  auto names = r.count("tables") ? r["tables"].as<std::vector<std::string>>() : std::vector<std::string>{};
  auto tables = rp::select_tables(names);
  const std::filesystem::path dir = r["output"].as<std::string>();
  const int runs = r["runs"].as<int>();
  if (runs < 0) throw usage_error("--runs must not be negative");
  const bool plots = r.count("no-plots") == 0;

  const auto file = dir / "reproduce.json";
  if (r.count("report-only")) {
    if (!std::filesystem::exists(file)) throw input_error(file.string() + ": cannot open (run soac reproduce without --report-only first)");
    auto rep = read_reproduction(file);
    try {
      finish_reproduction(rep, tables, dir, plots);
    } catch (const nlohmann::json::exception& e) {
      // The file is the user's (hand-edited, or another version's): a field of the wrong type is
      // bad input, not a fault of soac's.
      throw input_error(file.string() + ": a field is missing or has the wrong type for this soac (" + e.what() + ")");
    }
    return exit_code::ok;
  }

  context ctx = make_context(r);
  const rp::mode m = !ctx.is_cuda() ? rp::mode::host : r.count("quick") ? rp::mode::quick : rp::mode::full;
  if (m == rp::mode::host)
    std::cerr << "soac reproduce: no CUDA GPU (backend " << ctx.describe() << "): running what the host backend can, at reduced host sizes; "
              << "tables whose benches compare with CUDA programs are marked missing\n";
  std::map<std::string, std::string> aliases;
  const auto specs = rp::plan_runs(tables, m, aliases);
  std::filesystem::create_directories(dir);
  std::string command = "soac reproduce";  // args[0] is the program name, "soac reproduce"
  for (std::size_t i = 1; i < args.size(); ++i) command += " " + args[i];
  nlohmann::json rep = {{"format", "soac-reproduce"}, {"version", 1}, {"date", utc_now()}, {"command", command},
                        {"mode", std::string(rp::to_string(m))}, {"environment", bench::environment(ctx)}, {"aliases", aliases},
                        {"runs", nlohmann::json::array()}};
  if (r.count("add") && std::filesystem::exists(file)) {
    // Into the reproduction already in DIR: its runs of other tables stay, this one's replace
    // theirs, and the report covers the tables of both (for GPUs lent in short sessions).
    try {
      const auto old = read_reproduction(file);
      if (old.value("mode", std::string()) != rep["mode"].get<std::string>())
        throw usage_error("--add: " + file.string() + " holds a " + old.value("mode", std::string("?")) + " reproduction, this one is " +
                          rep["mode"].get<std::string>());
      std::set<std::string> fresh;
      for (const auto& s : specs) fresh.insert(s.id);
      for (const auto& [alias, target] : aliases) fresh.insert(alias);
      for (const auto& run : old["runs"])
        if (!fresh.count(run.value("id", ""))) rep["runs"].push_back(run);
      // Named, not iterated as a temporary: items() refers to the json it is called on.
      const auto old_aliases = old.value("aliases", nlohmann::json::object());
      for (const auto& [alias, target] : old_aliases.items())
        if (!fresh.count(alias)) rep["aliases"][alias] = target;
      for (const auto& t : old["tables"]) names.push_back(t.value("id", ""));
      tables = rp::select_tables(names);
      rep["command"] = old.value("command", std::string()) + "; " + command;
    } catch (const nlohmann::json::exception& e) {
      throw input_error(file.string() + ": a field is missing or has the wrong type for this soac (" + e.what() + ")");
    }
  }
  double estimate = 0;
  for (const auto& s : specs)
    if (m != rp::mode::host || s.gpu_only.empty()) estimate += s.estimate_s;
  std::cerr << "soac reproduce: " << tables.size() << " table(s), " << specs.size() << " bench run(s), roughly " << int(estimate / 60 + 0.5)
            << " min" << (m == rp::mode::host ? "" : " on an H100") << "; output in " << dir.string() << "\n";
  rp::runner_options ro;
  ro.exe = std::filesystem::read_symlink("/proc/self/exe");
  ro.dir = dir;
  ro.backend = ctx.is_cuda() ? "cuda" : "host";
  ro.device = device_of(r);
  ro.runs = runs;
  ro.progress = r.count("no-progress") == 0;
  rp::run_all(specs, m, ro, [&](const nlohmann::json& run) {
    rep["runs"].push_back(run);
    write_text(dir / "reproduce.json", rep.dump(1) + "\n");  // partial results survive an interruption
  });
  finish_reproduction(rep, tables, dir, plots);
  return exit_code::ok;
}

int dispatch(std::vector<std::string> args) {
  if (args.size() < 2 || args[1] == "-h" || args[1] == "--help" || args[1] == "help") {
    std::cout << overview;
    return args.size() < 2 ? exit_code::usage : exit_code::ok;
  }
  if (args[1] == "--version") {
    const auto& b = this_build();
    std::cout << "soac " << b.version << " (" << b.commit << (b.dirty ? ", modified" : "") << ", " << b.build_type
              << ", sm_" << b.cuda_architectures << ")\n";
    return exit_code::ok;
  }
  const std::string command = args[1];
  // cxxopts sees "soac <command>" as the program name.
  std::vector<std::string> rest = {"soac " + command};
  rest.insert(rest.end(), args.begin() + 2, args.end());
  if (command == "list") return cmd_list(rest);
  if (command == "info") return cmd_info(rest);
  if (command == "gen") return cmd_gen(rest);
  if (command == "run") return cmd_run(rest);
  if (command == "validate") return cmd_validate(rest);
  if (command == "compare") return cmd_compare(rest);
  if (command == "bench") return cmd_bench(rest);
  if (command == "reproduce") return cmd_reproduce(rest);
  throw usage_error("unknown command '" + command + "' (commands: list, info, gen, run, validate, compare, bench, reproduce; see soac --help)");
}

}  // namespace

// The message and exit code of the exception being handled.
// The error as one line written at once: with ranks in separate processes, several may fail
// together, and their lines must not interleave on the shared stderr.
int report_error(const std::string& who) {
  std::string line;
  int code = exit_code::internal;
  try {
    throw;
  } catch (const usage_error& e) {
    line = "error: " + std::string(e.what()), code = exit_code::usage;
  } catch (const input_error& e) {
    line = "error: " + std::string(e.what()), code = exit_code::input;
  } catch (const cuda_error& e) {
    line = "error: " + std::string(e.what()), code = exit_code::cuda;
  } catch (const resource_error& e) {
    line = "error: " + std::string(e.what()), code = exit_code::resource;
  } catch (const std::bad_alloc&) {
    line = "error: not enough host memory for this input", code = exit_code::resource;
  } catch (const std::exception& e) {
    line = "internal error: " + std::string(e.what());
  }
  line = who + line + "\n";
  std::cerr.flush();
  std::fflush(stderr);
  [[maybe_unused]] const auto written = ::write(STDERR_FILENO, line.data(), line.size());  // one write: atomic on a pipe up to PIPE_BUF
  return code;
}

int main(int argc, char** argv) {
  try {
    return dispatch(std::vector<std::string>(argv, argv + argc));
  } catch (...) {
    // With ranks in separate processes the others may wait for this one in a collective: the
    // failing rank says why and ends them all with its exit code (MPI_Abort), never a hang.
    const mpi_world* world = mpi_world::joined();
    if (!world || world->size() == 1) return report_error("soac: ");
    const int code = report_error("soac (rank " + std::to_string(world->rank()) + " of " + std::to_string(world->size()) + "): ");
    std::cerr.flush();
    world->abort(code);
  }
}

// k-means clustering (Lloyd's algorithm) on the core: SC20 section V-D1 (the update as one fused
// histogram of counts and vector sums) and FHPC17 section 4 (the same as segmented reductions),
// with Rodinia's program structure as the in-run baseline.
//
// One iteration: assign every point to its nearest centroid, then move every non-empty
// cluster's centroid to the mean of its points (an empty cluster keeps its centroid); stop after
// max_iterations, or once at most `threshold` points (Rodinia's rule: its default runs until no point
// changes) or at most threshold_fraction * n points changed cluster (validate::kmeans_stop_rule).
//   layout      columns (small k): a feature-major copy of the points beside the row-major one,
//               so that a warp reads one feature of 32 points as one line; rows: row-major only.
//   assignment  direct: columns: a lane per point keeps its distance to every centroid in
//               registers, the centroids in shared memory (the points stream once); rows: a lane
//               group per point holds the point in registers and sums (x - c)^2 over the centroids;
//               gemm: cuBLAS SGEMM of -2 X C^T in chunks of points, then soac::segreduce takes each
//               row's argmin of |c|^2 - 2 x.c (k large: the 2 n k d flops run at SGEMM speed).
//   update      hist (default): with columns, the counts as soac::hist and the sums as
//               soac::hist_batched, one histogram of k sums per feature, thread-private copies;
//               with rows, soac::hist_fused of the counts (k int bins) and the sums, either
//               flattened (element (p, j) of the n x d points adds to float bin member[p] * d + j,
//               one kernel for any d) or as soac::elementwise vector bins of 4 columns;
//               segreduce (FHPC17): radix sort of (membership, index), the counts as k regular
//               segments of n one-hot values, and the sums as k * d regular segments padded to
//               the largest cluster (the core's segreduce is regular; see padded_sum);
//               rodinia: memberships copied to the host every iteration, sums and counts summed
//               there by one thread, centroids copied back (Rodinia 3.1's kmeans_cuda).
// Every variant assigns with the same rule (lowest index on ties) and the same convergence test.
//
// The parts, in reading order: functors.cuh, kernels.cuh, plan.cuh, engine.cuh, files.cuh; this file
// holds the app class.

#include <optional>

#include "apps/kmeans/files.cuh"
#include "apps/ranks.hpp"
#include "core/multi/mpi_world.hpp"

namespace soac::apps {
namespace {

class kmeans_app final : public app {
 public:
  kmeans_app() : app(describe()) {}

  static app_info describe() {
    app_info a = app_info::named("kmeans", "k-means clustering (Lloyd): cuBLAS or direct distances, the update as one fused "
                                           "histogram of counts and sums (SC20 V-D1) or as segmented reductions (FHPC17 4), "
                                           "Rodinia's structure as the baseline");
    {
      auto p = [](std::int64_t n, std::int64_t d, std::int64_t k, std::int64_t blobs, double spread, int whole) {
        nlohmann::json params = {{"n", n},         {"d", d},         {"k", k},           {"blobs", blobs}, {"spread", spread},
                                  {"whole", whole}, {"parts", 0},     {"variants", ""}};
        params.update(rodinia_defaults);
        params["k"] = k;
        return params;
      };
      a.presets = {{"rodinia-204800", "Rodinia's 204800.txt shape: 204,800 x 34, k = 5, Gaussian blobs of different sizes",
                    p(204'800, 34, 5, 12, 0.25, 1)},
                   {"kdd", "Rodinia's kdd_cup shape: 494,019 x 34, k = 5, Gaussian blobs of different sizes", p(494'019, 34, 5, 12, 0.25, 1)},
                   {"paper-k1024", "SC20 V-D1: n = 100,000, d = 256, k = 1024, uniform features (bench: per iteration only)",
                    p(100'000, 256, 1024, 0, 0, 0)},
                   {"paper-k5", "SC20 V-D1: n = 100,000, d = 256, k = 5, uniform features (bench: per iteration only)",
                    p(100'000, 256, 5, 0, 0, 0)},
                   {"tiny", "3,000 x 6, k = 5, separated blobs (tests)", p(3000, 6, 5, 5, 0.05, 1)},
                   {"tiny-uniform", "2,000 x 16, k = 12, uniform features (tests)", p(2000, 16, 12, 0, 0, 1)}};
    }
    a.variants = {"hist", "segreduce", "rodinia"};
    a.variant_settings = "hist and segreduce: distances=auto|direct|gemm, layout=auto|rows|columns (feature-major copy of the points), "
                         "chunk=POINTS (per SGEMM; 0: up to 1 GiB of distances), math=fp32|tf32; hist also sums=auto|fused|flat|vec4|split|batched "
                         "(fused: assignment and update in one pass, k <= 8, d <= 256, the default there) "
                         "and the hist options (flat and vec4, one hist_fused call: strategy and M; split and batched: any, e.g. private=on). "
                         "E.g. hist,distances=gemm,sums=vec4";
    a.input_formats = {{"rodinia", "Rodinia's text points: a line per point, an integer id then the features (-i FILE)"},
                       {"rodinia-bin", "Rodinia's binary points (kmeans -b): int32 n, int32 d, n x d float32 (-i FILE)"}};
    a.expected_formats = {{"rodinia", "what Rodinia's kmeans prints with -o (its output, or the listing alone): the centroids, each coordinate "
                                      "within half its printed unit (%.2f) plus 1e-4 relative"}};
    a.run_settings = {{"k", "dataset", "clusters (Rodinia's -m/-n with one value); 'dataset': the bundle's k, 5 for Rodinia files"},
                      {"threshold", "dataset",
                       "Rodinia's -t: iterate while more than this many points change cluster (Rodinia's 0.001: until none does)"},
                      {"threshold_fraction", "dataset", "also stop once at most this fraction of the points changed cluster (0: off)"},
                      {"max_iterations", "dataset", "at most this many iterations (Rodinia's loop: 501)"},
                      {"init", "dataset", "initial centroids: first (Rodinia's: the first k points; for k > n/2 its swap loop's picks) or kmeans++"},
                      {"seed", 1, "random seed of kmeans++"},
                      strict_setting(rodinia_kmeans),
                      devices_setting("the points sharded, the counts and sums all-reduced each iteration (hist variant, init=first)"),
                      {"memberships", "gathered",
                       "with devices=mpi: gathered (rank 0 writes them) or parts (each process writes its points' memberships, "
                       "membership.part-R.npy, and the result lists the files: for more points than one process should hold)"}};
    a.scales_over_devices = true;
    a.bench_presets = {"paper-k1024", "paper-k5", "rodinia-204800", "kdd"};
    return a;
  }

  void check_params(const nlohmann::json& params) const override { spec_of(params); }
  // The features' shape, the manifest's n and d where it gives them, and the run settings it records.
  void check_dataset(const bundle& in) const override {
    const auto [n, d] = features_shape(in);
    for (const auto& [key, value] : {std::pair{"n", n}, std::pair{"d", d}})
      if (in.params().contains(key) && in.params()[key] != value)
        throw input_error(in.path_of("features").string() + ": shape " + datasets::shape_string(in.header("features").shape) +
                          ", but the manifest says " + key + " = " + in.params()[key].dump());
    config_of(every_setting_from_dataset, in.params(), n);
  }

  void generate(const gen_request& r) const override {
    const auto s = spec_of(r.params);
    require_host_memory(checked_bytes(std::uint64_t(s.n * s.d), sizeof(float), "kmeans: n x d"),
                        "kmeans: n x d = " + std::to_string(s.n * s.d) + " features");
    const auto x = generate_points(s, r.seed);
    if (r.format == "rodinia") return datasets::write_rodinia_kmeans_text(r.output, s.n, s.d, x);
    if (r.format == "rodinia-bin") return datasets::write_rodinia_kmeans_binary(r.output, s.n, s.d, x);
    datasets::bundle_writer out(r.output, "dataset", name());
    const std::int64_t shape[2] = {s.n, s.d};
    out.add("features", datasets::dtype::f32, shape, x.data());
    finish_dataset(out, r);
  }

  std::string run(context& ctx, const run_request& r) const override {
    const auto plan = parse_variant(r.variant);
    // --set devices=...: several ranks (ranked_kmeans); without it, one engine on ctx as always.
    // devices=mpi: one rank per process of the MPI world (mpirun); each process reads its part of
    // the input (read_points_shard) and rank 0 writes.
    const std::string devices = r.settings.value("devices", std::string());
    if (r.inputs.size() != 1) throw usage_error("kmeans reads one input (-i), got " + std::to_string(r.inputs.size()));
    auto lenient = leniency_of(r.settings, rodinia_kmeans);
    const std::unique_ptr<multi_context> ranks = ranks_of_setting(ctx.which(), devices);
    const mpi_world* world = ranks && ranks->distributed() ? &mpi_world::get() : nullptr;
    std::optional<sharded_points> part;
    loaded_points data;
    if (world) {
      part.emplace(read_points_shard(r.inputs[0], r.format, *world, lenient));
      data.pts.n = part->n, data.pts.d = part->d;
      data.params = part->params;
    } else {
      data = load_points(r.inputs, r.format, lenient);
    }
    if (!world || world->rank() == 0) report_leniency(lenient);
    const auto cfg = config_of(r.settings, data.params, data.pts.n);
    const std::int64_t n = data.pts.n, d = data.pts.d;
    std::unique_ptr<kmeans_engine> engine;
    std::unique_ptr<ranked_kmeans> ranked;
    if (!ranks) engine = std::make_unique<kmeans_engine>(ctx, data.pts, cfg.k, plan);
    else if (world) ranked = std::make_unique<ranked_kmeans>(*ranks, std::move(*part).with_initial(*world, cfg.k), cfg.k, plan, cfg.init);
    else ranked = std::make_unique<ranked_kmeans>(*ranks, data.pts, cfg.k, plan, cfg.init);
    std::ostringstream msg;
    msg << "kmeans: " << n << " points x " << d << " features, k = " << cfg.k << " on " << (ranks ? ranks->describe() : ctx.describe());
    std::function<void(std::int64_t, const step_report&)> progress;
    if (r.verbose && (!ranks || ranks->is_local(0)))
      progress = [&](std::int64_t it, const step_report& rep) {
        std::cout << "  iteration " << it << ": " << rep.changed << " of " << n << " points changed cluster ("
                  << std::setprecision(3) << 100.0 * double(rep.changed) / double(n) << "%), objective " << std::setprecision(10)
                  << rep.objective << std::endl;
      };
    const std::string memberships = r.settings.value("memberships", std::string("gathered"));
    if (memberships != "gathered" && memberships != "parts")
      throw usage_error("kmeans: memberships must be gathered or parts, not '" + memberships + "'");
    if (memberships == "parts" && !world) throw usage_error("kmeans: memberships=parts is for devices=mpi (a part per process)");
    const bool in_parts = memberships == "parts";
    const clustering res = engine ? engine->cluster(cfg, progress) : ranked->cluster(cfg, progress, !in_parts);
    // In parts: rank 0 makes the result's folder, then every process writes its points' rows.
    std::optional<datasets::bundle_writer> out;
    if (writes_result(ranks.get())) out.emplace(r.output, "result", name());
    if (in_parts) {
      world->barrier();
      const auto me = world->rank();
      for (const auto& [array, values] : {std::pair{"membership", &res.membership}, std::pair{"first_membership", &res.first_membership}})
        datasets::write_npy(datasets::bundle_part_path(r.output, array, me), std::span<const std::int32_t>(*values));
      world->barrier();
    }
    if (!writes_result(ranks.get())) return {};
    const kmeans_plan used = engine ? engine->plan() : ranked->plan();
    const std::string update_plan = engine ? engine->update_plan() : std::string();
    msg << "\n  " << used.describe();

    const std::int64_t kd[2] = {cfg.k, d};
    out->add("centroids", datasets::dtype::f32, kd, res.centroids.data());
    out->add("initial_centroids", datasets::dtype::f32, kd, res.initial_centroids.data());
    if (in_parts) {
      std::vector<std::int64_t> rows;
      for (const shard& s : ranked->shards()) rows.push_back(s.size());
      const std::int64_t shape[1] = {n};
      for (const char* array : {"membership", "first_membership"}) out->add_parts(array, datasets::dtype::i32, shape, rows);
    } else {
      out->add<std::int32_t>("membership", res.membership);
      out->add<std::int32_t>("first_membership", res.first_membership);
    }
    out->add<std::int64_t>("changed", res.changed);
    out->add_file("centroids.txt", rodinia_listing(res.centroids, cfg.k, d));
    out->params() = {{"n", n},
                    {"d", d},
                    {"k", cfg.k},
                    {"threshold", cfg.stop.threshold},
                    {"threshold_fraction", cfg.stop.threshold_fraction},
                    {"max_iterations", cfg.stop.max_iterations},
                    {"init", init_name(cfg.init)},
                    {"seed", cfg.seed},
                    {"format", r.format.empty() ? "bundle" : r.format},
                    {"dataset", data.params}};
    const auto& p = used;
    out->info() = {{"backend", std::string(to_string(ctx.which()))},
                  {"device", ranks ? ranks->describe() : ctx.props().name},
                  {"ranks", ranks ? ranks->ranks() : 1},
                  {"variant", p.variant},
                  {"plan", p.describe()},
                  {"distances", p.update == update_kind::rodinia || p.distances == distance_kind::direct ? "direct" : "gemm"},
                  {"tf32", p.tf32},
                  {"update_plan", update_plan},
                  {"iterations", res.iterations},
                  {"objective", res.objective},
                  {"rmse", rmse_of(res.objective, n)},
                  {"ms", res.ms},
                  {"ms_per_iteration", res.ms / double(std::max<std::int64_t>(res.iterations, 1))}};
    out->finish();
    msg << "\n  " << res.iterations << " iterations in " << res.ms << " ms (" << res.ms / double(std::max<std::int64_t>(res.iterations, 1))
        << " ms each, initialisation included), objective " << std::setprecision(10) << res.objective << ", RMSE "
        << rodinia_rmse_text(rmse_of(res.objective, n));
    if (r.verbose && !update_plan.empty()) msg << "\n  update: " << update_plan;
    return msg.str();
  }

  validate_report validate(const validate_request& r) const override {
    const auto data = load_points(r.inputs, r.format);
    const auto res = bundle::open(r.result, "result", name());
    const std::int64_t n = data.pts.n, d = data.pts.d;
    const auto& params = res.params();
    const auto& info = res.info();
    auto bad = [&](const std::string& what) { return input_error(res.dir().string() + ": " + what); };
    if (!params.contains("k") || !params["k"].is_number_integer() || !info.contains("objective") || !info["objective"].is_number() ||
        !info.contains("distances") || !info["distances"].is_string() || (info.contains("tf32") && !info["tf32"].is_boolean()) ||
        (info.contains("iterations") && !info["iterations"].is_number_integer()))
      throw bad("the manifest lacks k, objective, distances, tf32 or iterations of the right type (not a kmeans result?)");
    const std::int64_t k = params["k"].get<std::int64_t>();
    if (k < 1 || k > n) throw bad("k = " + std::to_string(k) + " does not fit the dataset's " + std::to_string(n) + " points");
    // The run's configuration, as its result recorded it (the reference repeats the run).
    const kmeans_config cfg = params_of_file(res.dir() / "manifest.json", [&] {
      nlohmann::json recorded = params;
      for (const auto& [key, value] : rodinia_defaults.items())
        if (!recorded.contains(key)) recorded[key] = value;
      return run_config_of(recorded, n);
    });
    const std::string init = init_name(cfg.init);
    const auto centroids = res.read<float>("centroids"), initial = res.read<float>("initial_centroids");
    const auto membership = res.read<std::int32_t>("membership"), first = res.read<std::int32_t>("first_membership");
    if (centroids.size() != std::size_t(k * d) || initial.size() != std::size_t(k * d))
      throw bad("centroids are not k x d = " + std::to_string(k) + " x " + std::to_string(d));
    if (membership.size() != std::size_t(n) || first.size() != std::size_t(n))
      throw bad("memberships do not hold the dataset's " + std::to_string(n) + " points");
    for (const auto* m : {&membership, &first})
      if (const auto out = std::find_if(m->begin(), m->end(), [&](std::int32_t c) { return c < 0 || c >= k; }); out != m->end())
        throw bad("point " + std::to_string(out - m->begin()) + " is in cluster " + std::to_string(*out) + ", outside [0, k)");
    if (!info["objective"].is_number()) throw bad("the objective is not a number");
    const auto form = info["distances"] == "gemm" ? validate::kmeans_form::gemm : validate::kmeans_form::direct;
    const bool tf32 = info.value("tf32", false);
    const auto& x = data.pts.features;
    std::ostringstream detail;
    bool ok = true;

    // The initial centroids: Rodinia's pick, or (kmeans++) points of the dataset.
    std::int64_t foreign = 0;
    if (cfg.init == init_kind::first) {
      const auto expected = rodinia_initial_centroids(x, n, d, k);
      foreign = std::memcmp(initial.data(), expected.data(), initial.size() * sizeof(float)) == 0 ? 0 : k;
    } else {
      std::unordered_map<std::string, int> rows;
      for (std::int64_t p = 0; p < n; ++p) rows.emplace(std::string(reinterpret_cast<const char*>(x.data() + p * d), std::size_t(d) * 4), 0);
      for (std::int64_t c = 0; c < k; ++c)
        foreign += !rows.count(std::string(reinterpret_cast<const char*>(initial.data() + c * d), std::size_t(d) * 4));
    }
    ok &= foreign == 0;
    detail << "\n  initial centroids (" << init << "): " << (foreign ? std::to_string(foreign) + " of them are not the dataset's points" : "as expected");

    // One iteration from the initial centroids.
    const auto first_check = validate::check_kmeans_membership(x, n, d, initial, k, first, form, tf32);
    ok &= first_check.rep.ok();
    detail << "\n  first iteration's memberships: " << first_check.rep.describe("memberships") << " (" << first_check.near_ties
           << " near-ties within the float bound of the " << (form == validate::kmeans_form::gemm ? "GEMM" : "direct") << " form)";

    // The final update: every centroid the mean of its cluster.
    std::int64_t empty = 0;
    const auto means = validate::check_kmeans_means(x, n, d, k, membership, centroids, &empty);
    ok &= means.ok();
    detail << "\n  final centroids: " << means.describe("coordinates of non-empty clusters' centroids") << " (" << empty
           << " empty clusters keep their previous centroid, not checked)";

    // The reported objective is the final state's.
    const double reported = info["objective"].get<double>();
    const double own = validate::kmeans_objective(x, n, d, centroids.data(), std::span<const std::int32_t>(membership));
    const double own_tolerance = validate::gamma_bound(double(d + 2)) + validate::gamma_bound(double(n), 0x1.0p-53);
    const bool own_ok = std::fabs(reported - own) <= own_tolerance * own;
    ok &= own_ok;
    detail << "\n  reported objective " << std::setprecision(10) << reported << (own_ok ? " agrees with" : " DIFFERS from")
           << " its recomputation " << own << " (relative tolerance " << std::setprecision(3) << own_tolerance << ")";

    // The whole run against the reference's from the same initial centroids.
    const std::int64_t iterations = info.value("iterations", std::int64_t(0));
    const double cost = double(n) * double(k) * double(d) * double(std::max<std::int64_t>(iterations, 1) + 1);
    std::string verdict;
    if (cost > reference_budget) {
      detail << "\n  reference run skipped: about " << std::setprecision(3) << cost << " distance terms, beyond the validator's "
             << reference_budget;
    } else {
      const auto ref = validate::kmeans_reference(x, n, d, k, initial, cfg.stop);
      const double tolerance = validate::objective_tolerance(d);
      const double rel = std::fabs(reported - ref.objective) / std::max(ref.objective, std::numeric_limits<double>::min());
      const bool ref_ok = rel <= tolerance;
      ok &= ref_ok;
      detail << "\n  objective " << std::setprecision(10) << reported << " vs the reference's " << ref.objective << ": relative difference "
             << std::setprecision(3) << rel << (ref_ok ? " <= " : " > ") << tolerance << "; " << iterations << " iterations, the reference "
             << ref.iterations;
      std::int64_t moved = 0;
      for (std::int64_t p = 0; p < n; ++p) moved += membership[std::size_t(p)] != ref.membership[std::size_t(p)];
      detail << "\n  final memberships: ";
      if (moved == 0) detail << "equal to the reference's for all " << n << " points";
      else
        detail << moved << " of " << n << " differ from the reference's (a near-tie rounded the other way leads the iterations "
               << "elsewhere; the objective above decides)";
    }
    std::ostringstream head;
    head << (ok ? "k-means result agrees with the double-precision reference" : "k-means result does not validate") << " (n = " << n
         << ", d = " << d << ", k = " << k << ", " << iterations << " iterations)";
    return {ok, head.str() + detail.str()};
  }


  // Rodinia prints each centroid coordinate with %.2f: ours must round near it, within half the
  // printed unit and 1e-4 relative for sums of a cluster's floats in another order.
  validate_report compare(const compare_request& r) const override {
    const auto res = bundle::open(r.result, "result", name());
    const auto shape = res.header("centroids").shape;
    if (shape.size() != 2) throw input_error(res.path_of("centroids").string() + ": not a k x d array");
    const auto ours = res.read<float>("centroids");
    const auto theirs = datasets::read_rodinia_centroids(r.expected);
    std::ostringstream s;
    if (theirs.k != shape[0] || theirs.d != shape[1]) {
      s << r.expected.filename().string() << " lists " << theirs.k << " centroids of " << theirs.d << " coordinates, the result "
        << shape[0] << " of " << shape[1];
      return {false, s.str()};
    }
    std::int64_t beyond = 0, worst = 0;
    double worst_excess = -std::numeric_limits<double>::infinity();
    for (std::size_t i = 0; i < ours.size(); ++i) {
      const double tolerance = 0.005 + 1e-4 * std::max(std::fabs(double(ours[i])), std::fabs(theirs.values[i]));
      const double excess = std::fabs(double(ours[i]) - theirs.values[i]) - tolerance;
      beyond += excess > 0;
      if (excess > worst_excess) worst_excess = excess, worst = std::int64_t(i);
    }
    const std::int64_t d = theirs.d;
    s << (beyond == 0 ? "all " + std::to_string(ours.size()) + " centroid coordinates agree with"
                      : std::to_string(beyond) + " of " + std::to_string(ours.size()) + " centroid coordinates differ from")
      << " Rodinia's printed ones (" << theirs.k << " centroids of " << d << "); the largest difference at centroid " << worst / d
      << " coordinate " << worst % d << ": " << std::setprecision(9) << ours[std::size_t(worst)] << " here, "
      << theirs.values[std::size_t(worst)] << " printed";
    return {beyond == 0, s.str()};
  }

  // Distance terms (n k d per iteration) the validator's full reference run may take: a minute
  // or so on two cores; beyond it (paper-k1024) the other checks still run.
  static constexpr double reference_budget = 3e10;

  // ---- bench

  struct bench_input {
    std::string name;
    kmeans_points pts;
    kmeans_config cfg;
    bool whole = true;
    bool parts = false;
    std::vector<std::string> extra;  // variants timed per iteration beside the three
    nlohmann::json params;
  };

  static std::vector<std::string> split_variants(const std::string& list) {
    std::vector<std::string> out;
    if (list == "none") return out;
    std::string_view rest = list;
    while (!rest.empty()) {
      const std::size_t semi = rest.find(';');
      if (semi != 0) out.emplace_back(rest.substr(0, semi));
      rest = semi == std::string_view::npos ? std::string_view{} : rest.substr(semi + 1);
    }
    for (const auto& v : out) parse_variant(v);  // a bad one fails before any run
    return out;
  }

  // The forced shapes timed per iteration by default: the other distance form, and the update as
  // separate passes (where the default is the one-pass kernel: the feature-major points with a
  // histogram per feature), row-major points with SC20's fused histogram (where the default is
  // feature-major) or vector sums.
  static std::vector<std::string> default_extra(const context& ctx, const kmeans_points& pts, std::int64_t k) {
    kmeans_plan auto_plan;
    resolve_plan(auto_plan, ctx, pts.n, pts.d, k);
    std::vector<std::string> extra = {auto_plan.distances == distance_kind::gemm ? "hist,distances=direct" : "hist,distances=gemm"};
    if (auto_plan.sums == sums_kind::fused) {
      if (columns_fit(pts.d, k)) extra.emplace_back("hist,layout=columns");
      extra.emplace_back("hist,layout=rows,sums=flat");
    } else {
      extra.push_back(auto_plan.layout == layout_kind::columns ? "hist,layout=rows" : "hist,sums=vec4");
    }
    return extra;
  }


  // `soac bench kmeans --devices`: the issue's size, n = 10^7 points x d = 256, k = 1024 (uniform
  // like paper-k1024, 100x its points), `max_iterations` iterations (5) per timed run with
  // threshold -1 (never converged) so that every run does the same work; --set n=..., d=..., k=... change it.
  void bench_scaling(const context& ctx, const bench_request& r, bench::suite& suite) const {
    std::map<std::string, std::string> overrides = {{"n", "1e7"}, {"max_iterations", "5"}, {"threshold", "-1"}};
    for (const auto& [key, value] : r.overrides) overrides[key] = value;
    const auto params = resolve_params("paper-k1024", overrides);
    const auto s = spec_of(params);
    // The points, and every shard's copy of them (host memory), before generating any.
    require_host_memory(checked_bytes(checked_bytes(std::uint64_t(s.n), std::uint64_t(s.d), "kmeans: n x d"), 2 * sizeof(float), "kmeans: n x d"),
                        "kmeans --devices: the points and the ranks' copies of their shards");
    const kmeans_points pts{s.n, s.d, generate_points(s, r.seed)};
    const kmeans_config& cfg = s.run;
    suite.expect_cases(1);
    suite.begin_case("scaling: n = " + std::to_string(s.n) + ", d = " + std::to_string(s.d) + ", k = " + std::to_string(cfg.k) + ", " +
                         std::to_string(cfg.stop.max_iterations) + " iterations",
                     params, 4.0 * double(s.n) * double(s.d) * double(cfg.stop.max_iterations));
    measure_scaling(suite, ctx.which(), r, [&](const multi_context& mc) {
      const auto ranked = std::make_shared<ranked_kmeans>(mc, pts, cfg.k, parse_variant(""), cfg.init);
      return std::function<void()>([ranked, &cfg] { ranked->iterate(cfg, {}, nullptr); });
    });
  }

  void bench(context& ctx, const bench_request& r, bench::suite& suite) const override {
    if (r.scaling()) return bench_scaling(ctx, r, suite);
    std::vector<bench_input> inputs;
    if (!r.inputs.empty()) {
      // Files: Rodinia's defaults unless --set k=..., threshold=..., threshold_fraction=...,
      // max_iterations=..., init=..., whole=0|1, variants=...
      nlohmann::json settings = every_setting_from_dataset;
      bool whole = true, parts = false;
      std::string variants;
      for (const auto& [key, value] : r.overrides) {
        if (settings.contains(key)) settings[key] = value;
        else if (key == "whole") whole = value != "0";
        else if (key == "parts") parts = value != "0";
        else if (key == "variants") variants = value;
        else
          throw usage_error("kmeans bench -i: unknown setting '" + key +
                            "' (k, threshold, threshold_fraction, max_iterations, init, seed, whole, parts, variants)");
      }
      for (const auto& file : r.inputs) {
        bench_input in;
        in.name = file.filename().string();
        in.pts = load_points({file}, r.format).pts;
        in.cfg = config_of(settings, nlohmann::json::object(), in.pts.n);
        in.whole = whole;
        in.parts = parts;
        in.extra = variants.empty() ? default_extra(ctx, in.pts, in.cfg.k) : split_variants(variants);
        in.params = {{"file", file.string()}, {"n", in.pts.n}, {"d", in.pts.d}, {"k", in.cfg.k}};
        inputs.push_back(std::move(in));
      }
    } else {
      for (const auto& preset_name : r.presets.empty() ? bench_presets() : r.presets) {
        const auto params = resolve_params(preset_name, r.overrides);
        const auto s = spec_of(params);
        bench_input in;
        in.name = preset_name;
        in.pts = {s.n, s.d, generate_points(s, r.seed)};
        in.cfg = s.run;
        in.whole = s.whole;
        in.parts = s.parts;
        in.extra = s.variants.empty() ? default_extra(ctx, in.pts, s.run.k) : split_variants(s.variants);
        in.params = params;
        inputs.push_back(std::move(in));
      }
    }
    int cases = 0;
    for (const auto& in : inputs) cases += in.whole ? 2 : 1;
    suite.expect_cases(cases);
    for (const auto& in : inputs) bench_input_cases(ctx, in, suite);
  }

  // The parts of one iteration of a soac variant, each repeated on its own (the engine holds the
  // state of a step): where the time goes.
  static void bench_parts(const std::string& name, kmeans_engine& e, bench::suite& suite) {
    const std::string at = name + " [";
    if (e.plan().distances == distance_kind::gemm) {
      suite.measure(at + "SGEMMs]", bench::role::soac, [&] { e.gemm_products(); });
      suite.measure(at + "argmins]", bench::role::soac, [&] { e.gemm_argmins(); });
    }
    if (e.plan().sums == sums_kind::fused) {
      suite.measure(at + "assignment and update pass]", bench::role::soac, [&] { e.assign_and_update(0); });
      return;
    }
    suite.measure(at + "assignment]", bench::role::soac, [&] { e.assign(); });
    suite.measure(at + "changes and objective]", bench::role::soac, [&] { e.summarize(); });
    suite.measure(at + "update]", bench::role::soac, [&] { e.update(); });
  }

  void bench_input_cases(context& ctx, const bench_input& in, bench::suite& suite) const {
    std::vector<std::string> names = {"rodinia", "hist", "segreduce"};
    names.insert(names.end(), in.extra.begin(), in.extra.end());
    std::vector<std::unique_ptr<kmeans_engine>> engines;
    for (const auto& v : names) engines.push_back(std::make_unique<kmeans_engine>(ctx, in.pts, in.cfg.k, parse_variant(v)));
    auto role_of = [](const std::string& v) { return v == "rodinia" ? bench::role::baseline : bench::role::soac; };
    const double points_bytes = double(in.pts.n) * double(in.pts.d) * sizeof(float);

    // One iteration from the initial centroids (every point changes cluster), repeated.
    suite.begin_case(in.name + ": one iteration", in.params, points_bytes);
    for (std::size_t v = 0; v < names.size(); ++v) {
      kmeans_engine& e = *engines[v];
      e.initialize(in.cfg.init, in.cfg.seed);
      suite.measure(names[v], role_of(names[v]), [&] { e.step(false, false); });
      suite.annotate(e.plan().describe() + (e.update_plan().empty() ? "" : "; " + e.update_plan()));
      if (in.parts && names[v] != "rodinia") bench_parts(names[v], e, suite);
    }
    if (!in.whole) return;

    // The whole clustering: initialisation and every iteration with its convergence test.
    std::int64_t iterations = 0;
    double reference_objective = 0;
    std::vector<std::pair<std::int64_t, double>> outcome(3);
    for (std::size_t v = 0; v < 3; ++v) {
      outcome[v].first = engines[v]->iterate(in.cfg, {});
      outcome[v].second = engines[v]->objective();
    }
    iterations = outcome[1].first;
    reference_objective = outcome[0].second;
    suite.begin_case(in.name + ": whole clustering", in.params, points_bytes * double(iterations));
    for (std::size_t v = 0; v < 3; ++v) {
      kmeans_engine& e = *engines[v];
      suite.measure(names[v], role_of(names[v]), [&] { e.iterate(in.cfg, {}); });
      const double ms = suite.cases().back().variants.back().time.median_ms;
      std::ostringstream note;
      note << outcome[v].first << " iterations, " << std::setprecision(4) << ms / double(outcome[v].first) << " ms each, objective "
           << std::setprecision(10) << outcome[v].second;
      const double rel = std::fabs(outcome[v].second - reference_objective) / std::max(reference_objective, 1e-300);
      if (rel > validate::objective_tolerance(in.pts.d))
        note << " (DIFFERS from rodinia's by " << std::setprecision(3) << rel << " relative)";
      suite.annotate(note.str());
    }
  }
};

}  // namespace
}  // namespace soac::apps

SOAC_REGISTER_APP(soac::apps::kmeans_app)

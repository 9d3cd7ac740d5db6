// The scatter microbenchmark of the write-construct report (section 6.1, Fig 15): k writes with
// distinct random indexes into an n-element int32 array. Variants: soac::scatter with each
// strategy, and thrust::scatter, the one-line library baseline.
#include <cinttypes>
#include <sstream>

#include <thrust/execution_policy.h>
#include <thrust/scatter.h>

#include "apps/app.hpp"
#include "core/buffer.hpp"
#include "core/error.hpp"
#include "core/scatter.cuh"
#include "datasets/bundle.hpp"
#include "datasets/scatter_data.hpp"
#include "validate/scatter.hpp"

namespace soac::apps {
namespace {

using datasets::bundle;
using value_t = std::int32_t;

// Reads an index array and its values in the functor: the report's write(indexes, values, dest).
template <class I>
struct indexed_writes {
  const I* indexes;
  const value_t* values;
  SOAC_HD write_at<I, value_t> operator()(std::int64_t i) const { return {indexes[i], values[i]}; }
};


// Runs one variant over device/host arrays of the context; returns what it chose.
template <class I>
std::string launch(context& ctx, const std::string& variant, int chunk, std::int64_t k, const I* indexes,
                   const value_t* values, span<value_t> dest) {
  if (variant == "thrust") {
    // thrust::scatter writes every index, so it is only usable when all are in range.
    if (ctx.is_cuda())
      thrust::scatter(thrust::cuda::par_nosync.on(ctx.stream()), values, values + k, indexes, dest.data());
    else
      thrust::scatter(thrust::host, values, values + k, indexes, dest.data());
    return "thrust::scatter";
  }
  scatter_options options;
  options.strategy = parse_scatter_strategy(variant);
  options.chunk = chunk;
  return scatter(ctx, options, k, indexed_writes<I>{indexes, values}, dest).describe();
}

template <class I>
std::int64_t count_out_of_range(const std::vector<I>& indexes, std::size_t n) {
  std::int64_t c = 0;
  for (I i : indexes) c += !validate::in_range(i, n);
  return c;
}

class scatter_app final : public app {
 public:
  scatter_app() : app(describe()) {}

  static app_info describe() {
    app_info a = app_info::named("scatter", "write construct: k writes with random distinct indexes into an n-element int32 "
                                            "array (report Fig 15)");
    {
      auto p = [](std::int64_t n, std::int64_t k, double oor, int chunk) {
        return nlohmann::json{{"n", n}, {"k", k}, {"out_of_range", oor}, {"chunk", chunk}};
      };
      a.presets = {{"fig15a", "report Fig 15, first row: n = 1e7, k = 1e6", p(10'000'000, 1'000'000, 0.0, 10)},
                   {"fig15b", "report Fig 15, second row: n = 1e8, k = 1e7", p(100'000'000, 10'000'000, 0.0, 10)},
                   {"small", "n = 1e5, k = 1e4, 1% of indexes out of range", p(100'000, 10'000, 0.01, 10)},
                   {"tiny", "n = 1000, k = 300, 10% of indexes out of range (tests)", p(1000, 300, 0.1, 10)}};
    }
    a.variants = {"auto", "plain", "chunked", "blocked", "thrust"};
    a.bench_presets = {"fig15a", "fig15b"};
    return a;
  }

  static datasets::scatter_spec spec_of(const nlohmann::json& params, std::uint64_t seed) {
    datasets::scatter_spec s;
    s.n = int_param(params, "n", 0, std::int64_t{1} << 40);
    s.k = int_param(params, "k", 0, s.n);
    s.out_of_range = real_param(params, "out_of_range", 0.0, 1.0);
    int_param(params, "chunk", 1, 1 << 20);
    s.seed = seed;
    return s;
  }

  void check_params(const nlohmann::json& params) const override { spec_of(params, 0); }

  // What a run reads: dest (its length n), indexes and values of one length k, the chunk length.
  void check_dataset(const bundle& in) const override {
    datasets::length_of(in, "dest", "n");
    datasets::length_of(in, "indexes", "k");
    datasets::length_of(in, "values", "k");
    datasets::require_same_length(in, {"indexes", "values"});
    chunk_of(in.params());
  }

  // The chunked kernel's writes per thread: the dataset's, or the presets' 10.
  static int chunk_of(const nlohmann::json& params) {
    return params.contains("chunk") ? int(int_param(params, "chunk", 1, 1 << 20)) : 10;
  }

  void generate(const gen_request& r) const override {
    const auto spec = spec_of(r.params, r.seed);
    require_host_memory(checked_bytes(std::uint64_t(spec.n), sizeof(value_t), "scatter: n") +
                            checked_bytes(std::uint64_t(spec.k), sizeof(std::int64_t) + sizeof(value_t), "scatter: k"),
                        "scatter: n = " + std::to_string(spec.n) + ", k = " + std::to_string(spec.k));
    datasets::bundle_writer out(r.output, "dataset", name());
    auto write_all = [&](auto d) {
      out.add<value_t>("dest", d.dest);
      out.add<typename decltype(d.indexes)::value_type>("indexes", d.indexes);
      out.add<value_t>("values", d.values);
    };
    if (datasets::scatter_needs_int64(spec)) write_all(datasets::generate_scatter<std::int64_t>(spec));
    else write_all(datasets::generate_scatter<std::int32_t>(spec));
    finish_dataset(out, r);
  }

  std::string run(context& ctx, const run_request& r) const override {
    const auto in = open_dataset(r.input);
    const auto type = in.header("indexes").type;
    if (type == datasets::dtype::i32) return run_typed<std::int32_t>(ctx, in, r);
    if (type == datasets::dtype::i64) return run_typed<std::int64_t>(ctx, in, r);
    throw input_error(in.path_of("indexes").string() + ": indexes must be int32 or int64, not " +
                      std::string(datasets::dtype_name(type)));
  }

  template <class I>
  std::string run_typed(context& ctx, const bundle& in, const run_request& r) const {
    const std::string variant = r.variant.empty() ? "auto" : r.variant;
    const int chunk = chunk_of(in.params());
    auto dest_h = in.read<value_t>("dest");
    const auto idx_h = in.read<I>("indexes");
    const auto val_h = in.read<value_t>("values");
    const std::int64_t ignored = count_out_of_range(idx_h, dest_h.size());
    if (variant == "thrust" && ignored > 0)
      throw usage_error("variant thrust writes every index, but " + std::to_string(ignored) +
                        " indexes of this dataset are out of range; use a soac variant");

    buffer<value_t> dest(ctx, std::span<const value_t>(dest_h));
    buffer<I> idx(ctx, std::span<const I>(idx_h));
    buffer<value_t> val(ctx, std::span<const value_t>(val_h));
    std::string plan;
    const auto k = static_cast<std::int64_t>(idx_h.size());
    // Timed with the harness clock (events on cuda) after one warm-up; scatter is idempotent here.
    const bench::stats t = bench::time(ctx, bench::settings{.warmup = 1, .runs = 1, .progress = false, .warmup_ms = 0},
                                       [&] { plan = launch<I>(ctx, variant, chunk, k, idx.data(), val.data(), dest); });
    dest.copy_to(dest_h);

    datasets::bundle_writer out(r.output, "result", name());
    out.add<value_t>("dest", dest_h);
    out.params() = in.params();
    out.info() = {{"backend", std::string(to_string(ctx.which()))}, {"device", ctx.props().name},
                  {"variant", variant}, {"plan", plan}, {"kernel_ms", t.median_ms}};
    out.finish();

    std::ostringstream s;
    s << "scatter: " << k << " writes into " << dest_h.size() << " elements (" << ignored
      << " out of range, ignored) on " << ctx.describe() << "\n  " << variant << ": " << plan << ", "
      << t.median_ms << " ms";
    return s.str();
  }

  validate_report validate(const validate_request& r) const override {
    const auto in = open_dataset(r.input);
    const auto out = bundle::open(r.result, "result", name());
    const auto original = in.read<value_t>("dest");
    const auto result = out.read<value_t>("dest");
    const auto values = in.read<value_t>("values");
    validate::report rep;
    if (in.header("indexes").type == datasets::dtype::i64) {
      rep = validate::check_scatter<std::int64_t, value_t>(original, in.read<std::int64_t>("indexes"), values, result);
    } else {
      rep = validate::check_scatter<std::int32_t, value_t>(original, in.read<std::int32_t>("indexes"), values, result);
    }
    return {rep.ok(), rep.describe("destination elements")};
  }

  void bench(context& ctx, const bench_request& r, bench::suite& suite) const override {
    const auto names = r.presets.empty() ? bench_presets() : r.presets;
    suite.expect_cases(static_cast<int>(names.size()));
    for (const auto& preset_name : names) {
      const auto params = resolve_params(preset_name, r.overrides);
      const auto spec = spec_of(params, r.seed);
      if (datasets::scatter_needs_int64(spec)) bench_typed<std::int64_t>(ctx, params, spec, suite, preset_name);
      else bench_typed<std::int32_t>(ctx, params, spec, suite, preset_name);
    }
  }

  template <class I>
  void bench_typed(context& ctx, const nlohmann::json& params, const datasets::scatter_spec& spec, bench::suite& suite,
                   const std::string& preset_name) const {
    const auto data = datasets::generate_scatter<I>(spec);
    buffer<value_t> dest(ctx, std::span<const value_t>(data.dest));
    buffer<I> idx(ctx, std::span<const I>(data.indexes));
    buffer<value_t> val(ctx, std::span<const value_t>(data.values));
    const int chunk = int(int_param(params, "chunk", 1, 1 << 20));
    const std::int64_t k = spec.k;
    // Read each index and value once, write each destination element once.
    const double bytes = double(k) * (sizeof(I) + 2 * sizeof(value_t));
    std::ostringstream name;
    name << preset_name << ": n=" << spec.n << " k=" << k << " (" << sizeof(I) * 8 << "-bit indexes)";
    suite.begin_case(name.str(), params, bytes);
    auto variant = [&](const std::string& v, int c, const std::string& label) {
      std::string plan;
      suite.measure(label, v == "thrust" ? bench::role::baseline : bench::role::soac,
                    [&] { plan = launch<I>(ctx, v, c, k, idx.data(), val.data(), dest); });
      if (v == "auto") suite.annotate("chose " + plan);
    };
    if (spec.out_of_range == 0) variant("thrust", chunk, "thrust::scatter");
    variant("auto", chunk, "soac auto");
    variant("plain", chunk, "soac plain");
    variant("chunked", chunk, "soac chunked-" + std::to_string(chunk));
    variant("chunked", 100, "soac chunked-100");
    variant("blocked", chunk, "soac blocked");
  }
};

}  // namespace
}  // namespace soac::apps

SOAC_REGISTER_APP(soac::apps::scatter_app)

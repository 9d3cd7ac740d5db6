// Radix sort (write-construct report, section 2): sort a dataset's keys (uint32, int32 or
// float32) and optional values with soac::radix_sort. Variants: digits (8-bit LSD, default:
// one-sweep below 2^30 keys), digits-per-pass (the per-pass structure forced) and one-bit (the
// report's Fig 4, scan + scatter per bit). `soac bench radixsort`: 2^20 .. 2^28 uint32 keys,
// keys only and key-value, against CUB DeviceRadixSort in the same run, digits and
// digits-per-pass at every size, the one-bit variant at 2^24.
#include <algorithm>
#include <cstdint>
#include <sstream>
#include <string>
#include <vector>

#include <cub/device/device_radix_sort.cuh>

#include "apps/app.hpp"
#include "core/buffer.hpp"
#include "core/error.hpp"
#include "core/sort.cuh"
#include "datasets/bundle.hpp"
#include "datasets/random.hpp"
#include "validate/sort.hpp"

namespace soac::apps {
namespace {

using datasets::bundle;
using value_t = std::uint32_t;

radix_algorithm parse_algorithm(const std::string& variant) {
  if (variant.empty() || variant == "digits") return radix_algorithm::digits;
  if (variant == "digits-per-pass") return radix_algorithm::digits_per_pass;
  if (variant == "one-bit") return radix_algorithm::one_bit;
  throw usage_error("radixsort: unknown variant '" + variant + "' (expected digits, digits-per-pass or one-bit)");
}

std::vector<std::uint32_t> random_keys(std::int64_t n, std::uint64_t seed) {
  std::vector<std::uint32_t> k(static_cast<std::size_t>(n));
  datasets::fill_random_u32(k, seed, 0);
  return k;
}

class radixsort_app final : public app {
 public:
  radixsort_app() : app(describe()) {}

  static app_info describe() {
    app_info a = app_info::named("radixsort", "stable LSD radix sort of uint32/int32/float keys with optional uint32 values "
                                              "(report section 2)");
    {
      auto p = [](std::int64_t n, int values) { return nlohmann::json{{"n", n}, {"values", values}}; };
      std::vector<preset> all;
      for (int e : {20, 22, 24, 26, 28})
        all.push_back({"2^" + std::to_string(e), "2^" + std::to_string(e) + " random uint32 keys with uint32 values",
                       p(std::int64_t{1} << e, 1)});
      all.push_back({"tiny", "10,000 random uint32 keys with values (tests)", p(10'000, 1)});
      a.presets = all;
    }
    a.variants = {"digits", "digits-per-pass", "one-bit"};
    a.bench_presets = {"2^20", "2^22", "2^24", "2^26", "2^28"};
    return a;
  }

  struct sort_spec {
    std::int64_t n;
    bool values;
  };
  static sort_spec spec_of(const nlohmann::json& params) {
    return {int_param(params, "n", 0, std::int64_t{1} << 32), int_param(params, "values", 0, 1) != 0};
  }
  void check_params(const nlohmann::json& params) const override { spec_of(params); }

  // What a run reads: the keys, and the values (as many) where the dataset has them.
  void check_dataset(const bundle& in) const override {
    datasets::length_of(in, "keys", "n");
    if (in.params().contains("values") && in.params()["values"] != (in.has("values") ? 1 : 0))
      throw input_error((in.dir() / "manifest.json").string() + ": values = " + in.params()["values"].dump() + ", but the dataset " +
                        (in.has("values") ? "has" : "has no") + " values array");
    if (has_values(in)) datasets::require_same_length(in, {"keys", "values"});
  }
  static bool has_values(const bundle& in) { return in.has("values"); }

  void generate(const gen_request& r) const override {
    const auto [n, values] = spec_of(r.params);
    require_host_memory(checked_bytes(std::uint64_t(n), 2 * sizeof(std::uint32_t), "radixsort: n"),
                        "radixsort: n = " + std::to_string(n) + " keys");
    datasets::bundle_writer out(r.output, "dataset", name());
    out.add<std::uint32_t>("keys", random_keys(n, r.seed));
    if (values) {
      std::vector<value_t> v(static_cast<std::size_t>(n));
      for (std::int64_t i = 0; i < n; ++i) v[std::size_t(i)] = value_t(i);
      out.add<value_t>("values", v);
    }
    finish_dataset(out, r);
  }

  std::string run(context& ctx, const run_request& r) const override {
    const auto in = open_dataset(r.input);
    const auto type = in.header("keys").type;
    if (type == datasets::dtype::u32) return run_typed<std::uint32_t>(ctx, in, r);
    if (type == datasets::dtype::i32) return run_typed<std::int32_t>(ctx, in, r);
    if (type == datasets::dtype::f32) return run_typed<float>(ctx, in, r);
    throw input_error(in.path_of("keys").string() + ": keys must be uint32, int32 or float32, not " +
                      std::string(datasets::dtype_name(type)));
  }

  template <class K>
  std::string run_typed(context& ctx, const bundle& in, const run_request& r) const {
    const auto options = radix_sort_options{parse_algorithm(r.variant)};
    const bool with_values = has_values(in);
    auto keys_h = in.read<K>("keys");
    std::vector<value_t> values_h = with_values ? in.read<value_t>("values") : std::vector<value_t>{};
    buffer<K> keys(ctx, std::span<const K>(keys_h));
    buffer<value_t> values(ctx, std::span<const value_t>(values_h));
    sort_plan plan;
    // One run, timed: sorting is not idempotent on its input, so no warm-up on the same data.
    const bench::stats t = bench::time(ctx, bench::settings{.warmup = 0, .runs = 1, .progress = false, .warmup_ms = 0}, [&] {
      plan = with_values ? radix_sort(ctx, keys.view(), values.view(), options) : radix_sort(ctx, keys.view(), options);
    });
    keys.copy_to(keys_h);
    values.copy_to(values_h);
    datasets::bundle_writer out(r.output, "result", name());
    out.add<K>("keys", keys_h);
    if (with_values) out.add<value_t>("values", values_h);
    out.params() = in.params();
    out.info() = {{"backend", std::string(to_string(ctx.which()))}, {"device", ctx.props().name},
                  {"variant", r.variant.empty() ? "digits" : r.variant}, {"plan", plan.describe()},
                  {"kernel_ms", t.median_ms}};
    out.finish();
    std::ostringstream s;
    s << "radixsort: " << keys_h.size() << " " << datasets::dtype_name(datasets::dtype_of<K>()) << " keys"
      << (with_values ? " with values" : "") << " on " << ctx.describe() << "\n  " << plan.describe() << ", "
      << t.median_ms << " ms";
    return s.str();
  }

  validate_report validate(const validate_request& r) const override {
    const auto in = open_dataset(r.input);
    const auto out = bundle::open(r.result, "result", name());
    const auto type = in.header("keys").type;
    if (type == datasets::dtype::u32) return validate_typed<std::uint32_t>(in, out);
    if (type == datasets::dtype::i32) return validate_typed<std::int32_t>(in, out);
    if (type == datasets::dtype::f32) return validate_typed<float>(in, out);
    throw input_error(in.path_of("keys").string() + ": keys must be uint32, int32 or float32");
  }

  template <class K>
  validate_report validate_typed(const bundle& in, const bundle& out) const {
    const auto keys = in.read<K>("keys");
    const auto sorted = out.read<K>("keys");
    validate::report rep;
    if (has_values(in)) {
      if (!out.has("values")) throw input_error(out.dir().string() + ": the dataset has values but the result has none");
      rep = validate::check_sort<K, value_t>(keys, sorted, in.read<value_t>("values"), out.read<value_t>("values"));
    } else {
      rep = validate::check_sort<K>(keys, sorted);
    }
    return {rep.ok(), rep.describe("sorted positions")};
  }

  void bench(context& ctx, const bench_request& r, bench::suite& suite) const override {
    if (!ctx.is_cuda()) throw usage_error("soac bench radixsort compares against CUB and needs the cuda backend");
    const auto names = r.presets.empty() ? bench_presets() : r.presets;
    suite.expect_cases(static_cast<int>(names.size() * 2));
    for (const auto& preset_name : names) {
      const auto params = resolve_params(preset_name, r.overrides);
      const std::int64_t n = int_param(params, "n", 1, std::int64_t{1} << 31);
      bench_size(ctx, n, r.seed, preset_name == "2^24", suite);
    }
  }

  void bench_size(context& ctx, std::int64_t n, std::uint64_t seed, bool with_one_bit, bench::suite& suite) const {
    const auto keys_h = random_keys(n, seed);
    std::vector<value_t> values_h(static_cast<std::size_t>(n));
    value_t* vp = values_h.data();
    SOAC_OMP_PARALLEL_FOR
    for (std::int64_t i = 0; i < n; ++i) vp[i] = value_t(i);
    buffer<std::uint32_t> pristine(ctx, std::span<const std::uint32_t>(keys_h));
    buffer<value_t> pristine_values(ctx, std::span<const value_t>(values_h));
    buffer<std::uint32_t> keys(ctx, std::size_t(n));
    buffer<value_t> values(ctx, std::size_t(n));
    const std::size_t bytes = std::size_t(n) * 4;
    auto restore = [&] {
      SOAC_CUDA_CHECK(cudaMemcpyAsync(keys.data(), pristine.data(), bytes, cudaMemcpyDeviceToDevice, ctx.stream()));
      SOAC_CUDA_CHECK(cudaMemcpyAsync(values.data(), pristine_values.data(), bytes, cudaMemcpyDeviceToDevice, ctx.stream()));
    };
    // Outputs are checked after timing against CUB's (stable, so key-value pairs must agree bit
    // for bit): a host reference sort of 2^28 keys would take longer than the whole bench.
    std::vector<std::uint32_t> ref_keys;
    std::vector<value_t> ref_values;
    auto check = [&](bool with_values, const std::string& who) {
      if (keys.to_vector() != ref_keys || (with_values && values.to_vector() != ref_values))
        suite.annotate("WRONG RESULT (" + who + " differs from CUB)");
    };
    std::size_t temp_bytes = 0, t2 = 0;
    SOAC_CUDA_CHECK(cub::DeviceRadixSort::SortKeys(nullptr, temp_bytes, pristine.data(), keys.data(), n, 0, 32, ctx.stream()));
    SOAC_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(nullptr, t2, pristine.data(), keys.data(), pristine_values.data(),
                                                    values.data(), n, 0, 32, ctx.stream()));
    temp_bytes = std::max(temp_bytes, t2);
    void* temp = ctx.allocate_temp(temp_bytes);
    std::string plan;
    for (bool with_values : {false, true}) {
      std::ostringstream name;
      name << "radixsort n=2^" << (63 - __builtin_clzll(std::uint64_t(n))) << (with_values ? " key-value" : " keys");
      // The floor: every key (and value) read once and written once.
      suite.begin_case(name.str(), {{"n", n}, {"values", with_values}}, double(n) * (with_values ? 16 : 8));
      suite.measure(with_values ? "CUB SortPairs" : "CUB SortKeys", bench::role::baseline, [&] {
        if (with_values)
          SOAC_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(temp, temp_bytes, pristine.data(), keys.data(),
                                                          pristine_values.data(), values.data(), n, 0, 32, ctx.stream()));
        else
          SOAC_CUDA_CHECK(cub::DeviceRadixSort::SortKeys(temp, temp_bytes, pristine.data(), keys.data(), n, 0, 32, ctx.stream()));
      });
      ref_keys = keys.to_vector();
      if (with_values) ref_values = values.to_vector();
      if (!std::is_sorted(ref_keys.begin(), ref_keys.end())) suite.annotate("WRONG RESULT (CUB keys not sorted)");
      auto soac_sort = [&](radix_algorithm algorithm, const std::string& label) {
        suite.measure(label, bench::role::soac, [&] {
          const radix_sort_options options{algorithm};
          plan = (with_values ? radix_sort(ctx, keys.view(), values.view(), options) : radix_sort(ctx, keys.view(), options))
                     .describe();
        }, {}, restore);
        suite.annotate(plan);
        check(with_values, label);
      };
      soac_sort(radix_algorithm::digits, "soac radix_sort");
      soac_sort(radix_algorithm::digits_per_pass, "soac per-pass digits");
      if (with_one_bit) soac_sort(radix_algorithm::one_bit, "soac 1-bit (Fig 4)");
    }
    ctx.free_temp(temp);
  }
};

}  // namespace
}  // namespace soac::apps

SOAC_REGISTER_APP(soac::apps::radixsort_app)

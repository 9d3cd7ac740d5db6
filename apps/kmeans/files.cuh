// The k-means app's datasets: generated points, Rodinia's files, the run settings and Rodinia's listing.
// A part of the kmeans app's one translation unit (apps/kmeans/kmeans_app.cu includes them in order:
// functors, kernels, plan, engine, files).
#pragma once

#include "apps/kmeans/engine.cuh"

namespace soac::apps {
namespace {

// ---- Datasets ---------------------------------------------------------------------------------

constexpr std::int64_t max_points = std::numeric_limits<std::int32_t>::max();
// n * d floats a dataset may hold: 64 GiB.
constexpr std::int64_t max_features = std::int64_t{1} << 34;

// A generated dataset: the generator's settings and the run settings it records (run's defaults).
struct kmeans_spec {
  std::int64_t n = 0, d = 0, blobs = 0;
  double spread = 0;
  kmeans_config run;
  bool whole = true;     // bench: also time the whole clustering
  bool parts = false;    // bench: also time each part of an iteration
  std::string variants;  // bench: variants timed per iteration besides rodinia, hist, segreduce
};

init_kind parse_init(const std::string& v) {
  if (v == "first") return init_kind::first;
  if (v == "kmeans++") return init_kind::kmeanspp;
  throw usage_error("kmeans: init must be first or kmeans++, not '" + v + "'");
}

std::string string_param(const nlohmann::json& params, const std::string& key) {
  if (!params.contains(key) || !params[key].is_string()) throw usage_error("parameter " + key + " must be a string");
  return params[key].get<std::string>();
}

// The run settings (k, the stopping rule, init, seed) from JSON values, for n points.
kmeans_config run_config_of(const nlohmann::json& values, std::int64_t n) {
  kmeans_config cfg;
  cfg.k = int_param(values, "k", 1, max_points);
  if (cfg.k > n) throw usage_error("kmeans: k = " + std::to_string(cfg.k) + " exceeds the " + std::to_string(n) + " points");
  // Rodinia takes any -t; a negative one never stops before the iteration limit.
  cfg.stop.threshold = real_param(values, "threshold", -1e18, 1e18);
  cfg.stop.threshold_fraction = real_param(values, "threshold_fraction", 0, 1);
  cfg.stop.max_iterations = int_param(values, "max_iterations", 1, 1'000'000'000);
  cfg.init = parse_init(string_param(values, "init"));
  if (values.contains("seed")) cfg.seed = std::uint64_t(int_param(values, "seed", 0, std::numeric_limits<std::int64_t>::max()));
  return cfg;
}

kmeans_spec spec_of(const nlohmann::json& params) {
  kmeans_spec s;
  s.n = int_param(params, "n", 1, max_points);
  s.d = int_param(params, "d", 1, max_features);
  s.blobs = int_param(params, "blobs", 0, 1 << 20);
  s.spread = real_param(params, "spread", 0, 1e6);
  s.run = run_config_of(params, s.n);
  s.whole = int_param(params, "whole", 0, 1) == 1;
  s.parts = int_param(params, "parts", 0, 1) == 1;
  s.variants = string_param(params, "variants");
  if (s.d > max_features / s.n)  // n x d itself may overflow 64 bits
    throw usage_error("kmeans: n x d = " + std::to_string(s.n) + " x " + std::to_string(s.d) + " features exceed the limit of 2^34");
  return s;
}

// Uniform features in [0, 1) (blobs = 0), or Gaussian blobs of different sizes: centres uniform in
// [0, 1)^d, standard deviation `spread`, blob b drawn with weight 1 + 3 u_b. Counter-based: the
// same seed gives the same points on any number of threads.
std::vector<float> generate_points(const kmeans_spec& s, std::uint64_t seed) {
  enum : std::uint64_t { features = 1, centres, weights, blob_of, noise };
  std::vector<float> x(static_cast<std::size_t>(s.n * s.d));
  float* out = x.data();
  const std::int64_t n = s.n, d = s.d;
  auto unit_float = [](std::uint64_t word) { return float(word >> 40) * 0x1.0p-24f; };  // exact, in [0, 1)
  if (s.blobs == 0) {
    const std::uint64_t key = datasets::stream_key(seed, features);
    SOAC_OMP_PARALLEL_FOR
    for (std::int64_t e = 0; e < n * d; ++e) out[e] = unit_float(datasets::keyed_word(key, std::uint64_t(e)));
    return x;
  }
  std::vector<double> centre(static_cast<std::size_t>(s.blobs * d)), cumulative(static_cast<std::size_t>(s.blobs));
  for (std::int64_t i = 0; i < s.blobs * d; ++i) centre[std::size_t(i)] = datasets::random_unit(seed, centres, std::uint64_t(i));
  double total = 0;
  for (std::int64_t b = 0; b < s.blobs; ++b) cumulative[std::size_t(b)] = total += 1 + 3 * datasets::random_unit(seed, weights, std::uint64_t(b));
  const double pi = 3.14159265358979323846, spread = s.spread;
  const std::int64_t blobs = s.blobs;
  const double* c = centre.data();
  const double* cum = cumulative.data();
  SOAC_OMP_PARALLEL_FOR
  for (std::int64_t p = 0; p < n; ++p) {
    const double u = datasets::random_unit(seed, blob_of, std::uint64_t(p)) * total;
    std::int64_t b = 0;
    while (b + 1 < blobs && cum[b] <= u) ++b;
    for (std::int64_t j = 0; j < d; ++j) {
      // Box-Muller from two uniforms of the point's coordinate.
      const std::uint64_t i = std::uint64_t(p * d + j);
      const double u1 = datasets::random_unit(seed, noise, 2 * i), u2 = datasets::random_unit(seed, noise, 2 * i + 1);
      const double z = std::sqrt(-2.0 * std::log1p(-u1)) * std::cos(2 * pi * u2);
      out[p * d + j] = float(c[b * d + j] + spread * z);
    }
  }
  return x;
}

struct loaded_points {
  kmeans_points pts;
  nlohmann::json params = nlohmann::json::object();  // a bundle's parameters (k, threshold, ...)
};

// A dataset bundle's features: an n x d float32 array.
std::pair<std::int64_t, std::int64_t> features_shape(const bundle& in) {
  const auto h = in.header("features");
  if (h.shape.size() != 2 || h.shape[0] < 1 || h.shape[1] < 1 || h.shape[0] > max_points)
    throw input_error(in.path_of("features").string() + ": features must be an n x d array with n in [1, 2^31) and d >= 1, not " +
                      datasets::shape_string(h.shape));
  return {h.shape[0], h.shape[1]};
}

// Throws input_error naming the first feature of rows [first, ...) that is not finite.
void require_finite(const bundle& in, std::span<const float> x, std::int64_t d, std::int64_t first) {
  for (std::size_t i = 0; i < x.size(); ++i)
    if (!std::isfinite(x[i]))
      throw input_error(in.path_of("features").string() + ": feature " + std::to_string(i % std::size_t(d)) + " of point " +
                        std::to_string(first + std::int64_t(i / std::size_t(d))) + " is not finite");
}

constexpr const char* rodinia_kmeans = "Rodinia's kmeans";

// Rodinia's files are read as Rodinia reads them (datasets/rodinia_kmeans.hpp); what it reads
// leniently goes into `lenient` (or is refused when it is strict).
loaded_points load_points(const std::vector<std::filesystem::path>& inputs, const std::string& format, datasets::leniency& lenient) {
  if (inputs.size() != 1) throw usage_error("kmeans reads one input (-i), got " + std::to_string(inputs.size()));
  loaded_points out;
  if (format == "rodinia" || format == "rodinia-bin") {
    out.pts = format == "rodinia" ? datasets::read_rodinia_kmeans_text(inputs[0], lenient)
                                  : datasets::read_rodinia_kmeans_binary(inputs[0], lenient);
  } else {
    const auto in = find_app("kmeans").open_dataset(inputs[0]);
    std::tie(out.pts.n, out.pts.d) = features_shape(in);
    out.pts.features = in.read<float>("features");
    require_finite(in, out.pts.features, out.pts.d, 0);
    out.params = in.params();
  }
  return out;
}

// One process's part of the points, for ranks in separate processes, so that no process reads
// every point: a bundle's and a Rodinia binary file's rows shard_of(n) by offset; of a Rodinia text
// file, the points whose lines start in the process's bytes of the file (the line counts are then
// exchanged for n and each rank's first row). What is read leniently is counted over the processes.
struct sharded_points {
  std::int64_t n = 0, d = 0;
  nlohmann::json params = nlohmann::json::object();  // a bundle's
  std::vector<std::int64_t> starts;                  // rank r: rows [starts[r], starts[r + 1])
  std::vector<float> features;                       // this process's rows

  // The shard and the k points the clustering starts from (Rodinia's picks), each sent by the
  // process that holds it (float bits summed as integers with the others' zeros: exact).
  points_shard with_initial(const mpi_world& world, std::int64_t k) && {
    points_shard out;
    out.n = n, out.d = d, out.rank = world.rank();
    out.initial.assign(std::size_t(k * d), 0.0f);
    const std::int64_t begin = starts[std::size_t(world.rank())], end = starts[std::size_t(world.rank()) + 1];
    for (std::int64_t i = 0; i < k; ++i)
      if (const std::int64_t row = validate::rodinia_initial_point(n, i); row >= begin && row < end)
        std::copy_n(features.begin() + (row - begin) * d, d, out.initial.begin() + i * d);
    static_assert(sizeof(float) == sizeof(std::int32_t));
    world.all_reduce(out.initial.data(), out.initial.size(), reduce_type::i32, reduce_op::sum);
    out.starts = std::move(starts);
    out.features = std::move(features);
    return out;
  }
};

// Every process's leniency notes as one: their count, and the first of the lowest process with any.
void merge_leniency(const mpi_world& world, datasets::leniency& lenient) {
  std::int64_t count = lenient.count();
  world.all_reduce(&count, 1, reduce_type::i64, reduce_op::sum);
  if (count == 0) return;
  const int first_rank = -world.max_over_ranks(lenient.count() > 0 ? -world.rank() : -world.size());
  std::string first = lenient.first();
  std::uint64_t bytes = first.size();
  world.broadcast(&bytes, sizeof bytes, first_rank);
  first.resize(std::size_t(bytes));
  world.broadcast(first.data(), first.size(), first_rank);
  lenient.set_summary(count, std::move(first));
}

sharded_points read_points_shard(const std::filesystem::path& input, const std::string& format, const mpi_world& world,
                                 datasets::leniency& lenient) {
  const int R = world.size(), me = world.rank();
  sharded_points out;
  auto even_shards = [&] {
    for (int r = 0; r <= R; ++r) out.starts.push_back(r == R ? out.n : shard_of(out.n, R, r).begin);
    const shard s = shard_of(out.n, R, me);
    require_host_memory(checked_bytes(std::uint64_t(s.size()), std::uint64_t(out.d) * sizeof(float), "kmeans: a shard"),
                        "kmeans: this process's shard of the points");
    out.features.resize(std::size_t(s.size() * out.d));
    return s;
  };
  if (format == "rodinia") {
    out.d = datasets::rodinia_kmeans_text_features(input);
    const std::uint64_t bytes = datasets::rodinia_kmeans_text_bytes(input);
    auto part = datasets::read_rodinia_kmeans_text_part(input, bytes * std::uint64_t(me) / std::uint64_t(R),
                                                        bytes * std::uint64_t(me + 1) / std::uint64_t(R), out.d, lenient);
    std::vector<std::int64_t> counts(static_cast<std::size_t>(R));
    world.all_gather(&part.n, counts.data(), sizeof(std::int64_t));
    out.starts.assign(1, 0);
    for (const std::int64_t c : counts) out.starts.push_back(out.starts.back() + c);
    out.n = out.starts.back();
    if (out.n > max_points) throw input_error(input.string() + ": more than " + std::to_string(max_points) + " points");
    out.features = std::move(part.features);
  } else if (format == "rodinia-bin") {
    const auto shape = datasets::read_rodinia_kmeans_binary_shape(input);
    out.n = shape.n, out.d = shape.d;
    const shard s = even_shards();
    datasets::read_rodinia_kmeans_binary_rows(input, shape, s.begin, s.size(), out.features.data());
    if (me == R - 1) datasets::note_rodinia_binary_tail(input, shape, lenient);
  } else {
    const bundle in = find_app("kmeans").open_dataset(input);
    std::tie(out.n, out.d) = features_shape(in);
    out.params = in.params();
    const shard s = even_shards();
    in.read_rows_into("features", s.begin, s.size(), out.features.data());
    require_finite(in, out.features, out.d, s.begin);
  }
  merge_leniency(world, lenient);
  return out;
}

loaded_points load_points(const std::vector<std::filesystem::path>& inputs, const std::string& format) {
  datasets::leniency lenient;
  return load_points(inputs, format, lenient);
}

// Rodinia's defaults (kmeans -m 5 -n 5 -t 0.001), for files that carry none.
const nlohmann::json rodinia_defaults = {{"k", 5},
                                         {"threshold", validate::rodinia_threshold},
                                         {"threshold_fraction", 0},
                                         {"max_iterations", validate::rodinia_max_iterations},
                                         {"init", "first"}};

// A run setting: its --set value, or with "dataset" the dataset's parameter (Rodinia's default
// for Rodinia files and for bundles that lack it).
nlohmann::json setting_value(const nlohmann::json& settings, const nlohmann::json& dataset, const std::string& key) {
  const auto& v = settings.at(key);
  if (!v.is_string() || v.get<std::string>() != "dataset") return v;
  return dataset.contains(key) ? dataset[key] : rodinia_defaults[key];
}

kmeans_config config_of(const nlohmann::json& settings, const nlohmann::json& dataset, std::int64_t n) {
  nlohmann::json values = nlohmann::json::object();
  for (const char* key : {"k", "threshold", "threshold_fraction", "max_iterations", "seed"}) {
    const nlohmann::json v = setting_value(settings, dataset, key);
    values[key] = v.is_string() ? parse_number(key, v.get<std::string>()) : v;
  }
  const nlohmann::json init = setting_value(settings, dataset, "init");
  values["init"] = init.is_string() ? init.get<std::string>() : init.dump();
  return run_config_of(values, n);
}

// The run settings a dataset bundle records, as run takes them by default.
const nlohmann::json every_setting_from_dataset = {
    {"k", "dataset"}, {"threshold", "dataset"}, {"threshold_fraction", "dataset"}, {"max_iterations", "dataset"}, {"init", "dataset"}, {"seed", 1}};

// Rodinia's -r: the root of the mean squared distance of the points to their nearest final
// centroid, which the final memberships are once no point changed cluster.
double rmse_of(double objective, std::int64_t n) { return std::sqrt(objective / double(n)); }
std::string rodinia_rmse_text(double rmse) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.3f", rmse);  // Rodinia prints "Root Mean Squared Error: %.3f"
  return buf;
}

std::string init_name(init_kind i) { return i == init_kind::first ? "first" : "kmeans++"; }

// Rodinia's `-o` listing of the centroids.
std::string rodinia_listing(const std::vector<float>& centroids, std::int64_t k, std::int64_t d) {
  std::ostringstream s;
  s << "\n================= Centroid Coordinates =================\n";
  char buf[64];
  for (std::int64_t c = 0; c < k; ++c) {
    s << c << ":";
    for (std::int64_t j = 0; j < d; ++j) {
      std::snprintf(buf, sizeof buf, " %.2f", double(centroids[std::size_t(c * d + j)]));
      s << buf;
    }
    s << "\n\n";
  }
  return s.str();
}

}  // namespace
}  // namespace soac::apps

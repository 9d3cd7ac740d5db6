// What `soac run kmeans --variant NAME,KEY=VALUE,...` chooses, and the automatic choices.
// A part of the kmeans app's one translation unit (apps/kmeans/kmeans_app.cu includes them in order:
// functors, kernels, plan, engine, files).
#pragma once

#include "apps/kmeans/kernels.cuh"

namespace soac::apps {
namespace {

// ---- Plans: what `--variant NAME,KEY=VALUE,...` chooses -------------------------------------

enum class update_kind { hist, segreduce, rodinia };
enum class distance_kind { automatic, direct, gemm };
enum class layout_kind { automatic, rows, columns };
enum class sums_kind { automatic, flat, vec4, split, batched, fused };
enum class init_kind { first, kmeanspp };

constexpr int vector_width = 4;

namespace kmeans_tuning {
// gemm from this many centroids on: SGEMM writes and reads the distance matrix, while the direct
// kernels read the points once; direct wins at k = 5, gemm by far at k = 1024 (k between 16 and 32
// is not measured; docs/tuning/kmeans.md).
inline constexpr std::int64_t gemm_min_k = 32;
// Points beyond what the direct kernel holds in registers (32 lanes x 16) re-read per centroid.
inline constexpr std::int64_t gemm_min_d = 513;
// gemm: chunks of points whose distance matrix takes at most this many bytes (and a sixteenth of
// the device's memory): big SGEMMs fill the GPU's last wave better than chunks whose matrix stays
// in L2 for the argmin (docs/tuning/kmeans.md).
inline constexpr double chunk_max_bytes = double(std::size_t{1} << 30);
// The host backend's chunk: 16 MiB of distances.
inline constexpr std::size_t host_chunk_bytes = std::size_t{16} << 20;
// column_parts: a block's set-up (its 1024 private copies) and fold, in elements of work: an
// estimate from a block's read rate, not yet measured.
inline constexpr double batched_block_elements = 8192;
// The feature-major copy (layout=columns) only where it takes at most this fraction of the
// device's memory (it doubles the points' footprint).
inline constexpr double columns_memory_fraction = 0.25;
}  // namespace kmeans_tuning

struct kmeans_plan {
  update_kind update = update_kind::hist;
  distance_kind distances = distance_kind::automatic;
  layout_kind layout = layout_kind::automatic;
  sums_kind sums = sums_kind::automatic;
  std::int64_t chunk = 0;  // gemm: points per SGEMM; 0: from L2
  bool tf32 = false;
  hist_options hist;
  std::vector<std::string> hist_keys;  // the hist options given (checked against the sums)
  std::string variant;  // as given (for the result)

  std::string describe() const {
    std::ostringstream s;
    s << (update == update_kind::hist ? "hist" : update == update_kind::segreduce ? "segreduce" : "rodinia");
    if (update == update_kind::rodinia) return s.str() + " (thread-per-point membership, host update)";
    s << ", " << (distances == distance_kind::gemm ? "gemm" : "direct") << " distances";
    if (distances == distance_kind::gemm) s << " (" << chunk << " points per SGEMM, " << (tf32 ? "TF32" : "FP32") << ")";
    s << ", " << (layout == layout_kind::columns ? "feature-major points" : "row-major points");
    if (update == update_kind::hist) {
      switch (sums) {
        case sums_kind::vec4: s << ", vec4 elementwise sums (hist_fused)"; break;
        case sums_kind::split: s << ", counts and flattened float sums as two hist calls"; break;
        case sums_kind::batched: s << ", counts (hist) and a histogram of k sums per feature (hist_batched)"; break;
        case sums_kind::fused: s << ", assignment, counts, sums, changes and objective in one pass (thread-private sums)"; break;
        default: s << ", flattened float sums (hist_fused)"; break;
      }
    }
    return s.str();
  }
};

distance_kind parse_distances(std::string_view v) {
  if (v == "auto") return distance_kind::automatic;
  if (v == "direct") return distance_kind::direct;
  if (v == "gemm") return distance_kind::gemm;
  throw usage_error("kmeans: distances must be auto, direct or gemm, not '" + std::string(v) + "'");
}

kmeans_plan parse_variant(const std::string& text) {
  kmeans_plan plan;
  plan.variant = text.empty() ? "hist" : text;
  const std::size_t comma = text.find(',');
  const std::string name = text.substr(0, comma);
  if (name.empty() || name == "hist") plan.update = update_kind::hist;
  else if (name == "segreduce") plan.update = update_kind::segreduce;
  else if (name == "rodinia") plan.update = update_kind::rodinia;
  else throw usage_error("kmeans: unknown variant '" + name + "' (known: hist, segreduce, rodinia)");
  if (comma == std::string::npos) return plan;
  if (plan.update == update_kind::rodinia) throw usage_error("kmeans: the rodinia variant takes no settings (got '" + text + "')");
  std::string_view rest = std::string_view(text).substr(comma + 1);
  while (!rest.empty()) {
    const std::size_t next = rest.find(',');
    const std::string_view item = rest.substr(0, next);
    rest = next == std::string_view::npos ? std::string_view{} : rest.substr(next + 1);
    const std::size_t eq = item.find('=');
    if (eq == std::string_view::npos || eq == 0) throw usage_error("kmeans: variant setting '" + std::string(item) + "' is not KEY=VALUE");
    const std::string_view key = item.substr(0, eq), value = item.substr(eq + 1);
    if (key == "distances") {
      plan.distances = parse_distances(value);
    } else if (key == "layout") {
      if (value == "auto") plan.layout = layout_kind::automatic;
      else if (value == "rows") plan.layout = layout_kind::rows;
      else if (value == "columns") plan.layout = layout_kind::columns;
      else throw usage_error("kmeans: layout must be auto, rows or columns, not '" + std::string(value) + "'");
    } else if (key == "chunk") {
      const auto v = parse_number("chunk", value);
      if (!v.is_number_integer() || v.get<std::int64_t>() < 0) throw usage_error("kmeans: chunk must be a count of points (0: the default)");
      plan.chunk = v.get<std::int64_t>();
    } else if (key == "math") {
      if (value != "fp32" && value != "tf32") throw usage_error("kmeans: math must be fp32 or tf32, not '" + std::string(value) + "'");
      plan.tf32 = value == "tf32";
    } else if (key == "sums" && plan.update == update_kind::hist) {
      if (value == "auto") plan.sums = sums_kind::automatic;
      else if (value == "flat") plan.sums = sums_kind::flat;
      else if (value == "vec4") plan.sums = sums_kind::vec4;
      else if (value == "split") plan.sums = sums_kind::split;
      else if (value == "batched") plan.sums = sums_kind::batched;
      else if (value == "fused") plan.sums = sums_kind::fused;
      else throw usage_error("kmeans: sums must be auto, flat, vec4, split, batched or fused, not '" + std::string(value) + "'");
    } else if (plan.update == update_kind::hist && key != "RF" && key != "atomic") {
      try {
        set_hist_option(plan.hist, key, value);  // strategy, M, and for split or batched sums the others
      } catch (const usage_error& e) {
        // An unknown key is kmeans' to name; a hist option's bad value keeps hist's own message.
        if (!std::string_view(e.what()).starts_with("hist: unknown setting")) throw usage_error(std::string("kmeans: ") + e.what());
        throw usage_error("kmeans: the hist variant takes distances, layout, chunk, math, sums and the hist options, not '" +
                          std::string(key) + "=" + std::string(value) + "'");
      }
      check_hist_options(plan.hist);
      plan.hist_keys.emplace_back(key);
    } else {
      throw usage_error("kmeans: the " + name + " variant takes distances, layout, chunk, math" +
                        (plan.update == update_kind::hist ? ", sums and the hist options" : "") + ", not '" + std::string(key) + "'");
    }
  }
  return plan;
}

std::int64_t column_parts(std::int64_t n, std::int64_t d, std::int64_t sms) {
  std::int64_t best = 1;
  double best_cost = 0;
  for (std::int64_t parts = 1; parts <= 64 && parts <= n; ++parts) {
    const std::int64_t hists = d * parts, split = std::max<std::int64_t>(1, (sms + hists - 1) / hists);
    const std::int64_t waves = (hists * split + sms - 1) / sms;
    const double cost = double(waves) * (double(n) / double(parts * split) + kmeans_tuning::batched_block_elements);
    if (parts == 1 || cost < best_cost) best = parts, best_cost = cost;
  }
  return best;
}

// sums=batched's parts per feature on ctx (host: a few, which the tests cover).
std::int64_t batched_parts(const context& ctx, std::int64_t n, std::int64_t d) {
  return ctx.is_cuda() ? column_parts(n, d, ctx.props().sm_count) : std::min<std::int64_t>(3, n);
}

// Auto choices that depend on the data and the device.
void resolve_plan(kmeans_plan& plan, const context& ctx, std::int64_t n, std::int64_t d, std::int64_t k) {
  if (plan.distances == distance_kind::automatic)
    plan.distances = k >= kmeans_tuning::gemm_min_k || (d >= kmeans_tuning::gemm_min_d && k > 1) ? distance_kind::gemm
                                                                                                    : distance_kind::direct;
  // Small k and d: the assignment and the whole update in one pass over the row-major points,
  // faster than the columns kernel and a histogram per feature (docs/tuning/kmeans.md).
  if (plan.sums == sums_kind::automatic && plan.update == update_kind::hist && plan.distances == distance_kind::direct &&
      plan.layout != layout_kind::columns && plan.hist_keys.empty() && fused_fit(d, k))
    plan.sums = sums_kind::fused;
  if (plan.sums == sums_kind::fused) {
    if (plan.distances != distance_kind::direct) throw usage_error("kmeans: sums=fused computes its own distances (distances=direct)");
    if (plan.layout == layout_kind::columns) throw usage_error("kmeans: sums=fused reads the row-major points (layout=rows)");
    if (!fused_fit(d, k))
      throw usage_error("kmeans: sums=fused holds at most " + std::to_string(fused_kmax) + " clusters of " +
                        std::to_string(fused_max_slices * fused_features) + " features (here k = " + std::to_string(k) +
                        ", d = " + std::to_string(d) + ")");
    if (!plan.hist_keys.empty()) throw usage_error("kmeans: sums=fused is its own kernel and takes no hist options, not '" + plan.hist_keys.front() + "'");
    plan.layout = layout_kind::rows;
  }
  if (plan.layout == layout_kind::automatic) {
    const double copy_bytes = 4.0 * double(n) * double(d);
    const bool room = !ctx.is_cuda() || copy_bytes <= kmeans_tuning::columns_memory_fraction * double(ctx.props().global_bytes);
    plan.layout = room && plan.distances == distance_kind::direct && columns_fit(d, k) ? layout_kind::columns : layout_kind::rows;
  }
  if (plan.sums == sums_kind::automatic) {
    // Feature-major points: a histogram of k sums per feature with a private copy per thread
    // (plain adds; shared float atomics are compare-and-swap loops, ATOMS.CAST.SPIN, on sm_90).
    plan.sums = plan.layout == layout_kind::columns ? sums_kind::batched : sums_kind::flat;
    if (plan.sums == sums_kind::batched && std::find(plan.hist_keys.begin(), plan.hist_keys.end(), "private") == plan.hist_keys.end() &&
        std::find(plan.hist_keys.begin(), plan.hist_keys.end(), "M") == plan.hist_keys.end())
      plan.hist.overrides.thread_private = hist_toggle::on;
  }
  if (plan.update != update_kind::hist) plan.sums = sums_kind::flat;  // (the segreduce update has its own sums)
  if (plan.sums == sums_kind::batched && plan.layout != layout_kind::columns)
    throw usage_error("kmeans: sums=batched needs layout=columns (a histogram per feature of the feature-major points)");
  if (plan.sums == sums_kind::flat || plan.sums == sums_kind::vec4)
    for (const auto& key : plan.hist_keys)
      if (key != "strategy" && key != "M")
        throw usage_error("kmeans: the fused sums (flat, vec4) take strategy and M of the hist options, not '" + key + "'");
  if (plan.distances == distance_kind::gemm && plan.chunk == 0) {
    const double bytes = ctx.is_cuda() ? std::min(kmeans_tuning::chunk_max_bytes, double(ctx.props().global_bytes) / 16)
                                       : double(kmeans_tuning::host_chunk_bytes);
    plan.chunk = std::max<std::int64_t>(1, std::int64_t(bytes / (4.0 * double(k))));
  }
  plan.chunk = std::min(plan.chunk, n);
  if (plan.tf32 && plan.distances != distance_kind::gemm) throw usage_error("kmeans: math=tf32 applies to gemm distances only");
}

}  // namespace
}  // namespace soac::apps

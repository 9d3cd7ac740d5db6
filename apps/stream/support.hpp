// What the streamed apps (stream, histeq, blackscholes, conv1d) share: the pipeline's run
// settings and variants, a fast generator of big files, and the bench that times a workload as
// the ZOne paper does: the serial loop, the streamed run, and the bound (each stage alone).
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "apps/app.hpp"
#include "bench/harness.hpp"
#include "core/context.hpp"
#include "core/stream.hpp"
#include "datasets/bundle.hpp"
#include "datasets/npy.hpp"

namespace soac::apps::streaming {

// `soac run APP --set readers=8,...`: readers, writers, chunk (elements; 0 planned), slots.
std::vector<setting> pipeline_settings();
// The options those settings give, for `variant` "streamed" (overlapped) or "serial".
stream_options pipeline_options(const nlohmann::json& settings, const std::string& variant);
// "streamed" (the default) and "serial" (the serial loop, for comparison).
std::vector<std::string> pipeline_variants();
// The pipeline settings as a bench preset takes them (with `dir`, where its files go, and `from`,
// the smallest size of a sweep), merged into `params`.
nlohmann::json with_bench_params(nlohmann::json params);
// The sizes a bench sweeps: params[key] alone when params["from"] is 0, else from, 4 from, 16 from,
// ... up to params[key] (ZOne's Figs 5 and 6 are such sweeps).
std::vector<std::int64_t> bench_sizes(const nlohmann::json& params, const std::string& key, std::int64_t lo, std::int64_t hi);
// Records a streamed run in a result: the pipeline settings in params (for validate) and the
// backend, variant and what the run did in info. Apps add their own entries after.
void record_run(datasets::bundle_writer& out, const context& ctx, const nlohmann::json& settings, const stream_options& options,
                const stream_report& report);

// Writes a file of `bytes` bytes after `prefix` (an .npy header, or nothing), filling blocks of
// 16 MiB in parallel with fill(offset, block) (offset counted from the end of the prefix) and
// writing them as they are filled. Written under a temporary name, renamed when complete.
void write_generated(const std::filesystem::path& path, std::uint64_t bytes,
                     const std::function<void(std::uint64_t offset, std::span<std::uint8_t> block)>& fill,
                     std::string_view prefix = {});

// An array of a bundle as a stream source (its .npy data, after the header), checking its dtype.
stream_source bundle_source(const datasets::bundle& b, const std::string& name, datasets::dtype expected);
// Array `name` of a streamed app's result, n elements of `type`: from the bundle's .npy, or from
// the raw file `name.<raw_extension>` that a run on raw files writes beside the manifest.
// input_error naming both counts when the result holds another number of elements than the
// dataset (a result of another dataset).
stream_source result_source(const datasets::bundle& result, const std::string& name, datasets::dtype type, std::int64_t n,
                            const std::string& raw_extension);
// A raw file of little-endian `type` elements as a stream source.
stream_source raw_source(const std::filesystem::path& file, datasets::dtype type);

// Reads elements [first, first + count) of a source into dst (validators read big files in parts).
void read_elements(const stream_source& src, std::int64_t first, std::int64_t count, void* dst);
// Elements in a source (opens the file).
std::int64_t element_count(const stream_source& src);
// Zeroes an array in the context's memory (asynchronously on cuda).
void zero(context& ctx, void* data, std::size_t bytes);

// A workload `soac bench` streams: `run` makes one pass with the options given (and checks
// nothing); `stages` are those that move data (reads, copies, kernel, writes).
struct workload {
  std::string name;
  nlohmann::json params;
  double bytes = 0;  // bytes read plus bytes written
  unsigned stages = stream_stage::all;
  std::function<stream_report(stream_pipeline&, const stream_options&)> run;
  // Checks the last run's result against the reference the workload keeps; "" when it matches.
  std::function<std::string()> check;
  // A rate to print beside times, e.g. "512 fps" for n seconds (empty: none).
  std::function<std::string(double seconds)> rate;
  // The bars for this workload, printed with the streamed row (empty: none).
  std::string bars;
};

// Times on ctx, in one case of `suite`: the serial loop [baseline], each stage alone, the bound
// [baseline: the slowest stage alone], the read and write stages together (where both exist),
// and the streamed run, with the speedup over the serial loop and the fraction of the bound (and
// of the host stages together) in the streamed row's note. Wall-clock medians of the
// suite's runs (warm-up: at most 2 runs per variant, each being a whole pass over the files).
// Returns the streamed median in ms.
double measure(context& ctx, bench::suite& suite, const workload& w, const stream_options& base);

// Wall-clock stats of `runs` calls of body after `warmup` untimed ones.
// Wall-clock milliseconds of one call of body; time_wall: warm-up calls, then the stats of `runs`.
double wall_ms(const std::function<void()>& body);
bench::stats time_wall(int warmup, int runs, const std::function<void()>& body);

// A folder for the bench's files: `dir` if given, else the system temporary folder; the files
// are removed when the object goes.
class scratch_dir {
 public:
  explicit scratch_dir(const std::string& dir, const std::string& tag);
  ~scratch_dir();
  std::filesystem::path operator/(const std::string& name) const { return path_ / name; }

 private:
  std::filesystem::path path_;
};

// The overrides `preset` of `a` has parameters for (`soac bench stream` hands each workload's
// app the settings meant for it).
std::map<std::string, std::string> overrides_for(const app& a, const std::string& preset,
                                                 const std::map<std::string, std::string>& overrides);

}  // namespace soac::apps::streaming

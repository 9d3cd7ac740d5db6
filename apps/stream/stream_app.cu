// The ZOne runtime's first use (issue 25): a histogram of a file of any size, larger than the GPU
// included, streamed through soac::stream (reads, host-to-device copies and soac::hist
// overlapped; the counts accumulate on the device across chunks). Bytes (uint8, 256 bins) or
// uint32 words (bin x % bins). `soac bench stream` times every streamed workload, this one and
// those of histeq, blackscholes and conv1d, against its serial loop and its bound.
#include <iostream>
#include <numeric>
#include <sstream>

#include "apps/app.hpp"
#include "apps/ranks.hpp"
#include "apps/stream/support.hpp"
#include "core/buffer.hpp"
#include "core/error.hpp"
#include "core/fast_divide.hpp"
#include "core/hist.cuh"
#include "core/multi/combine.cuh"
#include "core/operators.hpp"
#include "core/stream.hpp"
#include "datasets/bundle.hpp"
#include "datasets/random.hpp"
#include "validate/counts.hpp"
#include "validate/hist.hpp"

namespace soac::apps {
namespace {

using datasets::bundle;
using datasets::dtype;
using count_op = plus<std::uint64_t>;

// Four bytes per element read as one word (the chunk's slot is page-aligned and padded, so the
// last word may run past the chunk: those bytes get no bin).
struct byte_updates {
  const std::uint32_t* words;
  std::int64_t bytes;
  SOAC_HD bin_values<std::uint64_t, 4> operator()(std::int64_t i) const {
    const std::uint32_t w = words[i];
    bin_values<std::uint64_t, 4> r;
    for (int k = 0; k < 4; ++k) r[k] = {4 * i + k < bytes ? std::int64_t((w >> (8 * k)) & 255u) : -1, 1};
    return r;
  }
};

struct word_updates {
  const std::uint32_t* words;
  fast_divisor bins;
  SOAC_HD bin_value<std::uint64_t> operator()(std::int64_t i) const { return {std::int64_t(bins.remainder(words[i])), 1}; }
};

dtype parse_element(const std::string& s) {
  if (s == "uint8") return dtype::u8;
  if (s == "uint32") return dtype::u32;
  throw usage_error("stream: dtype '" + s + "' is not supported (uint8 or uint32)");
}

// The histogram of one source, accumulated chunk by chunk on ctx into `histo`.
class file_histogram {
 public:
  file_histogram(context& ctx, dtype type, std::int64_t bins) : ctx_(ctx), type_(type), histo_(ctx, std::size_t(bins)) {
    if (type == dtype::u8 && bins != 256) throw usage_error("stream: a byte histogram has 256 bins");
  }

  stream_report run(stream_pipeline& pipe, const stream_source& src, const stream_options& o) {
    streaming::zero(ctx_, histo_.data(), histo_.size() * sizeof(std::uint64_t));
    const stream_source in[] = {src};
    return pipe.run(in, {}, [&](const stream_chunk& c) { count(c); }, o);
  }
  std::vector<std::uint64_t> counts() const { return histo_.to_vector(); }

 private:
  void count(const stream_chunk& c) {
    const auto* words = c.input<std::uint32_t>(0);
    if (type_ == dtype::u8) hist(ctx_, (c.count + 3) / 4, byte_updates{words, c.count}, histo_.view(), count_op{});
    else hist(ctx_, c.count, word_updates{words, fast_divisor(std::uint32_t(histo_.size()))}, histo_.view(), count_op{});
  }
  context& ctx_;
  dtype type_;
  buffer<std::uint64_t> histo_;
};

// The reference, block by block (any file size), counted in parallel for the bench.
std::vector<std::uint64_t> reference_counts(const stream_source& src, dtype type, std::int64_t bins, bool parallel) {
  const std::int64_t n = streaming::element_count(src), block = std::int64_t{64} << 20;
  const std::int64_t blocks = (n + block - 1) / block;
  std::vector<std::uint64_t> total(std::size_t(bins), 0);
  std::exception_ptr error;
#pragma omp parallel if (parallel)
  {
    std::vector<std::uint64_t> mine(std::size_t(bins), 0);
    std::vector<std::uint8_t> buf;
#pragma omp for schedule(dynamic, 1)
    for (std::int64_t b = 0; b < blocks; ++b) {
      try {
        const std::int64_t first = b * block, count = std::min(block, n - first);
        buf.resize(std::size_t(count) * dtype_size(type));
        streaming::read_elements(src, first, count, buf.data());
        if (type == dtype::u8) validate::count_values<std::uint8_t>(mine, std::span(buf.data(), std::size_t(count)));
        else validate::count_values<std::uint32_t>(mine, std::span(reinterpret_cast<const std::uint32_t*>(buf.data()), std::size_t(count)));
      } catch (...) {
#pragma omp critical
        if (!error) error = std::current_exception();
      }
    }
#pragma omp critical
    for (std::size_t k = 0; k < mine.size(); ++k) total[k] += mine[k];
  }
  if (error) std::rethrow_exception(error);
  return total;
}

// Generated content: bytes from a triangular distribution (every bin a different count), words
// uniformly random.
void generate_values(const std::filesystem::path& path, dtype type, std::uint64_t bytes, std::uint64_t seed,
                     std::string_view prefix) {
  const std::uint64_t key = datasets::stream_key(seed, 0x73747265616dULL);
  streaming::write_generated(path, bytes, [&](std::uint64_t at, std::span<std::uint8_t> block) {
    for (std::size_t i = 0; i < block.size(); i += 8) {
      const std::uint64_t w = datasets::keyed_word(key, (at + i) / 8);
      for (std::size_t k = 0; k < 8 && i + k < block.size(); ++k) {
        const auto a = std::uint32_t(w >> (8 * k)) & 255u, b = std::uint32_t(w >> (8 * ((k + 3) % 8))) & 255u;
        block[i + k] = type == dtype::u8 ? std::uint8_t((a + b) >> 1) : std::uint8_t(a);
      }
    }
  }, prefix);
}

class stream_app final : public app {
 public:
  stream_app() : app(describe()) {}

  static app_info describe() {
    app_info a = app_info::named("stream", "ZOne streaming (issue 25): a histogram of a file of any size, reads, copies and "
                                           "soac::hist overlapped; `soac bench stream` times every streamed workload (this, "
                                           "histeq, blackscholes, conv1d)");
    {
      auto p = [](std::int64_t bytes, const char* type, std::int64_t bins) {
        return nlohmann::json{{"bytes", bytes}, {"dtype", type}, {"bins", bins}};
      };
      nlohmann::json bench = streaming::with_bench_params(p(std::int64_t{1} << 33, "uint8", 256));
      bench.update({{"workloads", "hist,histeq,blackscholes,conv1d"},
                    {"frames", 300},
                    {"width", 3840},
                    {"height", 2160},
                    {"options", std::int64_t{1} << 28},
                    {"elements", std::int64_t{1} << 28},
                    {"radius", 3},
                    {"cpu", 1}});
      a.presets = {{"1g", "1 GiB of bytes, 256 bins", p(std::int64_t{1} << 30, "uint8", 256)},
                   {"8g", "8 GiB of bytes (the size of the issue's bar)", p(std::int64_t{1} << 33, "uint8", 256)},
                   {"words", "2^26 uint32 words, 1000 bins (x % 1000)", p(std::int64_t{1} << 28, "uint32", 1000)},
                   {"tiny", "100003 bytes (tests)", p(100003, "uint8", 256)},
                   {"bench", "soac bench stream: every workload (workloads=hist,histeq,blackscholes,conv1d), files in dir "
                             "(default: the temporary folder); hist over `bytes`, histeq `frames` of width x height, "
                             "blackscholes `options`, conv1d `elements` with a filter of `radius`; cpu=1: histeq's CPU rows; from=N: "
                             "also the sizes N, 4N, 16N, ... below those of hist, blackscholes and conv1d",
                    bench}};
    }
    a.variants = streaming::pipeline_variants();
    a.input_formats = {{"raw", "one raw file of little-endian elements (--set dtype=uint8|uint32, bins=H: bin x % H)"}};
    {
      auto s = streaming::pipeline_settings();
      s.insert(s.begin(), {{"dtype", "uint8", "element type of a raw file: uint8 or uint32 (bundles: the array's)"},
                           {"bins", 0, "bins, bin = x % bins (0: 256 for raw files, the dataset's for bundles)"},
                           {"devices", "", "mpi: under mpirun, each process streams its part of the file (an equal share of the "
                                           "elements, read by offset) on its GPU and rank 0 writes the summed histogram"}});
      a.run_settings = s;
    }
    a.bench_presets = {"bench"};
    return a;
  }

  struct spec {
    std::int64_t bytes;
    dtype type;
    std::int64_t bins;
  };
  static spec spec_of(const nlohmann::json& params) {
    if (!params.contains("dtype") || !params["dtype"].is_string()) throw usage_error("stream: parameter dtype must be a string");
    spec s{int_param(params, "bytes", 0, std::int64_t{1} << 42), parse_element(params["dtype"].get<std::string>()),
           int_param(params, "bins", 1, std::int64_t{1} << 24)};
    if (s.bytes % std::int64_t(dtype_size(s.type)) != 0)
      throw usage_error("stream: bytes must be a whole number of " + std::to_string(dtype_size(s.type)) + "-byte elements");
    if (s.type == dtype::u8 && s.bins != 256) throw usage_error("stream: a byte histogram has 256 bins");
    return s;
  }

  void check_params(const nlohmann::json& params) const override { spec_of(params); }
  void check_dataset(const datasets::bundle& in) const override { dataset_spec(in); }

  // What a run reads: the values (uint8 or uint32, as the manifest's dtype and bytes say where
  // they are given) and the bins.
  static spec dataset_spec(const datasets::bundle& in) {
    const dtype type = parse_element(std::string(dtype_name(in.header("values").type)));
    const auto& p = in.params();
    if (p.contains("dtype") && p["dtype"] != dtype_name(type))
      throw input_error(in.path_of("values").string() + ": the values are " + std::string(dtype_name(type)) + ", but the manifest says dtype = " +
                        p["dtype"].dump());
    const std::int64_t bytes = datasets::length_of(in, "values") * std::int64_t(dtype_size(type));
    if (p.contains("bytes") && p["bytes"] != bytes)
      throw input_error(in.path_of("values").string() + ": " + std::to_string(bytes) + " bytes of values, but the manifest says bytes = " +
                        p["bytes"].dump());
    spec s{bytes, type, int_param(p, "bins", 1, std::int64_t{1} << 24)};
    if (s.type == dtype::u8 && s.bins != 256) throw usage_error("stream: a byte histogram has 256 bins");
    return s;
  }

  void generate(const gen_request& r) const override {
    const auto s = spec_of(r.params);
    if (r.format == "raw") {
      generate_values(r.output, s.type, std::uint64_t(s.bytes), r.seed, {});
      return;
    }
    datasets::bundle_writer out(r.output, "dataset", name());
    const std::int64_t shape[] = {s.bytes / std::int64_t(dtype_size(s.type))};
    generate_values(out.array_path("values"), s.type, std::uint64_t(s.bytes), r.seed, datasets::npy_header_bytes(s.type, shape));
    out.add_written("values", s.type, shape);
    finish_dataset(out, r);
  }

  // The input as a source, with its element type and bins (the settings', or the dataset's).
  struct input {
    stream_source source;
    dtype type;
    std::int64_t bins;
  };
  static input open_input(const std::vector<std::filesystem::path>& inputs, const std::string& format,
                          const nlohmann::json& settings) {
    std::int64_t bins = int_param(settings, "bins", 0, std::int64_t{1} << 24);
    if (format == "raw") {
      if (inputs.size() != 1) throw usage_error("stream: --format raw takes one -i FILE");
      if (!settings.contains("dtype") || !settings["dtype"].is_string()) throw usage_error("stream: setting dtype must be a string");
      const dtype type = parse_element(settings["dtype"].get<std::string>());
      return {streaming::raw_source(inputs.front(), type), type, bins ? bins : 256};
    }
    const auto in = find_app("stream").open_dataset(inputs.front());
    const auto s = dataset_spec(in);
    return {streaming::bundle_source(in, "values", s.type), s.type, bins ? bins : s.bins};
  }

  std::string run(context& ctx, const run_request& r) const override {
    const auto in = open_input(r.inputs, r.format, r.settings);
    const auto options = streaming::pipeline_options(r.settings, r.variant);
    const std::string devices = r.settings.value("devices", std::string());
    if (!devices.empty() && devices != "mpi") throw usage_error("stream: --set devices takes mpi (under mpirun), not '" + devices + "'");
    // devices=mpi: this process streams its shard of the elements on its rank's GPU; the
    // histograms are summed onto rank 0, which writes.
    const auto ranks = ranks_of_setting(ctx.which(), devices);
    context& mine = ranks ? ranks->rank(ranks->local_ranks()[0]) : ctx;
    stream_source part = in.source;
    if (ranks) {
      const shard s = shard_of(streaming::element_count(in.source), ranks->ranks(), ranks->local_ranks()[0]);
      part = stream_source::from_file(in.source.file, in.source.element_bytes, in.source.offset, streaming::element_count(in.source))
                 .slice(s.begin, s.size());
    }
    file_histogram h(mine, in.type, in.bins);
    stream_pipeline pipe(mine);
    const auto report = h.run(pipe, part, options);
    auto counts = h.counts();
    if (ranks) mpi_world::get().reduce(counts.data(), counts.size(), reduce_type::u64, reduce_op::sum, 0);
    if (!writes_result(ranks.get())) return {};
    datasets::bundle_writer out(r.output, "result", name());
    out.add<std::uint64_t>("histo", counts);
    streaming::record_run(out, mine, r.settings, options, report);
    out.params()["dtype"] = std::string(dtype_name(in.type));
    out.params()["bins"] = in.bins;
    if (ranks) out.info()["ranks"] = ranks->ranks();
    out.finish();
    return "stream: histogram of " + in.source.file.string() + " on " + (ranks ? ranks->describe() : ctx.describe()) + "\n  " +
           (ranks ? "rank 0's part: " : "") + report.describe();
  }

  validate_report validate(const validate_request& r) const override {
    const auto res = bundle::open(r.result, "result", name());
    // The run's settings, as its result recorded them.
    const auto in = params_of_file(res.dir() / "manifest.json", [&] { return open_input(r.inputs, r.format, res.params()); });
    const auto expected = reference_counts(in.source, in.type, in.bins, false);
    const auto rep = validate::compare_exact(expected, res.read<std::uint64_t>("histo"));
    return {rep.ok(), rep.describe("bins")};
  }

  void bench(context& ctx, const bench_request& r, bench::suite& suite) const override {
    if (!r.inputs.empty()) throw usage_error("stream: bench generates its files (see soac list)");
    const auto params = resolve_params(r.presets.empty() ? "bench" : r.presets.front(), r.overrides);
    std::vector<std::string> workloads;
    for (std::stringstream ss(params.value("workloads", "hist")); ss.good();) {
      std::string w;
      std::getline(ss, w, ',');
      if (!w.empty()) workloads.push_back(w);
    }
    for (const auto& w : workloads) {
      if (w == "hist") {
        for (const std::int64_t bytes : streaming::bench_sizes(params, "bytes", 1, std::int64_t{1} << 42))
          bench_hist(ctx, params, bytes, r.seed, suite);
        continue;
      }
      if (w != "histeq" && w != "blackscholes" && w != "conv1d")
        throw usage_error("stream: unknown workload '" + w + "' (hist, histeq, blackscholes, conv1d)");
      const app& other = find_app(w);
      bench_request sub;
      sub.presets = {"stream"};
      sub.overrides = streaming::overrides_for(other, "stream", r.overrides);
      sub.seed = r.seed;
      other.bench(ctx, sub, suite);
    }
  }

  void bench_hist(context& ctx, nlohmann::json params, std::int64_t bytes, std::uint64_t seed, bench::suite& suite) const {
    params["bytes"] = bytes;
    const auto s = spec_of(params);
    streaming::scratch_dir dir(params.value("dir", ""), "stream");
    const auto file = dir / "values.raw";
    std::cerr << "[stream] writing " << s.bytes << " bytes to " << file.string() << "\n";
    generate_values(file, s.type, std::uint64_t(s.bytes), seed, {});
    const auto src = streaming::raw_source(file, s.type);
    const auto expected = reference_counts(src, s.type, s.bins, true);
    file_histogram h(ctx, s.type, s.bins);
    streaming::workload w;
    w.name = "hist over a file of " + (s.bytes % (1 << 20) == 0 ? std::to_string(s.bytes >> 20) + " MiB" : std::to_string(s.bytes) + " bytes");
    w.params = {{"bytes", s.bytes}, {"dtype", std::string(dtype_name(s.type))}, {"bins", s.bins}};
    w.bytes = double(s.bytes);
    w.stages = stream_stage::read | stream_stage::upload | stream_stage::kernel;
    w.run = [&](stream_pipeline& pipe, const stream_options& o) { return h.run(pipe, src, o); };
    w.check = [&] { return h.counts() == expected ? std::string() : std::string("counts differ from the reference"); };
    w.bars = "bars at >= 8 GiB: speedup >= 1.80x, streamed / bound <= 1.20x";
    streaming::measure(ctx, suite, w, streaming::pipeline_options(params, "streamed"));
  }
};

}  // namespace
}  // namespace soac::apps

SOAC_REGISTER_APP(soac::apps::stream_app)

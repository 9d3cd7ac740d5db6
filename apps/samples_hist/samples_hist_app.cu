// The CUDA samples' byte histograms (SC20 section V-D, Table III): 64 bins of byte >> 2 and 256
// bins of the byte, over a byte stream (64 MiB of random bytes by default, or any file with
// --format raw). The paper lost to the samples (0.95x and 0.83x) because its bin function gave one
// update per byte loaded; here hist takes several updates per element (bin_values), so each
// thread loads whole words. Variants (`--variant`):
//   vectors  (default) one 128-bit load, 16 updates per element.
//   words    one 32-bit word, 4 updates per element.
//   sample   baseline, the samples' way (cuda only): 64 bins in per-thread 8-bit sub-histograms
//            (at most 63 words per thread, so no counter passes 255), 256 bins in per-warp 32-bit
//            sub-histograms with shared atomics; whole 32-bit words; partial histograms per
//            block, summed by a second kernel.
//   cub      baseline, CUB DeviceHistogram::HistogramEven on the bytes (cuda only).
// vectors and words take hist's model: one shared copy of the bins per block, hardware atomics.
// A byte is an update here, so the shared atomics, not the loads, are the limit (67M of them over
// 64 MiB), and 32 interleaved copies per block (lane l on copy l: no two lanes of a warp on the
// same bank or address) looked like the cure, but measured slower (docs/tuning/samples-hist.md):
// the bank conflicts of random bytes cost less than folding 32 copies per block.
#include <algorithm>
#include <iostream>
#include <sstream>

#include <cub/block/block_reduce.cuh>
#include <cub/device/device_histogram.cuh>

#include "apps/app.hpp"
#include "apps/hist_apps.hpp"
#include "core/buffer.hpp"
#include "core/error.hpp"
#include "core/hist.cuh"
#include "core/launch.cuh"
#include "datasets/binary_file.hpp"
#include "datasets/bundle.hpp"
#include "datasets/random.hpp"
#include "validate/hist.hpp"
#include "validate/histo.hpp"

namespace soac::apps {
namespace {

using datasets::bundle;
using u8 = std::uint8_t;
using u32 = std::uint32_t;

const std::vector<std::string> formulations = {"vectors", "words", "sample", "cub"};
// The two histograms: bins = 256 >> shift.
constexpr int shifts[2] = {2, 0};
int bins_of(int shift) { return 256 >> shift; }

// Element i: the 16 bytes of the 128-bit vector i, each an update of bin (byte >> shift). Whole
// vectors only: a partial last one goes to the word updates below, so no byte carries a check (with
// one, the 16 bins were all held until it: 64 registers, one block per SM).
struct vector_updates {
  const uint4* data;
  int shift;
  SOAC_HD bin_values<u32, 16> operator()(std::int64_t i) const {
    const uint4 v = data[i];
    const u32 w[4] = {v.x, v.y, v.z, v.w};
    bin_values<u32, 16> r;
    SOAC_UNROLL
    for (int k = 0; k < 16; ++k) r[k] = {std::int64_t(((w[k / 4] >> (8 * (k % 4))) & 255u) >> shift), 1u};
    return r;
  }
};

// Element i: the 4 bytes of 32-bit word i, each an update of bin (byte >> shift); word `last`
// holds only `tail` bytes of the stream (the buffer is padded with zeros to whole vectors), the
// rest of its updates are out of range.
struct word_updates {
  const u32* data;
  std::int64_t last;
  int tail;
  int shift;
  SOAC_HD bin_values<u32, 4> operator()(std::int64_t i) const {
    const u32 w = data[i];
    bin_values<u32, 4> r;
    SOAC_UNROLL
    for (int k = 0; k < 4; ++k) r[k] = {std::int64_t(((w >> (8 * k)) & 255u) >> shift), 1u};
    if (i == last) {
      // Constant indices only (a run-time index would move r to local memory).
      SOAC_UNROLL
      for (int k = 1; k < 4; ++k)
        if (k >= tail) r[k].bin = -1;
    }
    return r;
  }
};

// ---- the CUDA samples' structure (written for this app from their description)

// Per-thread 8-bit sub-histograms of 64 bins: each thread counts at most sample64_words words (4
// bytes each: at most 252 < 256 per counter), so a block covers sample64_threads * sample64_words
// words and writes one partial histogram. Thread t's counter of bin b is the byte at
// b * threads + ((t % 32) * 4 + t / 32): lane l of every warp owns bank l whatever the bins, and
// the four warps share each word byte by byte.
constexpr int sample64_threads = 128, sample64_words = 63;
// Per-warp 32-bit sub-histograms of 256 bins: six warps per block, 240 blocks (the samples'
// shape), each thread taking words grid-strided.
constexpr int sample256_warps = 6, sample256_blocks = 240;

// The bytes of word `pos` of `words` words, of which the last holds only `tail` bytes.
__device__ __forceinline__ int word_bytes(std::int64_t pos, std::int64_t words, int tail) { return pos == words - 1 ? tail : 4; }

__global__ void __launch_bounds__(sample64_threads)
    sample64_kernel(const u32* data, std::int64_t words, int tail, u32* partials) {
  __shared__ u32 counters[64 * sample64_threads / 4];
  u8* mine = reinterpret_cast<u8*>(counters) + ((threadIdx.x % 32) * 4 + threadIdx.x / 32);
  for (int i = threadIdx.x; i < 64 * sample64_threads / 4; i += blockDim.x) counters[i] = 0;
  __syncthreads();
  const std::int64_t base = std::int64_t(blockIdx.x) * sample64_threads * sample64_words;
  for (int j = 0; j < sample64_words; ++j) {
    const std::int64_t pos = base + std::int64_t(j) * sample64_threads + threadIdx.x;
    if (pos >= words) break;
    const u32 w = data[pos];
    const int n = word_bytes(pos, words, tail);
SOAC_UNROLL
    for (int k = 0; k < 4; ++k)
      if (k < n) ++mine[(((w >> (8 * k)) & 255u) >> 2) * sample64_threads];
  }
  __syncthreads();
  // Thread b < 64 adds the 128 counters of bin b, a word (four threads' counters) at a time,
  // starting at a different word in each lane.
  if (threadIdx.x < 64) {
    const u32* row = counters + threadIdx.x * (sample64_threads / 4);
    u32 sum = 0;
    for (int q = 0; q < sample64_threads / 4; ++q) {
      const u32 w = row[(q + threadIdx.x) % (sample64_threads / 4)];
      sum += (w & 255u) + ((w >> 8) & 255u) + ((w >> 16) & 255u) + (w >> 24);
    }
    partials[std::int64_t(blockIdx.x) * 64 + threadIdx.x] = sum;
  }
}

__global__ void __launch_bounds__(sample256_warps * 32)
    sample256_kernel(const u32* data, std::int64_t words, int tail, u32* partials) {
  __shared__ u32 counters[sample256_warps * 256];
  u32* mine = counters + (threadIdx.x / 32) * 256;
  for (int i = threadIdx.x; i < sample256_warps * 256; i += blockDim.x) counters[i] = 0;
  __syncthreads();
  for (std::int64_t pos = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x; pos < words;
       pos += std::int64_t(gridDim.x) * blockDim.x) {
    const u32 w = data[pos];
    const int n = word_bytes(pos, words, tail);
SOAC_UNROLL
    for (int k = 0; k < 4; ++k)
      if (k < n) atomicAdd(mine + ((w >> (8 * k)) & 255u), 1u);
  }
  __syncthreads();
  for (int b = threadIdx.x; b < 256; b += blockDim.x) {
    u32 sum = 0;
    for (int w = 0; w < sample256_warps; ++w) sum += counters[w * 256 + b];
    partials[std::int64_t(blockIdx.x) * 256 + b] = sum;
  }
}

// out[b] = the sum of bin b over `count` partial histograms of `bins` bins: one block per bin.
constexpr int merge_threads = 256;
__global__ void __launch_bounds__(merge_threads) sample_merge_kernel(const u32* partials, std::int64_t count, int bins, u32* out) {
  u32 sum = 0;
  for (std::int64_t j = threadIdx.x; j < count; j += blockDim.x) sum += partials[j * bins + blockIdx.x];
  using reduce = cub::BlockReduce<u32, merge_threads>;
  __shared__ typename reduce::TempStorage tmp;
  sum = reduce(tmp).Sum(sum);
  if (threadIdx.x == 0) out[blockIdx.x] = sum;
}

// The stream in the backend's memory, padded with zeros to whole 128-bit vectors.
struct byte_stream {
  buffer<u8> data;
  std::int64_t bytes = 0;
  template <class W>
  const W* as() const { return reinterpret_cast<const W*>(data.data()); }
};

byte_stream upload(context& ctx, std::vector<u8> bytes) {
  byte_stream s;
  s.bytes = std::int64_t(bytes.size());
  bytes.resize((bytes.size() + 15) / 16 * 16, 0);
  s.data = buffer<u8>(ctx, std::span<const u8>(bytes));
  return s;
}

// One formulation computing the histogram of `shift`'s bins into `out`, from zero.
class byte_histogram : public first_plan {
 public:
  byte_histogram(context& ctx, const hist_variant& v, const byte_stream& s, int shift)
      : ctx_(ctx), v_(v), s_(s), shift_(shift) {
    if ((v.name == "sample" || v.name == "cub") && !ctx.is_cuda())
      throw usage_error("samples-hist: the " + v.name + " baseline needs the cuda backend");
    const int bins = bins_of(shift);
    out_ = buffer<u32>(ctx, std::size_t(bins));
    const std::int64_t words = (s.bytes + 3) / 4;
    if (v.name == "sample") {
      partial_count_ = shift == 2 ? std::max<std::int64_t>(1, detail::ceil_div(words, std::int64_t(sample64_threads) * sample64_words))
                                  : sample256_blocks;
      if (partial_count_ > detail::max_grid_x) throw usage_error("samples-hist: too many sample64 blocks for one grid");
      partials_ = buffer<u32>(ctx, std::size_t(partial_count_ * bins));
    }
    if (v.name == "cub") {
      SOAC_CUDA_CHECK(cub::DeviceHistogram::HistogramEven(nullptr, cub_bytes_, s.as<u8>(), out_.data(), bins + 1, 0, 256,
                                                          s.bytes, ctx.stream()));
      cub_temp_ = buffer<unsigned char>(ctx, std::max<std::size_t>(cub_bytes_, 1));
    }
  }

  void compute() {
    const std::string& m = v_.name;
    const int bins = bins_of(shift_);
    if (m == "vectors" || m == "words") {
      ctx_.fill_zero(out_.data(), out_.size() * sizeof(u32));
      run_hist(m == "vectors");
    } else if (m == "cub") {
      std::size_t temp_bytes = cub_bytes_;
      SOAC_CUDA_CHECK(cub::DeviceHistogram::HistogramEven(cub_temp_.data(), temp_bytes, s_.as<u8>(), out_.data(), bins + 1, 0, 256,
                                                          s_.bytes, ctx_.stream()));
    } else if (s_.bytes > 0) {
      const std::int64_t words = (s_.bytes + 3) / 4;
      const int tail = int(s_.bytes - (words - 1) * 4);
      if (shift_ == 2) sample64_kernel<<<unsigned(partial_count_), sample64_threads, 0, ctx_.stream()>>>(s_.as<u32>(), words, tail, partials_.data());
      else sample256_kernel<<<unsigned(partial_count_), sample256_warps * 32, 0, ctx_.stream()>>>(s_.as<u32>(), words, tail, partials_.data());
      SOAC_CHECK_LAUNCH("sample histogram kernel");
      sample_merge_kernel<<<unsigned(bins), merge_threads, 0, ctx_.stream()>>>(partials_.data(), partial_count_, bins, out_.data());
      SOAC_CHECK_LAUNCH("sample_merge_kernel");
    } else {
      ctx_.fill_zero(out_.data(), out_.size() * sizeof(u32));
    }
  }

  std::vector<u32> result() const { return out_.to_vector(); }

 private:
  // The stream's whole 128-bit vectors, then (vectors = false: from the start) its words.
  void run_hist(bool vectors) {
    const std::int64_t whole = vectors ? s_.bytes / 16 : 0;
    if (whole > 0) keep(hist(ctx_, v_.options, whole, vector_updates{s_.as<uint4>(), shift_}, out_.view(), plus<u32>{}));
    const std::int64_t rest = s_.bytes - whole * 16, words = (rest + 3) / 4;
    if (words == 0) return;
    const word_updates f{s_.as<u32>() + whole * 4, words - 1, int(rest - (words - 1) * 4), shift_};
    const hist_plan p = hist(ctx_, v_.options, words, f, out_.view(), plus<u32>{});
    if (!vectors) keep(p);
  }

  context& ctx_;
  hist_variant v_;
  const byte_stream& s_;
  int shift_;
  buffer<u32> out_, partials_;
  std::int64_t partial_count_ = 0;
  buffer<unsigned char> cub_temp_;
  std::size_t cub_bytes_ = 0;
};

hist_variant parse_variant(const std::string& text) { return parse_hist_variant(text, formulations, "samples-hist"); }

// Files up to this size: every bin's count must fit 32 bits.
constexpr std::uint64_t max_bytes = 0xffffffffull;

class samples_hist_app final : public app {
 public:
  samples_hist_app() : app(describe()) {}

  static app_info describe() {
    app_info a = app_info::named("samples-hist", "the CUDA samples' 64-bin (byte >> 2) and 256-bin byte histograms, hist with "
                                                 "16 updates per 128-bit load (SC20 V-D)");
    {
      auto p = [](std::int64_t bytes) { return nlohmann::json{{"bytes", bytes}, {"variants", ""}}; };
      a.presets = {{"64MiB", "64 MiB of random bytes (the samples' size)", p(std::int64_t{64} << 20)},
                   {"tiny", "100,003 random bytes (a partial last word and vector; tests)", p(100'003)}};
    }
    a.variants = formulations;
    a.variant_settings = hist_variant_settings;
    a.input_formats = {{"raw", "any file, histogrammed byte by byte (-i FILE); gen writes the random bytes"}};
    a.bench_presets = {"64MiB"};
    return a;
  }

  static std::int64_t bytes_of(const nlohmann::json& params) { return int_param(params, "bytes", 0, std::int64_t(max_bytes)); }
  void check_params(const nlohmann::json& params) const override { bytes_of(params); }
  // What a run reads: the bytes, up to 32-bit counts' limit.
  void check_dataset(const bundle& b) const override {
    if (datasets::length_of(b, "data", "bytes") > std::int64_t(max_bytes))
      throw input_error(b.path_of("data").string() + ": more than " + std::to_string(max_bytes) + " bytes (32-bit bins)");
  }

  static std::vector<u8> random_bytes(const nlohmann::json& params, std::uint64_t seed) {
    const std::int64_t n = bytes_of(params);
    require_host_memory(std::uint64_t(n), "samples-hist: bytes = " + std::to_string(n));
    std::vector<u8> b(static_cast<std::size_t>(n));
    u8* p = b.data();
    const std::uint64_t key = datasets::stream_key(seed, 0);
    SOAC_OMP_PARALLEL_FOR
    for (std::int64_t i = 0; i < n; ++i) p[i] = u8(datasets::keyed_word(key, std::uint64_t(i)) >> 56);
    return b;
  }

  void generate(const gen_request& r) const override {
    check_format(r.format);
    const auto bytes = random_bytes(r.params, r.seed);
    if (!r.format.empty())
      return datasets::write_file_atomically(r.output, std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()));
    datasets::bundle_writer out(r.output, "dataset", name());
    out.add<u8>("data", bytes);
    finish_dataset(out, r);
  }

  std::vector<u8> load(const std::vector<std::filesystem::path>& inputs, const std::string& format) const {
    check_format(format);
    if (inputs.size() != 1) throw usage_error("samples-hist: give one input (-i), not " + std::to_string(inputs.size()));
    if (format.empty()) return open_dataset(inputs.front()).read<u8>("data");
    datasets::binary_reader in(inputs.front());
    if (in.size() > max_bytes)
      throw resource_error(inputs.front().string() + ": " + std::to_string(in.size()) +
                           " bytes; samples-hist counts in 32-bit bins, so files up to 4 GiB - 1");
    return in.read_array<u8>(in.size(), "the bytes");
  }

  std::string run(context& ctx, const run_request& r) const override {
    const auto stream = upload(ctx, load(r.inputs, r.format));
    const auto v = parse_variant(r.variant);
    datasets::bundle_writer out(r.output, "result", name());
    std::ostringstream s;
    s << "samples-hist: " << stream.bytes << " bytes on " << ctx.describe() << "\n  " << v.text << ":";
    nlohmann::json info = {{"backend", std::string(to_string(ctx.which()))}, {"device", ctx.props().name}, {"variant", v.text}};
    for (const int shift : shifts) {
      byte_histogram h(ctx, v, stream, shift);
      const bench::stats t = bench::time(ctx, bench::settings{.warmup = 0, .runs = 1, .progress = false, .warmup_ms = 0},
                                         [&] { h.compute(); });
      const std::string key = "histo" + std::to_string(bins_of(shift));
      out.add<u32>(key, h.result());
      info[key] = {{"ms", t.median_ms}, {"plan", h.plan()}};
      s << " " << bins_of(shift) << " bins " << t.median_ms << " ms";
      if (r.verbose && !h.plan().empty()) s << " (" << h.plan() << ")";
    }
    out.params() = {{"bytes", stream.bytes}, {"format", r.format.empty() ? "bundle" : r.format}};
    out.info() = info;
    out.finish();
    return s.str();
  }

  validate_report validate(const validate_request& r) const override {
    const auto bytes = load(r.inputs, r.format);
    const auto out = bundle::open(r.result, "result", name());
    validate::report all;
    std::string detail;
    for (const int shift : shifts) {
      const std::string key = "histo" + std::to_string(bins_of(shift));
      const auto rep = validate::compare_exact(validate::byte_counts(bytes, shift), out.read<u32>(key));
      all.checked += rep.checked;
      all.mismatches += rep.mismatches;
      for (const auto& e : rep.examples) all.examples.push_back(key + " " + e);
    }
    return {all.ok(), all.describe("bins of the 64- and 256-bin histograms")};
  }

  void bench(context& ctx, const bench_request& r, bench::suite& suite) const override {
    if (!ctx.is_cuda()) throw usage_error("samples-hist bench: the baselines (the samples' kernels, CUB) need --backend cuda");
    // Each -i file is an input; else the presets.
    std::vector<bench_input<std::vector<u8>>> inputs;
    for (const auto& f : r.inputs) inputs.push_back({f.string(), load({f}, r.format.empty() ? "raw" : r.format), ""});
    if (inputs.empty())
      inputs = preset_inputs<std::vector<u8>>(*this, r, [&](const nlohmann::json& p) { return random_bytes(p, r.seed); });
    suite.expect_cases(int(inputs.size()) * 2);
    for (const auto& in : inputs) {
      const auto stream = upload(ctx, in.input);
      std::vector<std::string> chosen = split_variant_list(in.variants);
      if (chosen.empty())
        chosen = {"sample", "cub", "vectors", "vectors,ahead=on", "vectors,block=512", "vectors,strategy=shared,M=32", "words",
                  "vectors,private=on"};
      for (const int shift : shifts) {
        const auto expected = validate::byte_counts(in.input, shift);
        suite.begin_case(std::to_string(bins_of(shift)) + " bins, " + in.label + " (" + std::to_string(in.input.size()) + " bytes)",
                         {{"bins", bins_of(shift)}, {"bytes", in.input.size()}}, double(in.input.size()));
        for (const auto& text : chosen) {
          const auto v = parse_variant(text);
          const bool baseline = v.name == "sample" || v.name == "cub";
          const std::string label = v.name == "sample" ? (shift == 2 ? "sample (per-thread 8-bit)" : "sample (per-warp)")
                                    : v.name == "cub"  ? "CUB HistogramEven"
                                                       : "soac " + text;
          unless_ruled_out(label, [&] {
            byte_histogram h(ctx, v, stream, shift);
            suite.measure(label, baseline ? bench::role::baseline : bench::role::soac, [&] { h.compute(); });
            if (h.result() != expected) suite.annotate("WRONG: differs from the sequential reference");
            else if (!h.plan().empty()) suite.annotate(h.plan());
          });
        }
      }
    }
  }
};

}  // namespace
}  // namespace soac::apps

SOAC_REGISTER_APP(soac::apps::samples_hist_app)

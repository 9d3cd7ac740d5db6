#include "bench/harness.hpp"

#include "bench/hold.hpp"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <memory>
#include <sstream>
#include <unistd.h>

#include "core/buffer.hpp"
#include "core/build_info.hpp"
#include "core/cuda_check.hpp"
#include "core/cuda_event.hpp"
#include "core/error.hpp"

namespace soac::bench {

stats summarize(std::vector<double> samples) {
  stats s;
  s.runs = static_cast<int>(samples.size());
  if (samples.empty()) return s;
  std::sort(samples.begin(), samples.end());
  const std::size_t n = samples.size();
  s.median_ms = n % 2 ? samples[n / 2] : 0.5 * (samples[n / 2 - 1] + samples[n / 2]);
  s.min_ms = samples.front();
  s.max_ms = samples.back();
  return s;
}

namespace {

std::string read_driver_version() {
  std::ifstream in("/proc/driver/nvidia/version");
  std::string line;
  if (!std::getline(in, line)) return "unknown";
  return driver_version_of(line);
}

std::string fixed(double v, int digits) {
  std::ostringstream s;
  s << std::fixed << std::setprecision(digits) << v;
  return s.str();
}

std::string ratio_text(double r) { return r > 0 ? fixed(r, 2) + "x" : "-"; }

}  // namespace

std::string driver_version_of(const std::string& line) {
  // "NVRM version: NVIDIA UNIX x86_64 Kernel Module  580.159.04  Thu ..." or, for the open
  // modules, "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.95.05  Release Build
  // ...": the first word of digits and dots holding a dot.
  std::istringstream words(line);
  for (std::string w; words >> w;)
    if (w.find('.') != std::string::npos && w.front() != '.' && w.back() != '.' &&
        w.find_first_not_of("0123456789.") == std::string::npos)
      return w;
  return "unknown";
}

void warm_up(const context& ctx, const settings& s, const std::function<void()>& body) {
  constexpr int max_runs = 10000;
  const auto start = std::chrono::steady_clock::now();
  for (int r = 0; r < max_runs; ++r) {
    const double elapsed_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    if (r >= s.warmup && elapsed_ms >= s.warmup_ms) break;
    body();
    ctx.synchronize();
  }
}

stats time(const context& ctx, const settings& s, const std::function<void()>& body, stream_hold* shared_hold) {
  std::vector<double> samples;
  samples.reserve(static_cast<std::size_t>(s.runs));
  if (ctx.is_cuda()) {
    ctx.activate();
    const cuda_event start(cudaEventDefault), stop(cudaEventDefault);
    std::unique_ptr<stream_hold> own;
    if (!shared_hold && !s.launch_latency) own = std::make_unique<stream_hold>();
    stream_hold* hold = shared_hold ? shared_hold : own.get();
    bool holding = !s.launch_latency, waited = false;
    warm_up(ctx, s, body);
    for (int r = 0; r < s.runs; ++r) {
      if (holding) hold->hold(ctx.stream());
      SOAC_CUDA_CHECK(cudaEventRecord(start.get(), ctx.stream()));
      body();
      SOAC_CUDA_CHECK(cudaEventRecord(stop.get(), ctx.stream()));
      if (holding) hold->release();
      SOAC_CUDA_CHECK(cudaEventSynchronize(stop.get()));
      float ms = 0;
      SOAC_CUDA_CHECK(cudaEventElapsedTime(&ms, start.get(), stop.get()));
      samples.push_back(ms);
      // A body that waits for the device would wait out every hold: time the rest as they come.
      if (holding && hold->timed_out()) holding = false, waited = true;
    }
    stats t = summarize(std::move(samples));
    t.waits_for_device = waited;
    return t;
  } else {
    warm_up(ctx, s, body);
    for (int r = 0; r < s.runs; ++r) {
      const auto t0 = std::chrono::steady_clock::now();
      body();
      const auto t1 = std::chrono::steady_clock::now();
      samples.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
    }
  }
  return summarize(std::move(samples));
}

double measure_copy_bandwidth(context& ctx, const settings& s) {
  // 8x L2 (at least 256 MiB) so the copy streams from and to DRAM.
  const std::size_t bytes = ctx.is_cuda() ? std::max<std::size_t>(std::size_t{256} << 20, 8 * ctx.props().l2_bytes)
                                          : std::size_t{256} << 20;
  buffer<std::uint8_t> from(ctx, bytes), to(ctx, bytes);
  if (ctx.is_cuda()) {
    SOAC_CUDA_CHECK(cudaMemsetAsync(from.data(), 1, bytes, ctx.stream()));
  } else {
    std::memset(from.data(), 1, bytes);
  }
  settings quick = s;
  quick.warmup = std::max(2, s.warmup);
  quick.warmup_ms = 0;
  quick.runs = std::max(5, std::min(s.runs, 21));
  const stats t = time(ctx, quick, [&] {
    if (ctx.is_cuda()) SOAC_CUDA_CHECK(cudaMemcpyAsync(to.data(), from.data(), bytes, cudaMemcpyDeviceToDevice, ctx.stream()));
    else std::memcpy(to.data(), from.data(), bytes);
  });
  return 2.0 * double(bytes) / (t.median_ms * 1e-3);
}

nlohmann::json environment(const context& ctx) {
  const auto& p = ctx.props();
  const auto& b = this_build();
  nlohmann::json env;
  env["backend"] = std::string(to_string(ctx.which()));
  env["build"] = {{"version", b.version}, {"commit", b.commit}, {"dirty", b.dirty},
                  {"build_type", b.build_type}, {"cuda_architectures", b.cuda_architectures}};
  env["host_threads"] = p.host_threads;
  if (ctx.is_cuda()) {
    int driver_api = 0, runtime = 0;
    SOAC_CUDA_CHECK(cudaDriverGetVersion(&driver_api));
    SOAC_CUDA_CHECK(cudaRuntimeGetVersion(&runtime));
    env["device"] = {{"name", p.name},
                     {"ordinal", p.ordinal},
                     {"compute_capability", std::to_string(p.compute_major) + "." + std::to_string(p.compute_minor)},
                     {"sm_count", p.sm_count},
                     {"max_threads_per_sm", p.max_threads_per_sm},
                     {"shared_per_block_optin", p.shared_per_block_optin},
                     {"shared_per_sm", p.shared_per_sm},
                     {"l2_bytes", p.l2_bytes},
                     {"global_bytes", p.global_bytes}};
    env["driver"] = read_driver_version();
    env["cuda_driver_api"] = driver_api;
    env["cuda_runtime"] = runtime;
  }
  return env;
}

suite::suite(context& ctx, std::string name, settings s)
    : ctx_(ctx), name_(std::move(name)), settings_(s), environment_(environment(ctx)) {
  if (s.runs < 1) throw usage_error("--runs must be at least 1");
  if (s.warmup < 0) throw usage_error("--warmup must not be negative");
  if (!(s.warmup_ms >= 0)) throw usage_error("--warmup-ms must not be negative");
  progress("measuring copy bandwidth");
  copy_bandwidth_ = measure_copy_bandwidth(ctx, s);
}

void suite::progress(const std::string& what) const {
  if (!settings_.progress) return;
  std::cerr << "[" << name_;
  if (expected_cases_ > 0) std::cerr << " " << cases_.size() << "/" << expected_cases_;
  std::cerr << "] " << what << '\n';
}

void suite::begin_case(std::string name, nlohmann::json params, double bytes_moved) {
  cases_.push_back(case_result{std::move(name), std::move(params), bytes_moved, {}});
}

void suite::measure(std::string variant, role kind, const std::function<void()>& body, std::string note,
                    const std::function<void()>& setup) {
  if (cases_.empty()) throw usage_error("bench::suite::measure called before begin_case");
  progress(cases_.back().name + ": " + variant);
  stats t;
  if (setup) {
    // Setup must stay outside the timed region, so time run by run.
    std::vector<double> samples;
    settings one = settings_;
    one.runs = 1;
    one.warmup = 0;
    one.warmup_ms = 0;
    warm_up(ctx_, settings_, [&] { setup(); body(); });
    bool waited = false;
    std::unique_ptr<stream_hold> hold;
    if (ctx_.is_cuda() && !one.launch_latency) hold = std::make_unique<stream_hold>();
    for (int r = 0; r < settings_.runs; ++r) {
      setup();
      ctx_.synchronize();
      const stats run = time(ctx_, one, body, hold.get());
      samples.push_back(run.median_ms);
      if (run.waits_for_device) waited = true, one.launch_latency = true;
    }
    t = summarize(std::move(samples));
    t.waits_for_device = waited;
  } else {
    t = time(ctx_, settings_, body);
  }
  if (t.waits_for_device)
    std::cerr << "bench: " << cases_.back().name << ": " << variant
              << " waits for the device while timed; its runs include the host's launch latency\n";
  cases_.back().variants.push_back(variant_result{std::move(variant), kind, t, std::move(note)});
}

void suite::record(std::string variant, role kind, stats time, std::string note) {
  if (cases_.empty()) throw usage_error("bench::suite::record called before begin_case");
  cases_.back().variants.push_back(variant_result{std::move(variant), kind, time, std::move(note)});
}

void suite::annotate(std::string note) {
  if (cases_.empty() || cases_.back().variants.empty()) throw usage_error("bench::suite::annotate before measure");
  cases_.back().variants.back().note = std::move(note);
}

void suite::print(std::ostream& out) const {
  out << name_ << " on " << ctx_.describe() << "\n";
  out << "copy bandwidth (read+write): " << fixed(copy_bandwidth_ / 1e9, 0) << " GB/s; ";
  if (!timing_.empty()) {
    out << timing_ << "\n";
  } else {
    out << settings_.runs << " timed runs after " << settings_.warmup << " warm-up (at least " << settings_.warmup_ms
        << " ms), median shown";
    if (ctx_.is_cuda())
      out << (settings_.launch_latency ? "; times include the host's launch latency"
                                       : "; GPU time (each run queued behind a held stream)");
    out << "\n";
  }
  out << "ratios are time / reference time: below 1.00x is faster than the reference\n";
  for (const auto& c : cases_) {
    std::vector<const variant_result*> baselines;
    for (const auto& v : c.variants)
      if (v.kind == role::baseline) baselines.push_back(&v);
    const double floor = floor_ms(c);
    out << "\n" << c.name << "   (floor " << fixed(floor, 4) << " ms: " << fixed(c.bytes / 1e6, 1)
        << " MB must move)\n";
    std::vector<std::string> header = {"variant", "median ms", "min ms", "max ms", "GB/s", "x floor"};
    for (auto* b : baselines) header.push_back("x " + b->name);
    std::vector<std::vector<std::string>> rows;
    for (const auto& v : c.variants) {
      std::vector<std::string> row = {v.name + (v.kind == role::baseline ? " [baseline]" : ""),
                                      fixed(v.time.median_ms, 4), fixed(v.time.min_ms, 4), fixed(v.time.max_ms, 4),
                                      fixed(c.bytes / (v.time.median_ms * 1e-3) / 1e9, 0),
                                      ratio_text(v.time.median_ms / floor)};
      for (auto* b : baselines) row.push_back(ratio_text(v.time.median_ms / b->time.median_ms));
      rows.push_back(std::move(row));
    }
    std::vector<std::size_t> width(header.size());
    for (std::size_t k = 0; k < header.size(); ++k) {
      width[k] = header[k].size();
      for (const auto& r : rows) width[k] = std::max(width[k], r[k].size());
    }
    auto line = [&](const std::vector<std::string>& cells) {
      for (std::size_t k = 0; k < cells.size(); ++k)
        out << (k == 0 ? "  " : "  ") << (k == 0 ? std::left : std::right) << std::setw(int(width[k])) << cells[k];
      out << std::right << "\n";
    };
    line(header);
    for (const auto& r : rows) line(r);
    for (const auto& v : c.variants)
      if (!v.note.empty()) out << "    " << v.name << ": " << v.note << "\n";
  }
}

nlohmann::json suite::to_json() const {
  nlohmann::json j;
  j["suite"] = name_;
  j["environment"] = environment_;
  j["settings"] = {{"warmup", settings_.warmup}, {"warmup_ms", settings_.warmup_ms}, {"runs", settings_.runs},
                   {"launch_latency", settings_.launch_latency}};
  if (!timing_.empty()) j["settings"]["timing"] = timing_;
  j["copy_bandwidth_gbs"] = copy_bandwidth_ / 1e9;
  j["cases"] = nlohmann::json::array();
  for (const auto& c : cases_) {
    nlohmann::json jc = {{"name", c.name}, {"params", c.params}, {"bytes", c.bytes}, {"floor_ms", floor_ms(c)}};
    jc["variants"] = nlohmann::json::array();
    for (const auto& v : c.variants) {
      nlohmann::json jv = {{"name", v.name},
                           {"role", v.kind == role::baseline ? "baseline" : "soac"},
                           {"median_ms", v.time.median_ms},
                           {"min_ms", v.time.min_ms},
                           {"max_ms", v.time.max_ms},
                           {"runs", v.time.runs},
                           {"waits_for_device", v.time.waits_for_device},
                           {"gbs", c.bytes / (v.time.median_ms * 1e-3) / 1e9},
                           {"x_floor", v.time.median_ms / floor_ms(c)}};
      nlohmann::json vs = nlohmann::json::object();
      for (const auto& b : c.variants)
        if (b.kind == role::baseline) vs[b.name] = v.time.median_ms / b.time.median_ms;
      jv["x_baseline"] = vs;
      if (!v.note.empty()) jv["note"] = v.note;
      jc["variants"].push_back(jv);
    }
    j["cases"].push_back(jc);
  }
  return j;
}

void suite::write_json(const std::filesystem::path& file) const {
  std::ofstream out(file);
  if (!out) throw input_error(file.string() + ": cannot open for writing: " + std::strerror(errno));
  out << to_json().dump(2) << "\n";
  if (!out.flush()) throw input_error(file.string() + ": write failed");
}

}  // namespace soac::bench

#include "apps/stream/support.hpp"

#include "core/memory.hpp"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <iomanip>
#include <iostream>
#include <optional>
#include <sstream>

#include <unistd.h>

#include "core/cuda_check.hpp"
#include "core/error.hpp"
#include "core/stream/files.hpp"

namespace soac::apps::streaming {

namespace fs = std::filesystem;

std::vector<setting> pipeline_settings() {
  return {{"readers", 0, "reader threads (0: every hardware thread, at most 16)"},
          {"writers", 0, "writer threads (0: every hardware thread, at most 16)"},
          {"chunk", 0, "elements per chunk (0: from the measured copy rate and free memory)"},
          {"slots", 3, "ring buffers per array (chunks in flight between two stages)"}};
}

std::vector<std::string> pipeline_variants() { return {"streamed", "serial"}; }

stream_options pipeline_options(const nlohmann::json& settings, const std::string& variant) {
  stream_options o;
  o.readers = int(int_param(settings, "readers", 0, 256));
  o.writers = int(int_param(settings, "writers", 0, 256));
  o.chunk = int_param(settings, "chunk", 0, std::int64_t{1} << 40);
  o.slots = int(int_param(settings, "slots", 1, 64));
  if (!variant.empty() && variant != "streamed" && variant != "serial")
    throw usage_error("unknown variant '" + variant + "' (known: streamed, serial)");
  o.overlap = variant != "serial";
  return o;
}

nlohmann::json with_bench_params(nlohmann::json params) {
  params["dir"] = "";
  params["from"] = 0;
  for (const auto& s : pipeline_settings()) params[s.name] = s.default_value;
  return params;
}

std::vector<std::int64_t> bench_sizes(const nlohmann::json& params, const std::string& key, std::int64_t lo, std::int64_t hi) {
  const std::int64_t most = int_param(params, key, lo, hi), from = int_param(params, "from", 0, hi);
  std::vector<std::int64_t> out;
  for (std::int64_t n = from; n > 0 && n < most; n *= 4) out.push_back(n);
  out.push_back(most);
  return out;
}

void record_run(datasets::bundle_writer& out, const context& ctx, const nlohmann::json& settings, const stream_options& options,
                const stream_report& report) {
  for (const auto& s : pipeline_settings()) out.params()[s.name] = settings.at(s.name);
  out.info() = {{"backend", std::string(to_string(ctx.which()))},
                {"device", ctx.props().name},
                {"variant", options.overlap ? "streamed" : "serial"},
                {"run", report.describe()},
                {"seconds", report.seconds}};
}

void write_generated(const fs::path& path, std::uint64_t bytes,
                     const std::function<void(std::uint64_t, std::span<std::uint8_t>)>& fill, std::string_view prefix) {
  constexpr std::uint64_t block = std::uint64_t{16} << 20;
  require_file_space(path.string(), prefix.size() + bytes, "a generated file");
  detail::stream_output_file out(path);
  out.map(prefix.size() + bytes);
  if (!prefix.empty()) out.write_at(prefix.data(), prefix.size(), 0);
  const auto blocks = std::int64_t((bytes + block - 1) / block);
  std::exception_ptr error;
#pragma omp parallel
  {
    std::vector<std::uint8_t> buf(block);
#pragma omp for schedule(dynamic, 1)
    for (std::int64_t b = 0; b < blocks; ++b) {
      try {
        const std::uint64_t at = std::uint64_t(b) * block, len = std::min(block, bytes - at);
        fill(at, std::span<std::uint8_t>(buf.data(), len));
        out.write_at(buf.data(), len, prefix.size() + at);
      } catch (...) {
#pragma omp critical
        if (!error) error = std::current_exception();
      }
    }
  }
  if (error) std::rethrow_exception(error);
  out.commit();
}

stream_source bundle_source(const datasets::bundle& b, const std::string& name, datasets::dtype expected) {
  const auto h = b.header(name);
  if (h.type != expected)
    throw input_error(b.path_of(name).string() + ": dtype " + std::string(datasets::dtype_name(h.type)) + ", expected " +
                      std::string(datasets::dtype_name(expected)));
  return stream_source::from_file(b.path_of(name), datasets::dtype_size(expected), h.data_offset, h.element_count());
}

stream_source result_source(const datasets::bundle& result, const std::string& name, datasets::dtype type, std::int64_t n,
                            const std::string& raw_extension) {
  stream_source src = result.has(name) ? bundle_source(result, name, type) : raw_source(result.file_path(name + "." + raw_extension), type);
  const std::int64_t held = element_count(src);
  if (held != n)
    throw input_error((src.file.empty() ? result.dir() : src.file).string() + ": holds " + std::to_string(held) + " elements, but the dataset has " +
                      std::to_string(n) + " (a result of another dataset?)");
  return src;
}

stream_source raw_source(const fs::path& file, datasets::dtype type) {
  return stream_source::from_file(file, datasets::dtype_size(type));
}

std::int64_t element_count(const stream_source& src) {
  if (src.file.empty()) return src.count;
  const detail::stream_input_file f(src.file);
  if (src.offset > f.size()) throw input_error(src.file.string() + ": shorter than its header");
  const std::uint64_t avail = f.size() - src.offset;
  if (src.count >= 0 && (src.part ? avail / src.element_bytes < std::uint64_t(src.count) : avail != std::uint64_t(src.count) * src.element_bytes))
    throw input_error(src.file.string() + ": holds " + std::to_string(avail) + " data bytes, expected " +
                      std::to_string(src.count) + " elements of " + std::to_string(src.element_bytes) + " bytes");
  if (src.count >= 0) return src.count;
  if (avail % src.element_bytes != 0)
    throw input_error(src.file.string() + ": " + std::to_string(avail) + " bytes are not a whole number of " +
                      std::to_string(src.element_bytes) + "-byte elements");
  return std::int64_t(avail / src.element_bytes);
}

void read_elements(const stream_source& src, std::int64_t first, std::int64_t count, void* dst) {
  const std::uint64_t from = std::uint64_t(first) * src.element_bytes, bytes = std::uint64_t(count) * src.element_bytes;
  if (src.file.empty()) {
    std::memcpy(dst, static_cast<const char*>(src.host) + from, bytes);
    return;
  }
  detail::stream_input_file(src.file).read_at(dst, bytes, src.offset + from);
}

void zero(context& ctx, void* data, std::size_t bytes) {
  if (bytes == 0) return;
  if (ctx.is_cuda()) SOAC_CUDA_CHECK(cudaMemsetAsync(data, 0, bytes, ctx.stream()));
  else std::memset(data, 0, bytes);
}

double wall_ms(const std::function<void()>& body) {
  const auto t0 = std::chrono::steady_clock::now();
  body();
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

bench::stats time_wall(int warmup, int runs, const std::function<void()>& body) {
  for (int r = 0; r < warmup; ++r) body();
  std::vector<double> ms;
  for (int r = 0; r < runs; ++r) ms.push_back(wall_ms(body));
  return bench::summarize(std::move(ms));
}

namespace {

struct stage_name {
  unsigned bit;
  const char* name;
};
constexpr stage_name stage_names[] = {{stream_stage::read, "read"},
                                      {stream_stage::upload, "host-to-device"},
                                      {stream_stage::kernel, "kernel"},
                                      {stream_stage::download, "device-to-host"},
                                      {stream_stage::write, "write"}};

std::string fixed(double v, int digits) {
  std::ostringstream s;
  s << std::fixed << std::setprecision(digits) << v;
  return s.str();
}

}  // namespace

double measure(context& ctx, bench::suite& suite, const workload& w, const stream_options& base) {
  const auto& cfg = suite.config();
  const int warmup = std::clamp(cfg.warmup, 1, 2), runs = cfg.runs;
  stream_pipeline pipe(ctx);  // one ring for every variant: pinning is not what is measured
  suite.describe_timing("wall clock of whole runs (the first read to the last byte written), " + std::to_string(runs) +
                        (runs == 1 ? " timed run after " : " timed runs after ") + std::to_string(warmup) + " warm-up, median shown");
  suite.begin_case(w.name, w.params, w.bytes);
  auto progress = [&](const std::string& what) {
    if (cfg.progress) std::cerr << "[" << w.name << "] " << what << "\n";
  };
  auto rate = [&](double ms) { return w.rate ? "; " + w.rate(ms * 1e-3) : std::string(); };
  // Linux writes dirty pages (a just-generated input, earlier outputs) back some 30 s after they
  // were written, in the middle of whichever phase runs then; so each phase starts with none.
  auto timed = [&](const stream_options& o, stream_report* last) {
    const auto t0 = std::chrono::steady_clock::now();
    ::sync();
    const double synced = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (synced > 0.1) progress("dirty pages written back first: " + fixed(synced, 1) + " s");
    return time_wall(warmup, runs, [&] {
      const auto r = w.run(pipe, o);
      if (last) *last = r;
    });
  };

  // The serial loop and the streamed run alternate, run by run, so that a machine's drift (the
  // page cache filling, other tenants) falls on both alike; each takes its own warm-up first.
  stream_options serial = base;
  serial.overlap = false;
  stream_options streamed = base;
  streamed.overlap = true;
  progress("serial loop and streamed, alternating");
  stream_report serial_report, streamed_report;
  bench::stats serial_t, streamed_t;
  std::string serial_wrong_note;
  {
    ::sync();
    std::vector<double> serial_ms, streamed_ms;
    const auto once = [&](const stream_options& o, stream_report& r) { return wall_ms([&] { r = w.run(pipe, o); }); };
    std::string serial_wrong;
    for (int r = 0; r < warmup; ++r) {
      once(serial, serial_report);
      if (r == 0 && w.check) serial_wrong = w.check();  // the serial loop's output, checked once
      once(streamed, streamed_report);
    }
    bool streamed_last = true;
    for (int r = 0; r < runs; ++r) {
      // Which goes first alternates too, so neither always follows the other's writes.
      if (r % 2 == 0) serial_ms.push_back(once(serial, serial_report)), streamed_ms.push_back(once(streamed, streamed_report));
      else streamed_ms.push_back(once(streamed, streamed_report)), serial_ms.push_back(once(serial, serial_report));
      streamed_last = r % 2 == 0;
    }
    if (!streamed_last) once(streamed, streamed_report);  // untimed: the output checked below is the streamed one
    serial_t = bench::summarize(std::move(serial_ms));
    streamed_t = bench::summarize(std::move(streamed_ms));
    if (!serial_wrong.empty()) serial_wrong_note = "; WRONG: " + serial_wrong;
  }
  std::string serial_note = serial_report.plan.describe() + rate(serial_t.median_ms) + serial_wrong_note;
  std::string check_note;
  if (w.check)
    if (auto bad = w.check(); !bad.empty()) check_note = "; WRONG: " + bad;

  // Each stage alone, in the same pipeline and chunks; the bound is the slowest.
  std::vector<std::pair<std::string, bench::stats>> alone;
  const unsigned present = w.stages & (ctx.is_cuda() ? stream_stage::all : ~(stream_stage::upload | stream_stage::download));
  for (const auto& s : stage_names) {
    if (!(present & s.bit)) continue;
    stream_options o = streamed;
    o.stages = s.bit;
    progress(std::string(s.name) + " alone");
    alone.emplace_back(s.name, timed(o, nullptr));
  }
  const auto slowest = std::max_element(alone.begin(), alone.end(),
                                        [](const auto& a, const auto& b) { return a.second.median_ms < b.second.median_ms; });
  // The host's two stages together, without copies or kernel: both move every byte through host
  // memory (and the writers' new pages are zeroed first), so where they alone take about as long
  // as the streamed run, host memory is what it waits for, not the overlap.
  constexpr unsigned host_io = stream_stage::read | stream_stage::write;
  std::optional<bench::stats> host_io_t;
  if ((present & host_io) == host_io) {
    stream_options o = streamed;
    o.stages = host_io;
    progress("read and write together");
    host_io_t = timed(o, nullptr);
  }

  suite.record("serial loop", bench::role::baseline, serial_t, serial_note);
  if (slowest != alone.end())
    suite.record("bound", bench::role::baseline, slowest->second, "the slowest stage alone: " + slowest->first + rate(slowest->second.median_ms));
  for (const auto& [name, t] : alone) suite.record(name + " alone", bench::role::soac, t);
  if (host_io_t) suite.record("read and write together", bench::role::soac, *host_io_t, "the host's stages overlapped, without copies or kernel");
  const double speedup = serial_t.median_ms / streamed_t.median_ms;
  std::string note = "speedup over the serial loop " + fixed(speedup, 2) + "x";
  if (slowest != alone.end()) note += ", streamed / bound " + fixed(streamed_t.median_ms / slowest->second.median_ms, 2) + "x";
  if (host_io_t) note += ", streamed / (read and write together) " + fixed(streamed_t.median_ms / host_io_t->median_ms, 2) + "x";
  if (!w.bars.empty()) note += " [" + w.bars + "]";
  note += rate(streamed_t.median_ms) + "; " + streamed_report.plan.describe() + check_note;
  suite.record("streamed", bench::role::soac, streamed_t, note);
  return streamed_t.median_ms;
}

scratch_dir::scratch_dir(const std::string& dir, const std::string& tag) {
  const fs::path root = dir.empty() ? fs::temp_directory_path() : fs::path(dir);
  path_ = root / ("soac-" + tag + "-" + std::to_string(::getpid()));
  std::error_code ec;
  fs::create_directories(path_, ec);
  if (ec) throw input_error(path_.string() + ": cannot create the bench's folder: " + ec.message());
}

scratch_dir::~scratch_dir() {
  std::error_code ec;
  fs::remove_all(path_, ec);
}

std::map<std::string, std::string> overrides_for(const app& a, const std::string& preset,
                                                 const std::map<std::string, std::string>& overrides) {
  const auto known = a.find_preset(preset).params;
  std::map<std::string, std::string> out;
  for (const auto& [k, v] : overrides)
    if (known.contains(k)) out[k] = v;
  return out;
}

}  // namespace soac::apps::streaming

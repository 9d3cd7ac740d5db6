// The stream planner: how big a chunk is, from the rates measured at start-up and free memory.
//
// A run of C chunks through s overlapped stages takes about (C + s - 1) chunk times of its slowest
// stage (the pipeline fills and drains) plus C handoffs: with T the whole transfer at the copy
// rate and h one handoff, time ~ T + (s - 1) T / C + C h, least at C = sqrt((s - 1) T / h). An
// estimate of T off by 2x moves C by 1.4x and the total by little, so the copy rate stands in for
// every stage's rate (the read rate is not known before reading).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstring>
#include <map>
#include <mutex>
#include <sstream>
#include <thread>
#include <vector>

#include <unistd.h>

#include "core/cuda_check.hpp"
#include "core/cuda_event.hpp"
#include "core/error.hpp"
#include "core/stream.hpp"

namespace soac {

namespace {

namespace tuning {
// Below this many bytes per chunk (all arrays together) fixed costs per chunk dominate.
constexpr double min_chunk_bytes = 1 << 20;
// The rings may take this share of the free memory; the kernels need the rest.
constexpr double ring_memory_share = 0.25;
// Handoffs a chunk costs on the critical path (one wake-up into the next stage, one out of it).
constexpr double handoffs_per_chunk = 2;
constexpr std::size_t probe_bytes = std::size_t{16} << 20;
// The ring the planner aims at: host memory is the scarce resource, and a ring that stays in the
// last-level cache spares it (a small ring filled faster than a large one: docs/tuning/stream.md).
constexpr std::size_t ring_bytes = std::size_t{96} << 20;
// Each writer's piece of every output per chunk, at least: writers of small pieces slow each other
// down (docs/tuning/stream.md). Where every byte read is written back (conv1d, histeq) the writes
// are the run, and fewer, larger chunks wrote faster than 2 MiB pieces.
constexpr double write_piece_bytes = double(std::size_t{2} << 20);
constexpr double write_heavy_piece_bytes = double(std::size_t{4} << 20);
// Overlap pays for its start (threads, a ring of slots, a pipeline filling and draining) only
// over this many chunks; fewer planned and the run is the serial loop (docs/tuning/stream.md).
constexpr std::int64_t min_overlapped_chunks = 2;
// The serial loop's chunk (all arrays together): large steps amortise its synchronisations, but
// pinning more than this gains nothing (hist over 8 GiB: 1 GiB chunks were as fast as any).
constexpr double serial_chunk_bytes = double(std::size_t{1} << 30);
}  // namespace tuning

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

std::string bytes_text(double b) {
  std::ostringstream s;
  s.precision(3);
  if (b >= double(1 << 30)) s << b / double(1 << 30) << " GiB";
  else if (b >= double(1 << 20)) s << b / double(1 << 20) << " MiB";
  else if (b >= 1024) s << b / 1024 << " KiB";
  else s << b << " bytes";
  return s.str();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// cuda: a pinned 16 MiB copy (best of 3) for the bandwidth; a 4 KiB copy waited on through a
// blocking-sync event (the pipeline's own handoff) for the latency.
stream_rates measure_cuda(context& ctx) {
  ctx.activate();
  void* host = nullptr;
  void* dev = nullptr;
  stream_rates r;
  try {
    SOAC_CUDA_CHECK(cudaHostAlloc(&host, tuning::probe_bytes, cudaHostAllocDefault));
    SOAC_CUDA_CHECK(cudaMalloc(&dev, tuning::probe_bytes));
    const cuda_event done(cudaEventBlockingSync | cudaEventDisableTiming);
    std::memset(host, 1, tuning::probe_bytes);
    auto copy = [&](std::size_t bytes) {
      const auto t0 = std::chrono::steady_clock::now();
      SOAC_CUDA_CHECK(cudaMemcpyAsync(dev, host, bytes, cudaMemcpyHostToDevice, ctx.stream()));
      SOAC_CUDA_CHECK(cudaEventRecord(done.get(), ctx.stream()));
      SOAC_CUDA_CHECK(cudaEventSynchronize(done.get()));
      return seconds_since(t0);
    };
    copy(tuning::probe_bytes);  // first touch
    double best = 1e30;
    for (int k = 0; k < 3; ++k) best = std::min(best, copy(tuning::probe_bytes));
    std::vector<double> small;
    for (int k = 0; k < 21; ++k) small.push_back(copy(4096));
    r.handoff_s = median(small);
    r.copy_bytes_per_s = double(tuning::probe_bytes) / std::max(best - r.handoff_s, 1e-6);
  } catch (...) {
    cudaFree(dev);
    cudaFreeHost(host);
    throw;
  }
  cudaFree(dev);
  cudaFreeHost(host);
  return r;
}

// host: memcpy bandwidth, and a wake-up of a waiting thread for the handoff.
stream_rates measure_host() {
  stream_rates r;
  std::vector<char> a(tuning::probe_bytes, 1), b(tuning::probe_bytes);
  std::memcpy(b.data(), a.data(), a.size());
  double best = 1e30;
  for (int k = 0; k < 3; ++k) {
    const auto t0 = std::chrono::steady_clock::now();
    std::memcpy(b.data(), a.data(), a.size());
    best = std::min(best, seconds_since(t0));
  }
  r.copy_bytes_per_s = double(tuning::probe_bytes) / std::max(best, 1e-6);
  std::mutex m;
  std::condition_variable cv;
  int sent = 0, seen = 0;
  constexpr int rounds = 21;
  std::vector<double> waits;
  std::thread peer([&] {
    std::unique_lock lock(m);
    for (int k = 1; k <= rounds; ++k) {
      cv.wait(lock, [&] { return sent >= k; });
      seen = k;
      cv.notify_all();
    }
  });
  for (int k = 1; k <= rounds; ++k) {
    const auto t0 = std::chrono::steady_clock::now();
    std::unique_lock lock(m);
    sent = k;
    cv.notify_all();
    cv.wait(lock, [&] { return seen >= k; });
    waits.push_back(seconds_since(t0) / 2);
  }
  peer.join();
  r.handoff_s = median(waits);
  return r;
}

}  // namespace

int default_stream_threads() {
  const unsigned hw = std::max(1u, std::thread::hardware_concurrency());
  return int(std::clamp(hw, 1u, 16u));
}

const stream_rates& measured_stream_rates(context& ctx) {
  static std::mutex guard;
  static std::map<int, stream_rates> known;  // device ordinal; -1 for the host backend
  const int key = ctx.is_cuda() ? ctx.props().ordinal : -1;
  std::lock_guard lock(guard);
  if (auto it = known.find(key); it != known.end()) return it->second;
  stream_rates r = ctx.is_cuda() ? measure_cuda(ctx) : measure_host();
  r.ring_bytes = tuning::ring_bytes;
  return known.emplace(key, r).first->second;
}

stream_plan plan_stream(const stream_rates& rates, std::int64_t n, std::size_t in_bytes, std::size_t out_bytes, int stages,
                        const stream_options& o, std::size_t free_bytes, std::size_t out_min_element_bytes) {
  if (n < 0) throw usage_error("stream: negative element count");
  if (o.granule < 1) throw usage_error("stream: granule must be at least 1");
  if (o.halo < 0) throw usage_error("stream: halo must not be negative");
  if (o.chunk < 0 || o.max_chunk < 0) throw usage_error("stream: chunk and max_chunk must not be negative");
  if (o.slots < 1 || o.slots > 64) throw usage_error("stream: slots must be in [1, 64]");
  if (o.readers < 0 || o.readers > 256 || o.writers < 0 || o.writers > 256)
    throw usage_error("stream: readers and writers must be in [0, 256] (0: default)");
  if (in_bytes == 0) throw usage_error("stream: at least one input is needed");
  if (n % o.granule != 0)
    throw usage_error("stream: " + std::to_string(n) + " elements are not a whole number of " + std::to_string(o.granule) +
                      "-element granules");
  stream_plan p;
  p.n = n;
  p.overlap = o.overlap;
  p.slots = o.overlap ? o.slots : 1;
  p.readers = o.readers ? o.readers : default_stream_threads();
  p.writers = out_bytes == 0 ? 0 : o.writers ? o.writers : default_stream_threads();
  const double per_element = double(in_bytes + out_bytes);
  // The largest chunk whose ring fits the memory share.
  const double ring_budget = tuning::ring_memory_share * double(free_bytes);
  const double fit = (ring_budget / p.slots - 2.0 * double(o.halo) * double(in_bytes)) / per_element;
  const auto max_chunk = std::int64_t(std::min(fit, 9.0e18));
  const std::int64_t most = n == 0 ? o.granule : (n + o.granule - 1) / o.granule * o.granule;
  std::int64_t chunk = 0;
  std::ostringstream why;
  why.precision(3);
  // The serial loop as a plain program runs it: large steps. Small chunks only pay off when
  // stages overlap (docs/tuning/stream.md).
  const auto serial_chunk = [&](std::ostringstream& text) {
    std::int64_t c = std::min({max_chunk, most, std::max<std::int64_t>(1, std::int64_t(tuning::serial_chunk_bytes / per_element))});
    text << "serial: " << bytes_text(tuning::serial_chunk_bytes) << " per chunk, within memory (" << bytes_text(ring_budget)
         << " for the rings)";
    if (o.max_chunk > 0 && c > o.max_chunk) {
      c = o.max_chunk;
      text << ", at most " << o.max_chunk << " elements";
    }
    return std::max(o.granule, c / o.granule * o.granule);
  };
  if (o.chunk > 0) {
    chunk = std::max(o.granule, o.chunk / o.granule * o.granule);
    why << "set";
  } else if (!o.overlap) {
    chunk = serial_chunk(why);
  } else {
    const double total_s = double(n) * double(std::max(in_bytes, out_bytes)) / std::max(rates.copy_bytes_per_s, 1.0);
    const double handoff = std::max(rates.handoff_s, 1e-6) * tuning::handoffs_per_chunk;
    const double ideal_chunks = std::max(1.0, std::sqrt(double(std::max(stages, 2) - 1) * total_s / handoff));
    chunk = std::int64_t(std::ceil(double(n) / ideal_chunks));
    chunk = std::max(chunk, std::int64_t(std::ceil(tuning::min_chunk_bytes / per_element)));
    why << "sqrt((stages - 1) T / h) = sqrt(" << std::max(stages, 2) - 1 << " x " << total_s * 1e3 << " ms / "
        << handoff * 1e6 << " us) = " << std::lround(ideal_chunks) << " chunks (T at " << rates.copy_bytes_per_s / 1e9
        << " GB/s), at least " << bytes_text(tuning::min_chunk_bytes) << " each";
    const double cached = (double(rates.ring_bytes) / p.slots - 2.0 * double(o.halo) * double(in_bytes)) / per_element;
    if (rates.ring_bytes > 0 && double(chunk) > cached) {
      chunk = std::max(std::int64_t(cached), std::int64_t(std::ceil(tuning::min_chunk_bytes / per_element)));
      why << "; a ring of " << bytes_text(double(rates.ring_bytes)) << " to stay in cache";
    }
    if (p.writers > 0) {
      const double eb = double(out_min_element_bytes > 0 ? out_min_element_bytes : out_bytes);
      const double piece = out_bytes >= in_bytes ? tuning::write_heavy_piece_bytes : tuning::write_piece_bytes;
      const auto least = std::int64_t(std::ceil(piece * p.writers / eb));
      if (chunk < least) {
        chunk = least;
        why << "; pieces of at least " << bytes_text(piece) << " for each of " << p.writers << " writers";
      }
    }
    if (chunk > max_chunk) {
      chunk = max_chunk;
      why << "; limited by memory (" << bytes_text(ring_budget) << " for the rings)";
    }
    if (o.max_chunk > 0 && chunk > o.max_chunk) {
      chunk = o.max_chunk;
      why << "; at most " << o.max_chunk << " elements";
    }
    chunk = std::max(o.granule, chunk / o.granule * o.granule);
    // The model's own verdict on overlap: fewer than two chunks, nothing runs beside anything.
    const std::int64_t planned = n == 0 ? 0 : (n + std::min(chunk, most) - 1) / std::min(chunk, most);
    if (n > 0 && (ideal_chunks < double(tuning::min_overlapped_chunks) || planned < tuning::min_overlapped_chunks)) {
      std::ostringstream fallback;
      fallback.precision(3);
      fallback << stream_serial_fallback << ": " << planned << " chunk" << (planned == 1 ? "" : "s") << " (" << why.str() << "); ";
      chunk = serial_chunk(fallback);
      why.str(fallback.str());
      p.overlap = false;
      p.slots = 1;
    }
  }
  chunk = std::min(chunk, most);
  if (chunk > max_chunk)
    throw resource_error("stream: " + std::to_string(p.slots) + " slots of " + std::to_string(chunk) + " elements (" +
                         bytes_text(double(p.slots) * (double(chunk) * per_element + 2.0 * double(o.halo) * double(in_bytes))) +
                         ") exceed the share of free memory the rings may take (" + bytes_text(ring_budget) + ")");
  p.chunk = chunk;
  p.chunks = n == 0 ? 0 : (n + chunk - 1) / chunk;
  p.host_bytes = std::size_t(p.slots) * (std::size_t(chunk + 2 * o.halo) * in_bytes + std::size_t(chunk) * out_bytes);
  p.reason = why.str();
  return p;
}

std::string stream_plan::describe() const {
  std::ostringstream s;
  s.precision(3);
  s << n << " elements in " << chunks << " chunk" << (chunks == 1 ? "" : "s") << " of " << chunk << " (" << reason << "), "
    << (overlap ? "overlapped" : "serial loop") << ", " << slots << " slot" << (slots == 1 ? "" : "s") << ", " << readers
    << " reader" << (readers == 1 ? "" : "s") << ", " << writers << " writer" << (writers == 1 ? "" : "s") << ", ring "
    << bytes_text(double(host_bytes)) << " host" << (device_bytes ? " + " + bytes_text(double(device_bytes)) + " device" : "");
  return s.str();
}

std::string stream_report::describe() const {
  std::ostringstream s;
  s.precision(3);
  s << plan.describe() << "; " << seconds * 1e3 << " ms, read " << bytes_text(double(bytes_read)) << ", wrote "
    << bytes_text(double(bytes_written));
  if (seconds > 0) s << " (" << double(std::max(bytes_read, bytes_written)) / seconds / 1e9 << " GB/s)";
  return s.str();
}

}  // namespace soac

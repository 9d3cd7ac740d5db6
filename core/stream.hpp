// soac::stream, the ZOne runtime (ZOne sections 2 and 3.3, Figs 1 and 3): arrays larger than the
// GPU, processed chunk by chunk with disk reads, host-to-device copies, kernels, device-to-host
// copies and writes overlapped.
//
//   soac::stream_pipeline pipe(ctx);
//   const soac::stream_source in[] = {soac::stream_source::from_file("x.f32", sizeof(float))};
//   const soac::stream_sink out[] = {soac::stream_sink::to_file("y.f32", sizeof(float))};
//   pipe.run(in, out, [&](const soac::stream_chunk& c) {
//     const float* x = c.input<float>(0);   // elements [c.begin, c.begin + c.count) of x.f32
//     float* y = c.output<float>(0);        // the same elements of y.f32
//     soac::scatter(ctx, c.count, some_map{x, y}, ...);  // any primitive, on ctx.stream()
//   });
//
// While chunk i is computed, chunk i+1 is copied to the device from pinned memory and chunks up
// to i+slots-1 are read by `readers` host threads (each reads its share of every chunk, pread at
// distinct offsets, so more readers raise the read rate where the page cache or disk allows);
// outputs come back on a second copy stream and `writers` threads write them, under a temporary
// name renamed to the final one only once everything is written. CUDA events order the stages
// (a kernel waits for its chunk's copy, a copy for its slot's previous kernel); host threads wait
// on those events only to reuse a pinned slot. Memory is a fixed ring of `slots` pinned and
// device buffers per array, so it does not grow with the input, and the pipeline keeps it between
// runs (pinning hundreds of MiB costs tens of ms: allocate once, stream many times).
//
// The kernel callback runs on the calling thread, once per chunk in order, with device pointers
// (host pointers on the host backend, where the same stages run with the callback computing on
// the pinned slot itself and OpenMP inside the primitives). It queues work on ctx.stream() and
// may accumulate across chunks in arrays of its own (a histogram over a file); it must not keep
// the chunk's pointers: after the callback returns, the slot is reused `slots` chunks later.
//
// The chunk size follows from the rates measured at start-up (copy bandwidth and the latency of
// one handoff between stages) and the free device memory, or is set (stream_options::chunk);
// stream_pipeline::plan says what a run would do. Any failure (a short read, a full disk, a CUDA
// error, an exception from the callback) stops every stage, removes the temporary output files
// and is rethrown as the first error, with its soac error type.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "core/context.hpp"

namespace soac {

inline constexpr int stream_max_arrays = 8;

// An array streamed in: `count` elements of `element_bytes` from a raw file (little-endian, as the
// machine stores them), starting `offset` bytes in (e.g. after an .npy header), or from host memory.
struct stream_source {
  std::filesystem::path file;  // empty: host memory at `host`
  const void* host = nullptr;
  std::uint64_t offset = 0;
  std::size_t element_bytes = 1;
  std::int64_t count = -1;  // -1: all the file holds after `offset` (files only)
  bool part = false;        // the file goes on after these elements (another process's part)

  // The file must hold exactly `count` elements after `offset` when count >= 0 (fewer: an
  // input_error naming the file as truncated; more: one naming the extra bytes, unless a part),
  // and a whole number of elements otherwise.
  static stream_source from_file(std::filesystem::path file, std::size_t element_bytes, std::uint64_t offset = 0,
                                 std::int64_t count = -1);
  static stream_source from_host(const void* data, std::size_t element_bytes, std::int64_t count);
  // Elements [first, first + count) of this file's, as a part (ranks in separate processes each
  // stream theirs); usage_error beyond the elements this source names.
  stream_source slice(std::int64_t first, std::int64_t count) const;
};

// An array streamed out, one element per input element: to a file, written as `<file>.tmp-<pid>`
// and renamed to `file` once complete, with `prefix` (e.g. an .npy header) before the elements;
// or to host memory.
struct stream_sink {
  std::filesystem::path file;  // empty: host memory at `host`
  void* host = nullptr;
  std::string prefix;
  std::size_t element_bytes = 1;

  static stream_sink to_file(std::filesystem::path file, std::size_t element_bytes, std::string prefix = {});
  static stream_sink to_host(void* data, std::size_t element_bytes);
};

// The stages of the pipeline, as bits of stream_options::stages.
namespace stream_stage {
inline constexpr unsigned read = 1, upload = 2, kernel = 4, download = 8, write = 16, all = 31;
}

struct stream_options {
  std::int64_t chunk = 0;    // elements per chunk (down to a multiple of granule, at least one); 0: planned
  std::int64_t max_chunk = 0;  // a planned chunk holds at most this many elements (32-bit kernels); 0: no limit
  std::int64_t granule = 1;  // every chunk holds a whole multiple of this many elements (a video frame)
  std::int64_t halo = 0;     // input elements the callback may read before and after its chunk (stencils)
  int slots = 3;             // ring buffers per array: chunks in flight between two stages
  int readers = 0;           // reader threads; 0: default_stream_threads()
  int writers = 0;           // writer threads; 0: default_stream_threads()
  // false: the serial loop a plain program runs, each chunk read, copied, computed, copied back and
  // written before the next starts (same threads, nothing overlapped; a planned chunk is as large
  // as memory allows, since small chunks only pay off when stages overlap). true: overlapped,
  // unless the planner's chunks come to fewer than two (a planned chunk size only): then the plan
  // is the serial loop, and its reason says so.
  bool overlap = true;
  // Stages that do their work; the others only keep the order (the bench times each alone).
  unsigned stages = stream_stage::all;
};

// Threads per host I/O stage when not set: every hardware thread, at most 16. One thread copies
// out of the page cache an order of magnitude slower than a pinned copy reaches the GPU, and the
// rate grows with the readers up to 16 (docs/tuning/stream.md), so every core reads. The best
// count is the machine's, hence the setting (`--set readers=N`).
int default_stream_threads();

// What the callback gets for one chunk.
struct stream_chunk {
  std::int64_t index = 0;  // chunk number, from 0
  std::int64_t begin = 0;  // first element
  std::int64_t count = 0;  // elements in this chunk (> 0)
  std::int64_t total = 0;  // elements in the whole stream
  // Halo present around the chunk: input(k)[j] is element begin + j for -before <= j < count + after
  // (before = min(halo, begin), after = min(halo, total - begin - count)).
  std::int64_t before = 0, after = 0;
  std::array<const void*, stream_max_arrays> in{};  // in the backend's memory
  std::array<void*, stream_max_arrays> out{};

  template <class T>
  const T* input(int k) const { return static_cast<const T*>(in[std::size_t(k)]); }
  template <class T>
  T* output(int k) const { return static_cast<T*>(out[std::size_t(k)]); }
};

using stream_kernel = std::function<void(const stream_chunk&)>;

// The words a plan's reason begins with where the planner chose the serial loop for an overlapped
// run (fewer than two chunks); reports look for them (soac reproduce's ZOne table).
inline constexpr std::string_view stream_serial_fallback = "overlap gains nothing";

// What a run does: sizes, chunking, threads and the rings' memory.
struct stream_plan {
  std::int64_t n = 0;       // elements
  std::int64_t chunk = 0;   // elements per chunk
  std::int64_t chunks = 0;
  int slots = 0, readers = 0, writers = 0;
  bool overlap = true;
  std::size_t host_bytes = 0;    // pinned ring (cuda) or host ring
  std::size_t device_bytes = 0;  // device ring (cuda)
  std::string reason;            // how the chunk size was chosen
  std::string describe() const;
};

struct stream_report {
  stream_plan plan;
  double seconds = 0;  // wall time of the run, from the first read to the last byte written or computed
  std::uint64_t bytes_read = 0, bytes_written = 0;
  std::string describe() const;
};

// What the planner measured at start-up, once per device (and once for the host backend).
struct stream_rates {
  double copy_bytes_per_s = 0;  // pinned host-to-device copy (host: memcpy) bandwidth
  double handoff_s = 0;         // one stage handing a chunk to the next: a small copy and an event wait
  // The host ring the planner aims at (0: no aim): small enough that a chunk is still in the CPU's
  // caches when the next stage takes it (readers' bytes when the copy engine reads them, the copy
  // engine's when writers read them), so host memory carries each byte once rather than thrice.
  std::size_t ring_bytes = 0;
};
const stream_rates& measured_stream_rates(context& ctx);

// The chunk size for n elements of in_bytes + out_bytes per element (the smallest output element
// out_min_element_bytes; 0: out_bytes), with `stages` stages that overlap and `free_bytes` of
// device memory (or host memory on the host backend) the rings may take a share of. Pure:
// exposed for tests and for stream_pipeline::plan.
stream_plan plan_stream(const stream_rates& rates, std::int64_t n, std::size_t in_bytes, std::size_t out_bytes, int stages,
                        const stream_options& options, std::size_t free_bytes, std::size_t out_min_element_bytes = 0);

class stream_pipeline {
 public:
  explicit stream_pipeline(context& ctx);
  ~stream_pipeline();
  stream_pipeline(const stream_pipeline&) = delete;
  stream_pipeline& operator=(const stream_pipeline&) = delete;

  // Streams the inputs (all with the same element count) through `kernel` into the outputs.
  // Returns when every output is written and every kernel has finished (cuda: ctx.stream() is
  // synchronised). Errors: input_error (missing, short or truncated file; unwritable output),
  // resource_error (disk full, rings beyond memory), usage_error (bad options), cuda_error.
  stream_report run(std::span<const stream_source> inputs, std::span<const stream_sink> outputs,
                    const stream_kernel& kernel, const stream_options& options = {});

  // The plan run() would follow for these arrays (opens the input files to learn their sizes).
  stream_plan plan(std::span<const stream_source> inputs, std::span<const stream_sink> outputs,
                   const stream_options& options = {});

 private:
  struct resources;  // rings, streams and events, kept between runs
  context& ctx_;
  std::unique_ptr<resources> res_;
};

// One run with a pipeline of its own (its rings are allocated and freed in the call).
inline stream_report stream(context& ctx, std::span<const stream_source> inputs, std::span<const stream_sink> outputs,
                            const stream_kernel& kernel, const stream_options& options = {}) {
  stream_pipeline pipe(ctx);
  return pipe.run(inputs, outputs, kernel, options);
}

}  // namespace soac

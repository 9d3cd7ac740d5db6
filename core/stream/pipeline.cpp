// The stream pipeline's threads (see core/stream.hpp). Chunk c lives in ring slot c % slots in
// every ring (pinned inputs, device inputs, device outputs, pinned outputs); a stage may reuse a
// slot for chunk c once the stage after it is done with chunk c - slots:
//
//   readers[r]   pinned in[c]   free once upload c-slots finished   (event `uploaded`, host-waited)
//   uploader     device in[c]   free once kernel c-slots finished   (event `computed`, stream-waited)
//   caller       device out[c]  free once download c-slots finished (event `downloaded`, stream-waited)
//   downloader   pinned out[c]  free once written c-slots           (counter `written`)
//   writers[w]   the file
//
// Each stage publishes how far it has queued (a counter under one mutex) and records a CUDA event
// per slot; a stage waits for the counter first, so every event it waits on has been recorded for
// the chunk it means and cannot be re-recorded meanwhile (that would need this stage's own
// progress). The host backend has no copies: the callback computes on the pinned slots, and
// `computed` frees them. The serial loop (overlap = false) runs the same threads gated so that
// chunk c+1 is not read before chunk c is written.
#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <exception>
#include <functional>
#include <limits>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include <unistd.h>

#include "core/cuda_check.hpp"
#include "core/cuda_event.hpp"
#include "core/error.hpp"
#include "core/memory.hpp"
#include "core/stream.hpp"
#include "core/stream/files.hpp"

namespace soac {

stream_source stream_source::from_file(std::filesystem::path file, std::size_t element_bytes, std::uint64_t offset,
                                       std::int64_t count) {
  stream_source s;
  s.file = std::move(file);
  s.element_bytes = element_bytes;
  s.offset = offset;
  s.count = count;
  return s;
}

stream_source stream_source::slice(std::int64_t first, std::int64_t n) const {
  if (file.empty() || count < 0 || first < 0 || n < 0 || first > count || n > count - first)
    throw usage_error("stream: a part [" + std::to_string(first) + ", " + std::to_string(first) + " + " + std::to_string(n) +
                      ") of a source of " + std::to_string(count) + " elements in a file");
  stream_source s = *this;
  s.offset = offset + std::uint64_t(first) * element_bytes;
  s.count = n;
  s.part = part || first + n < count;
  return s;
}

stream_source stream_source::from_host(const void* data, std::size_t element_bytes, std::int64_t count) {
  stream_source s;
  s.host = data;
  s.element_bytes = element_bytes;
  s.count = count;
  return s;
}

stream_sink stream_sink::to_file(std::filesystem::path file, std::size_t element_bytes, std::string prefix) {
  stream_sink s;
  s.file = std::move(file);
  s.element_bytes = element_bytes;
  s.prefix = std::move(prefix);
  return s;
}

stream_sink stream_sink::to_host(void* data, std::size_t element_bytes) {
  stream_sink s;
  s.host = data;
  s.element_bytes = element_bytes;
  return s;
}

namespace {

constexpr std::size_t slot_alignment = 4096;  // page-aligned slots: pread/pwrite and DMA like it
constexpr std::uint64_t piece_alignment = std::uint64_t{64} << 10;

std::size_t align_up(std::size_t v, std::size_t a) { return (v + a - 1) / a * a; }

// Thrown inside a stage's thread when another stage failed: the thread just leaves.
struct stop_requested {};

// What a run uses of the pipeline's resources.
struct ring_view {
  cudaStream_t upload = nullptr, download = nullptr;
  const cuda_event* uploaded = nullptr;
  const cuda_event* computed = nullptr;
  const cuda_event* downloaded = nullptr;
  char* host = nullptr;    // pinned ring (cuda), the only ring (host backend)
  char* device = nullptr;  // cuda
};

// The inputs checked and opened: one element count for all.
struct opened_inputs {
  std::vector<std::unique_ptr<detail::stream_input_file>> files;  // null for host sources
  std::int64_t n = 0;
};

opened_inputs open_inputs(std::span<const stream_source> inputs) {
  if (inputs.empty() || inputs.size() > std::size_t(stream_max_arrays))
    throw usage_error("stream: 1 to " + std::to_string(stream_max_arrays) + " inputs, got " + std::to_string(inputs.size()));
  opened_inputs o;
  std::string first;
  for (std::size_t k = 0; k < inputs.size(); ++k) {
    const auto& s = inputs[k];
    if (s.element_bytes == 0 || s.element_bytes > (std::size_t{1} << 20))
      throw usage_error("stream: input element size must be 1 byte to 1 MiB");
    std::int64_t count = s.count;
    std::string name;
    if (!s.file.empty()) {
      auto f = std::make_unique<detail::stream_input_file>(s.file);
      name = s.file.string();
      if (s.offset > f->size())
        throw input_error(name + ": holds " + std::to_string(f->size()) + " bytes, fewer than the " + std::to_string(s.offset) +
                          " before its data");
      const std::uint64_t avail = f->size() - s.offset;
      if (count >= 0) {
        if (std::uint64_t(count) > avail / s.element_bytes)  // count * element_bytes > avail, without overflow
          throw input_error(name + ": truncated: holds " + std::to_string(avail) + " data bytes, expected " +
                            std::to_string(count) + " elements of " + std::to_string(s.element_bytes) + " bytes");
        const std::uint64_t need = std::uint64_t(count) * s.element_bytes;
        if (avail > need && !s.part)
          throw input_error(name + ": " + std::to_string(avail - need) + " unexpected bytes after its " + std::to_string(count) +
                            " elements");
      } else {
        if (avail % s.element_bytes != 0)
          throw input_error(name + ": " + std::to_string(avail) + " data bytes are not a whole number of " +
                            std::to_string(s.element_bytes) + "-byte elements (truncated?)");
        count = std::int64_t(avail / s.element_bytes);
      }
      o.files.push_back(std::move(f));
    } else {
      name = "host array " + std::to_string(k);
      if (count < 0) throw usage_error("stream: a host input needs its element count");
      if (count > 0 && !s.host) throw usage_error("stream: host input " + std::to_string(k) + " has no data");
      o.files.push_back(nullptr);
    }
    if (k == 0) {
      o.n = count;
      first = name;
    } else if (count != o.n) {
      throw input_error(name + ": holds " + std::to_string(count) + " elements, but " + first + " holds " + std::to_string(o.n));
    }
  }
  return o;
}

void check_outputs(std::span<const stream_sink> outputs) {
  if (outputs.size() > std::size_t(stream_max_arrays))
    throw usage_error("stream: at most " + std::to_string(stream_max_arrays) + " outputs");
  for (const auto& s : outputs) {
    if (s.element_bytes == 0 || s.element_bytes > (std::size_t{1} << 20))
      throw usage_error("stream: output element size must be 1 byte to 1 MiB");
    if (s.file.empty() && !s.host) throw usage_error("stream: an output needs a file or host memory");
  }
}

std::size_t free_memory(context& ctx) {
  // What a ring may take: after writing a big input, most of MemAvailable is droppable page cache.
  const std::size_t host = std::size_t(std::min<std::uint64_t>(host_memory_available(), std::numeric_limits<std::size_t>::max()));
  if (!ctx.is_cuda()) return host;
  ctx.activate();
  std::size_t free_bytes = 0, total = 0;
  SOAC_CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total));
  return std::min(free_bytes, host);
}

int overlapped_stages(bool cuda, std::size_t inputs, std::size_t outputs) {
  int s = 1 + (inputs ? 1 : 0) + (outputs ? 1 : 0);  // kernel, read, write
  if (cuda) s += (inputs ? 1 : 0) + (outputs ? 1 : 0);  // the two copies
  return s;
}

// [begin, end) of a piece of `bytes` split over `parts` threads (64 KiB-aligned starts).
std::pair<std::uint64_t, std::uint64_t> piece_of(std::uint64_t bytes, int parts, int r) {
  const std::uint64_t step = std::max<std::uint64_t>(piece_alignment, align_up((bytes + parts - 1) / parts, piece_alignment));
  const std::uint64_t b = std::min(bytes, step * std::uint64_t(r)), e = std::min(bytes, b + step);
  return {b, e};
}

}  // namespace

// ---- resources kept between runs -----------------------------------------------------------------

struct stream_pipeline::resources {
  context& ctx;
  cudaStream_t upload = nullptr, download = nullptr;
  std::vector<cuda_event> uploaded, computed, downloaded;  // one per slot
  void* host = nullptr;  // pinned (cuda) or plain (host backend)
  std::size_t host_bytes = 0;
  void* device = nullptr;
  std::size_t device_bytes = 0;

  explicit resources(context& c) : ctx(c) {
    if (!ctx.is_cuda()) return;
    ctx.activate();
    SOAC_CUDA_CHECK(cudaStreamCreateWithFlags(&upload, cudaStreamNonBlocking));
    SOAC_CUDA_CHECK(cudaStreamCreateWithFlags(&download, cudaStreamNonBlocking));
  }
  ~resources() {
    if (!ctx.is_cuda()) {
      ctx.free(host);
      return;
    }
    cudaSetDevice(ctx.props().ordinal);
    cudaStreamSynchronize(upload);
    cudaStreamSynchronize(download);
    cudaFreeHost(host);
    ctx.free(device);
    cudaStreamDestroy(upload);
    cudaStreamDestroy(download);
  }

  // Replaces `p` by a block of `need` bytes unless it holds that many already, and not far more: a
  // ring much larger than the run needs (a streamed run after a serial loop) is given back, since
  // pinned memory is the machine's and a streamed run should work in a ring of its own size (on
  // the H100 machine, streamed runs that followed a serial loop pinning 2-8 GiB read at a third of
  // the rate runs in a fresh 96 MiB ring reached).
  template <class Alloc, class Free>
  static void grow(void*& p, std::size_t& have, std::size_t need, Alloc alloc, Free release) {
    if (have >= need && (need == 0 || have / 4 <= need)) return;
    void* old = p;
    p = nullptr;
    have = 0;
    release(old);
    p = alloc(need);
    have = need;
  }

  ring_view view() const {
    return {upload, download, uploaded.data(), computed.data(), downloaded.data(), static_cast<char*>(host),
            static_cast<char*>(device)};
  }

  // Rings of at least `bytes` and events for `slots` slots.
  void reserve(std::size_t bytes, int slots) {
    auto backend_alloc = [&](std::size_t b) { return ctx.allocate(b); };
    auto backend_free = [&](void* p) { ctx.free(p); };
    if (!ctx.is_cuda()) {
      grow(host, host_bytes, bytes, backend_alloc, backend_free);
      return;
    }
    ctx.activate();
    grow(host, host_bytes, bytes, [](std::size_t b) {
      void* p = nullptr;
      const cudaError_t rc = cudaHostAlloc(&p, b, cudaHostAllocDefault);
      if (rc == cudaErrorMemoryAllocation) {
        cudaGetLastError();
        throw resource_error("stream: cannot pin " + std::to_string(b) + " bytes of host memory for the ring");
      }
      SOAC_CUDA_CHECK(rc);
      return p;
    }, [](void* p) { SOAC_CUDA_CHECK(cudaFreeHost(p)); });
    grow(device, device_bytes, bytes, backend_alloc, backend_free);
    for (auto* list : {&uploaded, &computed, &downloaded})
      while (list->size() < std::size_t(slots)) list->emplace_back(cudaEventBlockingSync | cudaEventDisableTiming);
  }
};


// ---- one run ---------------------------------------------------------------------------------------

namespace {

// Where chunk c's arrays lie in a ring: input k, slot s at in_offset[k] + s * slot_bytes, and so on.
struct ring_layout {
  std::vector<std::size_t> in_offset, in_bytes, out_offset, out_bytes;
  std::size_t slot_bytes = 0;  // every array's slot together

  ring_layout(std::span<const stream_source> inputs, std::span<const stream_sink> outputs, const stream_plan& p,
              std::int64_t halo) {
    std::size_t at = 0;
    for (const auto& s : inputs) {
      in_offset.push_back(at);
      in_bytes.push_back(align_up(std::size_t(p.chunk + 2 * halo) * s.element_bytes, slot_alignment));
      at += in_bytes.back();
    }
    for (const auto& s : outputs) {
      out_offset.push_back(at);
      out_bytes.push_back(align_up(std::size_t(p.chunk) * s.element_bytes, slot_alignment));
      at += out_bytes.back();
    }
    slot_bytes = at;
  }
  std::size_t total(int slots) const { return slot_bytes * std::size_t(slots); }
  std::size_t input(std::size_t k, int slot) const { return std::size_t(slot) * slot_bytes + in_offset[k]; }
  std::size_t output(std::size_t j, int slot) const { return std::size_t(slot) * slot_bytes + out_offset[j]; }
};

class run_state {
 public:
  run_state(context& ctx, const ring_view& ring, std::span<const stream_source> inputs, std::span<const stream_sink> outputs,
            const opened_inputs& in_files, std::vector<std::unique_ptr<detail::stream_output_file>>& out_files,
            const stream_kernel& kernel, const stream_options& options, const stream_plan& plan, const ring_layout& layout)
      : ctx_(ctx), ring_(ring), inputs_(inputs), outputs_(outputs), in_files_(in_files), out_files_(out_files),
        kernel_(kernel), options_(options), plan_(plan), layout_(layout), cuda_(ctx.is_cuda()), chunks_(plan.chunks),
        slots_(plan.slots), read_left_(std::size_t(plan.chunks)), write_left_(std::size_t(plan.chunks)) {
    for (std::int64_t c = 0; c < chunks_; ++c) {
      for (int r = 0; r < plan_.readers; ++r) read_left_[std::size_t(c)] += has_read_piece(c, r);
      for (int w = 0; w < plan_.writers; ++w) write_left_[std::size_t(c)] += has_write_piece(c, w);
    }
  }

  // Runs every stage to the end; rethrows the first failure after stopping them all.
  void run() {
    std::vector<std::thread> threads;
    try {
      for (int r = 0; r < plan_.readers; ++r) threads.emplace_back(guarded([this, r] { reader(r); }));
      if (cuda_ && plan_.overlap) {
        threads.emplace_back(guarded([this] { uploader(); }));
        if (!outputs_.empty()) threads.emplace_back(guarded([this] { downloader(); }));
      }
      for (int w = 0; w < plan_.writers; ++w) threads.emplace_back(guarded([this, w] { writer(w); }));
      plan_.overlap ? compute_overlapped() : compute_serial();
      if (!outputs_.empty()) await([&] { return written_ == chunks_; });
      if (cuda_) SOAC_CUDA_CHECK(cudaStreamSynchronize(ctx_.stream()));
    } catch (const stop_requested&) {
    } catch (...) {
      fail(std::current_exception());
    }
    for (auto& t : threads) t.join();
    if (!failed_) return;
    if (cuda_) {
      // Nothing queued may still touch the rings or the caller's arrays once this returns.
      cudaStreamSynchronize(ctx_.stream());
      cudaStreamSynchronize(ring_.upload);
      cudaStreamSynchronize(ring_.download);
      cudaGetLastError();
    }
    std::rethrow_exception(error_);
  }

  std::uint64_t bytes_read() const {
    std::uint64_t b = 0;
    for (std::int64_t c = 0; c < chunks_; ++c)
      for (std::size_t k = 0; k < inputs_.size(); ++k) b += read_range(c).second * inputs_[k].element_bytes;
    return b;
  }

 private:
  // ---- chunk geometry ----
  std::int64_t begin_of(std::int64_t c) const { return c * plan_.chunk; }
  std::int64_t count_of(std::int64_t c) const { return std::min(plan_.chunk, plan_.n - begin_of(c)); }
  int slot_of(std::int64_t c) const { return int(c % slots_); }
  // First input element read for chunk c and how many (the chunk and its halo, inside [0, n)).
  std::pair<std::int64_t, std::int64_t> read_range(std::int64_t c) const {
    const std::int64_t b = begin_of(c), lo = std::max<std::int64_t>(0, b - options_.halo),
                       hi = std::min(plan_.n, b + count_of(c) + options_.halo);
    return {lo, hi - lo};
  }
  // Byte offset in input k's slot where element `lo` of the read range goes: element begin_of(c)
  // always sits `halo` elements in.
  std::size_t read_slot_offset(std::int64_t c, std::size_t k) const {
    return std::size_t(read_range(c).first - begin_of(c) + options_.halo) * inputs_[k].element_bytes;
  }
  std::uint64_t read_bytes(std::int64_t c, std::size_t k) const { return std::uint64_t(read_range(c).second) * inputs_[k].element_bytes; }
  bool has_read_piece(std::int64_t c, int r) const {
    for (std::size_t k = 0; k < inputs_.size(); ++k) {
      const auto [b, e] = piece_of(read_bytes(c, k), plan_.readers, r);
      if (b < e) return true;
    }
    return false;
  }
  bool has_write_piece(std::int64_t c, int w) const {
    for (std::size_t j = 0; j < outputs_.size(); ++j) {
      const auto [b, e] = piece_of(std::uint64_t(count_of(c)) * outputs_[j].element_bytes, plan_.writers, w);
      if (b < e) return true;
    }
    return false;
  }
  stream_chunk view(std::int64_t c) const {
    stream_chunk v;
    v.index = c;
    v.begin = begin_of(c);
    v.count = count_of(c);
    v.total = plan_.n;
    const auto [lo, len] = read_range(c);
    v.before = v.begin - lo;
    v.after = lo + len - v.begin - v.count;
    char* base = cuda_ ? ring_.device : ring_.host;
    const int s = slot_of(c);
    for (std::size_t k = 0; k < inputs_.size(); ++k)
      v.in[k] = base + layout_.input(k, s) + std::size_t(options_.halo) * inputs_[k].element_bytes;
    for (std::size_t j = 0; j < outputs_.size(); ++j) v.out[j] = base + layout_.output(j, s);
    return v;
  }
  bool active(unsigned stage) const { return (options_.stages & stage) != 0; }

  // ---- coordination ----
  std::function<void()> guarded(std::function<void()> body) {
    return [this, body = std::move(body)] {
      try {
        ctx_.activate();  // the device is current per thread
        body();
      } catch (const stop_requested&) {
      } catch (...) {
        fail(std::current_exception());
      }
    };
  }
  void fail(std::exception_ptr e) {
    std::lock_guard lock(m_);
    if (!failed_) {
      failed_ = true;
      error_ = std::move(e);
    }
    cv_.notify_all();
  }
  template <class Pred>
  void await(Pred ready) {
    std::unique_lock lock(m_);
    cv_.wait(lock, [&] { return failed_ || ready(); });
    if (failed_) throw stop_requested{};
  }
  void publish(std::int64_t& counter, std::int64_t value) {
    std::lock_guard lock(m_);
    counter = value;
    cv_.notify_all();
  }

  // ---- stages ----
  void reader(int r) {
    for (std::int64_t c = 0; c < chunks_; ++c) {
      if (!has_read_piece(c, r)) continue;
      const int s = slot_of(c);
      if (!plan_.overlap) {
        await([&] { return finished_ >= c; });
      } else if (c >= slots_) {
        if (cuda_) {
          await([&] { return uploaded_ > c - slots_; });
          SOAC_CUDA_CHECK(cudaEventSynchronize(ring_.uploaded[s].get()));
        } else {
          await([&] { return computed_ > c - slots_; });
        }
      }
      if (active(stream_stage::read)) {
        for (std::size_t k = 0; k < inputs_.size(); ++k) {
          const auto [b, e] = piece_of(read_bytes(c, k), plan_.readers, r);
          if (b == e) continue;
          char* dst = ring_.host + layout_.input(k, s) + read_slot_offset(c, k) + b;
          const std::uint64_t from = std::uint64_t(read_range(c).first) * inputs_[k].element_bytes + b;
          if (in_files_.files[k]) in_files_.files[k]->read_at(dst, e - b, inputs_[k].offset + from);
          else std::memcpy(dst, static_cast<const char*>(inputs_[k].host) + from, e - b);
        }
      }
      std::lock_guard lock(m_);
      if (--read_left_[std::size_t(c)] == 0) cv_.notify_all();
    }
  }

  void uploader() {
    for (std::int64_t c = 0; c < chunks_; ++c) {
      const int s = slot_of(c);
      await([&] { return read_left_[std::size_t(c)] == 0; });
      if (c >= slots_) {
        await([&] { return computed_ > c - slots_; });
        SOAC_CUDA_CHECK(cudaStreamWaitEvent(ring_.upload, ring_.computed[s].get(), 0));
      }
      upload(c, ring_.upload);
      SOAC_CUDA_CHECK(cudaEventRecord(ring_.uploaded[s].get(), ring_.upload));
      publish(uploaded_, c + 1);
    }
  }
  void upload(std::int64_t c, cudaStream_t stream) {
    if (!active(stream_stage::upload)) return;
    const int s = slot_of(c);
    for (std::size_t k = 0; k < inputs_.size(); ++k) {
      const std::size_t at = layout_.input(k, s) + read_slot_offset(c, k);
      SOAC_CUDA_CHECK(cudaMemcpyAsync(ring_.device + at, ring_.host + at, read_bytes(c, k), cudaMemcpyHostToDevice, stream));
    }
  }
  void download(std::int64_t c, cudaStream_t stream) {
    if (!active(stream_stage::download)) return;
    const int s = slot_of(c);
    for (std::size_t j = 0; j < outputs_.size(); ++j) {
      const std::size_t at = layout_.output(j, s);
      SOAC_CUDA_CHECK(cudaMemcpyAsync(ring_.host + at, ring_.device + at, std::size_t(count_of(c)) * outputs_[j].element_bytes,
                                      cudaMemcpyDeviceToHost, stream));
    }
  }

  // The caller's thread: the kernels, in chunk order.
  void compute_overlapped() {
    for (std::int64_t c = 0; c < chunks_; ++c) {
      const int s = slot_of(c);
      if (cuda_) {
        await([&] { return uploaded_ > c; });
        SOAC_CUDA_CHECK(cudaStreamWaitEvent(ctx_.stream(), ring_.uploaded[s].get(), 0));
        if (!outputs_.empty() && c >= slots_) {
          await([&] { return downloaded_ > c - slots_; });
          SOAC_CUDA_CHECK(cudaStreamWaitEvent(ctx_.stream(), ring_.downloaded[s].get(), 0));
        }
      } else {
        await([&] { return read_left_[std::size_t(c)] == 0; });
        if (!outputs_.empty() && c >= slots_) await([&] { return written_ > c - slots_; });
      }
      if (active(stream_stage::kernel)) kernel_(view(c));
      if (cuda_) SOAC_CUDA_CHECK(cudaEventRecord(ring_.computed[s].get(), ctx_.stream()));
      publish(computed_, c + 1);
      if (!cuda_) publish(downloaded_, c + 1);  // the output is in the host slot already
    }
  }

  // The serial loop: each stage of chunk c waits for the one before, chunk c+1 for chunk c.
  void compute_serial() {
    for (std::int64_t c = 0; c < chunks_; ++c) {
      await([&] { return read_left_[std::size_t(c)] == 0; });
      if (cuda_) {
        upload(c, ctx_.stream());
        SOAC_CUDA_CHECK(cudaStreamSynchronize(ctx_.stream()));
      }
      if (active(stream_stage::kernel)) kernel_(view(c));
      if (cuda_) {
        SOAC_CUDA_CHECK(cudaStreamSynchronize(ctx_.stream()));
        download(c, ctx_.stream());
        SOAC_CUDA_CHECK(cudaStreamSynchronize(ctx_.stream()));
      }
      publish(computed_, c + 1);
      publish(downloaded_, c + 1);
      if (!outputs_.empty()) await([&] { return written_ > c; });
      publish(finished_, c + 1);
    }
  }

  void downloader() {
    for (std::int64_t c = 0; c < chunks_; ++c) {
      const int s = slot_of(c);
      await([&] { return computed_ > c && written_ > c - slots_; });
      SOAC_CUDA_CHECK(cudaStreamWaitEvent(ring_.download, ring_.computed[s].get(), 0));
      download(c, ring_.download);
      SOAC_CUDA_CHECK(cudaEventRecord(ring_.downloaded[s].get(), ring_.download));
      publish(downloaded_, c + 1);
    }
  }

  void writer(int w) {
    for (std::int64_t c = 0; c < chunks_; ++c) {
      if (!has_write_piece(c, w)) continue;
      const int s = slot_of(c);
      await([&] { return downloaded_ > c; });
      if (cuda_ && plan_.overlap) SOAC_CUDA_CHECK(cudaEventSynchronize(ring_.downloaded[s].get()));
      if (active(stream_stage::write)) {
        for (std::size_t j = 0; j < outputs_.size(); ++j) {
          const std::uint64_t eb = outputs_[j].element_bytes;
          const auto [b, e] = piece_of(std::uint64_t(count_of(c)) * eb, plan_.writers, w);
          if (b == e) continue;
          const char* src = ring_.host + layout_.output(j, s) + b;
          const std::uint64_t to = std::uint64_t(begin_of(c)) * eb + b;
          if (out_files_[j]) out_files_[j]->write_at(src, e - b, outputs_[j].prefix.size() + to);
          else std::memcpy(static_cast<char*>(outputs_[j].host) + to, src, e - b);
        }
      }
      std::lock_guard lock(m_);
      --write_left_[std::size_t(c)];
      const std::int64_t before = written_;
      while (written_ < chunks_ && write_left_[std::size_t(written_)] == 0) ++written_;
      if (written_ != before) cv_.notify_all();
    }
  }

  context& ctx_;
  const ring_view& ring_;
  std::span<const stream_source> inputs_;
  std::span<const stream_sink> outputs_;
  const opened_inputs& in_files_;
  std::vector<std::unique_ptr<detail::stream_output_file>>& out_files_;
  const stream_kernel& kernel_;
  const stream_options& options_;
  const stream_plan& plan_;
  const ring_layout& layout_;
  const bool cuda_;
  const std::int64_t chunks_;
  const int slots_;

  std::mutex m_;
  std::condition_variable cv_;
  std::vector<int> read_left_, write_left_;  // per chunk: pieces not yet read / written
  std::int64_t uploaded_ = 0;    // chunks whose upload is queued (cuda, overlapped)
  std::int64_t computed_ = 0;    // chunks whose kernel is queued (cuda) or done (host)
  std::int64_t downloaded_ = 0;  // chunks whose download is queued (cuda) or whose output is in the host ring
  std::int64_t written_ = 0;     // chunks whose outputs are written (a prefix of the chunks)
  std::int64_t finished_ = 0;    // serial loop: chunks through every stage
  bool failed_ = false;
  std::exception_ptr error_;
};

}  // namespace

stream_pipeline::stream_pipeline(context& ctx) : ctx_(ctx), res_(std::make_unique<resources>(ctx)) {}
stream_pipeline::~stream_pipeline() = default;

namespace {
// The plan for these arrays (n from the opened inputs), its ring sizes from their layout.
stream_plan plan_arrays(context& ctx, std::int64_t n, std::span<const stream_source> inputs, std::span<const stream_sink> outputs,
                        const stream_options& options) {
  std::size_t in_bytes = 0, out_bytes = 0, out_min = 0;
  for (const auto& s : inputs) in_bytes += s.element_bytes;
  for (const auto& s : outputs) out_bytes += s.element_bytes, out_min = out_min ? std::min(out_min, s.element_bytes) : s.element_bytes;
  stream_plan p = plan_stream(measured_stream_rates(ctx), n, in_bytes, out_bytes, overlapped_stages(ctx.is_cuda(), inputs.size(), outputs.size()),
                              options, free_memory(ctx), out_min);
  const ring_layout layout(inputs, outputs, p, options.halo);
  p.host_bytes = layout.total(p.slots);
  p.device_bytes = ctx.is_cuda() ? p.host_bytes : 0;
  return p;
}
}  // namespace

stream_plan stream_pipeline::plan(std::span<const stream_source> inputs, std::span<const stream_sink> outputs,
                                  const stream_options& options) {
  check_outputs(outputs);
  return plan_arrays(ctx_, open_inputs(inputs).n, inputs, outputs, options);
}

stream_report stream_pipeline::run(std::span<const stream_source> inputs, std::span<const stream_sink> outputs,
                                   const stream_kernel& kernel, const stream_options& options) {
  if (!kernel) throw usage_error("stream: no kernel callback");
  check_outputs(outputs);
  const opened_inputs in = open_inputs(inputs);
  stream_report report;
  report.plan = plan_arrays(ctx_, in.n, inputs, outputs, options);
  const ring_layout layout(inputs, outputs, report.plan, options.halo);
  res_->reserve(layout.total(report.plan.slots), report.plan.slots);

  const auto t0 = std::chrono::steady_clock::now();
  // Outputs first, so that an unwritable path fails before anything is read.
  std::vector<std::unique_ptr<detail::stream_output_file>> out_files;
  for (const auto& s : outputs) {
    if (s.file.empty()) {
      out_files.push_back(nullptr);
      continue;
    }
    out_files.push_back(std::make_unique<detail::stream_output_file>(s.file));
    out_files.back()->map(s.prefix.size() + std::uint64_t(in.n) * s.element_bytes);  // the writers copy in parallel
    if (!s.prefix.empty()) out_files.back()->write_at(s.prefix.data(), s.prefix.size(), 0);
  }
  const ring_view ring = res_->view();
  run_state state(ctx_, ring, inputs, outputs, in, out_files, kernel, options, report.plan, layout);
  state.run();  // on failure the output files' destructors remove their temporary files
  for (auto& f : out_files)
    if (f) f->commit();
  report.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  report.bytes_read = state.bytes_read();
  for (const auto& s : outputs) report.bytes_written += s.prefix.size() + std::uint64_t(in.n) * s.element_bytes;
  return report;
}

}  // namespace soac

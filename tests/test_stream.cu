// soac::stream over both backends: maps whose outputs are written back, reductions accumulated
// across chunks, halos, the serial loop, and every failure the issue names (a 0-byte file, a size
// that is not a multiple of the chunk, a truncated file, a file that shrinks while streamed, an
// unwritable output path, a write failure mid-stream, an error in the kernel).
#include <csignal>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <sys/resource.h>
#include <unistd.h>

#include "core/buffer.hpp"
#include "core/cuda_check.hpp"
#include "core/hist.cuh"
#include "core/operators.hpp"
#include "core/scatter.cuh"
#include "core/stream.hpp"
#include "core/stream/files.hpp"
#include "tests/app_fixture.hpp"

namespace soac {
namespace {

using testing::error_of;
namespace fs = std::filesystem;

// y[i] = 3 x[i] + 1
struct affine {
  const std::uint32_t* x;
  SOAC_HD write_at<std::int64_t, std::uint32_t> operator()(std::int64_t i) const { return {i, 3 * x[i] + 1}; }
};

// y[i] = sum of x[i + d] for |d| <= radius, elements outside [0, n) counting 0.
struct window_sum {
  const std::int32_t* x;
  std::int64_t lo, hi;  // readable index range relative to the chunk
  int radius;
  SOAC_HD write_at<std::int64_t, std::int32_t> operator()(std::int64_t i) const {
    std::int32_t s = 0;
    for (int d = -radius; d <= radius; ++d)
      if (i + d >= lo && i + d < hi) s += x[i + d];
    return {i, s};
  }
};

struct byte_bins {
  const std::uint8_t* x;
  SOAC_HD bin_value<std::uint64_t> operator()(std::int64_t i) const { return {x[i], 1}; }
};

class stream_test : public testing::app_test {
 protected:
  template <class T>
  fs::path write_file(const std::string& name, const std::vector<T>& v) {
    const auto p = path(name);
    std::ofstream(p, std::ios::binary).write(reinterpret_cast<const char*>(v.data()), std::streamsize(v.size() * sizeof(T)));
    return p;
  }
  template <class T>
  std::vector<T> read_file(const fs::path& p, std::size_t skip = 0) {
    std::ifstream in(p, std::ios::binary);
    std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    EXPECT_GE(bytes.size(), skip);
    std::vector<T> v((bytes.size() - skip) / sizeof(T));
    std::memcpy(v.data(), bytes.data() + skip, v.size() * sizeof(T));
    return v;
  }
  static std::vector<std::uint32_t> iota_u32(std::size_t n) {
    std::vector<std::uint32_t> v(n);
    for (std::size_t i = 0; i < n; ++i) v[i] = std::uint32_t(i * 2654435761u);
    return v;
  }
  // Streams x through affine into out.bin with `o`; returns the number of kernel calls.
  std::int64_t run_affine(const fs::path& in, const fs::path& out, const stream_options& o, stream_pipeline* pipe = nullptr) {
    const stream_source src[] = {stream_source::from_file(in, 4)};
    const stream_sink dst[] = {stream_sink::to_file(out, 4, "HEAD")};
    std::int64_t calls = 0;
    auto kernel = [&](const stream_chunk& c) {
      ++calls;
      scatter(ctx(), c.count, affine{c.input<std::uint32_t>(0)}, span<std::uint32_t>(c.output<std::uint32_t>(0), std::size_t(c.count)));
    };
    if (pipe) pipe->run(src, dst, kernel, o);
    else stream(ctx(), src, dst, kernel, o);
    return calls;
  }
  void expect_affine(const std::vector<std::uint32_t>& x, const fs::path& out) {
    std::ifstream in(out, std::ios::binary);
    char head[4] = {};
    in.read(head, 4);
    EXPECT_EQ(std::string(head, 4), "HEAD");
    const auto y = read_file<std::uint32_t>(out, 4);
    ASSERT_EQ(y.size(), x.size());
    std::size_t wrong = 0;
    for (std::size_t i = 0; i < x.size(); ++i) wrong += y[i] != 3 * x[i] + 1;
    EXPECT_EQ(wrong, 0u);
  }
  bool no_temporaries() {
    for (const auto& e : fs::directory_iterator(path("")))
      if (e.path().filename().string().find(".tmp-") != std::string::npos) return false;
    return true;
  }
};

TEST_P(stream_test, MapSizeNotAMultipleOfTheChunk) {
  const auto x = iota_u32(1000);
  const auto in = write_file("x.bin", x);
  stream_options o;
  o.chunk = 64;  // 15 full chunks and one of 40
  o.readers = 3;
  o.writers = 2;
  EXPECT_EQ(run_affine(in, path("y.bin"), o), 16);
  expect_affine(x, path("y.bin"));
  EXPECT_TRUE(no_temporaries());
}

TEST_P(stream_test, ChunksOfOneElementAndOneSlot) {
  const auto x = iota_u32(37);
  const auto in = write_file("x.bin", x);
  for (int slots : {1, 2, 3}) {
    stream_options o;
    o.chunk = 1;
    o.slots = slots;
    EXPECT_EQ(run_affine(in, path("y.bin"), o), 37);
    expect_affine(x, path("y.bin"));
  }
}

TEST_P(stream_test, PlannedChunkSerialLoopAndReusedPipeline) {
  const auto x = iota_u32(300000);
  const auto in = write_file("x.bin", x);
  stream_pipeline pipe(ctx());
  for (bool overlap : {true, false}) {
    stream_options o;
    o.overlap = overlap;
    run_affine(in, path("y.bin"), o, &pipe);
    expect_affine(x, path("y.bin"));
  }
  // Large pieces: more readers and writers than 64 KiB pieces of a chunk.
  stream_options o;
  o.chunk = 100000;
  o.readers = 8;
  o.writers = 8;
  run_affine(in, path("y.bin"), o, &pipe);
  expect_affine(x, path("y.bin"));
}

TEST_P(stream_test, ZeroByteFile) {
  const auto in = write_file("empty.bin", std::vector<std::uint32_t>{});
  EXPECT_EQ(run_affine(in, path("y.bin"), {}), 0);
  EXPECT_EQ(fs::file_size(path("y.bin")), 4u);  // the prefix alone
  EXPECT_TRUE(no_temporaries());
}

TEST_P(stream_test, TruncatedAndRaggedFiles) {
  const auto in = write_file("x.bin", iota_u32(100));
  const stream_sink none[1] = {};
  auto noop = [](const stream_chunk&) {};
  // The caller expects 101 elements: the file is truncated.
  const stream_source longer[] = {stream_source::from_file(in, 4, 0, 101)};
  EXPECT_NE(error_of<input_error>([&] { stream(ctx(), longer, std::span(none, 0), noop); }).find("truncated"), std::string::npos);
  // The 396 bytes after a 4-byte offset are not a whole number of 8-byte elements.
  const stream_source ragged[] = {stream_source::from_file(in, 8, 4)};
  EXPECT_NE(error_of<input_error>([&] { stream(ctx(), ragged, std::span(none, 0), noop); }).find("whole number"), std::string::npos);
  const stream_source missing[] = {stream_source::from_file(path("nope.bin"), 4)};
  EXPECT_NE(error_of<input_error>([&] { stream(ctx(), missing, std::span(none, 0), noop); }).find("no such file"), std::string::npos);
  // Two inputs of different lengths.
  const auto other = write_file("z.bin", iota_u32(99));
  const stream_source pair[] = {stream_source::from_file(in, 4), stream_source::from_file(other, 4)};
  EXPECT_NE(error_of<input_error>([&] { stream(ctx(), pair, std::span(none, 0), noop); }).find("holds 99 elements"), std::string::npos);
}

TEST_P(stream_test, FileShrinksWhileStreamed) {
  const auto x = iota_u32(4096);
  const auto in = write_file("x.bin", x);
  const stream_source src[] = {stream_source::from_file(in, 4)};
  const stream_sink dst[] = {stream_sink::to_file(path("y.bin"), 4)};
  stream_options o;
  o.chunk = 256;
  o.slots = 2;  // chunk 2 and later are read only after chunk 0's kernel ran
  const auto msg = error_of<input_error>([&] {
    stream(ctx(), src, dst, [&](const stream_chunk& c) {
      if (c.index == 0) fs::resize_file(in, 1000);
    }, o);
  });
  EXPECT_NE(msg.find("ends at byte"), std::string::npos) << msg;
  EXPECT_FALSE(fs::exists(path("y.bin")));
  EXPECT_TRUE(no_temporaries());
}

TEST_P(stream_test, UnwritableOutputFailsBeforeReading) {
  const auto in = write_file("x.bin", iota_u32(100));
  write_file("plain", std::vector<char>{'x'});
  int calls = 0;
  const stream_source src[] = {stream_source::from_file(in, 4)};
  const stream_sink dst[] = {stream_sink::to_file(path("plain") / "y.bin", 4)};  // a file is no folder
  const auto msg = error_of<input_error>([&] { stream(ctx(), src, dst, [&](const stream_chunk&) { ++calls; }); });
  EXPECT_NE(msg.find("cannot create"), std::string::npos) << msg;
  EXPECT_EQ(calls, 0);
}

TEST_P(stream_test, WriteFailureMidStreamRemovesTheTemporaryFile) {
  const auto x = iota_u32(1 << 16);
  const auto in = write_file("x.bin", x);
  // A file size limit makes the writers' pwrite fail with EFBIG after 64 KiB, as a full disk would.
  const auto old_handler = std::signal(SIGXFSZ, SIG_IGN);
  rlimit old{};
  ASSERT_EQ(getrlimit(RLIMIT_FSIZE, &old), 0);
  rlimit small = old;
  small.rlim_cur = 64 << 10;
  ASSERT_EQ(setrlimit(RLIMIT_FSIZE, &small), 0);
  stream_options o;
  o.chunk = 4096;
  const auto msg = error_of<resource_error>([&] { run_affine(in, path("y.bin"), o); });
  setrlimit(RLIMIT_FSIZE, &old);
  std::signal(SIGXFSZ, old_handler);
  EXPECT_NE(msg.find("write failed"), std::string::npos) << msg;
  EXPECT_FALSE(fs::exists(path("y.bin")));
  EXPECT_TRUE(no_temporaries());
}

// Outputs are written through a shared mapping (parallel writers); a page the file system cannot
// provide (here: the temporary file truncated under the writers, as a full disk would refuse one)
// is a resource_error at that byte, not a SIGBUS.
TEST_P(stream_test, MappedWriteFailureMidStreamRemovesTheTemporaryFile) {
  {
    detail::stream_output_file probe(path("probe.bin"));
    probe.map(4096);
    if (!probe.mapped()) GTEST_SKIP() << "this kernel maps no output (no MADV_POPULATE_WRITE): pwrite is tested above";
  }
  const auto x = iota_u32(1 << 16);
  const auto in = write_file("x.bin", x);
  const auto temp = path("y.bin.tmp-" + std::to_string(::getpid()));
  const stream_source src[] = {stream_source::from_file(in, 4)};
  const stream_sink dst[] = {stream_sink::to_file(path("y.bin"), 4)};
  stream_options o;
  o.chunk = 4096;
  o.overlap = false;  // chunks 0-2 are written and no writer is busy when chunk 3's kernel truncates
  const auto msg = error_of<resource_error>([&] {
    stream(ctx(), src, dst, [&](const stream_chunk& c) {
      if (c.index == 3) fs::resize_file(temp, 0);
      scatter(ctx(), c.count, affine{c.input<std::uint32_t>(0)}, span<std::uint32_t>(c.output<std::uint32_t>(0), std::size_t(c.count)));
    }, o);
  });
  EXPECT_NE(msg.find("write failed at byte " + std::to_string(3 * 4096 * 4)), std::string::npos) << msg;
  EXPECT_FALSE(fs::exists(path("y.bin")));
  EXPECT_TRUE(no_temporaries());
}

TEST_P(stream_test, KernelErrorStopsEveryStage) {
  const auto in = write_file("x.bin", iota_u32(10000));
  stream_options o;
  o.chunk = 100;
  const stream_source src[] = {stream_source::from_file(in, 4)};
  const stream_sink dst[] = {stream_sink::to_file(path("y.bin"), 4)};
  const auto msg = error_of<usage_error>([&] {
    stream(ctx(), src, dst, [&](const stream_chunk& c) {
      if (c.index == 7) throw usage_error("chunk 7 refused");
    }, o);
  });
  EXPECT_EQ(msg, "chunk 7 refused");
  EXPECT_FALSE(fs::exists(path("y.bin")));
  EXPECT_TRUE(no_temporaries());
}

// A failing CUDA call in the kernel stage (an invalid argument, which leaves the context usable)
// stops every stage and arrives as a cuda_error; the pipeline runs again afterwards.
TEST_P(stream_test, CudaErrorStopsEveryStage) {
  if (!ctx().is_cuda()) GTEST_SKIP() << "a CUDA error needs the cuda backend";
  const auto x = iota_u32(10000);
  const auto in = write_file("x.bin", x);
  stream_options o;
  o.chunk = 100;
  stream_pipeline pipe(ctx());
  const stream_source src[] = {stream_source::from_file(in, 4)};
  const stream_sink dst[] = {stream_sink::to_file(path("y.bin"), 4)};
  const auto msg = error_of<cuda_error>([&] {
    pipe.run(src, dst, [&](const stream_chunk& c) {
      // An invalid copy direction: refused at the call, nothing queued, not sticky.
      if (c.index == 5) SOAC_CUDA_CHECK(cudaMemcpyAsync(c.output<void>(0), c.input<void>(0), 16, cudaMemcpyKind(42), ctx().stream()));
    }, o);
  });
  EXPECT_NE(msg.find("cudaMemcpyAsync"), std::string::npos) << msg;
  EXPECT_FALSE(fs::exists(path("y.bin")));
  EXPECT_TRUE(no_temporaries());
  run_affine(in, path("y.bin"), o, &pipe);
  expect_affine(x, path("y.bin"));
}

// A histogram accumulated across chunks equals the one computed over the whole array at once.
TEST_P(stream_test, AccumulatedHistogramEqualsUnstreamed) {
  std::vector<std::uint8_t> x(200001);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = std::uint8_t((i * i) >> 3);
  const auto in = write_file("x.bin", x);
  buffer<std::uint64_t> streamed(ctx(), std::vector<std::uint64_t>(256, 0));
  const stream_source src[] = {stream_source::from_file(in, 1)};
  stream_options o;
  o.chunk = 7777;
  stream(ctx(), src, {}, [&](const stream_chunk& c) {
    hist(ctx(), c.count, byte_bins{c.input<std::uint8_t>(0)}, streamed.view(), plus<std::uint64_t>{});
  }, o);
  buffer<std::uint8_t> whole(ctx(), std::span<const std::uint8_t>(x));
  buffer<std::uint64_t> direct(ctx(), std::vector<std::uint64_t>(256, 0));
  hist(ctx(), std::int64_t(x.size()), byte_bins{whole.data()}, direct.view(), plus<std::uint64_t>{});
  EXPECT_EQ(streamed.to_vector(), direct.to_vector());
  const auto h = streamed.to_vector();
  EXPECT_EQ(std::accumulate(h.begin(), h.end(), std::uint64_t{0}), x.size());
}

// Halos: each chunk sees `radius` elements either side (fewer at the ends), for any chunk size,
// host arrays in and out.
TEST_P(stream_test, HaloAcrossChunks) {
  const int radius = 3;
  std::vector<std::int32_t> x(203);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = std::int32_t(i % 17) - 8;
  std::vector<std::int32_t> expected(x.size());
  for (std::int64_t i = 0; i < std::int64_t(x.size()); ++i)
    for (int d = -radius; d <= radius; ++d)
      if (i + d >= 0 && i + d < std::int64_t(x.size())) expected[std::size_t(i)] += x[std::size_t(i + d)];
  for (std::int64_t chunk : {1, 2, 5, 100, 203}) {
    std::vector<std::int32_t> y(x.size(), -1);
    const stream_source src[] = {stream_source::from_host(x.data(), 4, std::int64_t(x.size()))};
    const stream_sink dst[] = {stream_sink::to_host(y.data(), 4)};
    stream_options o;
    o.chunk = chunk;
    o.halo = radius;
    stream(ctx(), src, dst, [&](const stream_chunk& c) {
      EXPECT_EQ(c.before, std::min<std::int64_t>(radius, c.begin));
      EXPECT_EQ(c.after, std::min<std::int64_t>(radius, c.total - c.begin - c.count));
      scatter(ctx(), c.count, window_sum{c.input<std::int32_t>(0), -c.before, c.count + c.after, radius},
              span<std::int32_t>(c.output<std::int32_t>(0), std::size_t(c.count)));
    }, o);
    EXPECT_EQ(y, expected) << "chunk " << chunk;
  }
}

TEST_P(stream_test, StagesAloneAndGranules) {
  const auto in = write_file("x.bin", iota_u32(1200));
  stream_options o;
  o.chunk = 250;
  o.granule = 100;  // chunks of 200
  o.stages = stream_stage::read | stream_stage::upload;
  EXPECT_EQ(run_affine(in, path("y.bin"), o), 0);  // no kernel ran; the order still held
  o.stages = stream_stage::all;
  EXPECT_EQ(run_affine(in, path("y.bin"), o), 6);
  o.granule = 7;  // 1200 elements are not whole granules
  EXPECT_NE(error_of<usage_error>([&] { run_affine(in, path("y.bin"), o); }).find("granules"), std::string::npos);
}

SOAC_INSTANTIATE_APP_BACKENDS(stream_test);

// The planner alone: granules, forced chunks, the memory share.
TEST(StreamPlan, ChunkFromRatesAndMemory) {
  const stream_rates rates{50e9, 20e-6};
  stream_options o;
  const std::int64_t n = std::int64_t{1} << 30;  // 4 GiB of floats in, 4 GiB out
  const auto p = plan_stream(rates, n, 4, 4, 5, o, std::size_t{80} << 30);
  // sqrt((stages - 1) T / h): T the 4 GiB at the copy rate above, h two handoffs: about 93 chunks.
  EXPECT_GT(p.chunks, 60);
  EXPECT_LT(p.chunks, 140);
  EXPECT_LE(double(p.host_bytes), 0.25 * double(std::size_t{80} << 30));
  // Little memory: the chunk shrinks to fit a quarter of it.
  const auto tight = plan_stream(rates, n, 4, 4, 5, o, std::size_t{64} << 20);
  EXPECT_LE(tight.host_bytes, std::size_t{16} << 20);
  EXPECT_GE(tight.chunk, 1);
  // Granules of a 4K frame.
  stream_options frames;
  frames.granule = 3840 * 2160;
  const auto v = plan_stream(rates, frames.granule * 300, 1, 1, 5, frames, std::size_t{80} << 30);
  EXPECT_EQ(v.chunk % frames.granule, 0);
  // A forced chunk beyond the memory share is a resource_error.
  stream_options forced;
  forced.chunk = n;
  EXPECT_THROW(plan_stream(rates, n, 4, 4, 5, forced, std::size_t{1} << 30), resource_error);
  // A ring to stay in cache: 96 MiB over 3 slots of 8 bytes per element, whatever the rates say
  // (inputs only: outputs have their own floor, below).
  stream_rates cached = rates;
  cached.ring_bytes = std::size_t{96} << 20;
  const auto c = plan_stream(cached, n, 8, 0, 4, o, std::size_t{80} << 30);
  EXPECT_EQ(c.chunk, (std::int64_t{32} << 20) / 8);
  EXPECT_LE(c.host_bytes, cached.ring_bytes);
  EXPECT_NE(c.reason.find("stay in cache"), std::string::npos) << c.reason;
  // ... but never below 1 MiB per chunk, and granules stay whole.
  stream_rates tiny_ring = cached;
  tiny_ring.ring_bytes = std::size_t{1} << 20;
  EXPECT_EQ(plan_stream(tiny_ring, n, 8, 0, 4, o, std::size_t{80} << 30).chunk, (std::int64_t{1} << 20) / 8);
  stream_options two_writers = frames;
  two_writers.writers = 2;
  EXPECT_EQ(plan_stream(cached, frames.granule * 300, 1, 1, 5, two_writers, std::size_t{80} << 30).chunk, 2 * frames.granule);
  // With outputs, each writer's piece of the smallest output is at least 2 MiB, above the cache's
  // ring (Black-Scholes: 20 bytes in, two floats out, 16 writers) ...
  stream_options sixteen = o;
  sixteen.writers = 16;
  const auto w = plan_stream(cached, n, 20, 8, 5, sixteen, std::size_t{80} << 30, 4);
  EXPECT_EQ(w.chunk, (std::int64_t{2} << 20) * 16 / 4);
  EXPECT_NE(w.reason.find("for each of 16 writers"), std::string::npos) << w.reason;
  // ... the outputs' total element size where the smallest is not given ...
  EXPECT_EQ(plan_stream(cached, n, 20, 8, 5, sixteen, std::size_t{80} << 30).chunk, (std::int64_t{2} << 20) * 16 / 8);
  // ... and within the memory share.
  const auto short_memory = plan_stream(cached, n, 20, 8, 5, sixteen, std::size_t{256} << 20, 4);
  EXPECT_LE(short_memory.host_bytes, std::size_t{64} << 20);
  EXPECT_NE(short_memory.reason.find("limited by memory"), std::string::npos) << short_memory.reason;
  // The serial loop takes chunks of 1 GiB (all arrays), or less where memory is short.
  stream_options serial;
  serial.overlap = false;
  const auto big = plan_stream(cached, n, 4, 4, 5, serial, std::size_t{80} << 30);
  EXPECT_EQ(big.chunk, (std::int64_t{1} << 30) / 8);
  EXPECT_EQ(big.chunks, 8);
  EXPECT_EQ(big.slots, 1);
  const auto short_of_memory = plan_stream(cached, n, 4, 4, 5, serial, std::size_t{2} << 30);  // 512 MiB for the ring
  EXPECT_EQ(short_of_memory.chunk, (std::int64_t{512} << 20) / 8);
  // Where every byte read is written back (conv1d: a float in, a float out), pieces of 4 MiB.
  const auto conv = plan_stream(cached, std::int64_t{1} << 26, 4, 4, 5, sixteen, std::size_t{80} << 30, 4);
  EXPECT_TRUE(conv.overlap);
  EXPECT_EQ(conv.chunk, (std::int64_t{4} << 20) * 16 / 4);
  EXPECT_EQ(conv.chunks, 4);
  // Fewer than two chunks planned: overlap gains nothing, the plan is the serial loop and says so.
  const auto one = plan_stream(cached, std::int64_t{1} << 24, 4, 4, 5, sixteen, std::size_t{80} << 30, 4);
  EXPECT_FALSE(one.overlap);
  EXPECT_EQ(one.slots, 1);
  EXPECT_EQ(one.chunks, 1);
  EXPECT_EQ(one.reason.rfind(stream_serial_fallback, 0), 0u) << one.reason;
  EXPECT_NE(one.describe().find("serial loop"), std::string::npos) << one.describe();
  // ... also where the model alone wants fewer than two (a transfer below a few handoffs) ...
  EXPECT_FALSE(plan_stream(rates, 1000, 4, 0, 3, o, std::size_t{1} << 30).overlap);
  // ... but a chunk the caller sets is overlapped as asked.
  stream_options set_chunk = o;
  set_chunk.chunk = 1000;
  EXPECT_TRUE(plan_stream(rates, 1000, 4, 0, 3, set_chunk, std::size_t{1} << 30).overlap);
  // Tiny inputs: one chunk.
  EXPECT_EQ(plan_stream(rates, 1000, 4, 0, 3, o, std::size_t{1} << 30).chunks, 1);
  EXPECT_EQ(plan_stream(rates, 0, 4, 0, 3, o, std::size_t{1} << 30).chunks, 0);
}

}  // namespace
}  // namespace soac

// The benchmark harness every `soac bench` uses. A suite is a list of cases (a point of the
// paper's sweep: sizes, parameters, the bytes that must move); each case times several variants
// (soac strategies and in-run baselines such as CUB/Thrust) with the same warm-up and repeat
// count. Every figure is a ratio computed in the same run: time over the memory floor (bytes
// that must move / device-to-device copy bandwidth measured at suite start) and time over each
// baseline. Output: a readable table and JSON (device, driver, build commit, every figure).
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <iosfwd>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/context.hpp"

namespace soac::bench {

class stream_hold;

struct settings {
  int warmup = 5;         // untimed runs first (module load, caches, allocator)
  int runs = 31;          // timed runs; median reported
  bool progress = true;   // progress line on stderr
  double warmup_ms = 20;  // more untimed runs until they took this long (see warm_up)
  // cuda: time each run from the moment the host starts queueing it (the host's launch latency
  // included) instead of queueing it behind a held stream (see time).
  bool launch_latency = false;
};

struct stats {
  double median_ms = 0, min_ms = 0, max_ms = 0;
  int runs = 0;
  // cuda: the body waited for the device while its stream was held (see time), so its runs
  // were timed with the host's launch latency.
  bool waits_for_device = false;
};

// Median (mean of the middle two for even counts), min and max of samples in ms.
stats summarize(std::vector<double> samples_ms);

// Untimed runs of body: at least s.warmup, and more (up to 10000) until they took s.warmup_ms
// of wall time, the device finishing each. A fixed count is not enough after a long baseline: the
// first variant after one measured 10% slow until its clocks settled (docs/tuning/bench.md).
void warm_up(const context& ctx, const settings& s, const std::function<void()>& body);

// Times body after warm_up: CUDA events around each run on ctx.stream() (cuda) or the steady
// clock (host). On cuda each run is queued (start event, body, stop event) behind a spin kernel
// that the host releases once it has queued the run (bench::stream_hold, NVBench's blocking
// kernel), so the events measure the GPU's work back to back: an idle GPU would otherwise start
// the clock at the start event and wait for the host to plan and launch the first kernel (several
// percent of a short call's time; docs/tuning/bench.md). A body that waits for the device
// itself (hist's RF inspector) ends the hold by its timeout and keeps its gaps in the time.
// s.launch_latency measures without the hold. `hold`: one to reuse across calls (cuda; null: a
// fresh one, which allocates pinned host memory).
stats time(const context& ctx, const settings& s, const std::function<void()>& body, stream_hold* hold = nullptr);

// Device-to-device copy bandwidth in bytes/s, counting bytes read plus bytes written, over a
// buffer well beyond L2 (host: memcpy bandwidth of the same size).
double measure_copy_bandwidth(context& ctx, const settings& s);

// The driver version in a line of /proc/driver/nvidia/version ("unknown" when none).
std::string driver_version_of(const std::string& line);

// Device, driver, runtime and build as JSON (also used by `soac info`).
nlohmann::json environment(const context& ctx);

enum class role { soac, baseline };

struct variant_result {
  std::string name;
  role kind = role::soac;
  stats time;
  std::string note;  // e.g. the plan a soac primitive chose
};

struct case_result {
  std::string name;
  nlohmann::json params;
  double bytes = 0;  // bytes that must move through device memory
  std::vector<variant_result> variants;
};

class suite {
 public:
  suite(context& ctx, std::string name, settings s);

  // Announces how many cases follow (for the progress line).
  void expect_cases(int count) { expected_cases_ = count; }
  // Starts a case; variants timed after this belong to it.
  void begin_case(std::string name, nlohmann::json params, double bytes_moved);
  // Times one variant of the current case. `setup` (untimed) runs before every run, e.g. to
  // restore an input that the body changes.
  void measure(std::string variant, role kind, const std::function<void()>& body, std::string note = {},
               const std::function<void()>& setup = {});

  // Attaches a note (e.g. the plan a primitive chose) to the variant measured last.
  void annotate(std::string note);

  // Adds a variant the caller timed itself (e.g. wall-clock runs of a pipeline of host threads
  // and streams, which events on ctx.stream() cannot time).
  void record(std::string variant, role kind, stats time, std::string note = {});

  // The warm-up and repeat counts every variant is measured with.
  const settings& config() const { return settings_; }
  // For suites whose variants the caller timed itself (record): how they were timed, printed in
  // the header (and kept in the JSON) instead of measure()'s counts, which they did not use.
  void describe_timing(std::string how) { timing_ = std::move(how); }

  double copy_bandwidth() const { return copy_bandwidth_; }
  double floor_ms(const case_result& c) const { return c.bytes / copy_bandwidth_ * 1e3; }
  const std::vector<case_result>& cases() const { return cases_; }

  void print(std::ostream& out) const;
  nlohmann::json to_json() const;
  void write_json(const std::filesystem::path& file) const;

 private:
  void progress(const std::string& what) const;
  context& ctx_;
  std::string name_;
  settings settings_;
  nlohmann::json environment_;
  std::string timing_;
  double copy_bandwidth_ = 0;
  int expected_cases_ = 0;
  std::vector<case_result> cases_;
};

}  // namespace soac::bench

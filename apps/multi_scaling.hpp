// `soac bench APP --devices all|LIST` and `mpirun -np N soac bench APP --ranks mpi`: the scaling
// tables of the apps that run on several GPUs (hist, segreduce, kmeans). Each app's own bench holds its table, because its inputs, functors and checks
// live there (the hist bench's bin functions, the k-means engine) and a user asks "how does
// hist scale" of the hist command; this header is what they share: the rank counts and the timing.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "apps/app.hpp"
#include "bench/harness.hpp"
#include "core/multi/mpi_world.hpp"
#include "core/multi/multi_context.hpp"

namespace soac::apps {

// 1, 2, 4, 8, ... of the listed devices as far as there are, and all of them.
inline std::vector<int> scaling_rank_counts(int devices) {
  std::vector<int> out;
  for (int r = 1; r <= devices; r *= 2) out.push_back(r);
  if (out.empty() || out.back() != devices) out.push_back(devices);
  return out;
}

using prepare_ranks = std::function<std::function<void()>(const multi_context&)>;

// The speedup note of a row against the one rank measured in the same run.
inline std::string scaling_note(double one_ms, double ms, int ranks) {
  char note[96];
  std::snprintf(note, sizeof note, "speedup %.2fx, parallel efficiency %.2f; ", one_ms / ms, one_ms / ms / ranks);
  return note;
}

// prepare(mc) puts the inputs on the ranks of mc that this process holds (untimed) and returns
// the body to time; the body makes the collective calls. Each run is timed on the wall clock
// from its first launch until every rank's stream is done (events on one stream cannot time
// several GPUs); warm-up runs, then the median of the suite's run count. "1 device" (or "1
// process") is the baseline, so the printed ratio is time over one rank's, and every note gives
// the speedup and the parallel efficiency (speedup / R) against the one rank of the same run.
//  --devices: for R = 1, 2, 4, ... of the devices, a multi_context over the first R in this process.
//  --ranks mpi: rank 0 alone on its GPU (the other processes wait), then every process of the
//    world, one rank each; a run's time is the slowest process's (each starts after a barrier).
inline void measure_scaling(bench::suite& suite, backend which, const bench_request& r, const prepare_ranks& prepare) {
  const auto median_of = [&](const std::function<double()>& timed) {
    for (int i = 0; i < std::max(1, suite.config().warmup); ++i) timed();
    std::vector<double> samples;
    for (int i = 0; i < std::max(1, suite.config().runs); ++i) samples.push_back(timed());
    return bench::summarize(samples);
  };
  const auto wall_ms = [](const multi_context* mc, const std::function<void()>& body) {
    const auto t0 = std::chrono::steady_clock::now();
    if (body) {
      body();
      mc->synchronize();
    }
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  };
  if (r.mpi) {
    const mpi_world& world = mpi_world::get();
    const auto over_world = [&](const multi_context* mc, const std::function<void()>& body) {
      return median_of([&] {
        world.barrier();
        double ms = wall_ms(mc, body);
        world.all_reduce(&ms, 1, reduce_type::f64, reduce_op::max);
        return ms;
      });
    };
    // Each body is declared after its multi_context, so that it (and the buffers it holds on
    // the ranks' contexts) goes first.
    double one_ms = 0;
    {
      std::unique_ptr<multi_context> alone;
      std::function<void()> body;
      if (world.rank() == 0) {
        alone = std::make_unique<multi_context>(which, std::vector<int>{which == backend::cuda ? world.local_rank() : 0});
        body = prepare(*alone);
      }
      const bench::stats one = over_world(alone.get(), body);
      one_ms = one.median_ms;
      suite.record("1 process", bench::role::baseline, one, alone ? "rank 0 alone; " + alone->describe() : std::string());
    }
    const multi_context mc(which, world);
    const std::function<void()> body = prepare(mc);
    const bench::stats st = over_world(&mc, body);
    const int W = world.size();
    suite.record(std::to_string(W) + (W == 1 ? " process" : " processes"), bench::role::soac, st,
                 scaling_note(one_ms, st.median_ms, W) + mc.describe());
    return;
  }
  const auto devices = parse_devices(r.devices, which);
  double one_ms = 0;
  for (const int R : scaling_rank_counts(int(devices.size()))) {
    const multi_context mc(which, std::vector<int>(devices.begin(), devices.begin() + R));
    const std::function<void()> body = prepare(mc);
    const bench::stats st = median_of([&] { return wall_ms(&mc, body); });
    if (R == 1) one_ms = st.median_ms;
    suite.record(std::to_string(R) + (R == 1 ? " device" : " devices"), R == 1 ? bench::role::baseline : bench::role::soac, st,
                 scaling_note(one_ms, st.median_ms, R) + mc.describe());
  }
}

}  // namespace soac::apps

// `soac bench APP --devices all|LIST`: the scaling tables of the apps that run on several GPUs
// (hist, kmeans). Each app's own bench holds its table, because its inputs, functors and checks
// live there (the hist bench's bin functions, the k-means engine) and a user asks "how does
// hist scale" of the hist command; this header is what they share: the rank counts and the timing.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "bench/harness.hpp"
#include "core/multi/multi_context.hpp"

namespace soac::apps {

// 1, 2, 4, 8, ... of the listed devices as far as there are, and all of them.
inline std::vector<int> scaling_rank_counts(int devices) {
  std::vector<int> out;
  for (int r = 1; r <= devices; r *= 2) out.push_back(r);
  if (out.empty() || out.back() != devices) out.push_back(devices);
  return out;
}

// For every rank count R: a multi_context over the first R devices, prepare(mc) (untimed: puts
// the inputs on the ranks, returns the body to time), warm-up runs, then the median of the
// suite's run count, each timed on the wall clock from its first launch until every rank's
// stream is done (events on one stream cannot time several GPUs). "1 device" is the baseline,
// so the printed ratio is time over one device's, and every note gives the speedup and the
// parallel efficiency (speedup / R) against the one device measured in the same run.
inline void measure_scaling(bench::suite& suite, backend which, const std::vector<int>& devices,
                            const std::function<std::function<void()>(const multi_context&)>& prepare) {
  double one_ms = 0;
  for (const int R : scaling_rank_counts(int(devices.size()))) {
    const multi_context mc(which, std::vector<int>(devices.begin(), devices.begin() + R));
    const std::function<void()> body = prepare(mc);
    const auto timed = [&] {
      const auto t0 = std::chrono::steady_clock::now();
      body();
      mc.synchronize();
      return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    };
    for (int i = 0; i < std::max(1, suite.config().warmup); ++i) timed();
    std::vector<double> samples;
    for (int i = 0; i < std::max(1, suite.config().runs); ++i) samples.push_back(timed());
    const bench::stats st = bench::summarize(samples);
    if (R == 1) one_ms = st.median_ms;
    char note[96];
    std::snprintf(note, sizeof note, "speedup %.2fx, parallel efficiency %.2f; ", one_ms / st.median_ms, one_ms / st.median_ms / R);
    suite.record(std::to_string(R) + (R == 1 ? " device" : " devices"), R == 1 ? bench::role::baseline : bench::role::soac, st,
                 note + mc.describe());
  }
}

}  // namespace soac::apps

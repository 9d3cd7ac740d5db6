// multi_context::for_each_rank's threads: a thread per rank after the first, which run one task
// per call while the calling thread runs rank 0's.
#pragma once

#include <atomic>
#include <cstdint>
#include <exception>
#include <functional>
#include <thread>
#include <vector>

namespace soac::detail {

class rank_threads {
 public:
  explicit rank_threads(int ranks);
  ~rank_threads();
  rank_threads(const rank_threads&) = delete;
  rank_threads& operator=(const rank_threads&) = delete;

  // task(r) for r in [0, ranks): rank 0 here, the others on their threads; returns when all have
  // ended, then rethrows the first exception in rank order. One call at a time.
  void run(const std::function<void(int)>& task);

 private:
  void serve(int rank);

  std::vector<std::thread> threads_;
  std::vector<std::exception_ptr> errors_;
  const std::function<void(int)>* task_ = nullptr;
  std::atomic<std::uint32_t> generation_{0};  // bumped once per run (and to stop)
  std::atomic<int> pending_{0};               // the other ranks' tasks not yet ended
  std::atomic<bool> stop_{false};
};

}  // namespace soac::detail

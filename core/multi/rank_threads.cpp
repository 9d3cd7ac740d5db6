#include "core/multi/rank_threads.hpp"

#include <algorithm>
#include <chrono>

namespace soac::detail {

namespace {

void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#else
  std::this_thread::yield();
#endif
}

// Polling before sleeping: a futex wake-up takes tens of microseconds on the lent (virtual)
// machines, as long as a small multi-GPU call's whole overhead, while the calls of a loop (a
// bench, an iteration's primitives) come well within this of each other.
constexpr auto poll_time = std::chrono::milliseconds(2);

// Waits until a differs from old (polling for poll_time, then sleeping) and returns its value.
template <class T>
T await_change(const std::atomic<T>& a, T old) {
  const auto until = std::chrono::steady_clock::now() + poll_time;
  for (unsigned i = 1;; ++i) {
    const T now = a.load(std::memory_order_acquire);
    if (now != old) return now;
    if (i % 256 == 0) {
      if (std::chrono::steady_clock::now() > until) break;
      std::this_thread::yield();  // where threads outnumber cores, let the others run
    }
    cpu_relax();
  }
  for (;;) {
    a.wait(old, std::memory_order_acquire);
    const T now = a.load(std::memory_order_acquire);
    if (now != old) return now;
  }
}

}  // namespace

rank_threads::rank_threads(int ranks) : errors_(static_cast<std::size_t>(std::max(ranks, 1))) {
  for (int r = 1; r < ranks; ++r) threads_.emplace_back([this, r] { serve(r); });
}

rank_threads::~rank_threads() {
  stop_.store(true, std::memory_order_relaxed);
  generation_.fetch_add(1, std::memory_order_release);
  generation_.notify_all();
  for (auto& t : threads_) t.join();
}

void rank_threads::run(const std::function<void(int)>& task) {
  task_ = &task;
  std::fill(errors_.begin(), errors_.end(), nullptr);
  pending_.store(static_cast<int>(threads_.size()), std::memory_order_relaxed);
  generation_.fetch_add(1, std::memory_order_release);  // publishes task_, errors_ and pending_
  generation_.notify_all();
  try {
    task(0);
  } catch (...) {
    errors_[0] = std::current_exception();
  }
  for (int left = pending_.load(std::memory_order_acquire); left != 0;) left = await_change(pending_, left);
  task_ = nullptr;
  for (const auto& e : errors_)
    if (e) std::rethrow_exception(e);
}

void rank_threads::serve(int rank) {
  for (std::uint32_t seen = 0;;) {
    seen = await_change(generation_, seen);
    if (stop_.load(std::memory_order_relaxed)) return;
    try {
      (*task_)(rank);
    } catch (...) {
      errors_[static_cast<std::size_t>(rank)] = std::current_exception();
    }
    if (pending_.fetch_sub(1, std::memory_order_acq_rel) == 1) pending_.notify_one();
  }
}

}  // namespace soac::detail

// A fixed-size thread pool returning futures (NVRTC compiles ahead of the GPU).
#pragma once

#include <condition_variable>
#include <functional>
#include <future>
#include <mutex>
#include <queue>
#include <string>
#include <system_error>
#include <thread>
#include <type_traits>
#include <vector>

#include "util/error.h"

namespace kopt {

/// The most threads a pool is meant to have: 4x the hardware threads (at
/// least 4). More only adds memory and contention, and a typo such as
/// 100000 would otherwise take the machine's process limit.
inline unsigned max_pool_threads() {
  const unsigned hw = std::thread::hardware_concurrency();
  return 4 * (hw > 0 ? hw : 1);
}

class ThreadPool {
 public:
  /// How a worker thread is started: std::thread by default; tests pass one
  /// that fails (throws std::system_error) to check what happens then.
  using Starter = std::function<std::thread(std::function<void()>)>;

  /// Starts `threads` workers (0 counts as 1). When one cannot be started
  /// (the process or user thread limit), the ones already started are stopped
  /// and joined and EnvironmentError kopt.util.001 is thrown: nothing is left
  /// running and nothing waits forever.
  explicit ThreadPool(unsigned threads, const Starter& start = {}) {
    if (threads == 0) threads = 1;
    workers_.reserve(threads);
    for (unsigned i = 0; i < threads; ++i) {
      try {
        std::function<void()> loop = [this] { work(); };
        workers_.push_back(start ? start(std::move(loop)) : std::thread(std::move(loop)));
      } catch (const std::exception& e) {
        stop_and_join();
        throw EnvironmentError("kopt.util.001", "cannot start thread " + std::to_string(i + 1) + " of " +
                                                    std::to_string(threads) + " of the compile pool (" + e.what() +
                                                    "); use fewer (--compile-threads) or raise the thread limit (ulimit -u)");
      }
    }
  }
  ~ThreadPool() { stop_and_join(); }
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  /// Queues `fn`; its result (or exception) arrives through the future.
  template <typename Fn>
  auto submit(Fn fn) -> std::future<std::invoke_result_t<Fn>> {
    using R = std::invoke_result_t<Fn>;
    auto task = std::make_shared<std::packaged_task<R()>>(std::move(fn));
    std::future<R> f = task->get_future();
    {
      std::lock_guard<std::mutex> lock(mu_);
      jobs_.emplace([task] { (*task)(); });
    }
    cv_.notify_one();
    return f;
  }

  size_t size() const { return workers_.size(); }

  /// Drops the jobs not yet started and returns how many: their futures
  /// report std::future_error (broken_promise). Jobs already running go on.
  size_t discard_queued() {
    std::queue<std::function<void()>> dropped;
    {
      std::lock_guard<std::mutex> lock(mu_);
      dropped.swap(jobs_);
    }
    return dropped.size();  // destroyed outside the lock
  }

 private:
  void work() {
    while (true) {
      std::function<void()> job;
      {
        std::unique_lock<std::mutex> lock(mu_);
        cv_.wait(lock, [this] { return stop_ || !jobs_.empty(); });
        if (stop_ && jobs_.empty()) return;
        job = std::move(jobs_.front());
        jobs_.pop();
      }
      job();
    }
  }

  void stop_and_join() noexcept {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    for (auto& t : workers_)
      if (t.joinable()) t.join();
    workers_.clear();
  }

  std::vector<std::thread> workers_;
  std::queue<std::function<void()>> jobs_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
};

}  // namespace kopt

// The compile pool: results through futures, and a thread that cannot be
// started (the process's thread limit) leaves nothing running or waiting.
#include <gtest/gtest.h>

#include <atomic>
#include <system_error>

#include "util/error.h"
#include "util/thread_pool.h"

namespace {

TEST(ThreadPool, RunsJobsAndReturnsResults) {
  kopt::ThreadPool pool(3);
  EXPECT_EQ(pool.size(), 3u);
  std::vector<std::future<int>> f;
  for (int i = 0; i < 20; ++i) f.push_back(pool.submit([i] { return i * i; }));
  for (int i = 0; i < 20; ++i) EXPECT_EQ(f[i].get(), i * i);
}

TEST(ThreadPool, AThreadThatCannotStartStopsAndJoinsTheOthers) {
  for (unsigned fail_at : {0u, 1u, 3u, 7u}) {
    std::atomic<int> started{0}, finished{0};
    unsigned calls = 0;
    const kopt::ThreadPool::Starter starter = [&](std::function<void()> loop) {
      if (calls++ == fail_at)
        throw std::system_error(std::make_error_code(std::errc::resource_unavailable_try_again), "thread");
      ++started;
      return std::thread([&finished, loop = std::move(loop)] {
        loop();  // returns only once the pool stops
        ++finished;
      });
    };
    try {
      kopt::ThreadPool pool(8, starter);
      FAIL() << "expected EnvironmentError for a failure at thread " << fail_at + 1;
    } catch (const kopt::EnvironmentError& e) {
      EXPECT_EQ(e.id(), "kopt.util.001");
      const std::string what = e.what();
      EXPECT_NE(what.find("thread " + std::to_string(fail_at + 1) + " of 8"), std::string::npos) << what;
      EXPECT_NE(what.find("--compile-threads"), std::string::npos) << what;
    }
    // Every thread that started was stopped and joined before the throw.
    EXPECT_EQ(started.load(), static_cast<int>(fail_at));
    EXPECT_EQ(finished.load(), started.load());
  }
}

TEST(ThreadPool, MaxThreadsIsFourTimesTheHardware) {
  const unsigned hw = std::max(1u, std::thread::hardware_concurrency());
  EXPECT_EQ(kopt::max_pool_threads(), 4 * hw);
}

}  // namespace

// The run's account of where the search's time went (driver/driver_impl.h,
// PipelineStats::time_line): compile time summed over the compile threads,
// the worker's checking and timed loops, and the compiles that gave no timing.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "driver/driver_impl.h"

namespace {

using kopt::driver::PipelineStats;

TEST(PipelineStats, TimeLineSumsCompilesAndCountsWhatGaveNoTiming) {
  PipelineStats p;
  p.threads = 15;
  p.compile_ms = {30000, 60000, 90000};  // 3 minutes of compiling in all
  p.compile_wait_ms = 6000;
  p.check_ms = 12000;
  p.timing_ms = 18000;
  p.worker_other_ms = 600;
  p.withdrawn = 4;
  kopt::store::TunerStats::Filtered f;
  f.configurations = 4430;
  f.space = 4786;
  p.filtered = f;
  const std::map<std::string, int64_t> counts = {{"ok", 10}, {"compile_error", 2}, {"infeasible", 7}};
  EXPECT_EQ(p.time_line(counts),
            "search time (min): compiling 3 over 15 thread(s), the GPU loop waiting for compiles 0.1; worker "
            "checking 0.2, timed loops 0.3, other 0.01; compiles that gave no timing: 2 compile error(s), 7 "
            "infeasible, 4 withdrawn; 4430 configuration(s) filtered before compiling");
}

TEST(PipelineStats, TimeLineWithoutFailuresOrAFilter) {
  PipelineStats p;
  p.threads = 1;
  const std::string line = p.time_line({{"ok", 3}});
  EXPECT_NE(line.find("compiling 0 over 1 thread(s)"), std::string::npos) << line;
  EXPECT_NE(line.find("0 compile error(s), 0 infeasible, 0 withdrawn"), std::string::npos) << line;
  EXPECT_EQ(line.find("filtered before compiling"), std::string::npos) << line;
}

// How many candidates are proposed ahead of the GPU: enough that a compile
// is done when a worker is free for it (twice the 75th-percentile compile over
// the median evaluation), no fewer than one past the workers, no more than the cap.
TEST(CompileAheadDepth, CoversACompileTwiceOverAtTheGpusPace) {
  using kopt::driver::compile_ahead_depth;
  const std::vector<double> four_evals(4, 50.0);
  // Fewer than 4 compiles or evaluations known: the cap (a search's start).
  EXPECT_EQ(compile_ahead_depth({100, 100, 100}, four_evals, 1, 30), 30u);
  EXPECT_EQ(compile_ahead_depth({100, 100, 100, 100}, {50, 50, 50}, 1, 30), 30u);
  // 100 ms compiles, 50 ms evaluations, one GPU: ceil(2 * 100 / 50) + 1.
  EXPECT_EQ(compile_ahead_depth({100, 100, 100, 100}, four_evals, 1, 30), 5u);
  // Two GPUs take candidates twice as fast: twice as many ahead.
  EXPECT_EQ(compile_ahead_depth({100, 100, 100, 100}, four_evals, 2, 30), 9u);
  // The 75th percentile, not the median: one slow compile in four counts.
  EXPECT_EQ(compile_ahead_depth({10, 10, 10, 1000}, four_evals, 1, 100), 41u);
  // Compiles far quicker than evaluations: one past the workers.
  EXPECT_EQ(compile_ahead_depth({1, 1, 1, 1}, four_evals, 1, 30), 2u);
  EXPECT_EQ(compile_ahead_depth({1, 1, 1, 1}, four_evals, 3, 30), 4u);
  // Compiles far slower: the cap.
  EXPECT_EQ(compile_ahead_depth({60000, 60000, 60000, 60000}, four_evals, 1, 30), 30u);
  // The last 32 samples count: a search whose compiles got quick forgets its slow start.
  std::vector<double> compiles(40, 5000.0);
  for (size_t i = 8; i < compiles.size(); ++i) compiles[i] = 25;
  EXPECT_EQ(compile_ahead_depth(compiles, four_evals, 1, 30), 2u);
  // A cap below workers + 1 wins; an evaluation of 0 ms or NaN gives the cap.
  EXPECT_EQ(compile_ahead_depth({1, 1, 1, 1}, four_evals, 4, 2), 2u);
  EXPECT_EQ(compile_ahead_depth({100, 100, 100, 100}, {0, 0, 0, 0}, 1, 30), 30u);
  const double nan = std::numeric_limits<double>::quiet_NaN();
  EXPECT_EQ(compile_ahead_depth({nan, nan, nan, nan}, four_evals, 1, 30), 30u);
}

TEST(PipelineStats, RecordsTheCompileAheadDepthsMedianAndMaximum) {
  PipelineStats p;
  p.ahead = {30, 30, 5, 4, 4, 4, 5};
  const kopt::store::TunerStats t = p.record();
  ASSERT_TRUE(t.compile_ahead.has_value());
  EXPECT_EQ(t.compile_ahead->median, 5.0);
  EXPECT_EQ(t.compile_ahead->max, 30.0);
  EXPECT_TRUE(t.compile_ahead->automatic);
  p.fixed_ahead = true;
  EXPECT_FALSE(p.record().compile_ahead->automatic);
  EXPECT_FALSE(PipelineStats().record().compile_ahead.has_value());  // nothing proposed: left out
}

}  // namespace

// The run's account of where the search's time went (driver/driver_impl.h,
// PipelineStats::time_line): compile time summed over the compile threads,
// the worker's checking and timed loops, and the compiles that gave no timing.
#include <gtest/gtest.h>

#include <map>
#include <string>

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

}  // namespace

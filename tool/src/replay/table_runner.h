// The runner of a replay (driver/runner.h): every evaluation the run driver
// asks for is answered from a recorded space (store/recorded.h) instead of a
// GPU, on a simulated clock that advances by each evaluation's recorded cost,
// as Kernel Tuner's simulation runner answers from its cache. The driver, its
// search loop, budget and finalists are those of a GPU run.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "store/recorded.h"
#include "search/score.h"
#include "driver/runner.h"

namespace kopt::replay {

/// A recorded space looked up by configuration: each configuration's value
/// indices as one mixed-radix number (the sampler asks for every point it
/// draws, so the lookup is on the search's path).
class Table {
 public:
  /// Throws SpecError(kopt.replay.106) when the space has more than 2^63
  /// points (no index fits).
  explicit Table(const store::RecordedSpace& s);
  const store::RecordedSpace& recorded() const { return s_; }
  /// The entry of a configuration (its values of the recorded parameters;
  /// other keys are ignored), or null when it was not recorded.
  const store::RecordedOutcome* find(const std::map<std::string, int64_t>& config) const;

 private:
  /// The point's number, or nullopt when a parameter is missing or a value not one of its values.
  std::optional<uint64_t> number(const std::map<std::string, int64_t>& config) const;
  const store::RecordedSpace& s_;
  std::vector<std::unordered_map<int64_t, uint64_t>> index_of_;  // per parameter: value -> index
  std::vector<uint64_t> stride_;
  std::unordered_map<uint64_t, size_t> entry_;  // number() -> entry
};

/// The replayed result of a recorded outcome: ok with its objective as the
/// latency of one performance case `case_name` (median = mean = min = max,
/// one sample, geomean the same); else the kopt verdict the record's failure
/// maps to (store/recorded.h), with the detail "recorded: <verdict>".
model::Result replayed_result(const store::RecordedOutcome& o, const std::string& case_name);

/// Answers from `table`; appends each search evaluation (a candidate started
/// by the pipeline) to `trace`, with its recorded cost as its seconds. One
/// slot. The initial kernel and the finalists' re-timing (evaluate()) are
/// answered too, but cost no simulated time and are not in the trace.
/// compile() fails for a configuration recorded as a compile error. A
/// candidate that is not in the table (never proposed: the replay's space
/// is the table's) ends the run with a std::logic_error.
class TableRunner final : public driver::Runner {
 public:
  TableRunner(const Table& table, std::string case_name, search::score::Trace& trace);

  model::DeviceInfo open() override;
  std::string arch() override { return "sm_90"; }
  cuda::CompileResult compile(const spec::Candidate& c) override;
  size_t size() const override { return 1; }
  driver::RunnerSlot slot(size_t) const override;
  bool idle(size_t) const override { return !pending_; }
  size_t live_count() const override { return 1; }
  size_t primary() const override { return 0; }
  void drop(size_t, const std::string&) override {}
  void start(size_t slot, spec::Candidate c, cuda::CompileResult compiled) override;
  driver::RunnerDone wait_any() override;
  model::Result evaluate(const spec::Candidate& c, bool time_reference) override;
  model::Result evaluate_baseline() override;
  nlohmann::json profile(const spec::Candidate&, const std::string&, const std::filesystem::path&) override;
  std::chrono::steady_clock::time_point now() const override;

 private:
  const store::RecordedOutcome& outcome(const spec::Candidate& c) const;

  const Table& table_;
  const std::string case_;
  search::score::Trace& trace_;
  const std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
  double simulated_s_ = 0;
  std::optional<spec::Candidate> pending_;
};

}  // namespace kopt::replay

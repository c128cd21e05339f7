#include "replay/table_runner.h"

#include <algorithm>
#include <stdexcept>

#include "model/device_info.h"
#include "util/error.h"

namespace kopt::replay {

Table::Table(const store::RecordedSpace& s) : s_(s) {
  uint64_t stride = 1;
  for (const spec::TuningParam& p : s_.params) {
    std::unordered_map<int64_t, uint64_t> index;
    for (size_t i = 0; i < p.values.size(); ++i) index.emplace(p.values[i], i);
    index_of_.push_back(std::move(index));
    stride_.push_back(stride);
    const uint64_t n = std::max<uint64_t>(p.values.size(), 1);
    if (stride > (uint64_t{1} << 63) / n)
      throw SpecError("kopt.replay.106", s_.source + ": a space of more than 2^63 points cannot be replayed");
    stride *= n;
  }
  for (size_t i = 0; i < s_.entries.size(); ++i)
    if (std::optional<uint64_t> k = number(s_.entries[i].first)) entry_.emplace(*k, i);
}

std::optional<uint64_t> Table::number(const std::map<std::string, int64_t>& config) const {
  uint64_t k = 0;
  for (size_t d = 0; d < s_.params.size(); ++d) {
    const auto it = config.find(s_.params[d].name);
    if (it == config.end()) return std::nullopt;
    const auto at = index_of_[d].find(it->second);
    if (at == index_of_[d].end()) return std::nullopt;
    k += at->second * stride_[d];
  }
  return k;
}

const store::RecordedOutcome* Table::find(const std::map<std::string, int64_t>& config) const {
  const std::optional<uint64_t> k = number(config);
  if (!k) return nullptr;
  const auto it = entry_.find(*k);
  return it == entry_.end() ? nullptr : &s_.entries[it->second].second;
}

model::Result replayed_result(const store::RecordedOutcome& o, const std::string& case_name) {
  model::Result r;
  if (!o.ok()) {
    try {
      r.verdict = model::parse_verdict(o.verdict);
    } catch (const std::invalid_argument&) {
      r.verdict = model::Verdict::runtime_error;  // a failure no kopt verdict names
    }
    r.detail = "recorded: " + o.verdict;
    r.compile_ms = o.seconds * 1000.0;
    return r;
  }
  r.verdict = model::Verdict::ok;
  model::CaseResult c;
  c.name = case_name;
  c.role = "performance";
  c.passed = true;
  model::LatencyStats l;
  l.median_ms = l.mean_ms = l.min_ms = l.max_ms = o.ms;
  l.samples = 1;
  c.latency = l;
  r.cases.push_back(std::move(c));
  r.geomean_ms = o.ms;
  r.compile_ms = o.seconds * 1000.0;  // the whole recorded cost, as one figure
  return r;
}

TableRunner::TableRunner(const Table& table, std::string case_name, search::score::Trace& trace)
    : table_(table), case_(std::move(case_name)), trace_(trace) {}

model::DeviceInfo TableRunner::open() {
  // The limits of an H100/H200; the replay's space is the record's configurations.
  return model::hopper_limits(table_.recorded().device.empty() ? "recorded device" : table_.recorded().device);
}

const store::RecordedOutcome& TableRunner::outcome(const spec::Candidate& c) const {
  const store::RecordedOutcome* o = table_.find(c.params);
  if (!o)
    throw std::logic_error("replay: " + c.label + " is not a recorded configuration (the replay's space is the "
                           "record's)");
  return *o;
}

cuda::CompileResult TableRunner::compile(const spec::Candidate& c) {
  cuda::CompileResult r;
  const store::RecordedOutcome& o = outcome(c);
  r.ok = o.verdict != "compile_error";
  if (!r.ok) {
    r.detail = "recorded: " + o.verdict;
    r.error_name = "NVRTC_ERROR_COMPILATION";
  }
  return r;
}

driver::RunnerSlot TableRunner::slot(size_t) const {
  return {0, "the record", table_.recorded().device, "", ""};
}

void TableRunner::start(size_t, spec::Candidate c, cuda::CompileResult) { pending_ = std::move(c); }

driver::RunnerDone TableRunner::wait_any() {
  driver::RunnerDone d;
  d.slot = 0;
  d.candidate = std::move(*pending_);
  pending_.reset();
  d.sent = now();
  try {
    const store::RecordedOutcome& o = outcome(d.candidate);
    d.result = replayed_result(o, case_);
    simulated_s_ += o.seconds;
    trace_.push_back({o.ok() ? std::optional<double>(o.ms) : std::nullopt, o.seconds});
  } catch (...) {
    d.error = std::current_exception();
  }
  d.finished = now();
  return d;
}

model::Result TableRunner::evaluate(const spec::Candidate& c, bool) { return replayed_result(outcome(c), case_); }

model::Result TableRunner::evaluate_baseline() {
  throw std::logic_error("replay: a recorded space has no cuBLAS baseline");
}

nlohmann::json TableRunner::profile(const spec::Candidate&, const std::string&, const std::filesystem::path&) {
  return {{"available", false}, {"reason", "profiling unavailable: a replay of a recorded space"}};
}

std::chrono::steady_clock::time_point TableRunner::now() const {
  return start_ + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                      std::chrono::duration<double>(simulated_s_));
}

}  // namespace kopt::replay

// Synthetic run folders: attempts with made-up results, recorded by the real
// run store (store/store.h), for what reads a run folder (the report, the T4
// export, the schema checks) to be tested without a GPU.
// Test support, not part of the tool: built into kopt_test_fixture (over
// kopt::core), included as "support/run_fixture.h"; used by the unit tests
// and by the fixture programs of tests/report and tests/interop.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/attempt.h"
#include "model/result.h"
#include "store/store.h"

namespace kopt::test {

/// An attempt's performance cases, in order: name and median latency (ms).
using CaseMedians = std::vector<std::pair<std::string, double>>;

/// The latency of `launches` timed launches around `median_ms` (ms): evenly
/// spread from 0.99 to 1.01 times the median, in that order (the middle one,
/// for an odd count, exactly the median), summarised by
/// model::latency_stats() with the raw samples kept, as a worker reports
/// them. `launches` >= 1 (1: the median alone).
model::LatencyStats latency_around(double median_ms, int launches = 3);

/// A synthetic attempt of `kind` ("reference", "initial", "baseline",
/// "candidate": a model::AttemptKind name; throws std::invalid_argument for
/// another) with `label`, `params`, the source "// <label>\n" followed by an
/// empty kernel `k`, and `verdict`.
///  - Verdict::ok: one passed performance case per entry of `cases`, timed
///    with latency_around(median, launches), and geomean_ms their geometric
///    mean (unset without cases).
///  - any other verdict: detail "synthetic <verdict name>"; the cases listed
///    unpassed and untimed (pass none for an attempt stopped before them).
/// The phase timings (compile_ms, check_ms, timing_ms) are left at 0 for the
/// caller to set, like everything else a test needs.
model::Attempt synthetic_attempt(const std::string& kind, const std::string& label,
                                 std::map<std::string, int64_t> params, model::Verdict verdict,
                                 const CaseMedians& cases = {}, int launches = 3);

/// {"format_version": 1, "name": "fixture"}: the least spec.json a run folder needs.
nlohmann::json fixture_spec();
/// {"name": "Fake GPU", "arch": "sm_90"}.
nlohmann::json fixture_device();
/// A run.json of strategy "random", seed 0 and no budget.
store::RunInfo fixture_info();

/// A variant of summary.json's "specialization" as kopt writes it: number
/// `variant`, the attempt's `index`, `label` and `params`, and its file
/// variants/v<variant>.cu.
nlohmann::json specialization_variant(int variant, int index, const std::string& label,
                                      const std::map<std::string, int64_t>& params);

/// Creates the next run folder under `results` (results/run-NNN, by
/// store::RunStore::create) and records `attempts` in order (their index set by
/// the store); returns the store, open on it. Throws what the store throws.
store::RunStore make_run(const std::filesystem::path& results, const std::vector<model::Attempt>& attempts,
                         const nlohmann::json& spec = fixture_spec(), const nlohmann::json& device = fixture_device(),
                         const store::RunInfo& info = fixture_info());

/// The main() of a fixture program called as `NAME OUT_DIR`: removes
/// OUT_DIR/results, creates OUT_DIR, and calls write(OUT_DIR). Returns the
/// exit code: 0 done; 1 when `write` throws (its message on stderr after
/// "NAME: "); 2 for another command line (the usage on stderr).
int fixture_main(int argc, char** argv, const std::function<void(const std::filesystem::path& out_dir)>& write);

}  // namespace kopt::test

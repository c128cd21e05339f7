// Writes a synthetic run folder with an attempt of every verdict (no GPU), for
// the T4 schema check (tests/interop/t4_schema_test.py).
//
//   kopt_interop_fixture OUT_DIR
//
// Creates OUT_DIR/results/run-001 (replacing OUT_DIR/results) with a
// reference, an initial kernel and one candidate per verdict, with one or two
// performance cases, and prints the run folder's path.
#include <iostream>
#include <map>
#include <string>

#include "model/result.h"
#include "store/store.h"
#include "support/run_fixture.h"

using kopt::model::Attempt;
using kopt::model::Verdict;

namespace {

/// An attempt labelled "<kind> K=V ..." with performance cases case0, case1, ...
/// (medians 1, 2, ... ms, four launches each).
Attempt make(const std::string& kind, std::map<std::string, int64_t> params, Verdict v, int cases) {
  std::string label = kind;
  for (const auto& [k, x] : params) label += " " + k + "=" + std::to_string(x);
  kopt::test::CaseMedians medians;
  for (int c = 0; c < cases; ++c) medians.push_back({"case" + std::to_string(c), 1.0 + c});
  Attempt a = kopt::test::synthetic_attempt(kind, label, std::move(params), v, medians, 4);
  a.result.compile_ms = 250.5;
  a.result.check_ms = 3.25;
  if (v == Verdict::ok) a.result.timing_ms = 20.0;
  return a;
}

}  // namespace

int main(int argc, char** argv) {
  return kopt::test::fixture_main(argc, argv, [](const std::filesystem::path& out) {
    kopt::store::RunInfo info = kopt::test::fixture_info();
    info.budget = {{"evaluations", 20}};
    std::vector<Attempt> attempts = {make("reference", {}, Verdict::ok, 1), make("initial", {}, Verdict::ok, 1)};
    const Verdict all[] = {Verdict::ok,           Verdict::compile_error, Verdict::infeasible,
                           Verdict::launch_error, Verdict::runtime_error, Verdict::timeout,
                           Verdict::wrong_result, Verdict::out_of_bounds, Verdict::nondeterministic,
                           Verdict::worker_crash, Verdict::compiled};
    int64_t n = 0;
    for (int cases : {1, 2})
      for (Verdict v : all) {
        attempts.push_back(make("candidate", {{"TILE", 16 << (n % 3)}, {"VEC", 1 + n % 2}, {"N", n}}, v, cases));
        ++n;
      }
    const kopt::store::RunStore store = kopt::test::make_run(out / "results", attempts, kopt::test::fixture_spec(),
                                                             kopt::test::fixture_device(), info);
    std::cout << store.dir().string() << "\n";
  });
}

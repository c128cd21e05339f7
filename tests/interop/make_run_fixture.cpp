// Writes a synthetic run folder with an attempt of every verdict (no GPU), for
// the T4 schema check (tests/interop/t4_schema_test.py).
//
//   kopt_interop_fixture OUT_DIR
//
// Creates OUT_DIR/results/run-001 (replacing OUT_DIR/results) with a
// reference, an initial kernel and one candidate per verdict, with one or two
// performance cases, and prints the run folder's path.
#include <cstdio>
#include <exception>
#include <filesystem>
#include <iostream>
#include <map>
#include <string>

#include "model/result.h"
#include "run/store.h"

namespace stdfs = std::filesystem;
using kopt::model::Attempt;
using kopt::model::Verdict;

namespace {

Attempt make(const std::string& kind, std::map<std::string, int64_t> params, Verdict v, int cases) {
  Attempt a;
  a.kind = kopt::model::parse_attempt_kind(kind).value();
  a.label = kind;
  for (const auto& [k, x] : params) a.label += " " + k + "=" + std::to_string(x);
  a.params = std::move(params);
  a.source = "// " + a.label + "\nextern \"C\" __global__ void k() {}\n";
  a.result.verdict = v;
  a.result.compile_ms = 250.5;
  a.result.check_ms = 3.25;
  if (v != Verdict::ok) {
    a.result.detail = std::string("synthetic ") + kopt::model::verdict_name(v);
    return a;
  }
  a.result.timing_ms = 20.0;
  std::vector<double> medians;
  for (int c = 0; c < cases; ++c) {
    kopt::model::CaseResult r;
    r.name = "case" + std::to_string(c);
    r.role = "performance";
    r.passed = true;
    r.latency = kopt::model::latency_stats({1.0 + c, 1.1 + c, 0.9 + c, 1.05 + c});
    r.latency->raw_ms = {1.0 + c, 1.1 + c, 0.9 + c, 1.05 + c};
    medians.push_back(r.latency->median_ms);
    a.result.cases.push_back(r);
  }
  a.result.geomean_ms = kopt::model::geomean(medians);
  return a;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s OUT_DIR\n", argv[0]);
    return 2;
  }
  try {
    const stdfs::path out = argv[1];
    stdfs::remove_all(out / "results");
    stdfs::create_directories(out);
    kopt::run::RunInfo info;
    info.strategy = "random";
    info.budget = {{"evaluations", 20}};
    auto store = kopt::run::RunStore::create(out / "results", {{"format_version", 1}, {"name", "fixture"}},
                                             {{"name", "Fake GPU"}, {"arch", "sm_90"}}, info);
    store.record(make("reference", {}, Verdict::ok, 1));
    store.record(make("initial", {}, Verdict::ok, 1));
    const Verdict all[] = {Verdict::ok,           Verdict::compile_error, Verdict::infeasible,
                           Verdict::launch_error, Verdict::runtime_error, Verdict::timeout,
                           Verdict::wrong_result, Verdict::out_of_bounds, Verdict::nondeterministic,
                           Verdict::worker_crash, Verdict::compiled};
    int64_t n = 0;
    for (int cases : {1, 2})
      for (Verdict v : all) {
        store.record(make("candidate", {{"TILE", 16 << (n % 3)}, {"VEC", 1 + n % 2}, {"N", n}}, v, cases));
        ++n;
      }
    std::cout << store.dir().string() << "\n";
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "kopt_interop_fixture: %s\n", e.what());
    return 1;
  }
}

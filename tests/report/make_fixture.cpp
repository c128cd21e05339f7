// Writes a report.html from a synthetic run (no GPU), for the headless-browser
// screenshot check (tests/report/screenshot_check.sh).
//
//   kopt_report_fixture OUT_DIR
//
// Creates OUT_DIR/results/run-001 (replacing OUT_DIR/results), records a
// reference, an initial kernel, a cuBLAS baseline and ~30 candidates with
// speedups from about 1/4x to 8x plus a few rejected ones, writes
// summary.json (final re-timing, three shape-specialised variants with a
// measured dispatch tree, budget), best.cu and the reports, and copies
// report.html and heatmap.svg to OUT_DIR. Like a tuning of the SGEMM
// template on an H200: labels name 13 parameters (the heatmap must show the
// ones that differ), the tuned kernel and cuBLAS take 0.2 to 0.8 ms a case
// (the charts' axes must fit them), every attempt that passed has its errors
// against the FP64 oracle (the accuracy tables).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "model/attempt.h"
#include "model/dispatch.h"
#include "model/result.h"
#include "report/report.h"
#include "store/store.h"
#include "support/run_fixture.h"

namespace stdfs = std::filesystem;
using kopt::model::CaseResult;
using kopt::model::Verdict;
using kopt::model::Attempt;

namespace {

const std::vector<std::string> kCases = {"4096x2048x1024", "2048x4096x3072", "8192x1024x4096",
                                         "1024x8192x512", "3000x1000x2000"};
const double kReferenceMs[] = {2.4, 4.0, 4.5, 1.2, 1.8};
const int64_t kK[] = {1024, 3072, 4096, 512, 2000};  // each case's K

const char* kSource = R"cu(// Tiled SGEMM: each block computes a BM x BN tile of C, each thread TM x TN.
extern "C" __global__ void sgemm_tiled(const float* __restrict__ A, const float* __restrict__ B,
                                       float* __restrict__ C, int M, int N, int K) {
  __shared__ float As[BK][BM];
  __shared__ float Bs[BK][BN];
  float acc[TM][TN] = {};
  for (int k0 = 0; k0 < K; k0 += BK) {
    // ... load tiles, __syncthreads(), accumulate: if (a < b && c > d) ...
    __syncthreads();
  }
}
)cu";

/// Attempt `i`: a passing one is `speedup` times faster than the reference
/// overall, each case somewhat more or less (101 launches a case).
Attempt make(const std::string& kind, const std::string& label, std::map<std::string, int64_t> params,
             Verdict v, double speedup, int i) {
  kopt::test::CaseMedians cases;
  for (size_t c = 0; c < kCases.size() && v == Verdict::ok; ++c) {
    // Vary the per-case speedup around the attempt's overall one.
    const double s = speedup * std::pow(2.0, 0.6 * std::sin(1.7 * i + 2.1 * static_cast<double>(c)));
    cases.push_back({kCases[c], kReferenceMs[c] / s});
  }
  Attempt a = kopt::test::synthetic_attempt(kind, label, std::move(params), v, cases, 101);
  a.source = std::string("// ") + label + "\n" + kSource;
  a.compile_options = {"-O3"};
  a.result.compile_ms = 180 + 37 * (i % 7);
  a.result.compile_cache_hit = i % 5 == 0;
  a.seconds_since_start = 2.5 * i;
  if (v != Verdict::ok) {
    a.result.detail = v == Verdict::compile_error ? "ptxas error: too much shared data (0x12000 bytes)"
                                                  : "C[17] = 3.5 differs from the reference 4.25 by 0.75";
    a.result.failed_case = v == Verdict::compile_error ? "" : "17x17x17";
  }
  if (v != Verdict::ok) return a;
  // Errors against the FP64 oracle, relative to the products' scale: about
  // 2^-24 sqrt(K) times 0.3 for cuBLAS, 0.25 to 0.55 for the others; a
  // correctness case first, checked and not timed.
  const double err = a.kind == kopt::model::AttemptKind::baseline ? 0.3 : 0.25 + 0.3 * ((i * 7) % 10) / 10.0;
  for (size_t c = 0; c < kCases.size(); ++c) {
    a.result.cases[c].rel_error_max = err * std::ldexp(1.0, -24) * std::sqrt(static_cast<double>(kK[c]));
    a.result.cases[c].rel_error_rms = *a.result.cases[c].rel_error_max / 4;
  }
  CaseResult small;
  small.name = "17x17x17";
  small.role = "correctness";
  small.passed = true;
  small.rel_error_max = err * std::ldexp(1.0, -24) * std::sqrt(17.0);
  small.rel_error_rms = *small.rel_error_max / 3;
  a.result.cases.insert(a.result.cases.begin(), small);
  return a;
}

}  // namespace

int main(int argc, char** argv) {
  return kopt::test::fixture_main(argc, argv, [](const stdfs::path& out) {
    nlohmann::json spec = {{"format_version", 1}, {"name", "sgemm"}, {"cases", nlohmann::json::array()}};
    spec["signature"] = nlohmann::json::array({nlohmann::json{{"name", "A"}, {"type", "float"}, {"role", "input"}},
                                               nlohmann::json{{"name", "M"}, {"type", "int"}, {"value", "M"}},
                                               nlohmann::json{{"name", "N"}, {"type", "int"}, {"value", "N"}},
                                               nlohmann::json{{"name", "K"}, {"type", "int"}, {"value", "K"}}});
    spec["cases"].push_back({{"name", "17x17x17"}, {"role", "correctness"}, {"sizes", {{"M", 17}, {"N", 17}, {"K", 17}}}});
    for (const std::string& c : kCases) {
      // "4096x2048x1024" -> M, N, K
      const auto x1 = c.find('x'), x2 = c.find('x', x1 + 1);
      spec["cases"].push_back({{"name", c},
                               {"role", "performance"},
                               {"sizes",
                                {{"M", std::stoll(c.substr(0, x1))},
                                 {"N", std::stoll(c.substr(x1 + 1, x2 - x1 - 1))},
                                 {"K", std::stoll(c.substr(x2 + 1))}}}});
    }
    const nlohmann::json device = {{"name", "NVIDIA H200"}, {"arch", "sm_90"}};
    kopt::store::RunInfo info;
    info.strategy = "anneal";
    info.seed = 20261130;
    info.budget = {{"evaluations", 40}};

    int i = 0;
    std::vector<Attempt> attempts;
    attempts.push_back(make("reference", "reference.cu", {}, Verdict::ok, 1.0, i++));
    attempts.push_back(make("initial", "naive.cu", {}, Verdict::ok, 0.25, i++));
    attempts.push_back(make("baseline", "cuBLAS sgemm (FP32, no TF32)", {}, Verdict::ok, 5.2, i++));
    const int bms[] = {32, 64, 128};
    const int bns[] = {32, 64, 128};
    const int bks[] = {8, 16, 32};
    for (int bm : bms)
      for (int bn : bns)
        for (int bk : bks) {
          // The SGEMM template's parameters; BM, BN, BK, STAGES, ASYNC_A, PAD,
          // WM and WN differ between candidates, the rest are the same.
          std::map<std::string, int64_t> p = {{"ASYNC_A", bk > 8 ? 1 : 0}, {"BK", bk}, {"BM", bm}, {"BN", bn},
                                              {"KIND", 0}, {"MINB", 1}, {"PAD", bm == 128 ? 4 : 0},
                                              {"SPLITK", 1}, {"STAGES", 2 + i % 3}, {"TM", 8}, {"TN", 8},
                                              {"WM", bm / 2}, {"WN", bn / 2}};
          std::string label;  // the search's label: NAME=VALUE in name order
          for (const auto& [k, v] : p) label += (label.empty() ? "" : ",") + k + "=" + std::to_string(v);
          Verdict v = Verdict::ok;
          if (bm == 128 && bn == 128 && bk == 32) v = Verdict::compile_error;
          if (bm == 32 && bk == 32) v = Verdict::wrong_result;
          if (bm == 128 && bn == 32 && bk == 8) v = Verdict::timeout;
          // From about 1/3x (small tiles) to about 6x (large tiles).
          const double s = 0.3 * std::pow(1.55, (bm / 32) + (bn / 32) + (bk / 8) - 3) * (1 + 0.05 * (i % 3));
          attempts.push_back(make("candidate", label, p, v, s, i++));
        }
    attempts.push_back(make("candidate", "<script>alert('label')</script>", {{"BM", 16}}, Verdict::runtime_error, 1, i++));
    auto store = kopt::test::make_run(out / "results", attempts, spec, device, info);
    // The final re-timing, the cuBLAS figures and three shape-specialised
    // variants: the best, and the second and third fastest for the cases
    // where they are faster (as driver/finalists.cpp records them).
    std::vector<const Attempt*> ranked;
    for (const Attempt& a : store.history())
      if (a.kind == kopt::model::AttemptKind::candidate && a.result.verdict == Verdict::ok) ranked.push_back(&a);
    std::sort(ranked.begin(), ranked.end(),
              [](const Attempt* x, const Attempt* y) { return *x->result.geomean_ms < *y->result.geomean_ms; });
    const Attempt& v0 = *ranked[0];
    const Attempt& v1 = *ranked[1];
    const Attempt& v2 = *ranked[2];
    double cublas_geo = 0, ref_geo = 0, ini_geo = 0;
    for (const Attempt& a : store.history()) {
      if (a.kind == kopt::model::AttemptKind::baseline) cublas_geo = *a.result.geomean_ms;
      if (a.kind == kopt::model::AttemptKind::reference) ref_geo = *a.result.geomean_ms;
      if (a.kind == kopt::model::AttemptKind::initial) ini_geo = *a.result.geomean_ms;
    }
    nlohmann::json cases = nlohmann::json::object(), retime = nlohmann::json::array();
    std::vector<double> special;
    for (const Attempt* a : {&v0, &v1, &v2}) {
      nlohmann::json cm = nlohmann::json::object();
      for (const std::string& c : kCases) cm[c] = *kopt::model::case_median_ms(*a, c);
      retime.push_back({{"index", a->index}, {"label", a->label}, {"geomeans_ms", {*a->result.geomean_ms}},
                        {"median_ms", *a->result.geomean_ms}, {"cases_median_ms", cm}, {"failed_recheck", false}});
    }
    // Each case gets the fastest variant where it beats variant 0 by 3%; the
    // dispatch tree is grown on the same medians (model/dispatch.h).
    std::vector<kopt::model::DispatchSample> samples;
    nlohmann::json latency = nlohmann::json::object();
    for (const nlohmann::json& c : spec["cases"]) {
      if (c["role"] != "performance") continue;
      const std::string name = c["name"];
      kopt::model::DispatchSample sample;
      sample.name = name;
      for (const char* d : {"M", "N", "K"}) sample.sizes.push_back(c["sizes"][d].get<int64_t>());
      for (const Attempt* a : {&v0, &v1, &v2}) sample.ms.push_back(*kopt::model::case_median_ms(*a, name));
      int v = 0;
      for (int k = 1; k < 3; ++k)
        if (sample.ms[static_cast<size_t>(k)] < 0.97 * sample.ms[0] && sample.ms[static_cast<size_t>(k)] < sample.ms[static_cast<size_t>(v)]) v = k;
      cases[name] = {{"variant", v}, {"median_ms", sample.ms[static_cast<size_t>(v)]}, {"single_median_ms", sample.ms[0]},
                     {"sizes", c["sizes"]}};
      latency[name] = sample.ms;
      special.push_back(sample.ms[static_cast<size_t>(v)]);
      samples.push_back(std::move(sample));
    }
    const kopt::model::DispatchTree tree = kopt::model::derive_dispatch({"M", "N", "K"}, samples, 3, 0.03);
    const double g0 = *v0.result.geomean_ms, gs = kopt::model::geomean(special);
    nlohmann::json variants = nlohmann::json::array();
    for (const Attempt* a : {&v0, &v1, &v2})
      variants.push_back(
          kopt::test::specialization_variant(static_cast<int>(variants.size()), a->index, a->label, a->params));
    store.write_summary(
        {{"budget_used", {{"evaluations", store.history().size()}}},
         {"budget", {{"evaluations", 40}, {"minutes", 10}}},
         {"cublas_geomean_ms", cublas_geo},
         {"final_best",
          {{"index", v0.index}, {"label", v0.label}, {"params", kopt::model::params_json(v0.params)},
           {"geomean_ms", g0}, {"speedup_vs_reference", ref_geo / g0},
           {"speedup_vs_initial", ini_geo / g0}, {"ratio_to_cublas", cublas_geo / g0}}},
         {"retime", retime},
         {"specialization",
          {{"threshold", 0.03}, {"variants", variants}, {"cases", cases}, {"latency_ms", latency},
           {"dispatch", tree.to_json()}, {"single_geomean_ms", g0},
           {"geomean_ms", gs}, {"ratio_to_cublas", cublas_geo / gs}, {"single_ratio_to_cublas", cublas_geo / g0}}}});
    store.write_best("sgemm_tiled", {"// kopt:grid ceil_div(N, BN), ceil_div(M, BM), 1",
                                     "// kopt:block BN / TN * BM / TM, 1, 1"});
    kopt::report::write_reports(store, kCases);
    stdfs::copy_file(store.dir() / "report.html", out / "report.html", stdfs::copy_options::overwrite_existing);
    stdfs::copy_file(store.dir() / "heatmap.svg", out / "heatmap.svg", stdfs::copy_options::overwrite_existing);
    std::printf("%s\n", (out / "report.html").string().c_str());
  });
}

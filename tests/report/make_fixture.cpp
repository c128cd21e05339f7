// Writes a report.html from a synthetic run (no GPU), for the headless-browser
// screenshot check (tests/report/screenshot_check.sh).
//
//   kopt_report_fixture OUT_DIR
//
// Creates OUT_DIR/results/run-001 (replacing OUT_DIR/results), records a
// reference, an initial kernel and ~40 candidates with speedups from about
// 1/4x to 8x plus a few rejected ones, writes summary.json, best.cu and the
// reports, and copies report.html and heatmap.svg to OUT_DIR.
#include <cmath>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "model/result.h"
#include "report/report.h"
#include "run/store.h"

namespace stdfs = std::filesystem;
using kopt::model::CaseResult;
using kopt::model::Verdict;
using kopt::model::Attempt;

namespace {

const std::vector<std::string> kCases = {"4096x2048x1024", "2048x4096x3072", "8192x1024x4096",
                                         "1024x8192x512", "3000x1000x2000"};
const double kReferenceMs[] = {2.0, 4.0, 5.0, 1.0, 1.5};

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

Attempt make(const std::string& kind, const std::string& label, std::map<std::string, int64_t> params,
             Verdict v, double speedup, int i) {
  Attempt a;
  a.kind = kind;
  a.label = label;
  a.params = std::move(params);
  a.source = std::string("// ") + label + "\n" + kSource;
  a.compile_options = {"-O3"};
  a.result.verdict = v;
  a.result.compile_ms = 180 + 37 * (i % 7);
  a.result.compile_cache_hit = i % 5 == 0;
  a.seconds_since_start = 2.5 * i;
  if (v != Verdict::ok) {
    a.result.detail = v == Verdict::compile_error ? "ptxas error: too much shared data (0x12000 bytes)"
                                                  : "C[17] = 3.5 differs from the reference 4.25 by 0.75";
    a.result.failed_case = v == Verdict::compile_error ? "" : "17x17x17";
    return a;
  }
  std::vector<double> ms;
  for (size_t c = 0; c < kCases.size(); ++c) {
    // Vary the per-case speedup around the attempt's overall one.
    const double s = speedup * std::pow(2.0, 0.6 * std::sin(1.7 * i + 2.1 * static_cast<double>(c)));
    CaseResult r;
    r.name = kCases[c];
    r.role = "performance";
    r.passed = true;
    kopt::model::LatencyStats st;
    st.median_ms = kReferenceMs[c] / s;
    st.mean_ms = st.median_ms * 1.01;
    st.min_ms = st.median_ms * 0.99;
    st.max_ms = st.median_ms * 1.05;
    st.stddev_ms = st.median_ms * 0.01;
    st.samples = 100;
    r.latency = st;
    ms.push_back(st.median_ms);
    a.result.cases.push_back(r);
  }
  a.result.geomean_ms = kopt::model::geomean(ms);
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
    const nlohmann::json spec = {{"format_version", 1}, {"name", "sgemm"}};
    const nlohmann::json device = {{"name", "NVIDIA H200"}, {"arch", "sm_90"}};
    kopt::run::RunInfo info;
    info.strategy = "anneal";
    info.seed = 20261130;
    info.budget = {{"evaluations", 40}};
    auto store = kopt::run::RunStore::create(out / "results", spec, device, info);

    int i = 0;
    store.record(make("reference", "reference.cu", {}, Verdict::ok, 1.0, i++));
    store.record(make("initial", "naive.cu", {}, Verdict::ok, 0.25, i++));
    const int bms[] = {32, 64, 128};
    const int bns[] = {32, 64, 128};
    const int bks[] = {8, 16, 32};
    for (int bm : bms)
      for (int bn : bns)
        for (int bk : bks) {
          const std::string label = "BM=" + std::to_string(bm) + ",BN=" + std::to_string(bn) +
                                    ",BK=" + std::to_string(bk) + ",TM=8,TN=8";
          std::map<std::string, int64_t> p = {{"BM", bm}, {"BN", bn}, {"BK", bk}, {"TM", 8}, {"TN", 8}};
          Verdict v = Verdict::ok;
          if (bm == 128 && bn == 128 && bk == 32) v = Verdict::compile_error;
          if (bm == 32 && bk == 32) v = Verdict::wrong_result;
          if (bm == 128 && bn == 32 && bk == 8) v = Verdict::timeout;
          // From about 1/3x (small tiles) to about 6x (large tiles).
          const double s = 0.3 * std::pow(1.55, (bm / 32) + (bn / 32) + (bk / 8) - 3) * (1 + 0.05 * (i % 3));
          store.record(make("candidate", label, p, v, s, i++));
        }
    store.record(make("candidate", "<script>alert('label')</script>", {{"BM", 16}}, Verdict::runtime_error, 1, i++));
    store.write_summary({{"budget_used", {{"evaluations", store.history().size()}}}});
    store.write_best("sgemm_tiled", {"// kopt:grid ceil_div(N, BN), ceil_div(M, BM), 1",
                                     "// kopt:block BN / TN * BM / TM, 1, 1"});
    kopt::report::write_reports(store, kCases);
    stdfs::copy_file(store.dir() / "report.html", out / "report.html", stdfs::copy_options::overwrite_existing);
    stdfs::copy_file(store.dir() / "heatmap.svg", out / "heatmap.svg", stdfs::copy_options::overwrite_existing);
    std::printf("%s\n", (out / "report.html").string().c_str());
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "kopt_report_fixture: %s\n", e.what());
    return 1;
  }
}

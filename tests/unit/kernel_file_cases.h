// Inputs of the kernel-file golden tests (test_kernel_file.cpp): the run
// folders, attempts and variants whose best.cu, variants/v<N>.cu and
// generated files were written by the code before spec/kernel_file existed
// and kept under tests/data/kernel_file/. Changing anything here means
// regenerating those files with code known to be right.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "gen/generate.h"
#include "model/attempt.h"
#include "store/store.h"

namespace kopt::test::kernel_file_cases {

/// In the golden files the run folder (its path, or its name where the file
/// names it so) reads @RUN_DIR@ and the tool's version @KOPT_VERSION@ (both
/// differ between machines and releases).
inline constexpr const char* kRunDirToken = "@RUN_DIR@";
inline constexpr const char* kVersionToken = "@KOPT_VERSION@";

inline std::string replace_all(std::string s, const std::string& from, const std::string& to) {
  if (from.empty()) return s;
  for (size_t p = s.find(from); p != std::string::npos; p = s.find(from, p + to.size())) s.replace(p, from.size(), to);
  return s;
}

/// `text` with the run folder's path and the version replaced by the tokens.
inline std::string tokenised(const std::string& text, const std::filesystem::path& run_dir) {
  const std::string named = replace_all(replace_all(text, run_dir.string(), kRunDirToken),
                                        "of " + run_dir.filename().string(), std::string("of ") + kRunDirToken);
  return replace_all(named, KOPT_VERSION, kVersionToken);
}

inline model::LatencyStats stats(double median) {
  model::LatencyStats s;
  s.median_ms = median;
  s.mean_ms = median;
  s.min_ms = median;
  s.max_ms = median;
  s.stddev_ms = 0;
  s.samples = 10;
  return s;
}

/// An attempt; with `medians` it passed with those performance-case latencies.
inline model::Attempt attempt(const std::string& kind, const std::string& label, std::map<std::string, int64_t> params,
                              const std::string& source, std::vector<std::string> options,
                              std::vector<double> medians, model::Verdict verdict = model::Verdict::ok) {
  model::Attempt a;
  a.kind = kopt::model::parse_attempt_kind(kind).value();
  a.label = label;
  a.params = std::move(params);
  a.source = source;
  a.compile_options = std::move(options);
  a.result.verdict = verdict;
  std::vector<double> ok;
  for (size_t i = 0; i < medians.size(); ++i) {
    model::CaseResult c;
    c.name = "perf" + std::to_string(i);
    c.role = "performance";
    c.passed = true;
    c.latency = stats(medians[i]);
    a.result.cases.push_back(c);
    ok.push_back(medians[i]);
  }
  if (!ok.empty()) a.result.geomean_ms = model::geomean(ok);
  return a;
}

inline store::RunInfo info() {
  store::RunInfo i;
  i.strategy = "random";
  i.seed = 7;
  i.budget = nlohmann::json{{"evaluations", 10}};
  i.created = "2025-01-01T00:00:00Z";
  i.tool_version = "test";
  return i;
}

/// The candidate that wins run A: parameters, a -D of a tuned parameter (with
/// and without a value) and of another name among its options, a label with a
/// newline, and a source whose own annotations the header supersedes (some at
/// the end of a code line, one of them a parameter not tuned again), ending
/// without a newline.
inline const char* kWinnerSource =
    "// tiled sgemm\n"
    "// kopt:entry sgemm_tiled\n"
    "// kopt:grid ceil_div(N, 16), ceil_div(M, 16), 1\n"
    "  // kopt:block 16, 16, 1\n"
    "int x; // kopt:shared 64\n"
    "// kopt:options -O2\n"
    "// kopt:param BM=64\n"
    "// kopt:param BK=8\n"
    "//kopt:grid 7\n"
    "extern \"C\" __global__ void sgemm_tiled() { int x = BM * BN * BK; }";

inline const char* kVariantSource =
    "// kopt:entry k\n"
    "// kopt:options -O1\n"
    "// kopt:block 64\n"
    "extern \"C\" __global__ void k() {}\n";

/// Run A: a reference, an initial kernel and two passing candidates (the
/// first one is the faster) in a named workload on a named GPU.
inline store::RunStore run_a(const std::filesystem::path& results) {
  store::RunStore s = store::RunStore::create(
      results, nlohmann::json{{"format_version", 1}, {"name", "sgemm\tbig"}},
      nlohmann::json{{"name", "NVIDIA H200"}, {"arch", "sm_90"}}, info());
  s.record(attempt("reference", "reference", {}, "// reference\n", {}, {8, 4}));
  s.record(attempt("initial", "naive.cu", {}, "// naive\n", {}, {2, 2}));
  s.record(attempt("candidate", "BM=128,BN=64\nsecond line", {{"BM", 128}, {"BN", 64}}, kWinnerSource,
                   {"-O3", "-DBM=128", "-DBN", "-DFOO=1", "-maxrregcount=128"}, {1, 0.5}));
  s.record(attempt("candidate", "", {}, kVariantSource, {"-O3"}, {1.5, 1.0}));
  return s;
}

/// best.cu of run A (golden best_full.cu): the launch lines as a proposer
/// may hand them over (leading blanks, a line without "//", empty lines).
inline void write_best_a(const store::RunStore& s) {
  s.write_best("sgemm_tiled", {"// kopt:grid ceil_div(N, BN), ceil_div(M, BM), 1", "   // kopt:block 256, 1, 1",
                               "kopt:shared 0", "", "   "});
}

/// variants/v1.cu of run A (golden variant_v1.cu): the launch lines carry a
/// kopt:options line, so the attempt's options are not written.
inline void write_variant_a(const store::RunStore& s) {
  s.write_best(s.history()[3], "k",
               {"// kopt:grid 1, 1, 1", "// kopt:block 32, 1, 1", "// kopt:shared 0", "// kopt:options -lineinfo"},
               "variants/v1.cu");
}

/// Run B: an unnamed workload, a GPU known by its architecture only, and an
/// attempt that compiled but was not timed, with an empty source, written
/// without an entry (golden best_untimed.cu).
inline store::RunStore run_b(const std::filesystem::path& results) {
  store::RunStore s = store::RunStore::create(results, nlohmann::json{{"format_version", 1}},
                                              nlohmann::json{{"arch", "sm_80"}}, info());
  s.record(attempt("initial", "", {{"TILE", 4}}, "", {}, {}, model::Verdict::compiled));
  return s;
}

inline void write_best_b(const store::RunStore& s) { s.write_best(s.history()[0], "", {}); }

/// Three variants of a kernel for gen::combine_variants (golden combined.cu):
/// #include lines (one indented, one shared), differing parameters and
/// launches, an empty label, a source without a final newline.
inline std::vector<gen::KernelVariant> variants() {
  return {
      {"#include <cuda_fp16.h>\n// kopt:entry tr\n// kopt:grid ceil_div(N, BM), 1, 1\n// kopt:block 256\n"
       "// kopt:options -O3 -lineinfo\n// kopt:param BM=64\n#ifndef BM\n#define BM 64\n#endif\n"
       "extern \"C\" __global__ void tr(const float* A, const float* B, float* C, int N) {}\n",
       "v0.cu", "BM=64", {{{"N", 4194304}}}},
      {"  #include <cuda_fp16.h>\n#include <cstdint>\n// kopt:entry tr\n// kopt:grid ceil_div(N, BM)\n"
       "// kopt:block 128, 2\n// kopt:shared BM * 4\n// kopt:options -O3 -lineinfo\n// kopt:param BM=128\n"
       "// kopt:param BK=4\nint y; // kopt:param ZZ=1\n"
       "extern \"C\" __global__ void tr(const float* A, const float* B, float* C, int N) {}\n",
       "v1.cu", "", {{{"N", 1000}}, {{"N", 17}}}},
      {"// kopt:entry tr\n// kopt:grid 1\n// kopt:block 32, 1, 1\n// kopt:shared 0\n// kopt:options -O3 -lineinfo\n"
       "// kopt:param BM=32\nextern \"C\" __global__ void tr(const float* A, const float* B, float* C, int N) {}",
       "v2.cu", "BM=32", {}},
  };
}

/// A model's source for the agent's candidate trailer (golden
/// agent_candidate.cu): whole-line annotations with odd spacing, one at the
/// end of a code line (kept), a parameter line (kept), no final newline.
inline const char* kAgentSource =
    "// kopt:entry old\n"
    "  //kopt:grid 1, 1, 1\n"
    "//   kopt:block 32\n"
    "int z; // kopt:shared 8\n"
    "// kopt:options -O1\n"
    "// kopt:param BM=4\n"
    "// kopt:bogus x\n"
    "extern \"C\" __global__ void k2() {}";

/// A source lacking some annotations for gen's initial-kernel fallback
/// (golden with_annotations.cu).
inline const char* kPartlyAnnotated = "// kopt:block 128\nextern \"C\" __global__ void vadd() {}\n";

}  // namespace kopt::test::kernel_file_cases

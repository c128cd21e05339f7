// `kopt bench`: the CTest benchmark of a generated kernel, in Google
// Benchmark's format (so its JSON output works with Benchmark's compare.py).
#pragma once

#include <string>
#include <vector>

namespace kopt::cli {

struct BenchOptions {
  std::string spec, kernel, cache_file, cache_dir, target_gpu;
  double tolerance_percent = 10;
  double recorded_ms = 0;  // explicit recorded best geomean (overrides the cache)
  int device = 0;
  std::vector<std::string> worker_argv;
  std::vector<std::string> benchmark_args;  // --benchmark_* flags, passed to Google Benchmark
};

/// Times the kernel and the reference on every performance case (CUDA events
/// in the worker, 10 warm-up + 100 measured launches by default), reports each
/// measured launch to Google Benchmark as manual time, and fails (exit 1) when
/// the kernel's geometric-mean latency exceeds the recorded best for this GPU
/// by more than the tolerance. Exit 77 without a GPU; 1 when the kernel fails
/// its checks.
int run_bench(const BenchOptions& options);

}  // namespace kopt::cli

// What the bench programs (tf32_peak.cu, tf32_wgmma_check.cu, sgemm_bench.cu) share: checking CUDA
// and cuBLAS calls, each program with its own report and exit code, and timing launches between
// two CUDA events. Header-only.
//
// A program defines its report functions and its CUDA_CHECK (and CUBLAS_CHECK) with BENCH_CHECK,
// then includes this header (bench::event_times uses CUDA_CHECK):
//
//   [[noreturn]] void cuda_failed(const char* call, const char* file, int line, cudaError_t e);
//   #define CUDA_CHECK(call) BENCH_CHECK(cudaError_t, cudaSuccess, call, cuda_failed)
//   #include "bench_util.cuh"
#pragma once

#include <cuda_runtime.h>

#include <vector>

/// Evaluates `call`, which returns a status of type `type` (`ok` on success); on another status
/// calls `fail(#call, __FILE__, __LINE__, status)`, the program's report, which does not return.
#define BENCH_CHECK(type, ok, call, fail)                                                                \
  do {                                                                                                  \
    const type bench_status_ = (call);                                                                  \
    if (bench_status_ != (ok)) fail(#call, __FILE__, __LINE__, bench_status_);                          \
  } while (0)

namespace bench {

/// The times (ms, in launch order) of `reps` launches of `launch()` on the default stream, each
/// between the events `a` and `b`, after one warm-up launch and a device synchronize. `before()`
/// runs before each timed launch, outside the events (e.g. a memset that flushes L2).
template <class Launch, class Before>
std::vector<float> event_times(cudaEvent_t a, cudaEvent_t b, int reps, Launch launch, Before before) {
  launch();  // warm-up
  CUDA_CHECK(cudaDeviceSynchronize());
  std::vector<float> ms;
  for (int r = 0; r < reps; ++r) {
    before();
    CUDA_CHECK(cudaEventRecord(a));
    launch();
    CUDA_CHECK(cudaEventRecord(b));
    CUDA_CHECK(cudaEventSynchronize(b));
    float t = 0;
    CUDA_CHECK(cudaEventElapsedTime(&t, a, b));
    ms.push_back(t);
  }
  return ms;
}

}  // namespace bench

// Hostile: the launch annotation names an entry point, sgemm_naive_v2, that the
// file does not define (the function was renamed sgemm_naive2 and the annotation
// not updated). The source compiles, but the module has no such function
// (cuModuleGetFunction: CUDA_ERROR_NOT_FOUND, or NVRTC's lowered-name lookup
// fails): compile_error.
// kopt-test:expect compile_error
//
// kopt:entry sgemm_naive_v2
// kopt:grid ceil_div(N, 16), ceil_div(M, 16), 1
// kopt:block 16, 16, 1
// kopt:shared 0

#include "naive_sgemm.cuh"

extern "C" __global__ void sgemm_naive2(const float* __restrict__ A, const float* __restrict__ B,
                                        float* __restrict__ C, int M, int N, int K) {
  naive_sgemm(A, B, C, M, N, K, [](float acc, float a, float b) { return acc + a * b; });
}

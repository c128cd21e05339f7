// Hostile: FP16 inputs with FP32 arithmetic (the inputs of a half-precision tensor-core GEMM):
// each element of A and B rounded to __half (11 significant bits, and a range that ends at 65504),
// then multiplied and accumulated in FP32. Only the inputs lose precision, but that alone puts
// every product off by up to 2^-11 relative: far over the K-aware FP32 bound, so the default SGEMM
// tolerance must reject it: wrong_result. (half_precision.cu also multiplies in FP16.)
// kopt-test:expect wrong_result
//
// kopt:entry sgemm_fp16_inputs
// kopt:grid ceil_div(N, 16), ceil_div(M, 16), 1
// kopt:block 16, 16, 1
// kopt:shared 0

#include <cuda_fp16.h>

#include "naive_sgemm.cuh"

extern "C" __global__ void sgemm_fp16_inputs(const float* __restrict__ A, const float* __restrict__ B,
                                             float* __restrict__ C, int M, int N, int K) {
  naive_sgemm(A, B, C, M, N, K, [](float acc, float a, float b) {
    return fmaf(__half2float(__float2half_rn(a)), __half2float(__float2half_rn(b)), acc);  // BUG: FP16 inputs
  });
}

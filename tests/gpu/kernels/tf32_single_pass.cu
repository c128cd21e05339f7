// Hostile: what a TF32 tensor-core GEMM (or cuBLAS in CUBLAS_COMPUTE_32F_FAST_TF32 mode) does to
// FP32 inputs: each element of A and B rounded to TF32 (cvt.rna.tf32.f32: 11 significant bits),
// the products (exact in FP32) accumulated in FP32. Faster on the tensor cores, but every product
// is off by up to 2^-10 relative, hundreds of times over the K-aware FP32 bound: the default SGEMM
// tolerance must reject it: wrong_result.
// kopt-test:expect wrong_result
//
// kopt:entry sgemm_tf32_single_pass
// kopt:grid ceil_div(N, 16), ceil_div(M, 16), 1
// kopt:block 16, 16, 1
// kopt:shared 0

#include "naive_sgemm.cuh"

__device__ __forceinline__ float to_tf32(float x) {
  unsigned r;
  asm("cvt.rna.tf32.f32 %0, %1;\n" : "=r"(r) : "f"(x));
  return __uint_as_float(r);
}

extern "C" __global__ void sgemm_tf32_single_pass(const float* __restrict__ A, const float* __restrict__ B,
                                                  float* __restrict__ C, int M, int N, int K) {
  naive_sgemm(A, B, C, M, N, K, [](float acc, float a, float b) {
    return fmaf(to_tf32(a), to_tf32(b), acc);  // BUG: one TF32 pass
  });
}

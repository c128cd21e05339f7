// Hostile: trades precision for speed behind the workload's back: rounds each
// element of A and B to __half (11 significant bits) and multiplies in half
// precision, accumulating the products in float. Every element is off by about
// 2^-11 relative per product, hundreds of times over the K-aware FP32 bound
// (factor * sqrt(K) * 2^-24 * sqrt(sum_k (a_ik*b_kj)^2)) already at K = 1, while a
// loose fixed atol/rtol (1e-2, say) would accept it: wrong_result.
// kopt-test:expect wrong_result
//
// kopt:entry sgemm_half_precision
// kopt:grid ceil_div(N, 16), ceil_div(M, 16), 1
// kopt:block 16, 16, 1
// kopt:shared 0

#include <cuda_fp16.h>

#include "naive_sgemm.cuh"

extern "C" __global__ void sgemm_half_precision(const float* __restrict__ A,
                                                const float* __restrict__ B,
                                                float* __restrict__ C, int M, int N, int K) {
  naive_sgemm(A, B, C, M, N, K, [](float acc, float a, float b) {
    const __half ha = __float2half_rn(a), hb = __float2half_rn(b);  // BUG: FP16 inputs
    return acc + __half2float(__hmul(ha, hb));                       // and FP16 products
  });
}

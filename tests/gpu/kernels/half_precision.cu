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

extern "C" __global__ void sgemm_half_precision(const float* __restrict__ A,
                                                const float* __restrict__ B,
                                                float* __restrict__ C, int M, int N, int K) {
  const int row = blockIdx.y * blockDim.y + threadIdx.y;
  const int col = blockIdx.x * blockDim.x + threadIdx.x;
  if (row >= M || col >= N) return;

  float acc = 0.0f;
  for (int k = 0; k < K; ++k) {
    const __half a = __float2half_rn(A[(size_t)row * K + k]);  // BUG: FP16 inputs
    const __half b = __float2half_rn(B[(size_t)k * N + col]);
    acc += __half2float(__hmul(a, b));                          // and FP16 products
  }
  C[(size_t)row * N + col] = acc;
}

// Hostile: the accumulator is initialised with a NaN "not computed yet" sentinel
// (meant for a debug check) and the k loop then accumulates into it instead of
// starting from zero, so every element of C is NaN while the reference is
// finite: wrong_result. Catches a comparison written as `err > tol`, which is
// false for NaN, and a max-error reduction through fmax, which drops NaNs.
// kopt-test:expect wrong_result
//
// kopt:entry sgemm_returns_nan
// kopt:grid ceil_div(N, 16), ceil_div(M, 16), 1
// kopt:block 16, 16, 1
// kopt:shared 0

extern "C" __global__ void sgemm_returns_nan(const float* __restrict__ A,
                                             const float* __restrict__ B, float* __restrict__ C,
                                             int M, int N, int K) {
  const int row = blockIdx.y * blockDim.y + threadIdx.y;
  const int col = blockIdx.x * blockDim.x + threadIdx.x;
  if (row >= M || col >= N) return;

  float acc = __int_as_float(0x7fc00000);  // BUG: NaN sentinel left as the initial value
  for (int k = 0; k < K; ++k) acc += A[(size_t)row * K + k] * B[(size_t)k * N + col];
  C[(size_t)row * N + col] = acc;
}

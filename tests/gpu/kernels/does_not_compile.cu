// Hostile: does not compile: a missing semicolon after the accumulator's
// declaration (a typo). NVRTC reports the error: compile_error, with the
// compiler log in the result.
// kopt-test:expect compile_error
//
// kopt:entry sgemm_does_not_compile
// kopt:grid ceil_div(N, 16), ceil_div(M, 16), 1
// kopt:block 16, 16, 1
// kopt:shared 0

extern "C" __global__ void sgemm_does_not_compile(const float* __restrict__ A,
                                                  const float* __restrict__ B,
                                                  float* __restrict__ C, int M, int N, int K) {
  const int row = blockIdx.y * blockDim.y + threadIdx.y;
  const int col = blockIdx.x * blockDim.x + threadIdx.x;
  if (row >= M || col >= N) return;

  float acc = 0.0f  // BUG: missing ';'
  for (int k = 0; k < K; ++k) acc += A[(size_t)row * K + k] * B[(size_t)k * N + col];
  C[(size_t)row * N + col] = acc;
}

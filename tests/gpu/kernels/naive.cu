// Correct: the template's naive SGEMM (templates/sgemm/naive.cu, copied verbatim
// below the header): one thread per output element, 16x16 threads per block,
// bounds-checked. Row-major C[M,N] = A[M,K] * B[K,N], float32.
// kopt-test:expect ok
//
// kopt:entry sgemm_naive
// kopt:grid ceil_div(N, 16), ceil_div(M, 16), 1
// kopt:block 16, 16, 1
// kopt:shared 0

extern "C" __global__ void sgemm_naive(const float* __restrict__ A, const float* __restrict__ B,
                                       float* __restrict__ C, int M, int N, int K) {
  const int row = blockIdx.y * blockDim.y + threadIdx.y;
  const int col = blockIdx.x * blockDim.x + threadIdx.x;
  if (row >= M || col >= N) return;

  const float* a = A + (size_t)row * K;
  const float* b = B + col;
  float acc = 0.0f;
  for (int k = 0; k < K; ++k) acc += a[k] * b[(size_t)k * N];
  C[(size_t)row * N + col] = acc;
}

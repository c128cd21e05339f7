// Reference SGEMM (the oracle of the sgemm workload): row-major
// C[M,N] = A[M,K] * B[K,N]. Each product of two floats is exact in double
// (24 + 24 significant bits < 53); the sum is accumulated in double and rounded
// to float once. One thread per output element, kept simple on purpose.
//
// kopt:entry sgemm_reference
// kopt:grid ceil_div(N, 16), ceil_div(M, 16), 1
// kopt:block 16, 16, 1
// kopt:shared 0

extern "C" __global__ void sgemm_reference(const float* __restrict__ A, const float* __restrict__ B,
                                           float* __restrict__ C, int M, int N, int K) {
  const int row = blockIdx.y * blockDim.y + threadIdx.y;
  const int col = blockIdx.x * blockDim.x + threadIdx.x;
  if (row >= M || col >= N) return;

  double acc = 0.0;
  for (int k = 0; k < K; ++k)
    acc += (double)A[(size_t)row * K + k] * (double)B[(size_t)k * N + col];
  C[(size_t)row * N + col] = (float)acc;
}

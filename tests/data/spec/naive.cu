// Test fixture for the spec loader (tests/unit/test_spec.cpp): a naive SGEMM,
// row-major C[M,N] = alpha * A[M,K] * B[K,N].
extern "C" __global__ void sgemm_naive(const float* A, const float* B, float* C, int M, int N,
                                       int K, float alpha) {
  const int col = blockIdx.x * blockDim.x + threadIdx.x;
  const int row = blockIdx.y * blockDim.y + threadIdx.y;
  if (row >= M || col >= N) return;
  float acc = 0.0f;
  for (int k = 0; k < K; ++k) acc += A[row * K + k] * B[k * N + col];
  C[row * N + col] = alpha * acc;
}

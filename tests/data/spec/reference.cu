// Test fixture for the spec loader (tests/unit/test_spec.cpp): the reference
// SGEMM (same contract as naive.cu, accumulates in double).
extern "C" __global__ void sgemm_reference(const float* A, const float* B, float* C, int M, int N,
                                           int K, float alpha) {
  const int col = blockIdx.x * blockDim.x + threadIdx.x;
  const int row = blockIdx.y * blockDim.y + threadIdx.y;
  if (row >= M || col >= N) return;
  double acc = 0.0;
  for (int k = 0; k < K; ++k) acc += static_cast<double>(A[row * K + k]) * B[k * N + col];
  C[row * N + col] = static_cast<float>(alpha * acc);
}

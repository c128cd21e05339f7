// The frame the naive hostile SGEMM kernels share (fp16_inputs.cu, half_precision.cu,
// tf32_single_pass.cu, missing_entry.cu): one thread per element of row-major C[M,N] = A[M,K] *
// B[K,N], in the launch their kopt: lines give (grid ceil_div(N, 16) x ceil_div(M, 16), block
// 16 x 16); acc = step(acc, A[row][k], B[k][col]) for k = 0, 1, ..., K - 1 from acc = 0, then
// C[row][col] = acc. What a kernel gets wrong is its `step`. Not a kernel itself (the hostile
// suite runs the .cu files): kopt expands it into each kernel that includes it (local includes,
// docs/spec-format.md).
template <class Step>
__device__ __forceinline__ void naive_sgemm(const float* __restrict__ A, const float* __restrict__ B,
                                            float* __restrict__ C, int M, int N, int K, Step step) {
  const int row = blockIdx.y * blockDim.y + threadIdx.y;
  const int col = blockIdx.x * blockDim.x + threadIdx.x;
  if (row >= M || col >= N) return;
  float acc = 0.0f;
  for (int k = 0; k < K; ++k) acc = step(acc, A[(size_t)row * K + k], B[(size_t)k * N + col]);
  C[(size_t)row * N + col] = acc;
}

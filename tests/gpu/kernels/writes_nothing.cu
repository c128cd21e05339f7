// Hostile: computes every dot product into a register and never stores it
// (the write-back was lost in a refactor). C keeps the NaN pattern the harness
// poisons outputs with before every launch, so the output is "unwritten":
// wrong_result. A harness that does not poison outputs, or compares with
// `err > tol` (false for NaN), would accept it if C happened to hold the
// reference's values from an earlier launch.
// kopt-test:expect wrong_result
//
// kopt:entry sgemm_writes_nothing
// kopt:grid ceil_div(N, 16), ceil_div(M, 16), 1
// kopt:block 16, 16, 1
// kopt:shared 0

extern "C" __global__ void sgemm_writes_nothing(const float* __restrict__ A,
                                                const float* __restrict__ B, float* __restrict__ C,
                                                int M, int N, int K) {
  const int row = blockIdx.y * blockDim.y + threadIdx.y;
  const int col = blockIdx.x * blockDim.x + threadIdx.x;
  if (row >= M || col >= N) return;

  float acc = 0.0f;
  for (int k = 0; k < K; ++k) acc += A[(size_t)row * K + k] * B[(size_t)k * N + col];
  (void)acc;  // BUG: missing `C[(size_t)row * N + col] = acc;`
  (void)C;
}

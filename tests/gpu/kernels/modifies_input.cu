// Hostile: computes C correctly but writes into its input A. Each block owns a
// 16-row panel of A and C (grid 1 x ceil_div(M, 16)) and sweeps all columns of
// C, so no other block ever reads its rows of A. When the panel is done it
// "releases" it by zero-filling those rows of A through a const_cast, a
// leftover from a version where A was a scratch workspace. C is right on the
// launch that does this; the harness compares the inputs after each launch:
// wrong_result ("inputs modified"). A harness that does not would also see
// the next launch on "the same inputs" compute with a zeroed A.
// kopt-test:expect wrong_result
//
// kopt:entry sgemm_modifies_input
// kopt:grid 1, ceil_div(M, 16), 1
// kopt:block 16, 16, 1
// kopt:shared 0

extern "C" __global__ void sgemm_modifies_input(const float* A, const float* B, float* C, int M,
                                                int N, int K) {
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int row = blockIdx.y * 16 + ty;

  for (int c0 = 0; c0 < N; c0 += 16) {
    const int col = c0 + tx;
    if (row < M && col < N) {
      float acc = 0.0f;
      for (int k = 0; k < K; ++k) acc += A[(size_t)row * K + k] * B[(size_t)k * N + col];
      C[(size_t)row * N + col] = acc;
    }
  }
  __syncthreads();  // the whole panel of A has been consumed

  // BUG: the input is not ours to clear.
  float* panel = const_cast<float*>(A);
  if (row < M)
    for (int k = tx; k < K; k += 16) panel[(size_t)row * K + k] = 0.0f;
}

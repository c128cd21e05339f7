// Hostile: 2x1 register blocking. Each thread computes two outputs, rows r and
// r + 16 of a 32-row block tile, but stores only the first: rows 16..31 of
// every 32-row band of C are never written and keep the NaN poison, so part of
// the output is unwritten: wrong_result. (1x1x1 passes: its only row is
// stored; 1000x1x17 fails.) All loads are in bounds.
// kopt-test:expect wrong_result
//
// kopt:entry sgemm_writes_half_output
// kopt:grid ceil_div(N, 16), ceil_div(M, 32), 1
// kopt:block 16, 16, 1
// kopt:shared 0

extern "C" __global__ void sgemm_writes_half_output(const float* __restrict__ A,
                                                    const float* __restrict__ B,
                                                    float* __restrict__ C, int M, int N, int K) {
  const int col = blockIdx.x * 16 + threadIdx.x;
  const int r0 = blockIdx.y * 32 + threadIdx.y;  // first row
  const int r1 = r0 + 16;                        // second row
  if (col >= N) return;

  float acc0 = 0.0f, acc1 = 0.0f;
  for (int k = 0; k < K; ++k) {
    const float b = B[(size_t)k * N + col];
    if (r0 < M) acc0 += A[(size_t)r0 * K + k] * b;
    if (r1 < M) acc1 += A[(size_t)r1 * K + k] * b;
  }
  if (r0 < M) C[(size_t)r0 * N + col] = acc0;
  // BUG: the store of the second row was forgotten:
  //   if (r1 < M) C[(size_t)r1 * N + col] = acc1;
  (void)acc1;
}

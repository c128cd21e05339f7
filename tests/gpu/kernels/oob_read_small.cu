// Hostile: the K loop is unrolled by two; for an odd K the tail pair guards
// only the load of B (b1 = 0 makes the product vanish, or so the author
// thought) and still loads A[row*K + K]. For every row but the last that is the
// next row's first element, finite, and a1 * 0 == 0; for the last row it is
// A[M*K], one element past A's end. Nothing else is wrong. Reading past a plain
// cuMemAlloc buffer returns harmless bytes; here it returns the canary bytes
// 0xFF (a NaN as float), NaN * 0 == NaN, and the last row of C is NaN:
// wrong_result; or the load hits the unmapped guard page
// (CUDA_ERROR_ILLEGAL_ADDRESS): out_of_bounds. Already on 1x1x1.
// kopt-test:expect wrong_result out_of_bounds
//
// kopt:entry sgemm_oob_read_small
// kopt:grid ceil_div(N, 16), ceil_div(M, 16), 1
// kopt:block 16, 16, 1
// kopt:shared 0

extern "C" __global__ void sgemm_oob_read_small(const float* __restrict__ A,
                                                const float* __restrict__ B,
                                                float* __restrict__ C, int M, int N, int K) {
  const int row = blockIdx.y * blockDim.y + threadIdx.y;
  const int col = blockIdx.x * blockDim.x + threadIdx.x;
  if (row >= M || col >= N) return;

  const float* a = A + (size_t)row * K;
  float acc = 0.0f;
  for (int k = 0; k < K; k += 2) {
    const float a0 = a[k];
    const float a1 = a[k + 1];  // BUG: unguarded; reads A[M*K] on the last row when K is odd
    const float b0 = B[(size_t)k * N + col];
    const float b1 = (k + 1 < K) ? B[(size_t)(k + 1) * N + col] : 0.0f;
    acc += a0 * b0;
    acc += a1 * b1;
  }
  C[(size_t)row * N + col] = acc;
}

// Hostile: one thread per output over the flattened index of C (256 threads a
// block). The dot product is guarded correctly, but the store's guard is off
// by one (`<=`), so the thread whose index is exactly M*N stores its 0.0f one
// element past the end of C, and nothing else is wrong (every load is in bounds,
// every element of C is right). A plain cuMemAlloc absorbs this silently; the
// harness sees the canary bytes right after C change, or the store lands on the
// unmapped guard page (CUDA_ERROR_ILLEGAL_ADDRESS): out_of_bounds. Already on
// 1x1x1 (thread 1 writes C[1]).
// kopt-test:expect out_of_bounds
//
// kopt:entry sgemm_oob_write_small
// kopt:grid ceil_div(M * N, 256), 1, 1
// kopt:block 256, 1, 1
// kopt:shared 0

extern "C" __global__ void sgemm_oob_write_small(const float* __restrict__ A,
                                                 const float* __restrict__ B,
                                                 float* __restrict__ C, int M, int N, int K) {
  const long long idx = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  const long long total = (long long)M * N;
  const int row = (int)(idx / N), col = (int)(idx % N);

  float acc = 0.0f;
  if (idx < total) {
    for (int k = 0; k < K; ++k) acc += A[(size_t)row * K + k] * B[(size_t)k * N + col];
  }
  if (idx <= total) C[idx] = acc;  // BUG: should be `idx < total`
}

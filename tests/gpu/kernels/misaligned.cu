// Hostile: vectorises the loads of A with float4 (16-byte) loads, assuming every
// row of A starts on a 16-byte boundary. That holds only when K is a multiple of
// 4: with K = 17 row 1 starts 68 bytes into A, and the float4 load there is a
// misaligned 16-byte access. The vector loop stops at the last whole group of 4
// and a scalar tail finishes the row, so every access stays inside A (1x1x1
// runs only the tail and passes). The launch fails with
// CUDA_ERROR_MISALIGNED_ADDRESS (sticky; the worker is replaced): runtime_error.
// kopt-test:expect runtime_error
//
// kopt:entry sgemm_misaligned
// kopt:grid ceil_div(N, 16), ceil_div(M, 16), 1
// kopt:block 16, 16, 1
// kopt:shared 0

extern "C" __global__ void sgemm_misaligned(const float* __restrict__ A,
                                            const float* __restrict__ B, float* __restrict__ C,
                                            int M, int N, int K) {
  const int row = blockIdx.y * blockDim.y + threadIdx.y;
  const int col = blockIdx.x * blockDim.x + threadIdx.x;
  if (row >= M || col >= N) return;

  const float* a = A + (size_t)row * K;
  float acc = 0.0f;
  int k = 0;
  for (; k + 4 <= K; k += 4) {
    const float4 av = *reinterpret_cast<const float4*>(a + k);  // BUG: a + k is 16-byte aligned only if K % 4 == 0
    acc += av.x * B[(size_t)(k + 0) * N + col];
    acc += av.y * B[(size_t)(k + 1) * N + col];
    acc += av.z * B[(size_t)(k + 2) * N + col];
    acc += av.w * B[(size_t)(k + 3) * N + col];
  }
  for (; k < K; ++k) acc += a[k] * B[(size_t)k * N + col];
  C[(size_t)row * N + col] = acc;
}

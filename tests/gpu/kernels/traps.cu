// Hostile: a device-side precondition check that the spec does not promise:
// the kernel was written for K a multiple of 4 and traps otherwise. The spec's
// first case (K = 1) executes `__trap()`; the launch fails with a sticky error
// (CUDA_ERROR_LAUNCH_FAILED, "unspecified launch failure"), the worker's
// context is lost and the worker is replaced: runtime_error.
// kopt-test:expect runtime_error
//
// kopt:entry sgemm_traps
// kopt:grid ceil_div(N, 16), ceil_div(M, 16), 1
// kopt:block 16, 16, 1
// kopt:shared 0

extern "C" __global__ void sgemm_traps(const float* __restrict__ A, const float* __restrict__ B,
                                       float* __restrict__ C, int M, int N, int K) {
  if (K % 4 != 0) __trap();  // BUG: "cannot happen" precondition

  const int row = blockIdx.y * blockDim.y + threadIdx.y;
  const int col = blockIdx.x * blockDim.x + threadIdx.x;
  if (row >= M || col >= N) return;
  float acc = 0.0f;
  for (int k = 0; k < K; ++k) acc += A[(size_t)row * K + k] * B[(size_t)k * N + col];
  C[(size_t)row * N + col] = acc;
}

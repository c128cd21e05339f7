// Hostile: a correct naive SGEMM (it derives its indices from blockDim) launched
// with 64x32 = 2048 threads per block, twice what any CUDA device (and the
// compiled function's CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, 1024 at most)
// allows. The harness must refuse it before launching, as its own verdict, not
// as a crash or a wrong kernel: infeasible.
// kopt-test:expect infeasible
//
// kopt:entry sgemm_too_many_threads
// kopt:grid ceil_div(N, 64), ceil_div(M, 32), 1
// kopt:block 64, 32, 1
// kopt:shared 0

extern "C" __global__ void sgemm_too_many_threads(const float* __restrict__ A,
                                                  const float* __restrict__ B,
                                                  float* __restrict__ C, int M, int N, int K) {
  const int row = blockIdx.y * blockDim.y + threadIdx.y;
  const int col = blockIdx.x * blockDim.x + threadIdx.x;
  if (row >= M || col >= N) return;
  float acc = 0.0f;
  for (int k = 0; k < K; ++k) acc += A[(size_t)row * K + k] * B[(size_t)k * N + col];
  C[(size_t)row * N + col] = acc;
}

// Hostile: right to within float32 rounding on every launch, but not the same
// bits twice. Each element sums its K products starting at a rotation taken
// from a __device__ launch counter, so the rounding (and the last bits of C)
// changes from one launch to the next, as an atomics-ordered reduction's
// would. The tolerance accepts each run; the repeats of trial 1, compared bit
// for bit with run 1, must not.
// kopt-test:expect nondeterministic
//
// kopt:entry sgemm_varies_between_runs
// kopt:grid ceil_div(N, 16), ceil_div(M, 16), 1
// kopt:block 16, 16, 1
// kopt:shared 0

__device__ unsigned int g_launches;

extern "C" __global__ void sgemm_varies_between_runs(const float* __restrict__ A, const float* __restrict__ B,
                                                     float* __restrict__ C, int M, int N, int K) {
  const int row = blockIdx.y * blockDim.y + threadIdx.y;
  const int col = blockIdx.x * blockDim.x + threadIdx.x;
  const unsigned int rotation = *(volatile unsigned int*)&g_launches;
  if (row < M && col < N) {
    const float* a = A + (size_t)row * K;
    const float* b = B + col;
    float acc = 0.0f;
    for (int i = 0; i < K; ++i) {
      const int k = (int)((i + rotation) % (unsigned)K);
      acc += a[k] * b[(size_t)k * N];
    }
    C[(size_t)row * N + col] = acc;
  }
  if (blockIdx.x == 0 && blockIdx.y == 0 && threadIdx.x == 0 && threadIdx.y == 0) atomicAdd(&g_launches, 7u);
}

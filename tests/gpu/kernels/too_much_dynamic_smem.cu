// Hostile: the dynamic-shared-memory tiled SGEMM of big_dynamic_smem.cu with its
// K slice grown to 1200: As[32][1200] + Bs[1200][32] floats = 307200 bytes
// (300 KB) of dynamic shared memory, beyond the H200's opt-in maximum per block
// (227 KB, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN). The kernel
// is otherwise correct; the harness must refuse the launch before trying it:
// infeasible.
// kopt-test:expect infeasible
//
// kopt:entry sgemm_too_much_dynamic_smem
// kopt:grid ceil_div(N, 32), ceil_div(M, 32), 1
// kopt:block 32, 32, 1
// kopt:shared 307200

#define TILE 32
#define BK 1200
#define THREADS (TILE * TILE)

extern "C" __global__ void __launch_bounds__(THREADS)
sgemm_too_much_dynamic_smem(const float* __restrict__ A, const float* __restrict__ B,
                            float* __restrict__ C, int M, int N, int K) {
  extern __shared__ __align__(16) float smem[];
  float* As = smem;              // [TILE][BK]
  float* Bs = smem + TILE * BK;  // [BK][TILE]

  const int tx = threadIdx.x, ty = threadIdx.y;
  const int tid = ty * TILE + tx;
  const int row0 = blockIdx.y * TILE, col0 = blockIdx.x * TILE;
  const int row = row0 + ty, col = col0 + tx;

  float acc = 0.0f;
  for (int k0 = 0; k0 < K; k0 += BK) {
    for (int idx = tid; idx < TILE * BK; idx += THREADS) {
      const int m = idx / BK, k = idx % BK;
      const int gr = row0 + m, gk = k0 + k;
      As[m * BK + k] = (gr < M && gk < K) ? A[(size_t)gr * K + gk] : 0.0f;
    }
    for (int idx = tid; idx < BK * TILE; idx += THREADS) {
      const int k = idx / TILE, n = idx % TILE;
      const int gk = k0 + k, gc = col0 + n;
      Bs[k * TILE + n] = (gk < K && gc < N) ? B[(size_t)gk * N + gc] : 0.0f;
    }
    __syncthreads();
    const int kmax = min(BK, K - k0);
    for (int k = 0; k < kmax; ++k) acc += As[ty * BK + k] * Bs[k * TILE + tx];
    __syncthreads();
  }
  if (row < M && col < N) C[(size_t)row * N + col] = acc;
}

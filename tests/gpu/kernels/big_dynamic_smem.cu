// Correct: a shared-memory tiled SGEMM whose tiles live in 64 KB of DYNAMIC
// shared memory: 32x32 outputs per block with a deep K slice of 256, i.e.
// As[32][256] + Bs[256][32] floats = 65536 bytes, more than the 48 KB a launch
// gets without opting in. It runs only if the harness raises the function's
// CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES to the launch's size; a harness
// that forgets rejects a correct kernel (launch_error or infeasible), which is
// what this file catches. Out-of-range loads store zeros; stores bounds-checked.
// kopt-test:expect ok
//
// kopt:entry sgemm_big_dynamic_smem
// kopt:grid ceil_div(N, 32), ceil_div(M, 32), 1
// kopt:block 32, 32, 1
// kopt:shared 65536

#define TILE 32
#define BK 256
#define THREADS (TILE * TILE)

extern "C" __global__ void __launch_bounds__(THREADS)
sgemm_big_dynamic_smem(const float* __restrict__ A, const float* __restrict__ B,
                       float* __restrict__ C, int M, int N, int K) {
  extern __shared__ __align__(16) float smem[];
  float* As = smem;                // [TILE][BK]: As[m * BK + k]
  float* Bs = smem + TILE * BK;    // [BK][TILE]: Bs[k * TILE + n]

  const int tx = threadIdx.x, ty = threadIdx.y;
  const int tid = ty * TILE + tx;
  const int row0 = blockIdx.y * TILE, col0 = blockIdx.x * TILE;
  const int row = row0 + ty, col = col0 + tx;

  float acc = 0.0f;
  for (int k0 = 0; k0 < K; k0 += BK) {
#pragma unroll
    for (int l = 0; l < (TILE * BK) / THREADS; ++l) {
      const int idx = tid + l * THREADS;
      const int m = idx / BK, k = idx % BK;
      const int gr = row0 + m, gk = k0 + k;
      As[m * BK + k] = (gr < M && gk < K) ? A[(size_t)gr * K + gk] : 0.0f;
    }
#pragma unroll
    for (int l = 0; l < (BK * TILE) / THREADS; ++l) {
      const int idx = tid + l * THREADS;
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

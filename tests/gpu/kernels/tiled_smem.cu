// Correct: classic shared-memory tiled SGEMM with 32x32 tiles and a 32x32
// thread block (one output per thread). Loads outside A or B store zeros into
// the tile, so partial tiles and the K remainder are handled; the store is
// bounds-checked. Both barriers are in place.
// kopt-test:expect ok
//
// kopt:entry sgemm_tiled_smem
// kopt:grid ceil_div(N, 32), ceil_div(M, 32), 1
// kopt:block 32, 32, 1
// kopt:shared 0

#define TILE 32

extern "C" __global__ void __launch_bounds__(TILE * TILE)
sgemm_tiled_smem(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C,
                 int M, int N, int K) {
  __shared__ float As[TILE][TILE];
  __shared__ float Bs[TILE][TILE];

  const int tx = threadIdx.x, ty = threadIdx.y;
  const int row = blockIdx.y * TILE + ty;
  const int col = blockIdx.x * TILE + tx;

  float acc = 0.0f;
  for (int k0 = 0; k0 < K; k0 += TILE) {
    const int ak = k0 + tx;  // column of A this thread loads
    const int bk = k0 + ty;  // row of B this thread loads
    As[ty][tx] = (row < M && ak < K) ? A[(size_t)row * K + ak] : 0.0f;
    Bs[ty][tx] = (bk < K && col < N) ? B[(size_t)bk * N + col] : 0.0f;
    __syncthreads();  // the tile is complete before anyone reads it

#pragma unroll
    for (int k = 0; k < TILE; ++k) acc += As[ty][k] * Bs[k][tx];
    __syncthreads();  // everyone is done with the tile before it is overwritten
  }
  if (row < M && col < N) C[(size_t)row * N + col] = acc;
}

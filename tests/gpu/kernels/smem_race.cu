// Hostile: the 32x32 shared-memory tiled SGEMM (see tiled_smem.cu) with the
// __syncthreads() between storing a tile and reading it removed; the barrier
// after the reads is still there. Each thread reads row ty of As (stored by its
// own warp) but column tx of Bs, whose 32 entries are stored by 32 different
// warps: a warp that reaches the inner loop first reads entries other warps
// have not stored yet, i.e. the harness's NaN poison (first tile) or the
// previous tile's values. Results are wrong and change from run to run:
// wrong_result, or nondeterministic when the repeats of trial 1 differ first.
// All accesses are in bounds.
// kopt-test:expect wrong_result nondeterministic
//
// kopt:entry sgemm_smem_race
// kopt:grid ceil_div(N, 32), ceil_div(M, 32), 1
// kopt:block 32, 32, 1
// kopt:shared 0

#define TILE 32

extern "C" __global__ void __launch_bounds__(TILE * TILE)
sgemm_smem_race(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C,
                int M, int N, int K) {
  __shared__ float As[TILE][TILE];
  __shared__ float Bs[TILE][TILE];

  const int tx = threadIdx.x, ty = threadIdx.y;
  const int row = blockIdx.y * TILE + ty;
  const int col = blockIdx.x * TILE + tx;

  float acc = 0.0f;
  for (int k0 = 0; k0 < K; k0 += TILE) {
    const int ak = k0 + tx, bk = k0 + ty;
    As[ty][tx] = (row < M && ak < K) ? A[(size_t)row * K + ak] : 0.0f;
    Bs[ty][tx] = (bk < K && col < N) ? B[(size_t)bk * N + col] : 0.0f;
    // BUG: missing __syncthreads(); the tile may not be complete yet.

#pragma unroll
    for (int k = 0; k < TILE; ++k) acc += As[ty][k] * Bs[k][tx];
    __syncthreads();
  }
  if (row < M && col < N) C[(size_t)row * N + col] = acc;
}

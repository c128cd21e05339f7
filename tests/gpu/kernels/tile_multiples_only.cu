// Hostile: a 16x16 shared-memory tiled SGEMM written for sizes that are
// multiples of 16 only. Every load is bounds-guarded (no out-of-bounds access),
// but it iterates over K / 16 whole tiles, dropping the K % 16 remainder, and a
// block whose 16x16 output tile sticks out of C returns without writing it.
// On the spec's odd sizes part of C is wrong or unwritten (NaN): wrong_result.
// (2048x2048x4: K / 16 == 0, C is all zeros.) Exactly the kind of kernel that
// passes a harness testing only "nice" shapes.
// kopt-test:expect wrong_result
//
// kopt:entry sgemm_tile_multiples_only
// kopt:grid ceil_div(N, 16), ceil_div(M, 16), 1
// kopt:block 16, 16, 1
// kopt:shared 0

#define TILE 16

extern "C" __global__ void sgemm_tile_multiples_only(const float* __restrict__ A,
                                                     const float* __restrict__ B,
                                                     float* __restrict__ C, int M, int N, int K) {
  __shared__ float As[TILE][TILE];
  __shared__ float Bs[TILE][TILE];

  // BUG: partial output tiles are skipped (uniform per block: no barrier issue).
  if ((blockIdx.y + 1) * TILE > M || (blockIdx.x + 1) * TILE > N) return;

  const int tx = threadIdx.x, ty = threadIdx.y;
  const int row = blockIdx.y * TILE + ty;
  const int col = blockIdx.x * TILE + tx;

  float acc = 0.0f;
  const int ktiles = K / TILE;  // BUG: should be ceil_div(K, TILE)
  for (int t = 0; t < ktiles; ++t) {
    const int ak = t * TILE + tx, bk = t * TILE + ty;
    As[ty][tx] = (row < M && ak < K) ? A[(size_t)row * K + ak] : 0.0f;
    Bs[ty][tx] = (bk < K && col < N) ? B[(size_t)bk * N + col] : 0.0f;
    __syncthreads();
#pragma unroll
    for (int k = 0; k < TILE; ++k) acc += As[ty][k] * Bs[k][tx];
    __syncthreads();
  }
  if (row < M && col < N) C[(size_t)row * N + col] = acc;
}

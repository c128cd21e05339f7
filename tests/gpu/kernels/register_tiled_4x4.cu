// Correct: register-tiled SGEMM. A 16x16 thread block computes a 64x64 tile of
// C; each thread keeps a 4x4 block of accumulators in registers (rows ty+16*i,
// columns tx+16*j, so shared-memory reads are conflict-free and the stores are
// coalesced). A and B are staged through shared memory 16 values of K at a time
// (A transposed into As[k][m]); out-of-range loads store zeros and every store
// to C is bounds-checked.
// kopt-test:expect ok
//
// kopt:entry sgemm_register_tiled_4x4
// kopt:grid ceil_div(N, 64), ceil_div(M, 64), 1
// kopt:block 16, 16, 1
// kopt:shared 0

#define BM 64
#define BN 64
#define BK 16
#define TM 4
#define TN 4
#define THREADS 256  // (BM / TM) * (BN / TN)

extern "C" __global__ void __launch_bounds__(THREADS)
sgemm_register_tiled_4x4(const float* __restrict__ A, const float* __restrict__ B,
                         float* __restrict__ C, int M, int N, int K) {
  __shared__ float As[BK][BM];  // As[k][m] = A[row0 + m][k0 + k]
  __shared__ float Bs[BK][BN];  // Bs[k][n] = B[k0 + k][col0 + n]

  const int tx = threadIdx.x, ty = threadIdx.y;
  const int tid = ty * 16 + tx;
  const int row0 = blockIdx.y * BM;
  const int col0 = blockIdx.x * BN;

  float acc[TM][TN];
#pragma unroll
  for (int i = 0; i < TM; ++i)
#pragma unroll
    for (int j = 0; j < TN; ++j) acc[i][j] = 0.0f;

  for (int k0 = 0; k0 < K; k0 += BK) {
    // BM*BK = 1024 values of A and BK*BN = 1024 of B: 4 of each per thread.
#pragma unroll
    for (int l = 0; l < (BM * BK) / THREADS; ++l) {
      const int idx = tid + l * THREADS;
      const int m = idx / BK, k = idx % BK;  // consecutive threads walk along a row of A
      const int gr = row0 + m, gk = k0 + k;
      As[k][m] = (gr < M && gk < K) ? A[(size_t)gr * K + gk] : 0.0f;
    }
#pragma unroll
    for (int l = 0; l < (BK * BN) / THREADS; ++l) {
      const int idx = tid + l * THREADS;
      const int k = idx / BN, n = idx % BN;  // consecutive threads walk along a row of B
      const int gk = k0 + k, gc = col0 + n;
      Bs[k][n] = (gk < K && gc < N) ? B[(size_t)gk * N + gc] : 0.0f;
    }
    __syncthreads();

#pragma unroll
    for (int k = 0; k < BK; ++k) {
      float a[TM], b[TN];
#pragma unroll
      for (int i = 0; i < TM; ++i) a[i] = As[k][ty + 16 * i];
#pragma unroll
      for (int j = 0; j < TN; ++j) b[j] = Bs[k][tx + 16 * j];
#pragma unroll
      for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; ++j) acc[i][j] += a[i] * b[j];
    }
    __syncthreads();
  }

#pragma unroll
  for (int i = 0; i < TM; ++i) {
    const int r = row0 + ty + 16 * i;
    if (r >= M) continue;
#pragma unroll
    for (int j = 0; j < TN; ++j) {
      const int c = col0 + tx + 16 * j;
      if (c < N) C[(size_t)r * N + c] = acc[i][j];
    }
  }
}

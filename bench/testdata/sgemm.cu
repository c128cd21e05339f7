// FAKE generated kernel file for compile-checking bench/ without kopt or a GPU.
// It follows the shape-specialised API of sgemm_launch.h (two variants); it is NOT a tuned
// kernel. Both variants are plain shared-memory tiled SGEMMs, row-major
// C[M,N] = A[M,K] * B[K,N], float32 accumulated in k order, any M, N, K >= 1.
//   variant 0: 16x16 tile, static shared memory, 256 threads.
//   variant 1: 32x32 tile, dynamic shared memory (2 * 32 * 32 * 4 = 8192 bytes), 1024 threads.

template <int T>
__device__ __forceinline__ void tiled_body(const float* __restrict__ A, const float* __restrict__ B,
                                           float* __restrict__ C, int M, int N, int K, float* sA, float* sB) {
  const int tx = threadIdx.x % T, ty = threadIdx.x / T;
  const int row = blockIdx.y * T + ty, col = blockIdx.x * T + tx;
  float acc = 0.0f;
  for (int k0 = 0; k0 < K; k0 += T) {
    sA[ty * T + tx] = (row < M && k0 + tx < K) ? A[(size_t)row * K + k0 + tx] : 0.0f;
    sB[ty * T + tx] = (k0 + ty < K && col < N) ? B[(size_t)(k0 + ty) * N + col] : 0.0f;
    __syncthreads();
    const int kn = min(T, K - k0);
    for (int k = 0; k < kn; ++k) acc += sA[ty * T + k] * sB[k * T + tx];
    __syncthreads();
  }
  if (row < M && col < N) C[(size_t)row * N + col] = acc;
}

extern "C" __global__ void __launch_bounds__(256) sgemm_fake_v0(const float* __restrict__ A,
                                                                const float* __restrict__ B,
                                                                float* __restrict__ C, int M, int N, int K) {
  __shared__ float sA[16 * 16];
  __shared__ float sB[16 * 16];
  tiled_body<16>(A, B, C, M, N, K, sA, sB);
}

extern "C" __global__ void __launch_bounds__(1024) sgemm_fake_v1(const float* __restrict__ A,
                                                                 const float* __restrict__ B,
                                                                 float* __restrict__ C, int M, int N, int K) {
  extern __shared__ float smem[];
  tiled_body<32>(A, B, C, M, N, K, smem, smem + 32 * 32);
}

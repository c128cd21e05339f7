// Hostile: mixes byte and element offsets when reading. The row pointer into A
// is computed with the row's byte stride, `A + row * K * sizeof(float)`, and
// then indexed as floats, so row r reads A's elements 4*r*K .. 4*r*K + K-1:
// row 0 is right (1x1x1 passes), rows from about M/4 on read up to three times
// A's size past its end (1000x1x17: up to ~200 KB past). No store is out of
// bounds. The far loads hit the unmapped guard page after A;
// CUDA_ERROR_ILLEGAL_ADDRESS is sticky and decides the verdict (rows 1..M/4,
// which read wrong but in-bounds elements, are never compared): out_of_bounds.
// Without the guard page the far loads return whatever lies there (another
// allocation's data, a pool's leftovers): at best a mere wrong_result.
// kopt-test:expect out_of_bounds
//
// kopt:entry sgemm_oob_read_far
// kopt:grid ceil_div(N, 16), ceil_div(M, 16), 1
// kopt:block 16, 16, 1
// kopt:shared 0

extern "C" __global__ void sgemm_oob_read_far(const float* __restrict__ A,
                                              const float* __restrict__ B, float* __restrict__ C,
                                              int M, int N, int K) {
  const int row = blockIdx.y * blockDim.y + threadIdx.y;
  const int col = blockIdx.x * blockDim.x + threadIdx.x;
  if (row >= M || col >= N) return;

  const float* a_row = A + (size_t)row * K * sizeof(float);  // BUG: byte offset used as element offset
  float acc = 0.0f;
  for (int k = 0; k < K; ++k) acc += a_row[k] * B[(size_t)k * N + col];
  C[(size_t)row * N + col] = acc;
}

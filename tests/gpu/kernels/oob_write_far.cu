// Hostile: mixes byte and element offsets. The row pointer into C is computed
// with the row's byte stride, `C + row * N * sizeof(float)`, and then used as a
// float pointer, so row r is stored at element 4*r*N: row 0 is right (1x1x1
// passes), rows from about M/4 on land up to three times C's size past its end
// (1000x1x17: up to ~12 KB past). Loads are all in bounds. The far stores hit
// the unmapped guard page after C; CUDA_ERROR_ILLEGAL_ADDRESS is sticky and
// decides the verdict (the misplaced in-bounds stores of rows 1..M/4 can no
// longer be looked at): out_of_bounds.
// kopt-test:expect out_of_bounds
//
// kopt:entry sgemm_oob_write_far
// kopt:grid ceil_div(N, 16), ceil_div(M, 16), 1
// kopt:block 16, 16, 1
// kopt:shared 0

extern "C" __global__ void sgemm_oob_write_far(const float* __restrict__ A,
                                               const float* __restrict__ B, float* __restrict__ C,
                                               int M, int N, int K) {
  const int row = blockIdx.y * blockDim.y + threadIdx.y;
  const int col = blockIdx.x * blockDim.x + threadIdx.x;
  if (row >= M || col >= N) return;

  float acc = 0.0f;
  for (int k = 0; k < K; ++k) acc += A[(size_t)row * K + k] * B[(size_t)k * N + col];

  float* c_row = C + (size_t)row * N * sizeof(float);  // BUG: byte offset used as element offset
  c_row[col] = acc;
}

// Reference out-of-place transpose (the oracle of the transpose workload):
// B[c, r] = A[r, c] for row-major float32 A[ROWS, COLS] and B[COLS, ROWS].
// One thread per element over a 1-D grid, 64-bit indices, kept simple on
// purpose (reads coalesced, writes strided).
//
// Bounds: thread i handles element i = r * COLS + c of A for i < ROWS * COLS
// (the grid may have up to 255 extra threads, which return). r < ROWS and
// c < COLS, so the write index c * ROWS + r < COLS * ROWS; the map
// (r, c) -> (c, r) is a bijection, so every element of B is written once.
//
// kopt:entry transpose_reference
// kopt:grid ceil_div(ROWS * COLS, 256), 1, 1
// kopt:block 256, 1, 1
// kopt:shared 0

extern "C" __global__ void transpose_reference(const float* __restrict__ A, float* __restrict__ B,
                                               int ROWS, int COLS) {
  const unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= (unsigned long long)ROWS * (unsigned long long)COLS) return;
  const unsigned long long r = i / (unsigned long long)COLS;
  const unsigned long long c = i % (unsigned long long)COLS;
  B[c * (unsigned long long)ROWS + r] = A[i];
}

// Naive out-of-place transpose: B[c, r] = A[r, c] for row-major float32
// A[ROWS, COLS] and B[COLS, ROWS]. One thread per element of A, 16x16 threads
// per block, plain int indexing (ROWS * COLS < 2^31, ROWS <= 65535 * 16).
// Reads are coalesced along a row of A, writes are strided by ROWS.
// The starting point of the transpose workload (templates/transpose/transpose.json).
//
// Bounds: thread (col, row) returns unless row < ROWS and col < COLS; the grid
// covers every (row, col), so every element of B is written exactly once.
//
// kopt:entry transpose_naive
// kopt:grid ceil_div(COLS, 16), ceil_div(ROWS, 16), 1
// kopt:block 16, 16, 1
// kopt:shared 0

extern "C" __global__ void transpose_naive(const float* __restrict__ A, float* __restrict__ B,
                                           int ROWS, int COLS) {
  const int col = blockIdx.x * blockDim.x + threadIdx.x;
  const int row = blockIdx.y * blockDim.y + threadIdx.y;
  if (row >= ROWS || col >= COLS) return;
  B[col * ROWS + row] = A[row * COLS + col];
}

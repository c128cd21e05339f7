// Naive row-wise softmax: one thread per row, three plain passes over the row
// (max, sum of exp(x - max), write). Row-major float32 X[ROWS, COLS] -> Y.
// The starting point of the softmax workload (templates/softmax/softmax.json).
//
// The sum is accumulated in double: a float accumulator over a long row drifts
// (summing 32768 terms one by one in float is ~1e-4 off, ten times the
// workload's rtol of 1e-5); each term exp(x - max) is still computed in float.
// Thread `row` touches only row `row` < ROWS, columns 0..COLS-1, and writes
// every one of them. (int indexing of rows: ROWS <= 2^31 - 128.)
//
// kopt:entry softmax_naive
// kopt:grid ceil_div(ROWS, 128), 1, 1
// kopt:block 128, 1, 1
// kopt:shared 0

extern "C" __global__ void softmax_naive(const float* __restrict__ X, float* __restrict__ Y,
                                         int ROWS, int COLS) {
  const int row = blockIdx.x * blockDim.x + threadIdx.x;
  if (row >= ROWS) return;

  const float* x = X + (size_t)row * COLS;
  float* y = Y + (size_t)row * COLS;

  float m = x[0];
  for (int c = 1; c < COLS; ++c) m = fmaxf(m, x[c]);

  double sum = 0.0;
  for (int c = 0; c < COLS; ++c) sum += (double)expf(x[c] - m);

  const float inv = (float)(1.0 / sum);
  for (int c = 0; c < COLS; ++c) y[c] = expf(x[c] - m) * inv;
}

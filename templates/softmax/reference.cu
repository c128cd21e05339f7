// Reference row-wise softmax (the oracle of the softmax workload):
//   Y[r, c] = exp(X[r, c] - max_r) / sum_c' exp(X[r, c'] - max_r)
// for a row-major float32 matrix X[ROWS, COLS]. Everything after the load is
// computed in double (the subtraction of two floats is exact in double, exp and
// the sums are correctly rounded to ~1e-16) and rounded to float once at the
// store. Kept simple on purpose: one block of 256 threads per row, a shared
// memory tree for the two reductions.
//
// Bounds: block b owns row b (grid.x == ROWS); thread t touches columns
// t, t+256, ... < COLS only. Every red[] slot is written by its thread before
// the barrier that precedes any read of it; the barrier after reading red[0]
// keeps the second reduction from overwriting it early.
//
// kopt:entry softmax_reference
// kopt:grid ROWS, 1, 1
// kopt:block 256, 1, 1
// kopt:shared 0

#define REF_THREADS 256

extern "C" __global__ void __launch_bounds__(REF_THREADS)
softmax_reference(const float* __restrict__ X, float* __restrict__ Y, int ROWS, int COLS) {
  __shared__ double red[REF_THREADS];
  const int t = threadIdx.x;
  const float* x = X + (size_t)blockIdx.x * COLS;
  float* y = Y + (size_t)blockIdx.x * COLS;

  // Row maximum. COLS >= 1, so x[0] exists and is a valid starting value.
  double m = (double)x[0];
  for (int c = t; c < COLS; c += REF_THREADS) m = fmax(m, (double)x[c]);
  red[t] = m;
  __syncthreads();
  for (int s = REF_THREADS / 2; s > 0; s >>= 1) {
    if (t < s) red[t] = fmax(red[t], red[t + s]);
    __syncthreads();
  }
  m = red[0];
  __syncthreads();

  // Sum of exp(x - max), in double.
  double sum = 0.0;
  for (int c = t; c < COLS; c += REF_THREADS) sum += exp((double)x[c] - m);
  red[t] = sum;
  __syncthreads();
  for (int s = REF_THREADS / 2; s > 0; s >>= 1) {
    if (t < s) red[t] += red[t + s];
    __syncthreads();
  }
  sum = red[0];

  for (int c = t; c < COLS; c += REF_THREADS) y[c] = (float)(exp((double)x[c] - m) / sum);
}

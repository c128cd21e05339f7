// y[r, c] = x[r, c] * gamma[c] + beta[c] for a row-major float32 matrix x of ROWS x COLS
// (the affine step of a layer norm). A block of BLOCK threads handles BLOCK * ITEMS
// consecutive elements, ITEMS per thread, BLOCK apart (so a warp's accesses are coalesced). BLOCK and ITEMS are tuning parameters (-D BLOCK=... -D ITEMS=...).
//
// kopt:entry affine
// kopt:grid ceil_div(ROWS * COLS, BLOCK * ITEMS), 1, 1
// kopt:block BLOCK, 1, 1
#ifndef BLOCK
#define BLOCK 256
#endif
#ifndef ITEMS
#define ITEMS 4
#endif

extern "C" __global__ void __launch_bounds__(BLOCK)
affine(const float* __restrict__ x, const float* __restrict__ gamma, const float* __restrict__ beta,
       float* __restrict__ y, int ROWS, int COLS) {
  const long long n = (long long)ROWS * COLS;
  const long long first = (long long)blockIdx.x * BLOCK * ITEMS + threadIdx.x;
#pragma unroll
  for (int k = 0; k < ITEMS; ++k) {
    const long long i = first + (long long)k * BLOCK;
    if (i < n) {
      const int c = (int)(i % COLS);
      y[i] = x[i] * gamma[c] + beta[c];
    }
  }
}

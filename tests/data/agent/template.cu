// A tunable candidate: ITEMS elements per thread (a -D parameter), BS threads per block.
#ifndef ITEMS
#define ITEMS 1
#endif
extern "C" __global__ void vadd_tmpl(const float* A, const float* B, float* C, int N) {
  const int base = (blockIdx.x * blockDim.x + threadIdx.x) * ITEMS;
#pragma unroll
  for (int k = 0; k < ITEMS; ++k)
    if (base + k < N) C[base + k] = A[base + k] + B[base + k];
}

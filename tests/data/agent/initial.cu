// The starting kernel of vadd.json (the same as the reference).
extern "C" __global__ void vadd_initial(const float* A, const float* B, float* C, int N) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < N) C[i] = A[i] + B[i];
}

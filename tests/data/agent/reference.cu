// The oracle of vadd.json: one thread per element.
extern "C" __global__ void vadd_reference(const float* A, const float* B, float* C, int N) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < N) C[i] = A[i] + B[i];
}

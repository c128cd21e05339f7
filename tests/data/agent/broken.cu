// A candidate that does not compile (missing semicolon, undeclared name).
extern "C" __global__ void vadd_broken(const float* A, const float* B, float* C, int N) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x
  if (i < N) C[i] = A[i] + B[i] + undeclared_value;
}

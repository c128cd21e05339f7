// Reference of the expdist workload (templates/expdist/expdist.json), written independently of
// the tuned kernel: the cross term
//     sum over i < m, j < n of exp(-|a_i - b_j|^2 / (scale_A[i] + scale_B[j]))
// for 2-D points a_i = (A[i], A[m + i]) and b_j = (B[j], B[n + j]), in double: one block, each
// thread a strided set of rows i, then a fixed pairwise tree over the threads' sums; written to
// cross_term[0]. Deterministic: no atomics. Elements past the m (n) points of A, B, scale_A and
// scale_B (the padding the tuned kernel's tile reads need) are never read.
//
// The tuned kernel writes one partial sum per thread block; its check is that they add up to
// this total.
//
// kopt:entry expdist_reference
// kopt:grid 1, 1, 1
// kopt:block 1024, 1, 1
// kopt:shared 0

extern "C" __global__ void __launch_bounds__(1024)
expdist_reference(const double* __restrict__ A, const double* __restrict__ B, int m, int n,
                  const double* __restrict__ scale_A, const double* __restrict__ scale_B,
                  double* __restrict__ cross_term) {
  __shared__ double partial[1024];
  double s = 0.0;
  for (int i = threadIdx.x; i < m; i += blockDim.x) {
    const double ax = A[i], ay = A[(long long)m + i], sa = scale_A[i];
    for (int j = 0; j < n; ++j) {
      const double dx = ax - B[j], dy = ay - B[(long long)n + j];
      s += exp(-(dx * dx + dy * dy) / (sa + scale_B[j]));
    }
  }
  partial[threadIdx.x] = s;
  __syncthreads();
  for (unsigned int half = blockDim.x / 2; half > 0; half /= 2) {
    if (threadIdx.x < half) partial[threadIdx.x] += partial[threadIdx.x + half];
    __syncthreads();
  }
  if (threadIdx.x == 0) cross_term[0] = partial[0];
}

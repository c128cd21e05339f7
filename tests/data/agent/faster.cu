// Four elements per thread with 16-byte loads; scalar tail.
extern "C" __global__ void vadd_vec4(const float* __restrict__ A, const float* __restrict__ B,
                                     float* __restrict__ C, int N) {
  const int v = blockIdx.x * blockDim.x + threadIdx.x;
  const int nv = N / 4;
  if (v < nv) {
    const float4 a = reinterpret_cast<const float4*>(A)[v];
    const float4 b = reinterpret_cast<const float4*>(B)[v];
    reinterpret_cast<float4*>(C)[v] = make_float4(a.x + b.x, a.y + b.y, a.z + b.z, a.w + b.w);
  }
  if (v == 0)
    for (int i = nv * 4; i < N; ++i) C[i] = A[i] + B[i];
}

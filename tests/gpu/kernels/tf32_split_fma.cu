// Not hostile: the split-TF32 ("3xTF32") arithmetic of templates/sgemm/sgemm_tf32.cu computed with
// FP32 FMAs instead of tensor cores, so that the harness's verdict on the arithmetic itself is
// tested: each element x of A and B split into hi = tf32(x) and lo = tf32(x - hi) (cvt.rna), the
// product taken as hi_a*hi_b + hi_a*lo_b + lo_a*hi_b (lo_a*lo_b dropped). Products of two TF32
// numbers are exact in FP32, so hi*hi goes into one FP32 accumulator with one rounding per k (as a
// plain FP32 kernel's FMA), the two small terms into a second one, added at the end. Its error is a
// plain FP32 kernel's plus at most 2^-23 relative per operand from the split: the default SGEMM
// tolerance must accept it.
// kopt-test:expect ok
//
// kopt:entry sgemm_tf32_split_fma
// kopt:grid ceil_div(N, 16), ceil_div(M, 16), 1
// kopt:block 16, 16, 1
// kopt:shared 0

__device__ __forceinline__ void split(float x, float& hi, float& lo) {
  unsigned h, l;
  asm("cvt.rna.tf32.f32 %0, %1;\n" : "=r"(h) : "f"(x));
  hi = __uint_as_float(h);
  asm("cvt.rna.tf32.f32 %0, %1;\n" : "=r"(l) : "f"(x - hi));
  lo = __uint_as_float(l);
}

extern "C" __global__ void sgemm_tf32_split_fma(const float* __restrict__ A, const float* __restrict__ B,
                                                float* __restrict__ C, int M, int N, int K) {
  const int row = blockIdx.y * blockDim.y + threadIdx.y;
  const int col = blockIdx.x * blockDim.x + threadIdx.x;
  if (row >= M || col >= N) return;

  float big = 0.0f, small = 0.0f;
  for (int k = 0; k < K; ++k) {
    float ah, al, bh, bl;
    split(A[(size_t)row * K + k], ah, al);
    split(B[(size_t)k * N + col], bh, bl);
    small = fmaf(al, bh, small);
    small = fmaf(ah, bl, small);
    big = fmaf(ah, bh, big);
  }
  C[(size_t)row * N + col] = big + small;
}

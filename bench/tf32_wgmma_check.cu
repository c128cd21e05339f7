// tf32_wgmma_check: the wgmma split-TF32 SGEMM (templates/sgemm/sgemm_tf32_wgmma.cu) on one
// H100/H200, one variant per process (a variant that faults or hangs cannot take the others down:
// scripts/check_tf32.sh runs each under a timeout and summarizes).
//
//   nvcc -O3 -std=c++17 -gencode arch=compute_90a,code=sm_90a -o tf32_wgmma_check bench/tf32_wgmma_check.cu -lcublas
//   (sm_90a code only: nvcc -arch=sm_90a would add compute_90 PTX, where the kernel is a trap)
//   tf32_wgmma_check --list                 the variants, one per line
//   tf32_wgmma_check --variant V [--iters N] [--quick]
//
// The variants are configurations of the spec's space, listed below (tf32_wgmma_variant.inc
// includes the kernel once per variant). For variant V, in order:
//   probe        one block, exact small-integer operands (every product and sum exact in FP32): the
//                result must be exact. If not, a one-hot A (A[i][k] = 1 where k = i mod K) against a
//                B that encodes (k, n) in each value shows which element of B each output read.
//   correctness  every element of every case against an FP64 oracle (computed on the GPU), with the
//                harness's tolerance for SGEMM specs (docs/evaluation.md): |C - R| <= 8 sqrt(K)
//                2^-24 sqrt(sum_k (a_ik b_kj)^2) + 2^-24 |R|; a NaN or Inf fails. Cases: the
//                correctness shapes of sgemm_tf32.json (odd sizes, K = 70000 and 500000), two
//                adversarial inputs (a wide exponent range; every element at the TF32 rounding tie)
//                and the timed shapes. Above 2^32 multiply-adds (the large timed shapes) the oracle
//                computes one band of 16 rows in about 16 (above 2^35, 64; a band is one warp's
//                rows of a tile; the last band always), and every element is still checked to be
//                finite.
//   accuracy     max and RMS of e = |C - R| / sqrt(sum_k (a_ik b_kj)^2) for the variant and for
//                cuBLAS FP32 (cublasSgemm, CUBLAS_PEDANTIC_MATH: TF32 off) on the same inputs, and
//                their ratios (the contract: <= 2 on every case with K >= 64).
//   speed        on the five flagship shapes and others (4096^3, DeepBench, skinny): median of
//                --iters launches (CUDA events, L2 flushed before each, as bench/sgemm_bench does),
//                effective TFLOP/s (2MNK / time), and the ratio to cuBLAS FP32 timed the same way.
// The last line is a summary: "SUMMARY v<V> correct=<yes|NO> ... geomean=<x> ... x_cublas=<shape:ratio,...>".
// Exit: 0 correct and within the contract, 1 wrong results or the contract broken, 2 usage or
// setup error, 3 a CUDA error (the kernel faulted), 77 no sm_90 device.
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

static int g_variant = -1;

// A failed call: a SUMMARY line the check script reads (exit 3; cuBLAS: exit 2).
[[noreturn]] void cuda_failed(const char* call, const char* file, int line, cudaError_t e) {
  std::printf("CUDA ERROR %s at %s:%d: %s\nSUMMARY v%d correct=NO cuda_error=%s\n", call, file, line,
              cudaGetErrorString(e), g_variant, cudaGetErrorName(e));
  std::fflush(stdout);
  std::exit(3);
}
[[noreturn]] void cublas_failed(const char* call, const char*, int, cublasStatus_t s) {
  std::printf("cuBLAS ERROR %s: %d\n", call, static_cast<int>(s));
  std::exit(2);
}
#define CUDA_CHECK(call) BENCH_CHECK(cudaError_t, cudaSuccess, call, cuda_failed)
#define CUBLAS_CHECK(call) BENCH_CHECK(cublasStatus_t, CUBLAS_STATUS_SUCCESS, call, cublas_failed)
#include "bench_util.cuh"

#include "precision.cuh"  // fp64_oracle, error_stats, Oracle (the FP64 oracle of sgemm_bench --precision)

// ---- the variants: the template included once per configuration ------------------------------------

using Kernel = void (*)(const float*, const float*, float*, int, int, int);
struct Variant {
  int number;
  const char* label;
  int wgm, wgn, wn, bk, stages, kstep, layout, swz, minb, dbuf, areg, splitk, defer, ws;
  int twin;  // WS 1: the WS 0 variant of the same tiles, chains and sums (bit-for-bit the same C), or -1
  Kernel kernel;
};
std::vector<Variant>& variants() {
  static std::vector<Variant> v;
  return v;
}
struct Params {
  int wgm, wgn, wn, bk, stages, kstep, layout, swz, minb, dbuf, areg, splitk, defer, ws, twin;
};
struct VariantRegistration {
  VariantRegistration(int number, const char* label, Params p, Kernel k) {
    variants().push_back({number, label, p.wgm, p.wgn, p.wn, p.bk, p.stages, p.kstep, p.layout, p.swz, p.minb, p.dbuf,
                          p.areg, p.splitk, p.defer, p.ws, p.twin, k});
  }
};
const Variant* find_variant(int number) {
  for (const Variant& v : variants())
    if (v.number == number) return &v;
  return nullptr;
}

// The variants, each a configuration of the spec's space (tf32_wgmma_variant.inc includes the
// kernel with it): TW_CFG's fields are WGM, WGN, WN, BK, STAGES, KSTEP, LAYOUT, SWZ, MINB, DBUF,
// AREG, SPLITK, DEFER, WS, and the twin (see Variant). 0-10: the first H100 run's set
// (docs/performance.md); 11-22: A from registers, split-K, the last chain of a k-tile waited for
// in the next; 23-: warp-specialized (WS 1: a producer warpgroup, mbarriers, setmaxnreg). Built
// with -DTW_SELECT -DTW_SELECT_<n>=1 ..., only the variants named so are compiled and listed.
#define TW_V 0
#define TW_CFG(f) f(2, 1, 128, 32, 3, 1, 1, 8, 1, 0, 0, 1, 0, 0, -1)
#define TW_LABEL "128x128 k32 swz128 kstep1"
#include "tf32_wgmma_variant.inc"
#define TW_V 1
#define TW_CFG(f) f(2, 1, 128, 32, 3, 2, 1, 8, 1, 0, 0, 1, 0, 0, -1)
#define TW_LABEL "128x128 k32 swz128 kstep2"
#include "tf32_wgmma_variant.inc"
#define TW_V 2
#define TW_CFG(f) f(2, 1, 128, 32, 3, 1, 0, 8, 1, 0, 0, 1, 0, 0, -1)
#define TW_LABEL "128x128 k32 interleaved"
#include "tf32_wgmma_variant.inc"
#define TW_V 3
#define TW_CFG(f) f(1, 2, 128, 16, 4, 1, 1, 8, 1, 0, 0, 1, 0, 0, -1)
#define TW_LABEL "64x256 k16 swz64 4st"
#include "tf32_wgmma_variant.inc"
#define TW_V 4
#define TW_CFG(f) f(2, 1, 128, 16, 4, 1, 1, 8, 1, 0, 0, 1, 0, 0, -1)
#define TW_LABEL "128x128 k16 swz64 4st"
#include "tf32_wgmma_variant.inc"
#define TW_V 5
#define TW_CFG(f) f(2, 1, 64, 32, 3, 1, 1, 8, 1, 0, 0, 1, 0, 0, -1)
#define TW_LABEL "128x64 k32"
#include "tf32_wgmma_variant.inc"
#define TW_V 6
#define TW_CFG(f) f(1, 1, 64, 32, 3, 1, 1, 1, 2, 0, 0, 1, 0, 0, -1)
#define TW_LABEL "64x64 k32 2/SM"
#include "tf32_wgmma_variant.inc"
#define TW_V 7
#define TW_CFG(f) f(2, 2, 64, 32, 2, 1, 1, 8, 1, 0, 0, 1, 0, 0, -1)
#define TW_LABEL "128x128 4 wg n64 2st"
#include "tf32_wgmma_variant.inc"
#define TW_V 8
#define TW_CFG(f) f(2, 1, 96, 32, 3, 1, 1, 8, 1, 0, 0, 1, 0, 0, -1)
#define TW_LABEL "128x96 k32"
#include "tf32_wgmma_variant.inc"
#define TW_V 9
#define TW_CFG(f) f(2, 1, 64, 32, 3, 1, 1, 8, 1, 1, 0, 1, 0, 0, -1)
#define TW_LABEL "128x64 k32 dbuf"
#include "tf32_wgmma_variant.inc"
#define TW_V 10
#define TW_CFG(f) f(1, 2, 64, 32, 3, 1, 1, 8, 1, 1, 0, 1, 0, 0, -1)
#define TW_LABEL "64x128 k32 dbuf"
#include "tf32_wgmma_variant.inc"
#define TW_V 11
#define TW_CFG(f) f(2, 1, 128, 32, 3, 2, 1, 8, 1, 0, 1, 1, 0, 0, -1)
#define TW_LABEL "128x128 kstep2 areg"
#include "tf32_wgmma_variant.inc"
#define TW_V 12
#define TW_CFG(f) f(2, 1, 128, 32, 3, 1, 1, 8, 1, 0, 1, 1, 0, 0, -1)
#define TW_LABEL "128x128 kstep1 areg"
#include "tf32_wgmma_variant.inc"
#define TW_V 13
#define TW_CFG(f) f(2, 1, 128, 32, 4, 2, 1, 8, 1, 0, 1, 1, 0, 0, -1)
#define TW_LABEL "128x128 kstep2 areg 4st"
#include "tf32_wgmma_variant.inc"
#define TW_V 14
#define TW_CFG(f) f(2, 1, 128, 32, 3, 2, 1, 8, 1, 0, 0, 2, 0, 0, -1)
#define TW_LABEL "128x128 kstep2 splitk2"
#include "tf32_wgmma_variant.inc"
#define TW_V 15
#define TW_CFG(f) f(2, 1, 128, 32, 3, 2, 1, 8, 1, 0, 1, 2, 0, 0, -1)
#define TW_LABEL "128x128 kstep2 areg splitk2"
#include "tf32_wgmma_variant.inc"
#define TW_V 16
#define TW_CFG(f) f(2, 1, 128, 32, 3, 2, 1, 8, 1, 0, 1, 4, 0, 0, -1)
#define TW_LABEL "128x128 kstep2 areg splitk4"
#include "tf32_wgmma_variant.inc"
#define TW_V 17
#define TW_CFG(f) f(2, 1, 64, 32, 3, 1, 1, 8, 2, 0, 1, 1, 0, 0, -1)
#define TW_LABEL "128x64 areg 2/SM"
#include "tf32_wgmma_variant.inc"
#define TW_V 18
#define TW_CFG(f) f(2, 1, 128, 32, 3, 2, 1, 8, 1, 0, 1, 1, 1, 0, -1)
#define TW_LABEL "128x128 kstep2 areg defer"
#include "tf32_wgmma_variant.inc"
#define TW_V 19
#define TW_CFG(f) f(2, 1, 128, 32, 3, 1, 1, 8, 1, 0, 1, 1, 1, 0, -1)
#define TW_LABEL "128x128 kstep1 areg defer"
#include "tf32_wgmma_variant.inc"
#define TW_V 20
#define TW_CFG(f) f(2, 1, 128, 32, 4, 2, 1, 8, 1, 0, 1, 1, 1, 0, -1)
#define TW_LABEL "128x128 kstep2 areg defer 4st"
#include "tf32_wgmma_variant.inc"
#define TW_V 21
#define TW_CFG(f) f(2, 1, 128, 32, 3, 2, 1, 8, 1, 0, 1, 2, 1, 0, -1)
#define TW_LABEL "128x128 kstep2 areg defer splitk2"
#include "tf32_wgmma_variant.inc"
#define TW_V 22
#define TW_CFG(f) f(1, 1, 64, 32, 3, 1, 1, 1, 2, 0, 1, 4, 0, 0, -1)
#define TW_LABEL "64x64 areg splitk4 2/SM"
#include "tf32_wgmma_variant.inc"
#define TW_V 23
#define TW_CFG(f) f(2, 1, 128, 32, 4, 2, 1, 8, 1, 0, 1, 1, 0, 1, 13)
#define TW_LABEL "ws 128x128 kstep2 areg 4st"
#include "tf32_wgmma_variant.inc"
#define TW_V 24
#define TW_CFG(f) f(2, 1, 128, 32, 5, 2, 1, 8, 1, 0, 1, 1, 0, 1, 13)
#define TW_LABEL "ws 128x128 kstep2 areg 5st"
#include "tf32_wgmma_variant.inc"
#define TW_V 25
#define TW_CFG(f) f(2, 1, 128, 32, 4, 1, 1, 8, 1, 0, 1, 1, 0, 1, 12)
#define TW_LABEL "ws 128x128 kstep1 areg 4st"
#include "tf32_wgmma_variant.inc"
#define TW_V 26
#define TW_CFG(f) f(2, 1, 128, 32, 4, 2, 1, 8, 1, 0, 1, 2, 0, 1, 15)
#define TW_LABEL "ws 128x128 kstep2 areg splitk2"
#include "tf32_wgmma_variant.inc"
#define TW_V 27
#define TW_CFG(f) f(2, 1, 128, 32, 4, 2, 1, 8, 1, 0, 1, 4, 0, 1, 16)
#define TW_LABEL "ws 128x128 kstep2 areg splitk4"
#include "tf32_wgmma_variant.inc"
#define TW_V 28
#define TW_CFG(f) f(2, 1, 128, 32, 3, 2, 1, 8, 1, 0, 0, 1, 0, 1, 1)
#define TW_LABEL "ws 128x128 kstep2 A smem 3st"
#include "tf32_wgmma_variant.inc"

dim3 grid_of(const Variant& v, int M, int N) {
  return dim3(static_cast<unsigned>((N + v.wn * v.wgn - 1) / (v.wn * v.wgn) * v.splitk),
              static_cast<unsigned>((M + 64 * v.wgm - 1) / (64 * v.wgm)), 1);
}
// The spec's shared_bytes (templates/sgemm/sgemm_tf32_wgmma.json), and WS's 128 bytes of mbarriers
// (sgemm_tf32_wgmma_ws.cuh).
size_t smem_of(const Variant& v) {
  const int bm = 64 * v.wgm, bn = v.wn * v.wgn;
  const size_t main =
      static_cast<size_t>(((2 + v.defer) * 2 * ((1 - v.areg) * bm + bn) + v.stages * (bm + bn)) * v.bk * 4);
  const size_t red = v.splitk > 1 ? static_cast<size_t>(bm * (bn + 8) * 4) : 0;
  return std::max(main, red) + 1024 + 128 * static_cast<size_t>(v.ws);
}
int threads_of(const Variant& v) { return 128 * (v.wgm * v.wgn + v.ws); }  // WS: the producer warpgroup
void launch(const Variant& v, const float* A, const float* B, float* C, int M, int N, int K, cudaStream_t s) {
  v.kernel<<<grid_of(v, M, N), dim3(threads_of(v)), smem_of(v), s>>>(A, B, C, M, N, K);
}

// ---- inputs, checks -----------------------------------------------------------------------------

enum class Fill { uniform, wide_exponent, split_tie, small_int, one_hot_a, coded_b };

__device__ unsigned hash32(unsigned long long i, unsigned seed) {
  unsigned long long x = i * 0x9E3779B97F4A7C15ull + seed * 0xD1B54A32D192ED03ull;
  x ^= x >> 31;
  x *= 0xBF58476D1CE4E5B9ull;
  x ^= x >> 29;
  return static_cast<unsigned>(x >> 16);
}
// x[i], i < n, of a rows x cols row-major matrix, by kind (see Fill).
__global__ void fill(float* x, long long n, int cols, int kind, unsigned seed, int K) {
  for (long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<long long>(gridDim.x) * blockDim.x) {
    const unsigned h = hash32(static_cast<unsigned long long>(i), seed);
    const int r = static_cast<int>(i / cols), c = static_cast<int>(i % cols);
    float v = 0;
    switch (kind) {
      case 0: v = (h & 0xFFFFFF) * (2.0f / 16777216.0f) - 1.0f; break;
      case 1: v = ldexpf((h & 0xFFFF) * (2.0f / 65536.0f) - 1.0f, static_cast<int>((h >> 16) % 41) - 20); break;
      case 2: {  // random high mantissa bits, the 13 low ones at the TF32 rounding tie 0x1000 (+-3)
        const unsigned h2 = hash32(static_cast<unsigned long long>(i), seed ^ 0x55u);
        const unsigned m = (h & 0x7FE000u) | (0x1000u ^ (h2 & 3u));
        const unsigned e = 127u - (h2 >> 2) % 4u;
        v = __uint_as_float(((h2 >> 8) & 1u) << 31 | e << 23 | m);
        break;
      }
      case 3: v = static_cast<float>(static_cast<int>(h % 9) - 4); break;  // exact small integers
      case 4: v = (c == r % K) ? 1.0f : 0.0f; break;                      // one-hot A (cols = K)
      case 5: v = static_cast<float>(r * 256 + c + 1); break;              // B codes (k, n)
    }
    x[i] = v;
  }
}

// Per element: fails the harness's tolerance, or is not finite (every element, also in the bands
// the oracle left out: sumsq < 0). out: [0] failures, [1] first failing index (min), [2] worst
// err / bound (double bits).
__global__ void check_tolerance(const float* __restrict__ c, const double* __restrict__ ref,
                                const double* __restrict__ sumsq, long long n, int K, unsigned long long* out) {
  const double u = 5.9604644775390625e-08;  // 2^-24
  for (long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<long long>(gridDim.x) * blockDim.x) {
    const double x = c[i], r = ref[i];
    const bool checked = sumsq[i] >= 0;
    const double bound = checked ? 8.0 * sqrt(static_cast<double>(K)) * u * sqrt(sumsq[i]) + u * fabs(r) : 0.0;
    const double err = checked ? fabs(x - r) : 0.0;
    const bool bad = !isfinite(x) || err > bound;
    if (bad) {
      atomicAdd(&out[0], 1ull);
      atomicMin(&out[1], static_cast<unsigned long long>(i));
    }
    if (isfinite(x) && bound > 0)
      atomicMax(&out[2], static_cast<unsigned long long>(__double_as_longlong(err / bound)));
  }
}

struct Buffers {
  float *A = nullptr, *B = nullptr, *C = nullptr, *Cb = nullptr;
  size_t cap_a = 0, cap_b = 0, cap_c = 0;
  void ensure(size_t a, size_t b, size_t c) {
    auto grow = [](float*& p, size_t& cap, size_t want) {
      if (want <= cap) return;
      if (p) CUDA_CHECK(cudaFree(p));
      CUDA_CHECK(cudaMalloc(&p, want * sizeof(float)));
      cap = want;
    };
    grow(A, cap_a, a);
    grow(B, cap_b, b);
    size_t cc = cap_c;
    grow(C, cap_c, c);
    grow(Cb, cc, c);
  }
};

void sgemm_cublas(cublasHandle_t h, const float* A, const float* B, float* C, int M, int N, int K) {
  const float one = 1.0f, zero = 0.0f;  // row-major C = A B as column-major C^T = B^T A^T
  CUBLAS_CHECK(cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, N, M, K, &one, B, N, A, K, &zero, C, N));
}

struct Case {
  int M, N, K;
  Fill fill;
  bool timed;
  const char* note;
};

const Case kCases[] = {
    {1, 1, 1, Fill::uniform, false, ""},
    {1000, 1, 17, Fill::uniform, false, ""},
    {1, 1000, 17, Fill::uniform, false, ""},
    {17, 17, 17, Fill::uniform, false, ""},
    {127, 129, 65, Fill::uniform, false, ""},
    {257, 129, 65, Fill::uniform, false, ""},
    {64, 64, 63, Fill::uniform, false, ""},
    {33, 4097, 5, Fill::uniform, false, ""},
    {2048, 2048, 8, Fill::uniform, false, ""},
    {7, 3, 5, Fill::uniform, false, ""},
    {300, 1, 70000, Fill::uniform, false, ""},
    {19, 4, 100003, Fill::uniform, false, ""},
    {3, 2, 500000, Fill::uniform, false, ""},
    {35, 700, 2048, Fill::uniform, true, "other"},
    {1030, 16, 1028, Fill::uniform, true, "other"},
    {256, 256, 4096, Fill::wide_exponent, false, "wide-exponent"},
    {256, 256, 4096, Fill::split_tie, false, "split-tie"},
    {4096, 2048, 1024, Fill::uniform, true, "flagship"},
    {2048, 4096, 3072, Fill::uniform, true, "flagship"},
    {8192, 1024, 4096, Fill::uniform, true, "flagship"},
    {1024, 8192, 512, Fill::uniform, true, "flagship"},
    {3000, 1000, 2000, Fill::uniform, true, "flagship"},
    {4096, 4096, 4096, Fill::uniform, true, "other"},
    {512, 1500, 2048, Fill::uniform, true, "other"},
    {7680, 1500, 2560, Fill::uniform, true, "other"},
};

void fill_matrix(float* p, int rows, int cols, Fill f, unsigned seed, int K) {
  const long long n = static_cast<long long>(rows) * cols;
  fill<<<1024, 256>>>(p, n, cols, static_cast<int>(f), seed, K);
  CUDA_CHECK(cudaGetLastError());
}

// The twin of a WS variant on the case's inputs (b.A, b.B) into b.Cb: how many of the M x N outputs
// differ from b.C in their bits (NaN patterns included).
__global__ void count_differing(const unsigned* __restrict__ x, const unsigned* __restrict__ y, long long n,
                                unsigned long long* out) {
  for (long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<long long>(gridDim.x) * blockDim.x)
    if (x[i] != y[i]) atomicAdd(out, 1ull);
}
long long differing_words(const Variant& twin, Buffers& b, int M, int N, int K) {
  const long long n = static_cast<long long>(M) * N;
  CUDA_CHECK(cudaMemset(b.Cb, 0xFF, static_cast<size_t>(n) * 4));
  launch(twin, b.A, b.B, b.Cb, M, N, K, nullptr);
  CUDA_CHECK(cudaGetLastError());
  unsigned long long* count = nullptr;
  CUDA_CHECK(cudaMalloc(&count, sizeof *count));
  CUDA_CHECK(cudaMemset(count, 0, sizeof *count));
  count_differing<<<1024, 256>>>(reinterpret_cast<const unsigned*>(b.C), reinterpret_cast<const unsigned*>(b.Cb), n,
                                 count);
  CUDA_CHECK(cudaGetLastError());
  unsigned long long d = 0;
  CUDA_CHECK(cudaMemcpy(&d, count, sizeof d, cudaMemcpyDeviceToHost));
  CUDA_CHECK(cudaFree(count));
  return static_cast<long long>(d);
}

// ---- the probe ---------------------------------------------------------------------------------------

// One block: exact integers must come out exact; if not, the one-hot decode of which B element each
// output read. Returns true when exact.
bool probe(const Variant& v, Buffers& b) {
  const int M = 64 * v.wgm, N = v.wn * v.wgn, K = 2 * v.bk;
  b.ensure(static_cast<size_t>(M) * K, static_cast<size_t>(K) * N, static_cast<size_t>(M) * N);
  fill_matrix(b.A, M, K, Fill::small_int, 11u, K);
  fill_matrix(b.B, K, N, Fill::small_int, 12u, K);
  launch(v, b.A, b.B, b.C, M, N, K, nullptr);
  CUDA_CHECK(cudaGetLastError());
  CUDA_CHECK(cudaDeviceSynchronize());
  std::vector<float> A(static_cast<size_t>(M) * K), B(static_cast<size_t>(K) * N), C(static_cast<size_t>(M) * N);
  CUDA_CHECK(cudaMemcpy(A.data(), b.A, A.size() * 4, cudaMemcpyDeviceToHost));
  CUDA_CHECK(cudaMemcpy(B.data(), b.B, B.size() * 4, cudaMemcpyDeviceToHost));
  CUDA_CHECK(cudaMemcpy(C.data(), b.C, C.size() * 4, cudaMemcpyDeviceToHost));
  int wrong = 0;
  for (int i = 0; i < M; ++i)
    for (int j = 0; j < N; ++j) {
      double r = 0;
      for (int k = 0; k < K; ++k) r += static_cast<double>(A[static_cast<size_t>(i) * K + k]) * B[static_cast<size_t>(k) * N + j];
      const float c = C[static_cast<size_t>(i) * N + j];
      if (c != static_cast<float>(r)) {
        if (wrong < 8) std::printf("  probe: C[%d][%d] = %g, exact %g\n", i, j, c, r);
        ++wrong;
      }
    }
  if (wrong == 0) {
    std::printf("  probe %dx%dx%d, exact integers: exact\n", M, N, K);
    return true;
  }
  std::printf("  probe %dx%dx%d, exact integers: %d of %d outputs WRONG\n", M, N, K, wrong, M * N);
  // Diagnosis: A[i][k] = (k == i mod K), B[k][n] = 256 k + n + 1: C[i][n] should be B[i mod K][n].
  fill_matrix(b.A, M, K, Fill::one_hot_a, 0u, K);
  fill_matrix(b.B, K, N, Fill::coded_b, 0u, K);
  launch(v, b.A, b.B, b.C, M, N, K, nullptr);
  CUDA_CHECK(cudaGetLastError());
  CUDA_CHECK(cudaMemcpy(C.data(), b.C, C.size() * 4, cudaMemcpyDeviceToHost));
  std::printf("  one-hot decode (output (i, n) should read B[i mod %d][n]; shown: the (k, n) it read, or its value):\n", K);
  int shown = 0;
  for (int i = 0; i < M && shown < 24; i += (i < 16 ? 1 : 7))
    for (int n = 0; n < N && shown < 24; n += (n < 8 ? 1 : 29)) {
      const float c = C[static_cast<size_t>(i) * N + n];
      const int want_k = i % K;
      const double code = c - 1.0;
      const int k = static_cast<int>(std::floor(code / 256.0)), nn = static_cast<int>(code - 256.0 * k);
      if (c == static_cast<float>(256 * want_k + n + 1)) continue;
      if (code >= 0 && code == std::floor(code) && nn < 256)
        std::printf("    C[%d][%d]: read (k %d, n %d), want (k %d, n %d)\n", i, n, k, nn, want_k, n);
      else
        std::printf("    C[%d][%d] = %g (not one element), want (k %d, n %d)\n", i, n, c, want_k, n);
      ++shown;
    }
  return false;
}

// ---- timing ------------------------------------------------------------------------------------------

struct Timer {
  cudaEvent_t a, b;
  void* flush = nullptr;
  size_t flush_bytes = 0;
  unsigned count = 0;
  Timer() {
    CUDA_CHECK(cudaEventCreate(&a));
    CUDA_CHECK(cudaEventCreate(&b));
    int l2 = 0;
    CUDA_CHECK(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, 0));
    flush_bytes = std::max<size_t>(2 * static_cast<size_t>(l2), 8u << 20);
    CUDA_CHECK(cudaMalloc(&flush, flush_bytes));
  }
  template <class F>
  double median_ms(F run, int iters) {
    std::vector<float> ms = bench::event_times(a, b, iters, run, [&] {
      CUDA_CHECK(cudaMemsetAsync(flush, static_cast<int>(++count & 0xFF), flush_bytes));  // flush L2
    });
    CUDA_CHECK(cudaGetLastError());
    std::sort(ms.begin(), ms.end());
    return ms[ms.size() / 2];
  }
};

// ---- main ------------------------------------------------------------------------------------------

int usage() {
  std::fprintf(stderr, "usage: tf32_wgmma_check --list | --variant V [--iters N] [--quick]\n");
  return 2;
}

int main(int argc, char** argv) {
  int iters = 20;
  bool quick = false, list = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--list") list = true;
    else if (a == "--quick") quick = true;
    else if (a == "--variant" && i + 1 < argc) g_variant = std::atoi(argv[++i]);
    else if (a == "--iters" && i + 1 < argc) iters = std::max(1, std::atoi(argv[++i]));
    else return usage();
  }
  for (size_t i = 0; i < variants().size(); ++i)
    for (size_t j = 0; j < i; ++j)
      if (variants()[i].number == variants()[j].number) {
        std::printf("variant %d is registered twice\n", variants()[i].number);
        return 2;
      }
  if (list) {
    for (const Variant& x : variants())
      std::printf("%d %s WGM=%d,WGN=%d,WN=%d,BK=%d,STAGES=%d,KSTEP=%d,LAYOUT=%d,SWZ=%d,MINB=%d,DBUF=%d,AREG=%d,SPLITK=%d,"
                  "DEFER=%d,WS=%d\n",
                  x.number, x.label, x.wgm, x.wgn, x.wn, x.bk, x.stages, x.kstep, x.layout, x.swz, x.minb, x.dbuf,
                  x.areg, x.splitk, x.defer, x.ws);
    return 0;
  }
  if (find_variant(g_variant) == nullptr) return usage();
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::printf("no CUDA device\n");
    return 77;
  }
  cudaDeviceProp prop;
  CUDA_CHECK(cudaGetDeviceProperties(&prop, 0));
  if (prop.major != 9) {
    std::printf("%s is sm_%d%d: the wgmma kernel needs sm_90a\n", prop.name, prop.major, prop.minor);
    return 77;
  }
  const Variant& v = *find_variant(g_variant);
  // WS: its twin (the same sums without warp specialization), when built, must give the same bits.
  const Variant* twin = v.twin >= 0 ? find_variant(v.twin) : nullptr;
  for (const Variant* x : {&v, twin})
    if (x) CUDA_CHECK(cudaFuncSetAttribute(x->kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem_of(*x))));
  cudaFuncAttributes fa;
  CUDA_CHECK(cudaFuncGetAttributes(&fa, v.kernel));
  int per_sm = -1;
  if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, v.kernel, threads_of(v), smem_of(v)) != cudaSuccess) {
    per_sm = -1;
    cudaGetLastError();
  }
  std::printf("variant v%d: %s (WGM=%d WGN=%d WN=%d BK=%d STAGES=%d KSTEP=%d LAYOUT=%d SWZ=%d MINB=%d DBUF=%d AREG=%d "
              "SPLITK=%d DEFER=%d WS=%d) on %s\n",
              g_variant, v.label, v.wgm, v.wgn, v.wn, v.bk, v.stages, v.kstep, v.layout, v.swz, v.minb, v.dbuf, v.areg,
              v.splitk, v.defer, v.ws, prop.name);
  std::printf("  %d registers, %zu bytes local (spills), %zu bytes dynamic shared memory, %d threads, %d block(s) per SM\n",
              fa.numRegs, static_cast<size_t>(fa.localSizeBytes), smem_of(v), threads_of(v), per_sm);
  if (v.twin >= 0)
    std::printf("  twin: v%d %s\n", v.twin, twin ? "(its C must be the same bits on every case)" : "not built: no bit comparison");

  Buffers b;
  const bool exact = probe(v, b);

  cublasHandle_t h;
  CUBLAS_CHECK(cublasCreate(&h));
  CUBLAS_CHECK(cublasSetMathMode(h, CUBLAS_PEDANTIC_MATH));  // FP32, no TF32
  Timer timer;
  bench_precision::Oracle oracle;
  unsigned long long* tol = nullptr;
  CUDA_CHECK(cudaMalloc(&tol, 3 * sizeof(unsigned long long)));

  std::printf("  %-16s %-13s %8s %9s %10s %10s %10s %10s %7s %7s %9s %8s %8s %7s\n", "case MxNxK", "inputs", "verdict",
              "err/tol", "max e", "rms e", "cB max e", "cB rms e", "max/cB", "rms/cB", "ms", "TFLOP/s", "cB TF/s",
              "x cB");
  int failures = 0, twin_diff_cases = 0, twin_cases = 0;
  double worst_max = 0, worst_rms = 0, log_sum = 0;
  int timed = 0;
  std::string worst_case, shapes;
  for (const Case& c : kCases) {
    if (quick && (c.K > 5000 || (c.timed && c.M * static_cast<long long>(c.N) > 8000000))) continue;
    b.ensure(static_cast<size_t>(c.M) * c.K, static_cast<size_t>(c.K) * c.N, static_cast<size_t>(c.M) * c.N);
    const unsigned seed = static_cast<unsigned>(c.M * 31 + c.N * 17 + c.K);
    fill_matrix(b.A, c.M, c.K, c.fill, seed, c.K);
    fill_matrix(b.B, c.K, c.N, c.fill, seed + 1, c.K);
    CUDA_CHECK(cudaMemset(b.C, 0xFF, static_cast<size_t>(c.M) * c.N * 4));  // NaN: unwritten outputs fail
    // Above 2^32 multiply-adds the oracle computes one band of 16 rows in about 16 (above 2^35: 64;
    // the last band always): every element is still checked for NaN/Inf (unwritten outputs).
    const double macs = static_cast<double>(c.M) * c.N * c.K;
    const int band_step = macs > 34359738368.0 ? 64 : macs > 4294967296.0 ? 16 : 1;
    oracle.compute(b.A, b.B, c.M, c.N, c.K, nullptr, band_step);
    launch(v, b.A, b.B, b.C, c.M, c.N, c.K, nullptr);
    CUDA_CHECK(cudaGetLastError());
    CUDA_CHECK(cudaDeviceSynchronize());
    sgemm_cublas(h, b.A, b.B, b.Cb, c.M, c.N, c.K);
    CUDA_CHECK(cudaDeviceSynchronize());
    const unsigned long long init[3] = {0, ~0ull, 0};
    CUDA_CHECK(cudaMemcpy(tol, init, sizeof init, cudaMemcpyHostToDevice));
    const long long n = static_cast<long long>(c.M) * c.N;
    check_tolerance<<<1024, 256>>>(b.C, oracle.ref(), oracle.sumsq(), n, c.K, tol);
    CUDA_CHECK(cudaGetLastError());
    unsigned long long t[3];
    CUDA_CHECK(cudaMemcpy(t, tol, sizeof t, cudaMemcpyDeviceToHost));
    double worst_ratio;
    std::memcpy(&worst_ratio, &t[2], sizeof worst_ratio);
    const bench_precision::ErrorStats e = oracle.of(b.C), eb = oracle.of(b.Cb);
    const bool ok = t[0] == 0;
    if (twin) {  // after the checks, which read Cb (cuBLAS): the twin's C goes there
      const long long diff = differing_words(*twin, b, c.M, c.N, c.K);
      ++twin_cases;
      if (diff != 0) {
        ++twin_diff_cases;
        std::printf("  %dx%dx%d: %lld of %lld outputs differ from twin v%d's bits\n", c.M, c.N, c.K, diff,
                    static_cast<long long>(c.M) * c.N, twin->number);
      }
    }
    char shape[48];
    std::snprintf(shape, sizeof shape, "%dx%dx%d", c.M, c.N, c.K);
    const char* inputs = c.fill == Fill::wide_exponent ? "wide-exponent" : c.fill == Fill::split_tie ? "split-tie" : "uniform";
    const double rmax = eb.max > 0 ? e.max / eb.max : NAN, rrms = eb.rms > 0 ? e.rms / eb.rms : NAN;
    if (!ok) {
      ++failures;
      float got = 0;
      CUDA_CHECK(cudaMemcpy(&got, b.C + t[1], 4, cudaMemcpyDeviceToHost));
      std::printf("  %-16s %-13s WRONG: %llu of %lld outputs over the tolerance or not finite; first C[%llu][%llu] = %g\n",
                  shape, inputs, t[0], n, t[1] / c.N, t[1] % c.N, got);
    }
    if (c.K >= 64 && ok) {
      if (rmax > worst_max) worst_max = rmax, worst_case = shape;
      worst_rms = std::max(worst_rms, rrms);
    }
    double ms = NAN, cb_ms = NAN;
    if (c.timed && ok) {
      ms = timer.median_ms([&] { launch(v, b.A, b.B, b.C, c.M, c.N, c.K, nullptr); }, iters);
      cb_ms = timer.median_ms([&] { sgemm_cublas(h, b.A, b.B, b.Cb, c.M, c.N, c.K); }, iters);
      if (std::string(c.note) == "flagship") {
        log_sum += std::log(cb_ms / ms);
        ++timed;
      }
      char one[80];
      std::snprintf(one, sizeof one, "%s%s:%.3f", shapes.empty() ? "" : ",", shape, cb_ms / ms);
      shapes += one;
    }
    const double flop = 2.0 * c.M * c.N * static_cast<double>(c.K);
    std::printf("  %-16s %-13s %8s %9.3f %10.3e %10.3e %10.3e %10.3e %7.2f %7.2f %9.4f %8.2f %8.2f %7.3f%s%s\n", shape,
                inputs, ok ? "ok" : "WRONG", worst_ratio, e.max, e.rms, eb.max, eb.rms, rmax, rrms, ms, flop / ms / 1e9,
                flop / cb_ms / 1e9, cb_ms / ms, c.K < 64 ? "  (K < 64: not in the contract)" : "",
                band_step > 1 ? (band_step == 16 ? "  (errors: 1 row band in 16)" : "  (errors: 1 row band in 64)") : "");
    std::fflush(stdout);
  }
  const double geomean = timed ? std::exp(log_sum / timed) : NAN;
  char twin_text[64] = "-";
  if (twin)
    std::snprintf(twin_text, sizeof twin_text, "%s(v%d,%d/%d_cases_differ)", twin_diff_cases ? "NO" : "yes", twin->number,
                  twin_diff_cases, twin_cases);
  const bool contract = worst_max <= 2.0 && worst_rms <= 2.0;
  std::printf("SUMMARY v%d correct=%s probe=%s flagship_geomean_x_cublas=%.3f worst_max_ratio=%.2f (%s) "
              "worst_rms_ratio=%.2f contract=%s regs=%d spill_bytes=%zu smem=%zu per_sm=%d twin_same_bits=%s x_cublas=%s "
              "label=\"%s\"\n",
              g_variant, failures == 0 ? "yes" : "NO", exact ? "exact" : "WRONG", geomean, worst_max,
              worst_case.c_str(), worst_rms, contract ? "met" : "BROKEN", fa.numRegs,
              static_cast<size_t>(fa.localSizeBytes), smem_of(v), per_sm, twin_text, shapes.empty() ? "-" : shapes.c_str(),
              v.label);
  CUBLAS_CHECK(cublasDestroy(h));
  return failures == 0 && exact && contract && twin_diff_cases == 0 ? 0 : 1;
}

// sgemm_bench --precision: accuracy against an FP64 oracle on every element, cuBLAS in
// CUBLAS_COMPUTE_32F_FAST_TF32 mode (single-pass TF32: faster, less accurate) as an extra
// contender, and the tensor-core ceilings beside the FP32 one (see bench/README.md, "Precision").
// Included by sgemm_bench.cu after its CUDA_CHECK / CUBLAS_CHECK macros.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

namespace bench_precision {

// Whether band b (rows 16 b .. 16 b + 15) of `bands` is computed when one band in about `step` is.
__host__ __device__ inline bool oracle_band(unsigned b, unsigned bands, unsigned step) {
  return step <= 1 || b + 1 == bands || ((b * 0x9E3779B1u) >> 16) % step == 0;
}

// ref[i*N + j] = sum_k A[i,k] * B[k,j] and sumsq[i*N + j] = sum_k (A[i,k] * B[k,j])^2, in double
// (each product of two floats is exact in double), row-major. 16 x 16 tiles through shared memory.
// band_step > 1: only the bands of 16 rows that oracle_band() picks (about one in band_step, the
// last always) are computed, the others get ref 0 and sumsq -1 (every check skips them): for
// shapes where the full oracle would take longer than the kernels it checks.
__global__ void fp64_oracle(const float* __restrict__ A, const float* __restrict__ B, double* __restrict__ ref,
                            double* __restrict__ sumsq, int M, int N, int K, int band_step = 1) {
  __shared__ double sa[16][17], sb[16][17];
  const int row = blockIdx.y * 16 + threadIdx.y, col = blockIdx.x * 16 + threadIdx.x;
  if (!oracle_band(blockIdx.y, gridDim.y, static_cast<unsigned>(band_step))) {  // uniform per block
    if (row < M && col < N) {
      ref[static_cast<size_t>(row) * N + col] = 0.0;
      sumsq[static_cast<size_t>(row) * N + col] = -1.0;
    }
    return;
  }
  double acc = 0, sq = 0;
  for (int k0 = 0; k0 < K; k0 += 16) {
    const int ka = k0 + threadIdx.x, kb = k0 + threadIdx.y;
    sa[threadIdx.y][threadIdx.x] = row < M && ka < K ? static_cast<double>(A[static_cast<size_t>(row) * K + ka]) : 0.0;
    sb[threadIdx.y][threadIdx.x] = kb < K && col < N ? static_cast<double>(B[static_cast<size_t>(kb) * N + col]) : 0.0;
    __syncthreads();
#pragma unroll
    for (int k = 0; k < 16; ++k) {
      const double p = sa[threadIdx.y][k] * sb[k][threadIdx.x];
      acc += p;
      sq += p * p;
    }
    __syncthreads();
  }
  if (row < M && col < N) {
    ref[static_cast<size_t>(row) * N + col] = acc;
    sumsq[static_cast<size_t>(row) * N + col] = sq;
  }
}

// e = |c - ref| / sqrt(sumsq) over the elements with sumsq > 0 (non-finite c: counted in [3]).
// out: [0] elements, [1] max e (double bits: e >= 0, so integer order is double order), [2] sum of
// e^2 (a double), [3] non-finite results.
__global__ void error_stats(const float* __restrict__ c, const double* __restrict__ ref,
                            const double* __restrict__ sumsq, long long n, unsigned long long* out) {
  double mx = 0, s2 = 0;
  unsigned long long cnt = 0, bad = 0;
  for (long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<long long>(gridDim.x) * blockDim.x) {
    if (!(sumsq[i] > 0)) continue;
    const double x = c[i];
    if (!isfinite(x)) {
      ++bad;
      continue;
    }
    const double e = fabs(x - ref[i]) / sqrt(sumsq[i]);
    mx = fmax(mx, e);
    s2 += e * e;
    ++cnt;
  }
  for (int o = 16; o > 0; o >>= 1) {
    mx = fmax(mx, __shfl_xor_sync(0xffffffffu, mx, o));
    s2 += __shfl_xor_sync(0xffffffffu, s2, o);
    cnt += __shfl_xor_sync(0xffffffffu, cnt, o);
    bad += __shfl_xor_sync(0xffffffffu, bad, o);
  }
  if ((threadIdx.x & 31) == 0) {
    atomicAdd(&out[0], cnt);
    atomicMax(&out[1], static_cast<unsigned long long>(__double_as_longlong(mx)));
    atomicAdd(reinterpret_cast<double*>(&out[2]), s2);
    atomicAdd(&out[3], bad);
  }
}

// Max and RMS of e (NaN until measured); nonfinite: results that were NaN or Inf.
struct ErrorStats {
  double max = NAN, rms = NAN;
  long long elements = 0, nonfinite = 0;
  bool measured() const { return elements > 0 || nonfinite > 0; }
};

// The FP64 oracle of one case, on the device; of() measures a result against it.
class Oracle {
 public:
  ~Oracle() { release(); }
  // band_step: see fp64_oracle (1: every element).
  void compute(const float* A, const float* B, long long M, long long N, long long K, cudaStream_t s,
               int band_step = 1) {
    release();
    n_ = M * N;
    CUDA_CHECK(cudaMalloc(&ref_, static_cast<size_t>(n_) * sizeof(double)));
    CUDA_CHECK(cudaMalloc(&sumsq_, static_cast<size_t>(n_) * sizeof(double)));
    CUDA_CHECK(cudaMalloc(&stats_, 4 * sizeof(unsigned long long)));
    const dim3 grid(static_cast<unsigned>((N + 15) / 16), static_cast<unsigned>((M + 15) / 16));
    fp64_oracle<<<grid, dim3(16, 16), 0, s>>>(A, B, ref_, sumsq_, static_cast<int>(M), static_cast<int>(N),
                                              static_cast<int>(K), band_step);
    CUDA_CHECK(cudaGetLastError());
    stream_ = s;
  }
  // The oracle's values on the device (M * N each, row-major), valid until the next compute().
  const double* ref() const { return ref_; }
  const double* sumsq() const { return sumsq_; }
  ErrorStats of(const float* C) const {
    unsigned long long h[4] = {0, 0, 0, 0};
    CUDA_CHECK(cudaMemsetAsync(stats_, 0, sizeof h, stream_));
    error_stats<<<1024, 256, 0, stream_>>>(C, ref_, sumsq_, n_, stats_);
    CUDA_CHECK(cudaGetLastError());
    CUDA_CHECK(cudaMemcpyAsync(h, stats_, sizeof h, cudaMemcpyDeviceToHost, stream_));
    CUDA_CHECK(cudaStreamSynchronize(stream_));
    ErrorStats e;
    e.elements = static_cast<long long>(h[0]);
    e.nonfinite = static_cast<long long>(h[3]);
    if (h[0]) {
      double s2 = 0;
      std::memcpy(&e.max, &h[1], sizeof(double));
      std::memcpy(&s2, &h[2], sizeof(double));
      e.rms = std::sqrt(s2 / static_cast<double>(h[0]));
    }
    if (e.nonfinite) e.max = e.rms = INFINITY;
    return e;
  }

 private:
  void release() {
    if (ref_) cudaFree(ref_);
    if (sumsq_) cudaFree(sumsq_);
    if (stats_) cudaFree(stats_);
    ref_ = sumsq_ = nullptr;
    stats_ = nullptr;
  }
  double *ref_ = nullptr, *sumsq_ = nullptr;
  unsigned long long* stats_ = nullptr;
  long long n_ = 0;
  cudaStream_t stream_ = nullptr;
};

// Dense TF32 tensor-core FLOP per clock per SM (2 per FMA), from NVIDIA's datasheets: A100 (8.0)
// 156 TFLOP/s = 108 SMs x 1024 x 1410 MHz; H100/H200 (9.0) 494.7 TFLOP/s = 132 SMs x 2048 x 1830 MHz.
// Others: assumed 1024, and the output says so.
int tf32_flop_per_clock_per_sm(int major, int minor, bool* known) {
  *known = true;
  if (major == 8 && minor == 0) return 1024;
  if (major == 9 && minor == 0) return 2048;
  *known = false;
  return 1024;
}

// C = A * B (row-major) through cublasGemmEx with CUBLAS_COMPUTE_32F_FAST_TF32 (the operands rounded
// to TF32 once), on a handle in CUBLAS_DEFAULT_MATH. Same column-major trick as cublasSgemm.
void gemm_fast_tf32(cublasHandle_t h, const float* A, const float* B, float* C, long long M, long long N,
                    long long K) {
  const float alpha = 1.0f, beta = 0.0f;
  const int m = static_cast<int>(M), n = static_cast<int>(N), k = static_cast<int>(K);
  CUBLAS_CHECK(cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, n, m, k, &alpha, B, CUDA_R_32F, n, A, CUDA_R_32F, k, &beta,
                            C, CUDA_R_32F, n, CUBLAS_COMPUTE_32F_FAST_TF32, CUBLAS_GEMM_DEFAULT));
}

// One contender's line of the precision table.
struct Row {
  std::string who;
  double ms = 0;           // median
  double tflops = 0;       // 2MNK / ms
  double ceiling = 0;      // the ceiling its arithmetic runs against (TFLOP/s)
  const char* ceiling_name = "";
  ErrorStats err;
};

// The precision table of one case: time, TFLOP/s, fraction of its ceiling and of the FP32 one, ratio
// to cuBLAS FP32 (time), max and RMS e, and their ratio to cuBLAS FP32's (the 2x contract of
// docs/evaluation.md). rows[0] is cuBLAS FP32.
void print_rows(const std::string& shape, const std::vector<Row>& rows, double fp32_peak) {
  const Row& base = rows.front();
  for (const Row& r : rows) {
    const double rmax = base.err.max > 0 ? r.err.max / base.err.max : NAN;
    const double rrms = base.err.rms > 0 ? r.err.rms / base.err.rms : NAN;
    std::printf("  %-16s %-12s %9.4f %8.2f %6.1f%% %-6s %6.1f%% %7.3f  %10.3e %10.3e %7.2f %7.2f\n", shape.c_str(),
                r.who.c_str(), r.ms, r.tflops, r.ceiling > 0 ? 100.0 * r.tflops / r.ceiling : NAN, r.ceiling_name,
                100.0 * r.tflops / fp32_peak, r.ms > 0 ? base.ms / r.ms : NAN, r.err.max, r.err.rms, rmax, rrms);
  }
}
void print_header(double fp32_peak, double tf32_peak, bool tf32_known, int clock_khz) {
  std::printf("\nprecision: every element against an FP64 oracle (GPU), e = |c - ref| / sqrt(sum_k (a_ik b_kj)^2);"
              " max and RMS of e, and their ratio to cuBLAS FP32's (contract: <= 2)\n");
  std::printf("  ceilings at %.0f MHz: FP32 %.1f TFLOP/s; TF32 tensor (dense) %.1f%s; split TF32, 3 products per"
              " FLOP, %.1f (\"fp32\", \"tf32\", \"3xtf32\" below)\n",
              clock_khz / 1e3, fp32_peak, tf32_peak, tf32_known ? "" : " (ASSUMED rate)", tf32_peak / 3);
  std::printf("  %-16s %-12s %9s %8s %7s %-6s %7s %7s  %10s %10s %7s %7s\n", "case MxNxK", "who", "ms", "TFLOP/s",
              "%ceil", "ceil", "%fp32", "speedup", "max e", "rms e", "max/cB", "rms/cB");
}

}  // namespace bench_precision

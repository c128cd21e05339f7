// The worker's built-in kernels: their CUDA C++ source, compiled with NVRTC
// for the device when the worker starts (Worker::ensure_context). Shared-memory
// poisoning, the GEMM error-bound scale, the on-GPU output screen, the GEMM
// error statistics and the buffer diff the checks queue behind a launch
// (worker_checks.cpp).
#include "eval/worker.h"
#include "eval/worker_impl.h"

namespace kopt::eval {
namespace detail {

// ---------------------------------------------------------------------------
// Built-in kernels, compiled with NVRTC for the device at start-up.
// ---------------------------------------------------------------------------
constexpr const char* kBuiltinSource = R"(
// Fills this block's dynamic shared memory with 0xFF bytes (NaN as float), so a
// candidate that reads shared memory it never wrote sees NaN, not a lucky value
// left behind by an earlier kernel.
extern "C" __global__ void kopt_poison_shared(unsigned int words) {
  extern __shared__ unsigned int kopt_smem[];
  for (unsigned int i = threadIdx.x; i < words; i += blockDim.x) kopt_smem[i] = 0xFFFFFFFFu;
  __syncthreads();
  // Read back so the stores cannot be elided.
  if (threadIdx.x == 0 && kopt_smem[words - 1] != 0xFFFFFFFFu) __trap();
}

// S[i*N + j] = sum_k (A[i*K + k] * B[k*N + j])^2 in double (row-major),
// the scale of the K-aware GEMM error bound. 16x16 shared-memory tiles.
extern "C" __global__ void kopt_gemm_sumsq(const float* A, const float* B, double* S,
                                           int M, int N, int K) {
  __shared__ double sa[16][16];
  __shared__ double sb[16][16];
  const int row = blockIdx.y * 16 + threadIdx.y;
  const int col = blockIdx.x * 16 + threadIdx.x;
  double acc = 0.0;
  for (int k0 = 0; k0 < K; k0 += 16) {
    const int ka = k0 + threadIdx.x, kb = k0 + threadIdx.y;
    double a = (row < M && ka < K) ? (double)A[(long long)row * K + ka] : 0.0;
    double b = (kb < K && col < N) ? (double)B[(long long)kb * N + col] : 0.0;
    sa[threadIdx.y][threadIdx.x] = a * a;
    sb[threadIdx.y][threadIdx.x] = b * b;
    __syncthreads();
    for (int k = 0; k < 16; ++k) acc += sa[threadIdx.y][k] * sb[k][threadIdx.x];
    __syncthreads();
  }
  if (row < M && col < N) S[(long long)row * N + col] = acc;
}

// Screens an output against the reference on the GPU with the rules of the
// host comparator (validate.cpp, compare_impl and compare_allclose), in double
// precision with explicitly rounded operations (no FMA contraction), so that
// it accepts exactly what the host accepts; each element is converted to
// double as the host converts it (exactly for every type but 64-bit integers
// beyond 2^53, rounded to nearest there as on the host). The host comparator
// still runs whenever this reports a failure (for the message) or cannot apply
// (half types). One instance per element type: kopt_screen_<dtype>.
// stats: [0] failing elements, [1] max |out - ref| over finite pairs and
// [2] max |out - ref| / allowed (double bits; both are >= 0, so unsigned
// integer order is double order), [3] first failing index (~0 when none).
// allowed == nullptr: the allclose bound atol + rtol * |ref|.
// l2 != nullptr (a rel_l2 tolerance): l2[0] += (out - ref)^2 and l2[1] +=
// ref^2 over the elements whose reference is finite, as doubles (atomicAdd:
// the last bits depend on the order in which the blocks finish, so the host
// accepts the ratio only with a margin, Worker::screen_outcome).
__device__ __forceinline__ double kopt_inf() { return __longlong_as_double(0x7ff0000000000000ll); }
template <typename T>
__device__ __forceinline__ void kopt_screen(const T* out, const T* ref, const double* allowed, double atol,
                                            double rtol, long long n, unsigned long long* stats, double* l2) {
  double max_err = 0.0, max_ratio = 0.0, num = 0.0, den = 0.0;
  unsigned long long fails = 0, first = ~0ull;
  const long long stride = (long long)gridDim.x * blockDim.x;
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
    const double x = (double)out[i], r = (double)ref[i];
    bool bad;
    if (isnan(r)) {
      bad = !isnan(x);
    } else if (isinf(r)) {
      bad = x != r;
    } else if (!isfinite(x)) {
      bad = true;
    } else {
      const double d = __dadd_rn(x, -r);
      const double err = fabs(d);
      const double lim = allowed ? allowed[i] : __dadd_rn(atol, __dmul_rn(rtol, fabs(r)));
      const double ratio = lim > 0.0 ? __ddiv_rn(err, lim) : (err > 0.0 ? kopt_inf() : 0.0);
      max_err = fmax(max_err, err);
      max_ratio = fmax(max_ratio, ratio);
      bad = err > lim;
      if (l2) {
        num = __dadd_rn(num, __dmul_rn(d, d));
        den = __dadd_rn(den, __dmul_rn(r, r));
      }
    }
    if (bad) {
      ++fails;
      if ((unsigned long long)i < first) first = (unsigned long long)i;
    }
  }
  for (int o = 16; o > 0; o >>= 1) {
    max_err = fmax(max_err, __shfl_xor_sync(0xffffffffu, max_err, o));
    max_ratio = fmax(max_ratio, __shfl_xor_sync(0xffffffffu, max_ratio, o));
    num = __dadd_rn(num, __shfl_xor_sync(0xffffffffu, num, o));
    den = __dadd_rn(den, __shfl_xor_sync(0xffffffffu, den, o));
    fails += __shfl_xor_sync(0xffffffffu, fails, o);
    const unsigned long long f = __shfl_xor_sync(0xffffffffu, first, o);
    first = f < first ? f : first;
  }
  if ((threadIdx.x & 31) == 0) {
    if (fails) {
      atomicAdd(&stats[0], fails);
      atomicMin(&stats[3], first);
    }
    atomicMax(&stats[1], (unsigned long long)__double_as_longlong(max_err));
    atomicMax(&stats[2], (unsigned long long)__double_as_longlong(max_ratio));
    if (l2) {
      atomicAdd(&l2[0], num);
      atomicAdd(&l2[1], den);
    }
  }
}
#define KOPT_SCREEN(name, T)                                                                          \
  extern "C" __global__ void kopt_screen_##name(const T* out, const T* ref, const double* allowed,    \
                                                double atol, double rtol, long long n,                \
                                                unsigned long long* stats, double* l2) {              \
    kopt_screen(out, ref, allowed, atol, rtol, n, stats, l2);                                         \
  }
KOPT_SCREEN(f32, float)
KOPT_SCREEN(f64, double)
KOPT_SCREEN(i8, signed char)
KOPT_SCREEN(u8, unsigned char)
KOPT_SCREEN(i32, int)
KOPT_SCREEN(u32, unsigned int)
KOPT_SCREEN(i64, long long)
KOPT_SCREEN(u64, unsigned long long)

// Accuracy of a float32 output with a GEMM tolerance (CaseResult::rel_error_max and
// rel_error_rms): e = |out - ref| / sqrt(sumsq) over the elements where sumsq > 0 and both values
// are finite (sumsq: kopt_gemm_sumsq's sum_k (a_ik * b_kj)^2). stats: [0] elements counted, [1] max e
// (double bits; e >= 0, so unsigned integer order is double order), [2] the sum of e^2 as a double
// (atomicAdd: its last bits depend on the order in which the blocks finish).
extern "C" __global__ void kopt_gemm_error_stats(const float* out, const float* ref, const double* sumsq,
                                                 long long n, unsigned long long* stats) {
  double max_e = 0.0, sum_e2 = 0.0;
  unsigned long long count = 0;
  const long long stride = (long long)gridDim.x * blockDim.x;
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
    const double x = (double)out[i], r = (double)ref[i], s = sumsq[i];
    if (!(s > 0.0) || !isfinite(x) || !isfinite(r)) continue;
    const double e = __ddiv_rn(fabs(__dadd_rn(x, -r)), __dsqrt_rn(s));
    max_e = fmax(max_e, e);
    sum_e2 = __dadd_rn(sum_e2, __dmul_rn(e, e));
    ++count;
  }
  for (int o = 16; o > 0; o >>= 1) {
    max_e = fmax(max_e, __shfl_xor_sync(0xffffffffu, max_e, o));
    sum_e2 = __dadd_rn(sum_e2, __shfl_xor_sync(0xffffffffu, sum_e2, o));
    count += __shfl_xor_sync(0xffffffffu, count, o);
  }
  if ((threadIdx.x & 31) == 0 && count) {
    atomicAdd(&stats[0], count);
    atomicMax(&stats[1], (unsigned long long)__double_as_longlong(max_e));
    atomicAdd(reinterpret_cast<double*>(&stats[2]), sum_e2);
  }
}

// First index at which two buffers differ (words of 4 bytes, or bytes), by
// atomicMin into *first (initialised to ~0 by the caller).
template <typename T>
__device__ __forceinline__ void kopt_first_diff(const T* a, const T* b, long long n, unsigned long long* first) {
  const long long stride = (long long)gridDim.x * blockDim.x;
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
    if (a[i] != b[i]) {
      atomicMin(first, (unsigned long long)i);
      return;
    }
}
extern "C" __global__ void kopt_first_diff_u32(const unsigned int* a, const unsigned int* b, long long n,
                                               unsigned long long* first) {
  kopt_first_diff(a, b, n, first);
}
extern "C" __global__ void kopt_first_diff_u8(const unsigned char* a, const unsigned char* b, long long n,
                                              unsigned long long* first) {
  kopt_first_diff(a, b, n, first);
}
)";

}  // namespace detail

const char* builtin_kernels_source() { return detail::kBuiltinSource; }

}  // namespace kopt::eval

// Row-wise softmax, tunable template of the softmax workload (templates/softmax/softmax.json):
//   Y[r, c] = exp(X[r, c] - max_r) / sum_c' exp(X[r, c'] - max_r),  X, Y row-major float32 [ROWS, COLS].
//
// Tuning parameters (-D NAME=VALUE; the defaults below are the spec's first values):
//   THREADS         threads per block: 32..1024, a multiple of 32.
//   ROWS_PER_BLOCK  rows per block. Each row is owned by a "row group" of G = THREADS / ROWS_PER_BLOCK
//                   consecutive threads: G < 32 a sub-warp group (G a power of two, >= 8 in the spec),
//                   G == 32 one warp per row, G > 32 G/32 warps per row.
//   VEC             1, 2 or 4: floats per global access (float, float2, float4) on the vector path.
//   UNROLL          chunk loads issued back to back per thread before they are consumed (>= 1).
//   ONLINE          0: three passes over the row (max, sum, write);
//                   1: two passes (running max and rescaled sum in one pass, then write).
//
// Mapping. Block b, thread t: group g = t / G, member l = t % G, row = b * ROWS_PER_BLOCK + g.
// The launch is grid.x = ceil_div(ROWS, ROWS_PER_BLOCK), block.x = THREADS, so every row in
// [0, ROWS) is owned by exactly one group; groups of the last block with row >= ROWS are "idle":
// they take part in the shuffles and barriers (all threads of a block run the same reduction code,
// so every __shfl_xor_sync with the full mask and every __syncthreads is reached by all threads),
// but they see a row of 0 columns, so they read and write nothing.
// A row is cut into chunks of W consecutive floats (W = VEC on the vector path, 1 otherwise);
// member l visits chunks l, l + G, l + 2G, ... < COLS / W, UNROLL at a time while UNROLL of them
// are left, then one at a time.
//
// Vector path: taken only when VEC > 1, COLS % VEC == 0 and X and Y are VEC*4-byte aligned
// (checked at run time; the harness gives 256-byte aligned buffers). Then every row starts at a
// multiple of VEC floats and chunk k covers floats [k*VEC, k*VEC + VEC) with k < COLS / VEC, so a
// float2/float4 access is aligned and lies inside the row. Otherwise the scalar path (W = 1) runs.
// The choice depends only on the kernel arguments, so it is uniform across the grid.
//
// Why no out-of-bounds access and no unwritten output: every global address is
// X/Y + row * COLS + k * W + i with row < ROWS, k < COLS / W, i < W (row offsets in size_t, chunk
// indices in unsigned, so nothing overflows for any int32 ROWS, COLS >= 1). The write pass visits
// every chunk of every row (the chunk sets of the G members partition [0, COLS / W)) and
// W * (COLS / W) == COLS on both paths.
// Shared memory: only when G > 32 (several warps per row). Lane 0 of every warp of the block
// writes its warp's partial to red[warp] before a __syncthreads; after it, each thread reads the
// G/32 slots of its own group's warps, all written. Each shared array is written once per block
// (the ONLINE=0 max and sum use different arrays), so no second barrier is needed.
//
// Numerics (tolerance allclose rtol 1e-5, atol 1e-7): max is exact; each exp(x - max) is a float
// expf (<= 2 ulp); the per-thread sums and the cross-thread reductions are in double (a float
// accumulator over 32768 terms drifts ~1e-4). ONLINE rescales its running sum with a double
// exp, so its error does not grow with the number of rescales. All reductions combine in a fixed
// order, so results are bitwise reproducible.
//
// kopt:entry softmax_tuned
// kopt:grid ceil_div(ROWS, ROWS_PER_BLOCK), 1, 1
// kopt:block THREADS, 1, 1
// kopt:shared 0

#ifndef THREADS
#define THREADS 32
#endif
#ifndef ROWS_PER_BLOCK
#define ROWS_PER_BLOCK 1
#endif
#ifndef VEC
#define VEC 1
#endif
#ifndef UNROLL
#define UNROLL 1
#endif
#ifndef ONLINE
#define ONLINE 0
#endif

namespace softmax_tuned_detail {

constexpr int kThreads = THREADS;
constexpr int kRowsPerBlock = ROWS_PER_BLOCK;
constexpr int kVec = VEC;
constexpr int kUnroll = UNROLL;
constexpr int kGroup = kThreads / kRowsPerBlock;             // threads per row (G)
constexpr int kWarps = kThreads / 32;                         // warps per block
constexpr int kShuffleSpan = kGroup < 32 ? kGroup : 32;      // lanes reduced by shuffles
constexpr int kWarpsPerGroup = kGroup > 32 ? kGroup / 32 : 1;
constexpr unsigned kFullMask = 0xffffffffu;

static_assert(kThreads >= 32 && kThreads <= 1024, "THREADS must be in 32..1024");
static_assert(kThreads % 32 == 0, "THREADS must be a multiple of 32 (whole warps: full-mask shuffles)");
static_assert(kRowsPerBlock >= 1 && kThreads % kRowsPerBlock == 0,
              "THREADS must be a multiple of ROWS_PER_BLOCK (equal row groups)");
static_assert(kGroup % 32 == 0 || (kGroup & (kGroup - 1)) == 0,
              "THREADS / ROWS_PER_BLOCK must be a multiple of 32 or a power of two below 32 "
              "(xor shuffles must stay inside an aligned group)");
static_assert(kVec == 1 || kVec == 2 || kVec == 4, "VEC must be 1, 2 or 4");
static_assert(kUnroll >= 1, "UNROLL must be >= 1");
static_assert(ONLINE == 0 || ONLINE == 1, "ONLINE must be 0 or 1");

__device__ __forceinline__ float neg_inf() { return __int_as_float(0xff800000); }

template <int W>
__device__ __forceinline__ void load_chunk(const float* __restrict__ p, float (&v)[W]) {
  if constexpr (W == 4) {
    const float4 t = __ldg(reinterpret_cast<const float4*>(p));
    v[0] = t.x; v[1] = t.y; v[2] = t.z; v[3] = t.w;
  } else if constexpr (W == 2) {
    const float2 t = __ldg(reinterpret_cast<const float2*>(p));
    v[0] = t.x; v[1] = t.y;
  } else {
    v[0] = __ldg(p);
  }
}

template <int W>
__device__ __forceinline__ void store_chunk(float* __restrict__ p, const float (&v)[W]) {
  if constexpr (W == 4) {
    *reinterpret_cast<float4*>(p) = make_float4(v[0], v[1], v[2], v[3]);
  } else if constexpr (W == 2) {
    *reinterpret_cast<float2*>(p) = make_float2(v[0], v[1]);
  } else {
    p[0] = v[0];
  }
}

// Calls f(k, v) for the chunks k = l, l + G, ... < nchunks of the row at x, in increasing k;
// v holds x[k*W .. k*W + W). Loads of UNROLL chunks are issued before any is consumed.
template <int W, typename F>
__device__ __forceinline__ void for_each_chunk(const float* __restrict__ x, unsigned nchunks,
                                               unsigned l, F&& f) {
  unsigned k = l;
  constexpr unsigned kSpan = (unsigned)(kUnroll - 1) * kGroup;  // last chunk of a batch is k + kSpan
  if (nchunks > kSpan) {
    // k + kSpan < nchunks <= 2^31 - 1: no unsigned wrap-around (k + kUnroll*kGroup < 2^32).
    for (; k < nchunks - kSpan; k += (unsigned)kUnroll * kGroup) {
      float v[kUnroll][W];
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) load_chunk<W>(x + (size_t)(k + u * kGroup) * W, v[u]);
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) f(k + u * kGroup, v[u]);
    }
  }
  for (; k < nchunks; k += kGroup) {
    float v[W];
    load_chunk<W>(x + (size_t)k * W, v);
    f(k, v);
  }
}

// Reductions over a row group. Every thread of the block must call them (uniform control flow).
// Xor shuffles with offsets < kShuffleSpan stay inside the aligned group of kShuffleSpan lanes.
__device__ __forceinline__ float group_max(float v, float* red) {
#pragma unroll
  for (int off = kShuffleSpan / 2; off > 0; off >>= 1)
    v = fmaxf(v, __shfl_xor_sync(kFullMask, v, off));
  if constexpr (kWarpsPerGroup > 1) {
    if (threadIdx.x % 32 == 0) red[threadIdx.x / 32] = v;
    __syncthreads();
    const int first = (threadIdx.x / kGroup) * kWarpsPerGroup;
    v = red[first];
#pragma unroll
    for (int i = 1; i < kWarpsPerGroup; ++i) v = fmaxf(v, red[first + i]);
  }
  return v;
}

__device__ __forceinline__ double group_sum(double v, double* red) {
#pragma unroll
  for (int off = kShuffleSpan / 2; off > 0; off >>= 1) v += __shfl_xor_sync(kFullMask, v, off);
  if constexpr (kWarpsPerGroup > 1) {
    if (threadIdx.x % 32 == 0) red[threadIdx.x / 32] = v;
    __syncthreads();
    const int first = (threadIdx.x / kGroup) * kWarpsPerGroup;
    v = red[first];
#pragma unroll
    for (int i = 1; i < kWarpsPerGroup; ++i) v += red[first + i];
  }
  return v;
}

// (max, sum of exp(x - max)) pairs; combine is commutative bit for bit. A pair with no elements
// is (-inf, 0): the m == mx tests keep (-inf) - (-inf) = NaN out of the exp.
__device__ __forceinline__ void combine(float& m, double& s, float mb, double sb) {
  const float mx = fmaxf(m, mb);
  const double sa = (m == mx) ? s : s * exp((double)m - (double)mx);
  const double sc = (mb == mx) ? sb : sb * exp((double)mb - (double)mx);
  m = mx;
  s = sa + sc;
}

__device__ __forceinline__ void group_online(float& m, double& s, float* red_m, double* red_s) {
#pragma unroll
  for (int off = kShuffleSpan / 2; off > 0; off >>= 1) {
    const float mb = __shfl_xor_sync(kFullMask, m, off);
    const double sb = __shfl_xor_sync(kFullMask, s, off);
    combine(m, s, mb, sb);
  }
  if constexpr (kWarpsPerGroup > 1) {
    if (threadIdx.x % 32 == 0) {
      red_m[threadIdx.x / 32] = m;
      red_s[threadIdx.x / 32] = s;
    }
    __syncthreads();
    const int first = (threadIdx.x / kGroup) * kWarpsPerGroup;
    m = red_m[first];
    s = red_s[first];
#pragma unroll
    for (int i = 1; i < kWarpsPerGroup; ++i) combine(m, s, red_m[first + i], red_s[first + i]);
  }
}

// One row (cols == 0 for idle groups) with chunk width W; COLS % W == 0 on this path.
template <int W>
__device__ __forceinline__ void softmax_row(const float* __restrict__ x, float* __restrict__ y,
                                            int cols, unsigned l, float* red_f, double* red_d) {
  const unsigned nchunks = (unsigned)cols / W;
  float m = neg_inf();
  double s = 0.0;
#if ONLINE
  for_each_chunk<W>(x, nchunks, l, [&](unsigned, const float(&v)[W]) {
    float cm = v[0];
#pragma unroll
    for (int i = 1; i < W; ++i) cm = fmaxf(cm, v[i]);
    if (cm > m) {  // new running max: rescale the sum (s == 0 while m == -inf, exp(-inf) == 0)
      s *= exp((double)m - (double)cm);
      m = cm;
    }
    float cs = 0.0f;
#pragma unroll
    for (int i = 0; i < W; ++i) cs += expf(v[i] - m);
    s += (double)cs;
  });
  group_online(m, s, red_f, red_d);
#else
  for_each_chunk<W>(x, nchunks, l, [&](unsigned, const float(&v)[W]) {
#pragma unroll
    for (int i = 0; i < W; ++i) m = fmaxf(m, v[i]);
  });
  m = group_max(m, red_f);
  for_each_chunk<W>(x, nchunks, l, [&](unsigned, const float(&v)[W]) {
    float cs = 0.0f;
#pragma unroll
    for (int i = 0; i < W; ++i) cs += expf(v[i] - m);
    s += (double)cs;
  });
  s = group_sum(s, red_d);
#endif
  // Working rows have s >= 1 (the max element contributes exp(0) = 1); idle rows write nothing.
  const float inv = (float)(1.0 / s);
  for_each_chunk<W>(x, nchunks, l, [&](unsigned k, const float(&v)[W]) {
    float o[W];
#pragma unroll
    for (int i = 0; i < W; ++i) o[i] = expf(v[i] - m) * inv;
    store_chunk<W>(y + (size_t)k * W, o);
  });
}

}  // namespace softmax_tuned_detail

extern "C" __global__ void __launch_bounds__(THREADS)
softmax_tuned(const float* __restrict__ X, float* __restrict__ Y, int ROWS, int COLS) {
  using namespace softmax_tuned_detail;
  __shared__ float red_f[kWarps];   // used only when kWarpsPerGroup > 1
  __shared__ double red_d[kWarps];

  const unsigned g = threadIdx.x / kGroup;
  const unsigned l = threadIdx.x % kGroup;
  const long long row = (long long)blockIdx.x * kRowsPerBlock + g;
  const bool active = row < ROWS;
  const size_t offset = active ? (size_t)row * (size_t)COLS : 0;
  const int cols = active ? COLS : 0;
  const float* x = X + offset;
  float* y = Y + offset;

  if constexpr (kVec > 1) {
    const unsigned long long align = (unsigned long long)X | (unsigned long long)Y;
    if (COLS % kVec == 0 && align % (kVec * sizeof(float)) == 0) {
      softmax_row<kVec>(x, y, cols, l, red_f, red_d);
      return;
    }
  }
  softmax_row<1>(x, y, cols, l, red_f, red_d);
}

// Tunable SGEMM template: row-major C[M,N] = A[M,K] * B[K,N], float32, FP32 FFMA accumulation.
// Any M, N, K >= 1 is handled. Two kernel bodies, chosen by the KIND parameter, share the entry
// point and the parameter names (so one tuning space holds both; each is described below):
//   KIND 0  the tiled kernel: block tile BM x BN, warp tile WM x WN, thread tile TM x TN, a cp.async
//           or register-staged pipeline over k-tiles of BK; with SPLITK > 1 a cluster of SPLITK
//           blocks splits K and reduces its partial tiles through distributed shared memory.
//   KIND 1  the row kernel, for skinny N (N <= 16, GEMV-like at N = 1) and very deep K: a block owns
//           TM rows of A and TN columns of B, all its 2*BM threads split K, each keeps TM x TN partial
//           sums; the block reduces them in a fixed order, and a cluster of SPLITK blocks splits K
//           further.
// No float atomics anywhere: every reduction has a fixed order, so results are bitwise the same
// from run to run.
//
// kopt:entry sgemm_tiled
// kopt:grid (KIND == 0) * ceil_div(N, BN) * SPLITK + (KIND == 1) * ceil_div(M, TM) * SPLITK, (KIND == 0) * ceil_div(M, BM) + (KIND == 1) * ceil_div(N, TN), 1
// kopt:block (KIND == 0) * (BM / WM) * (BN / WN) * 32 + (KIND == 1) * 2 * BM, 1, 1
// kopt:shared (KIND == 0) * max(max(STAGES, 2) * BK * (BM + BN + 2 * PAD) * 4, (SPLITK > 1) * BM * BN * 4)
//
// ==== KIND 0: the tiled kernel ====================================================================
//
// Parameters (preprocessor, -DNAME=VALUE; defaults below):
//   BM, BN, BK  block tile: a block computes C[row0 : row0+BM, col0 : col0+BN] and walks K in
//               steps of BK (row0 = blockIdx.y*BM, col0 = blockIdx.x*BN).
//   WM, WN      warp tile: the block's (BM/WM) x (BN/WN) warps each own a WM x WN piece of it.
//   TM, TN      per-thread register tile (TM*TN accumulators), made of (TM/4) x (TN/4) sub-tiles
//               of 4x4. Inside a warp the 32 lanes form a (WM/TM) x (WN/TN) grid (lane = tr*(WN/TN)
//               + tc); the thread's rows are wm0 + i*(WM/TM)*4 + tr*4 + {0..3} (i < TM/4) and its
//               columns wn0 + j*(WN/TN)*4 + tc*4 + {0..3} (j < TN/4). So at each k every shared-
//               memory read is one 16-byte LDS.128 per sub-tile, and the distinct addresses a warp
//               reads in one instruction are (WM/TM) (resp. (WN/TN)) consecutive float4s of one
//               smem row: no bank conflict, other lanes get broadcasts.
//   STAGES      1: register-staged double buffering (16-byte LDG into registers while the current
//               tile is computed, then STS into the other of 2 smem buffers; one __syncthreads
//               per k-tile). 2..4: STAGES-buffer cp.async pipeline (see below).
//   ASYNC_A     (STAGES >= 2 only) 1: the A tile is copied with 4-byte cp.async.ca, which lets the
//               copy itself transpose A into [BK][BM+PAD]; 0: A goes through registers (16-byte
//               LDG, transposed STS after the current tile's FFMAs), B always uses 16-byte
//               cp.async.cg. STAGES == 1 requires ASYNC_A == 0.
//   PAD         floats of padding per smem row (0 or 4; a multiple of 4 keeps rows 16-byte
//               aligned). Only the transposing A stores can conflict; PAD = 4 makes them 1-2 way.
//   MINB        min blocks per SM of __launch_bounds__ (register cap 65536 / (MINB*threads)).
//   SPLITK      1: the block walks all of K (the kernel as it was before kinds existed; grid.x =
//               ceil_div(N, BN)). 2, 4 or 8: blocks x*SPLITK .. x*SPLITK+SPLITK-1 form one thread
//               block cluster (__cluster_dims__(SPLITK, 1, 1), sm_90) for the tile of column block x;
//               cluster rank r walks the k-tiles [r*KT/SPLITK, (r+1)*KT/SPLITK) (KT = ceil_div(K, BK);
//               a rank may get none and contributes zeros), writes its BM x BN partial tile into its
//               own shared memory (reusing the pipeline buffers, so the launch asks for
//               max(pipeline, BM*BN*4) bytes), and after a cluster barrier rank r sums rows
//               [r*BM/SPLITK, (r+1)*BM/SPLITK) of the tile over ranks 0, 1, ..., SPLITK-1 in that order
//               (DSMEM loads) and stores them to C with the bounds checks of the epilogue below. A
//               second cluster barrier keeps every rank's shared memory alive until all remote reads
//               are done. More blocks for the same tile: fills the GPU when ceil_div(M, BM) *
//               ceil_div(N, BN) is small against the SM count (M = 35, 512 x 1500, K >> M, N).
//   KIND        0 here (see KIND 1 below).
//
// Shared memory (dynamic, bytes) = NBUF * BK * (BM + BN + 2*PAD) * 4 with NBUF = max(STAGES, 2):
//   buffer s of A: sA[s][k][m], m < BM, row stride BM + PAD  (A transposed: sA[k][m] = A[row0+m][k0+k])
//   buffer s of B: sB[s][k][n], n < BN, row stride BN + PAD  (sB[k][n] = B[k0+k][col0+n])
// Threads per block = (BM/WM) * (BN/WN) * 32.
//
// Pipeline (STAGES >= 2), KT = ceil_div(K, BK) tiles, tile t lives in buffer t % STAGES:
//   prologue: tiles 0..STAGES-2 are issued, one cp.async group each (empty groups past KT).
//   iteration t: cp.async.wait_group(STAGES-2)   -> this thread's copies of tile t have landed
//                __syncthreads()                 -> everyone's copies of tile t are visible, and
//                                                   everyone has finished computing tile t-1
//                issue tile t+STAGES-1 into buffer (t-1) % STAGES (free by the barrier), commit
//                compute tile t from buffer t % STAGES (never the buffer being filled, STAGES >= 2)
//                [ASYNC_A == 0: STS of A for tile t+STAGES-1 into the same free buffer; it is
//                 read only after the barrier of iteration t+STAGES-1]
//   Group count before the wait of iteration t is STAGES-1+t, so "all but the newest STAGES-2
//   complete" means groups 0..t complete.
//   STAGES == 1: tile 0 -> buffer 0, barrier; iteration t: LDG tile t+1 into registers, compute
//   buffer t&1, STS registers into buffer (t+1)&1 (last read in iteration t-1, before the
//   barrier that ended it), barrier.
//
// Loads (per k-tile; T = threads, every thread issues the same number, no remainder):
//   B: BK*BN/4 float4 slots, slot f = tid + l*T -> row k = f / (BN/4), columns 4*(f % (BN/4))+0..3;
//      consecutive lanes take consecutive 16 bytes of a row (cp.async.cg 16 B, or LDG.128 + STS.128).
//   A, 16-byte path (STAGES == 1 or ASYNC_A == 0): slot f -> row m = f / (BK/4), k = 4*(f % (BK/4));
//      one LDG.128 along the row of A, four scalar STS into sA[k..k+3][m].
//   A, ASYNC_A == 1: element e = tid + l*T -> k = 8*k_hi + e % 8, m = 4*m_hi + (e / 8) % 4 with
//      (k_hi, m_hi) from the warp chunk e / 32: a warp reads 4 rows x 32 B (full sectors) and its
//      4-byte cp.async writes hit 32 distinct banks when PAD = 4 (row stride = 4 mod 32 banks).
//
// Bounds (any M, N, K >= 1; buffers are only 256-byte aligned and end against a guard page):
//   Two levels, both chosen uniformly (whole block, per k-tile), so no divergence:
//   1. Fast path: the block's whole tile is inside the matrix (A: row0 + BM <= M; B: N % 4 == 0
//      and col0 + BN <= N) and the k-tile is full (k0 + BK <= K); the A 16-byte path also needs
//      K % 4 == 0. Then every address is in bounds and 16-byte aligned (row starts are multiples
//      of K resp. N floats, k0 + 4q and col0 + 4q are multiples of 4): unpredicated copies.
//   2. Otherwise (edge blocks, the last partial k-tile, odd K or N): per-slot predicates. With
//      K % 4 == 0 (A) / N % 4 == 0 (B) a float4 is either entirely in bounds or entirely out (its
//      first index is a multiple of 4 and so is the bound), so it is one guarded 16-byte access;
//      else each of its 4 elements has its own predicate (row < M && k < K, k < K && col < N).
//      A predicated-off cp.async has src-size 0 (zero-fill, nothing read) and its source address
//      is clamped to the buffer's base anyway; a predicated-off register load leaves 0.
//   So every smem element a tile owns (sA[k][m < BM], sB[k][n < BN], k < BK) is written for every
//   tile, with data or 0; out-of-range k contribute 0 * 0 and out-of-range rows/columns are never
//   stored. The compute loop reads only those elements (pad columns never), after the barrier
//   that follows their writes, so no NaN-poisoned smem is ever used. C is written only where
//   row < M and col < N (float4 only if N % 4 == 0, which makes col < N imply col + 3 < N).
//   All global offsets are computed in 64 bits (size_t). K = 0 gives KT = 0 and stores zeros.
//   Odd shapes (BM=128, BN=256, BK=16 as an example):
//   - 1x1x1: one block, generic path everywhere (row0 + BM > M, N % 4 != 0, k0 + BK > K).
//     A: only (m=0, k=0) passes row < 1 && k < 1; B: element-wise, only (k=0, n=0) reads B[0];
//     C: only the thread owning row 0, column 0 stores, scalar.
//   - 1000x1x17: grid 1 x 8. A rows_in for blocks 0..6 (row0 + 128 <= 1000), so tile 0 (k < 16)
//     of ASYNC_A copies A unpredicated; tile 1 (k0 = 16) is generic: only k = 16 < 17 is real.
//     With the A 16-byte path K % 4 = 1 forces element-wise loads throughout. B: N = 1 -> every
//     slot element-wise, only column 0 real. C: scalar stores of column 0, rows < 1000.
//   - 1x1000x17: grid 4 x 1. N % 4 == 0: B blocks 0..2 (col0 + 256 <= 1000) are fast on tile 0;
//     block 3 uses guarded float4s (col 768..996 real, 1000..1020 zero); tile 1 generic (k = 16).
//     A: row0 + 128 > 1 -> generic, only row 0. C: float4 stores of row 0, col < 1000.
//   - 127x129x65: grid 1 x 1. N % 4 = 1 -> B element-wise everywhere; row0 + 128 > 127 -> A
//     generic (element-wise, K % 4 = 1); 5 k-tiles, the last holds only k = 64; predicates
//     row < 127, k < 65, col < 129; C scalar stores.
//
// Every divisibility the code relies on is a static_assert below; sgemm.json's tuning
// constraints encode the same, plus the device's shared-memory, thread and register limits.

#ifndef BM
#define BM 128
#endif
#ifndef BN
#define BN 128
#endif
#ifndef BK
#define BK 16
#endif
#ifndef WM
#define WM 64
#endif
#ifndef WN
#define WN 32
#endif
#ifndef TM
#define TM 8
#endif
#ifndef TN
#define TN 8
#endif
#ifndef STAGES
#define STAGES 3
#endif
#ifndef ASYNC_A
#define ASYNC_A 1
#endif
#ifndef PAD
#define PAD 4
#endif
#ifndef MINB
#define MINB 1
#endif
#ifndef KIND
#define KIND 0
#endif
#ifndef SPLITK
#define SPLITK 1
#endif

#if SPLITK != 1 && SPLITK != 2 && SPLITK != 4 && SPLITK != 8
#error "SPLITK must be 1, 2, 4 or 8 (a portable thread block cluster holds at most 8 blocks)"
#endif
#if SPLITK > 1 && defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 900
#error "SPLITK > 1 uses thread block clusters: compile for sm_90 or newer"
#endif

#if SPLITK > 1
#include "sgemm_cluster.cuh"  // shared with sgemm_tf32*.cu; its bytes are part of sgemm.json's fingerprint
#endif  // SPLITK > 1
#undef SGEMM_CLUSTER_DIMS  // a generated file holds this source once per variant
#if SPLITK > 1
#define SGEMM_CLUSTER_DIMS __cluster_dims__(SPLITK, 1, 1)
#else
#define SGEMM_CLUSTER_DIMS
#endif

#if KIND == 0

namespace sgemm_tiled_detail {

constexpr int kThreads = (BM / WM) * (BN / WN) * 32;
constexpr int kWarpsN = BN / WN;           // warps along N
constexpr int kLaneRows = WM / TM;          // lanes along M inside a warp
constexpr int kLaneCols = WN / TN;          // lanes along N inside a warp
constexpr int kNBuf = STAGES > 2 ? STAGES : 2;
constexpr int kLdA = BM + PAD;              // smem row stride of A (floats)
constexpr int kLdB = BN + PAD;              // smem row stride of B (floats)
constexpr int kBufA = BK * kLdA;            // floats per A buffer
constexpr int kBufB = BK * kLdB;            // floats per B buffer
constexpr int kAVec = BM * BK / 4 / kThreads;    // float4 of A per thread per tile
constexpr int kBVec = BK * BN / 4 / kThreads;    // float4 of B per thread per tile
constexpr int kAElem = BM * BK / kThreads;       // elements of A per thread (ASYNC_A path)

static_assert(BM > 0 && BN > 0 && BK > 0 && WM > 0 && WN > 0 && TM > 0 && TN > 0, "positive sizes");
static_assert(BM % WM == 0 && BN % WN == 0, "block tile must be a whole number of warp tiles");
static_assert(WM % TM == 0 && WN % TN == 0, "warp tile must be a whole number of thread tiles");
static_assert(TM % 4 == 0 && TN % 4 == 0, "thread tiles are made of 4x4 sub-tiles (16-byte LDS)");
static_assert((WM / TM) * (WN / TN) == 32, "a warp tile must hold exactly 32 thread tiles");
static_assert(kThreads <= 1024, "at most 1024 threads per block");
static_assert(BK % 8 == 0, "BK must be a multiple of 8");
static_assert(PAD >= 0 && PAD % 4 == 0, "PAD must keep smem rows 16-byte aligned");
static_assert((BM * BK / 4) % kThreads == 0 && kAVec >= 1, "A tile float4s must divide evenly among threads");
static_assert((BK * BN / 4) % kThreads == 0 && kBVec >= 1, "B tile float4s must divide evenly among threads");
static_assert(STAGES >= 1 && STAGES <= 8, "STAGES in 1..8");
static_assert(ASYNC_A == 0 || ASYNC_A == 1, "ASYNC_A is 0 or 1");
static_assert(!(STAGES == 1 && ASYNC_A != 0), "STAGES == 1 is register-staged: use ASYNC_A = 0");
static_assert(MINB >= 1, "MINB >= 1");

#include "sgemm_async.cuh"  // shared with sgemm_tf32*.cu; its bytes are part of sgemm.json's fingerprint

// Per-launch and per-thread values shared by the loaders.
struct Ctx {
  const float* __restrict__ A;
  const float* __restrict__ B;
  int M, N, K;
  int row0, col0, tid;
  bool kvec, nvec;     // K % 4 == 0, N % 4 == 0 (uniform per launch)
  bool rows_in, cols_in;  // the block's BM rows are all < M; N % 4 == 0 and its BN columns all < N
};

// Loader index maps. For every map the per-thread part depends on tid only and the l-th
// load adds compile-time offsets: with T = kThreads and Q the number of slots per tile row,
// (tid + l*T) / Q == tid / Q + (l*T) / Q and (tid + l*T) % Q == tid % Q + (l*T) % Q hold
// whenever T % Q == 0 or Q % T == 0 (static_asserted below; true for powers of two).

// A via registers: float4 slot f = tid + l*T covers A[row0 + m][k0 + 4*q .. +3],
// m = f / (BK/4), q = f % (BK/4). Consecutive lanes walk a row of A (16-byte loads).
constexpr int kQA = BK / 4;
static_assert(kThreads % kQA == 0 || kQA % kThreads == 0, "A float4 map must separate");
__device__ __forceinline__ int a4_m(int tid, int l) { return tid / kQA + (l * kThreads) / kQA; }
__device__ __forceinline__ int a4_k(int tid, int l) { return 4 * (tid % kQA + (l * kThreads) % kQA); }

// A via 4-byte cp.async: element e = tid + l*T; lane bits give k_lo = e % 8 and
// m_lo = (e / 8) % 4, so a warp reads 4 rows x 32 contiguous bytes (4 full sectors) and, with
// PAD = 4 (row stride = 4 mod 32 banks), writes banks (4*k + m) % 32: conflict-free. The chunk
// c = e / 32 = warp + l*NW gives k_hi = c % (BK/8), m_hi = c / (BK/8).
constexpr int kNW = kThreads / 32;
constexpr int kKB8 = BK / 8;
static_assert(kNW % kKB8 == 0 || kKB8 % kNW == 0, "A element map must separate");
__device__ __forceinline__ int a1_m(int tid, int l) {
  return ((tid / 32) / kKB8 + (l * kNW) / kKB8) * 4 + (tid / 8) % 4;
}
__device__ __forceinline__ int a1_k(int tid, int l) {
  return ((tid / 32) % kKB8 + (l * kNW) % kKB8) * 8 + tid % 8;
}

// B: float4 slot f = tid + l*T covers B[k0 + k][col0 + 4*q .. +3], k = f / (BN/4),
// q = f % (BN/4): consecutive lanes read consecutive 16 bytes of a row of B.
constexpr int kQB = BN / 4;
static_assert(kThreads % kQB == 0 || kQB % kThreads == 0, "B float4 map must separate");
__device__ __forceinline__ int b4_k(int tid, int l) { return tid / kQB + (l * kThreads) / kQB; }
__device__ __forceinline__ int b4_n(int tid, int l) { return 4 * (tid % kQB + (l * kThreads) % kQB); }

// ---- A: 16-byte loads into registers, transposed scalar stores ---------------
__device__ __forceinline__ void load_a_regs(const Ctx& c, int k0, float4 (&ra)[kAVec]) {
  if (c.rows_in && c.kvec && k0 + BK <= c.K) {  // uniform: whole tile in bounds, rows aligned
    const float* p = c.A + (size_t)(c.row0 + a4_m(c.tid, 0)) * c.K + (k0 + a4_k(c.tid, 0));
#pragma unroll
    for (int l = 0; l < kAVec; ++l) {
      const int dm = a4_m(0, l), dk = a4_k(0, l);
      ra[l] = *reinterpret_cast<const float4*>(p + (size_t)dm * c.K + dk);
    }
    return;
  }
#pragma unroll
  for (int l = 0; l < kAVec; ++l) {
    const int gr = c.row0 + a4_m(c.tid, l), gk = k0 + a4_k(c.tid, l);
    float4 v = make_float4(0.f, 0.f, 0.f, 0.f);
    if (gr < c.M) {
      const float* p = c.A + (size_t)gr * c.K;
      if (c.kvec) {
        if (gk < c.K) v = *reinterpret_cast<const float4*>(p + gk);  // K%4==0: gk..gk+3 < K
      } else {
        if (gk + 0 < c.K) v.x = p[gk + 0];
        if (gk + 1 < c.K) v.y = p[gk + 1];
        if (gk + 2 < c.K) v.z = p[gk + 2];
        if (gk + 3 < c.K) v.w = p[gk + 3];
      }
    }
    ra[l] = v;
  }
}
__device__ __forceinline__ void store_a_regs(const Ctx& c, float* sa, const float4 (&ra)[kAVec]) {
  float* s = sa + a4_k(c.tid, 0) * kLdA + a4_m(c.tid, 0);
#pragma unroll
  for (int l = 0; l < kAVec; ++l) {
    float* d = s + a4_k(0, l) * kLdA + a4_m(0, l);
    d[0 * kLdA] = ra[l].x;
    d[1 * kLdA] = ra[l].y;
    d[2 * kLdA] = ra[l].z;
    d[3 * kLdA] = ra[l].w;
  }
}

// ---- A: 4-byte cp.async, transposing in the copy -------------------------------
__device__ __forceinline__ void load_a_async(const Ctx& c, int k0, float* sa) {
  const unsigned s = smem_addr(sa + a1_k(c.tid, 0) * kLdA + a1_m(c.tid, 0));
  if (c.rows_in && k0 + BK <= c.K) {  // uniform: whole tile in bounds
    const float* p = c.A + (size_t)(c.row0 + a1_m(c.tid, 0)) * c.K + (k0 + a1_k(c.tid, 0));
#pragma unroll
    for (int l = 0; l < kAElem; ++l) {
      const int dm = a1_m(0, l) - a1_m(0, 0), dk = a1_k(0, l) - a1_k(0, 0);
      cp_async4(s + 4u * (unsigned)(dk * kLdA + dm), p + (size_t)dm * c.K + dk, 4);
    }
    return;
  }
#pragma unroll
  for (int l = 0; l < kAElem; ++l) {
    const int dm = a1_m(0, l) - a1_m(0, 0), dk = a1_k(0, l) - a1_k(0, 0);
    const int gr = c.row0 + a1_m(c.tid, l), gk = k0 + a1_k(c.tid, l);
    const bool ok = gr < c.M && gk < c.K;
    const float* src = ok ? c.A + (size_t)gr * c.K + gk : c.A;
    cp_async4(s + 4u * (unsigned)(dk * kLdA + dm), src, ok ? 4 : 0);
  }
}

// ---- B ----------------------------------------------------------------------------
__device__ __forceinline__ void load_b_regs(const Ctx& c, int k0, float4 (&rb)[kBVec]) {
  if (c.cols_in && k0 + BK <= c.K) {  // uniform: whole tile in bounds, N % 4 == 0
    const float* p = c.B + (size_t)(k0 + b4_k(c.tid, 0)) * c.N + (c.col0 + b4_n(c.tid, 0));
#pragma unroll
    for (int l = 0; l < kBVec; ++l) {
      const int dk = b4_k(0, l), dn = b4_n(0, l);
      rb[l] = *reinterpret_cast<const float4*>(p + (size_t)dk * c.N + dn);
    }
    return;
  }
#pragma unroll
  for (int l = 0; l < kBVec; ++l) {
    const int gk = k0 + b4_k(c.tid, l), gn = c.col0 + b4_n(c.tid, l);
    float4 v = make_float4(0.f, 0.f, 0.f, 0.f);
    if (gk < c.K) {
      const float* p = c.B + (size_t)gk * c.N;
      if (c.nvec) {
        if (gn < c.N) v = *reinterpret_cast<const float4*>(p + gn);  // N%4==0: gn..gn+3 < N
      } else {
        if (gn + 0 < c.N) v.x = p[gn + 0];
        if (gn + 1 < c.N) v.y = p[gn + 1];
        if (gn + 2 < c.N) v.z = p[gn + 2];
        if (gn + 3 < c.N) v.w = p[gn + 3];
      }
    }
    rb[l] = v;
  }
}
__device__ __forceinline__ void store_b_regs(const Ctx& c, float* sb, const float4 (&rb)[kBVec]) {
  float* s = sb + b4_k(c.tid, 0) * kLdB + b4_n(c.tid, 0);
#pragma unroll
  for (int l = 0; l < kBVec; ++l)
    *reinterpret_cast<float4*>(s + b4_k(0, l) * kLdB + b4_n(0, l)) = rb[l];
}
__device__ __forceinline__ void load_b_async(const Ctx& c, int k0, float* sb) {
  const unsigned s = smem_addr(sb + b4_k(c.tid, 0) * kLdB + b4_n(c.tid, 0));
  if (c.cols_in && k0 + BK <= c.K) {  // uniform: whole tile in bounds, N % 4 == 0
    const float* p = c.B + (size_t)(k0 + b4_k(c.tid, 0)) * c.N + (c.col0 + b4_n(c.tid, 0));
#pragma unroll
    for (int l = 0; l < kBVec; ++l) {
      const int dk = b4_k(0, l), dn = b4_n(0, l);
      cp_async16(s + 4u * (unsigned)(dk * kLdB + dn), p + (size_t)dk * c.N + dn, 16);
    }
    return;
  }
#pragma unroll
  for (int l = 0; l < kBVec; ++l) {
    const int dk = b4_k(0, l), dn = b4_n(0, l);
    const unsigned dst = s + 4u * (unsigned)(dk * kLdB + dn);
    const int gk = k0 + b4_k(c.tid, l), gn = c.col0 + b4_n(c.tid, l);
    const bool krow = gk < c.K;
    const float* p = c.B + (size_t)(krow ? gk : 0) * c.N;
    if (c.nvec) {
      const bool ok = krow && gn < c.N;  // N%4==0: gn..gn+3 < N
      cp_async16(dst, ok ? p + gn : c.B, ok ? 16 : 0);
    } else {
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const bool ok = krow && gn + e < c.N;
        cp_async4(dst + 4u * e, ok ? p + gn + e : c.B, ok ? 4 : 0);
      }
    }
  }
}

// ---- the FFMA loop over one k-tile --------------------------------------------
// sa/sb point at this thread's first sub-tile column in the buffer (wm0 + tr*4, wn0 + tc*4).
__device__ __forceinline__ void compute_tile(const float* sa, const float* sb, float (&acc)[TM][TN]) {
#pragma unroll
  for (int kk = 0; kk < BK; ++kk) {
    float a[TM], b[TN];
#pragma unroll
    for (int i = 0; i < TM / 4; ++i) {
      const float4 v = *reinterpret_cast<const float4*>(sa + kk * kLdA + i * kLaneRows * 4);
      a[4 * i + 0] = v.x; a[4 * i + 1] = v.y; a[4 * i + 2] = v.z; a[4 * i + 3] = v.w;
    }
#pragma unroll
    for (int j = 0; j < TN / 4; ++j) {
      const float4 v = *reinterpret_cast<const float4*>(sb + kk * kLdB + j * kLaneCols * 4);
      b[4 * j + 0] = v.x; b[4 * j + 1] = v.y; b[4 * j + 2] = v.z; b[4 * j + 3] = v.w;
    }
#pragma unroll
    for (int i = 0; i < TM; ++i)
#pragma unroll
      for (int j = 0; j < TN; ++j) acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
  }
}

}  // namespace sgemm_tiled_detail

extern "C" __global__ void SGEMM_CLUSTER_DIMS __launch_bounds__(sgemm_tiled_detail::kThreads, MINB)
sgemm_tiled(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C,
            int M, int N, int K) {
  using namespace sgemm_tiled_detail;
  extern __shared__ float4 smem[];
  float* const sA = reinterpret_cast<float*>(smem);  // kNBuf buffers of kBufA floats
  float* const sB = sA + kNBuf * kBufA;               // kNBuf buffers of kBufB floats

  Ctx c;
  c.A = A; c.B = B; c.M = M; c.N = N; c.K = K;
  c.tid = threadIdx.x;
  c.row0 = blockIdx.y * BM;
#if SPLITK > 1
  c.col0 = (blockIdx.x / SPLITK) * BN;  // blocks x*SPLITK .. +SPLITK-1: one cluster, one tile
#else
  c.col0 = blockIdx.x * BN;
#endif
  c.kvec = (K & 3) == 0;
  c.nvec = (N & 3) == 0;
  c.rows_in = c.row0 + BM <= M;
  c.cols_in = c.nvec && c.col0 + BN <= N;

  const int warp = c.tid / 32, lane = c.tid % 32;
  const int wm0 = (warp / kWarpsN) * WM, wn0 = (warp % kWarpsN) * WN;
  const int tr = lane / kLaneCols, tc = lane % kLaneCols;
  const int am = wm0 + tr * 4;  // first row of the thread (within the block tile)
  const int bn = wn0 + tc * 4;  // first column of the thread

  float acc[TM][TN];
#pragma unroll
  for (int i = 0; i < TM; ++i)
#pragma unroll
    for (int j = 0; j < TN; ++j) acc[i][j] = 0.f;

  const int KT_all = K / BK + (K % BK != 0);  // k-tiles of K (no overflow near INT_MAX)
#if SPLITK > 1
  // This cluster rank's k-tiles: [t_begin, t_end), a contiguous share of KT_all (maybe empty).
  const unsigned rank = sgemm_cluster::rank();
  const int t_begin = static_cast<int>(static_cast<long long>(KT_all) * rank / SPLITK);
  const int t_end = static_cast<int>(static_cast<long long>(KT_all) * (rank + 1) / SPLITK);
  const int KT = t_end - t_begin;  // k-tiles this block walks
  const int kb = t_begin * BK;     // first k of them (<= K)
#else
  const int KT = KT_all;
  constexpr int kb = 0;
#endif

#if STAGES == 1
  {
    float4 ra[kAVec], rb[kBVec];
    if (KT > 0) {
      load_a_regs(c, kb, ra);
      load_b_regs(c, kb, rb);
      store_a_regs(c, sA, ra);
      store_b_regs(c, sB, rb);
    }
    __syncthreads();
    for (int t = 0; t < KT; ++t) {
      const int cur = t & 1, nxt = cur ^ 1;
      const bool more = t + 1 < KT;
      if (more) {
        load_a_regs(c, kb + (t + 1) * BK, ra);
        load_b_regs(c, kb + (t + 1) * BK, rb);
      }
      compute_tile(sA + cur * kBufA + am, sB + cur * kBufB + bn, acc);
      if (more) {
        store_a_regs(c, sA + nxt * kBufA, ra);
        store_b_regs(c, sB + nxt * kBufB, rb);
      }
      __syncthreads();
    }
  }
#else
  {
#if !ASYNC_A
    float4 ra[kAVec];
#endif
    // Prologue: tiles 0 .. STAGES-2, one commit group each.
#pragma unroll
    for (int s = 0; s < STAGES - 1; ++s) {
      if (s < KT) {
#if ASYNC_A
        load_a_async(c, kb + s * BK, sA + s * kBufA);
#else
        load_a_regs(c, kb + s * BK, ra);
        store_a_regs(c, sA + s * kBufA, ra);
#endif
        load_b_async(c, kb + s * BK, sB + s * kBufB);
      }
      cp_async_commit();
    }
    int rd = 0;           // buffer of tile t
    int wr = STAGES - 1;  // buffer of tile t + STAGES - 1
    for (int t = 0; t < KT; ++t) {
      cp_async_wait<STAGES - 2>();
      __syncthreads();
      const int nt = t + STAGES - 1;
      const bool more = nt < KT;
      if (more) {
#if ASYNC_A
        load_a_async(c, kb + nt * BK, sA + wr * kBufA);
#else
        load_a_regs(c, kb + nt * BK, ra);
#endif
        load_b_async(c, kb + nt * BK, sB + wr * kBufB);
      }
      cp_async_commit();
      compute_tile(sA + rd * kBufA + am, sB + rd * kBufB + bn, acc);
#if !ASYNC_A
      if (more) store_a_regs(c, sA + wr * kBufA, ra);
#endif
      rd = (rd + 1 == STAGES) ? 0 : rd + 1;
      wr = (wr + 1 == STAGES) ? 0 : wr + 1;
    }
    cp_async_wait<0>();  // only empty groups can be left; keeps the exit clean
  }
#endif

#if SPLITK > 1
  // Split-K epilogue (see SPLITK above). The partial tile goes to this block's shared memory, laid
  // out red[m][n] (BM x BN floats, row stride BN), at the thread's own rows and columns.
  if (sgemm_cluster::dynamic_smem_bytes() < static_cast<unsigned>(BM * BN * 4)) __trap();  // launch too small
  __syncthreads();  // every warp is done with the pipeline buffers that red[] reuses
  {
    float* const red = reinterpret_cast<float*>(smem);
#pragma unroll
    for (int i = 0; i < TM / 4; ++i)
#pragma unroll
      for (int r = 0; r < 4; ++r)
#pragma unroll
        for (int j = 0; j < TN / 4; ++j) {
          const float* v = &acc[4 * i + r][4 * j];
          *reinterpret_cast<float4*>(red + (am + i * kLaneRows * 4 + r) * BN + bn + j * kLaneCols * 4) =
              make_float4(v[0], v[1], v[2], v[3]);
        }
  }
  sgemm_cluster::sync();  // every rank's partial tile is written and visible cluster-wide
  {
    constexpr int kRowsPerRank = BM / SPLITK;
    constexpr int kQ = BN / 4;  // float4s per tile row
    static_assert(BM % SPLITK == 0, "each cluster rank reduces BM / SPLITK rows");
    const unsigned red_base = smem_addr(smem);
    for (int f = c.tid; f < kRowsPerRank * kQ; f += kThreads) {
      const int tm = static_cast<int>(rank) * kRowsPerRank + f / kQ;  // row within the tile
      const int tn = 4 * (f % kQ);                                    // column within the tile
      const unsigned off = red_base + 4u * static_cast<unsigned>(tm * BN + tn);
      float4 s = sgemm_cluster::load4(sgemm_cluster::map(off, 0));
#pragma unroll
      for (int p = 1; p < SPLITK; ++p) {  // fixed order: rank 0, 1, ..., SPLITK-1
        const float4 v = sgemm_cluster::load4(sgemm_cluster::map(off, p));
        s.x += v.x; s.y += v.y; s.z += v.z; s.w += v.w;
      }
      const int row = c.row0 + tm, col = c.col0 + tn;
      if (row >= M) continue;
      float* crow = C + (size_t)row * N;
      if (c.nvec) {
        if (col < N) *reinterpret_cast<float4*>(crow + col) = s;  // N%4==0: col..col+3 < N
      } else {
        if (col + 0 < N) crow[col + 0] = s.x;
        if (col + 1 < N) crow[col + 1] = s.y;
        if (col + 2 < N) crow[col + 2] = s.z;
        if (col + 3 < N) crow[col + 3] = s.w;
      }
    }
  }
  sgemm_cluster::sync();  // no block leaves (freeing its shared memory) while others still read it
#else
  // Epilogue: thread rows row0 + am + i*kLaneRows*4 + r, columns col0 + bn + j*kLaneCols*4 + {0..3}.
#pragma unroll
  for (int i = 0; i < TM / 4; ++i) {
#pragma unroll
    for (int r = 0; r < 4; ++r) {
      const int row = c.row0 + am + i * kLaneRows * 4 + r;
      if (row >= M) continue;
      float* crow = C + (size_t)row * N;
#pragma unroll
      for (int j = 0; j < TN / 4; ++j) {
        const int col = c.col0 + bn + j * kLaneCols * 4;
        const float* v = &acc[4 * i + r][4 * j];
        if (c.nvec) {
          if (col < N) *reinterpret_cast<float4*>(crow + col) = make_float4(v[0], v[1], v[2], v[3]);
        } else {
#pragma unroll
          for (int e = 0; e < 4; ++e)
            if (col + e < N) crow[col + e] = v[e];
        }
      }
    }
  }
#endif  // SPLITK
}

#elif KIND == 1
// ==== KIND 1: the row kernel (skinny N, GEMV-like, deep K) ========================================
//
// Parameters it reads (the others are pinned by sgemm.json's constraints and unused here):
//   TM      rows of A (and C) per block: 8 or 16. Every thread holds all of them.
//   TN      columns of B (and C) per block: 1, 2, 4, 8 or 16 (tuned to N; N > TN takes
//           ceil_div(N, TN) column blocks, each reading A again).
//   BM      the block has 2*BM threads (128, 256 or 512).
//   SPLITK  1: a block walks all of K. 2, 4, 8: blocks x*SPLITK .. +SPLITK-1 are one cluster for
//           row block x; rank r walks the k-quads [r*KQ/SPLITK, (r+1)*KQ/SPLITK), KQ = ceil_div(K, 4).
//   MINB    min blocks per SM of __launch_bounds__.
// Grid: x = ceil_div(M, TM) * SPLITK (row blocks, times the cluster), y = ceil_div(N, TN); block
// 2*BM threads; no dynamic shared memory (the reduction buffers are static, <= 17 KB).
//
// Work: row block x covers rows row0 = x*TM .. row0+TM-1 (rows >= M are clamped to M-1 for the
// loads, which stay in bounds, and never stored), column block y covers columns col0 = y*TN ..
// col0+TN-1. The k-quads of the block's range are dealt round-robin: thread t takes quads q0 + t,
// q0 + t + T, ... (T threads), so a warp reads 32 consecutive float4s (512 contiguous bytes) of
// each of its TM rows per step: coalesced 16-byte loads, ld.global.cs (A is streamed once, evict
// first, so B stays in L2), and the B elements of the same 4 k (TN columns each) through the
// read-only path (B is re-read by every row block: from L2/L1). Each thread accumulates
// acc[i][j] += A[row0+i][k] * B[k][col0+j] for its k in increasing order (fmaf).
//
// Paths (uniform per launch/block). K % 4 == 0: every row of A starts 16-byte aligned and a quad
// k..k+3 < K lies in one row, so A is read as float4s. Then B is read as one 16-byte-aligned
// vector per k when its TN columns allow it: TN % 4 == 0 with N % 4 == 0 and col0 + TN <= N
// (TN/4 float4s per row of B), or TN < 4 with N == TN (then rows k..k+3 of B are 4*TN contiguous
// floats starting at k*TN, a multiple of 4: TN float4s); otherwise (TN wider than N, N % 4 != 0,
// the last column block) B element by element with col < N, 0 for the rest, while A stays on
// float4s (A is the traffic: a variant whose TN does not match N keeps the A stream). Odd K: the
// generic path loads every element with its own predicate (k < K, col < N), 0 for the rest.
//
// Reduction, all in a fixed order (results are bitwise reproducible):
//   1. within a warp, a reduce-scatter over the TM*TN (a power of two, V) values: at the shuffle
//      distances 16, 8, 4, 2, 1 the lane pair (l, l^d) halves its values (the lane with bit d set
//      keeps the upper half) while more than one is left, then plain butterflies; afterwards lane l
//      holds max(V/32, 1) consecutive sums, starting at an index fixed by its bits. That is about V
//      shuffles a warp instead of 5V.
//   2. one lane per distinct sum writes it to red[warp][v] (static shared memory); after a
//      barrier, thread v sums red[0][v] + red[1][v] + ... in warp order.
//   3. SPLITK == 1: store C[row0 + v/TN][col0 + v%TN] if row < M and col < N. SPLITK > 1: each rank
//      writes its sums to part[v]; after a cluster barrier, rank 0 adds part[] of ranks 0, 1, ...,
//      SPLITK-1 in order (DSMEM loads) and stores; a last cluster barrier keeps every rank's shared
//      memory alive until rank 0 has read it.
// Odd shapes: 1x1x1 -> one block, generic path (K % 4 != 0), quad 0 holds k = 0 only, thread 0 does
// it; every other thread contributes zeros; rows 1..TM-1 are clamped to row 0 and not stored.
// 7x3x5 -> N = 3 != TN (TN < 4) or TN >= 4 > N: generic path, columns >= 3 are zero, not stored.
// 300x1x70000 with TN = 1 -> fast path: K % 4 == 0, N == TN; the last row block (rows 296..303)
// clamps rows 300..303 to row 299 and stores rows < 300 only.

namespace sgemm_rows_detail {

constexpr int kRows = TM;
constexpr int kCols = TN;
constexpr int kThreads = 2 * BM;
constexpr int kWarps = kThreads / 32;
constexpr int kV = kRows * kCols;                 // partial sums per thread
constexpr int kPerLane = kV >= 32 ? kV / 32 : 1;  // sums a lane holds after the reduce-scatter
constexpr int kLowMask = kV >= 32 ? 0 : 32 / kV - 1;  // lane bits over which sums are duplicated

static_assert(kRows >= 1 && kRows <= 16, "TM (rows per block) in 1..16");
static_assert(kCols >= 1 && kCols <= 16, "TN (columns per block) in 1..16");
static_assert(kThreads % 32 == 0 && kThreads >= 32 && kThreads <= 1024, "2*BM threads: whole warps, <= 1024");
static_assert((kV & (kV - 1)) == 0, "TM*TN must be a power of two (the warp reduce-scatter halves it)");
static_assert(kCols < 4 || kCols % 4 == 0, "TN is 1, 2 or a multiple of 4");
static_assert(SPLITK >= 1 && MINB >= 1, "SPLITK, MINB >= 1");

// Reduce-scatter of x[0..kV) over the 32 lanes of a warp (see "Reduction" above): step S uses the
// shuffle distance 16 >> S while CNT = kV >> S values are held. Adds to `base` the index of the
// first sum this lane keeps; afterwards x[0 .. kPerLane) are the sums of indices base ... A
// template per step, so every index is a compile-time constant (x stays in registers).
template <int S, int CNT>
struct WarpReduce {
  static __device__ __forceinline__ void run(float (&x)[kV], int lane, int& base) {
    constexpr int d = 16 >> S;
    if (CNT >= 2) {
      constexpr int h = CNT / 2;
      const bool up = (lane & d) != 0;
#pragma unroll
      for (int i = 0; i < h; ++i) {
        const float send = up ? x[i] : x[i + h];
        const float keep = up ? x[i + h] : x[i];
        x[i] = keep + __shfl_xor_sync(0xffffffffu, send, d);
      }
      if (up) base += h;
    } else {
      x[0] += __shfl_xor_sync(0xffffffffu, x[0], d);  // both lanes get the same sum (a+b == b+a)
    }
    WarpReduce<S + 1, (CNT >= 2 ? CNT / 2 : 1)>::run(x, lane, base);
  }
};
template <int CNT>
struct WarpReduce<5, CNT> {
  static __device__ __forceinline__ void run(float (&)[kV], int, int&) {}
};

// acc[i][j] += a[i].x*b[0][j] + a[i].y*b[1][j] + a[i].z*b[2][j] + a[i].w*b[3][j], as four fmaf in
// increasing k (the order every path of the row kernel uses).
__device__ __forceinline__ void rows_quad_fma(float (&acc)[kRows][kCols], const float4 (&a)[kRows],
                                              const float (&b)[4][kCols]) {
#pragma unroll
  for (int i = 0; i < kRows; ++i)
#pragma unroll
    for (int j = 0; j < kCols; ++j) {
      float t = acc[i][j];
      t = fmaf(a[i].x, b[0][j], t);
      t = fmaf(a[i].y, b[1][j], t);
      t = fmaf(a[i].z, b[2][j], t);
      t = fmaf(a[i].w, b[3][j], t);
      acc[i][j] = t;
    }
}

}  // namespace sgemm_rows_detail

extern "C" __global__ void SGEMM_CLUSTER_DIMS __launch_bounds__(2 * BM, MINB)
sgemm_tiled(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C,
            int M, int N, int K) {
  using namespace sgemm_rows_detail;
  __shared__ float red[kWarps][kV];
#if SPLITK > 1
  __shared__ float part[kV];
  const unsigned rank = sgemm_cluster::rank();
  const int row_block = blockIdx.x / SPLITK;
#else
  constexpr unsigned rank = 0;
  const int row_block = blockIdx.x;
#endif
  const int row0 = row_block * kRows;
  const int col0 = blockIdx.y * kCols;
  const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32;

  // This block's k-quads [q0, q1): quad q is k = 4q .. 4q+3 (the last may pass K).
  const long long KQ = (static_cast<long long>(K) + 3) / 4;
  const int q0 = static_cast<int>(KQ * rank / SPLITK);
  const int q1 = static_cast<int>(KQ * (rank + 1) / SPLITK);

  // Row offsets (in floats) of the block's rows, clamped to the last row: loads stay in bounds.
  size_t aoff[kRows];
#pragma unroll
  for (int i = 0; i < kRows; ++i) aoff[i] = static_cast<size_t>(min(row0 + i, M - 1)) * static_cast<size_t>(K);

  float acc[kRows][kCols];
#pragma unroll
  for (int i = 0; i < kRows; ++i)
#pragma unroll
    for (int j = 0; j < kCols; ++j) acc[i][j] = 0.f;

  const bool kvec = (K & 3) == 0;
  const bool bvec = kCols % 4 == 0 ? ((N & 3) == 0 && col0 + kCols <= N) : N == kCols;
  if (kvec) {
    // Vector-A paths: every quad of the range is a whole float4 of each row (k + 3 < K). B is
    // loaded as float4s when its layout allows (bvec), else element by element with col < N.
    if (bvec) {
#pragma unroll 1
      for (int q = q0 + tid; q < q1; q += kThreads) {
        const int k = 4 * q;
        float4 a[kRows];
#pragma unroll
        for (int i = 0; i < kRows; ++i) a[i] = __ldcs(reinterpret_cast<const float4*>(A + aoff[i] + k));
        float b[4][kCols];
        if (kCols % 4 == 0) {
#pragma unroll
          for (int e = 0; e < 4; ++e)
#pragma unroll
            for (int j = 0; j < kCols / 4; ++j) {
              const float4 v = __ldg(reinterpret_cast<const float4*>(B + static_cast<size_t>(k + e) * N + col0 + 4 * j));
              b[e][4 * j + 0] = v.x; b[e][4 * j + 1] = v.y; b[e][4 * j + 2] = v.z; b[e][4 * j + 3] = v.w;
            }
        } else {
          // N == kCols < 4: B rows k..k+3 are the 4*kCols floats from k*kCols, 16-byte aligned.
          float f[4 * kCols];
          const float4* p = reinterpret_cast<const float4*>(B + static_cast<size_t>(k) * kCols);
#pragma unroll
          for (int g = 0; g < kCols; ++g) {
            const float4 v = __ldg(p + g);
            f[4 * g + 0] = v.x; f[4 * g + 1] = v.y; f[4 * g + 2] = v.z; f[4 * g + 3] = v.w;
          }
#pragma unroll
          for (int e = 0; e < 4; ++e)
#pragma unroll
            for (int j = 0; j < kCols; ++j) b[e][j] = f[e * kCols + j];
        }
        rows_quad_fma(acc, a, b);
      }
    } else {
      // TN wider than N (or N % 4 != 0, or the last column block): A still streams as float4s;
      // B element by element, columns >= N read nothing and give 0.
#pragma unroll 1
      for (int q = q0 + tid; q < q1; q += kThreads) {
        const int k = 4 * q;
        float4 a[kRows];
#pragma unroll
        for (int i = 0; i < kRows; ++i) a[i] = __ldcs(reinterpret_cast<const float4*>(A + aoff[i] + k));
        float b[4][kCols];
#pragma unroll
        for (int e = 0; e < 4; ++e)
#pragma unroll
          for (int j = 0; j < kCols; ++j)
            b[e][j] = col0 + j < N ? __ldg(B + static_cast<size_t>(k + e) * N + col0 + j) : 0.f;
        rows_quad_fma(acc, a, b);
      }
    }
  } else {
    // Generic path: element by element, each with its predicate; out-of-range terms are skipped.
#pragma unroll 1
    for (int q = q0 + tid; q < q1; q += kThreads) {
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const long long k = 4LL * q + e;
        if (k >= K) break;
        float b[kCols];
#pragma unroll
        for (int j = 0; j < kCols; ++j)
          b[j] = col0 + j < N ? B[static_cast<size_t>(k) * N + col0 + j] : 0.f;
#pragma unroll
        for (int i = 0; i < kRows; ++i) {
          const float a = A[aoff[i] + k];
#pragma unroll
          for (int j = 0; j < kCols; ++j) acc[i][j] = fmaf(a, b[j], acc[i][j]);
        }
      }
    }
  }

  // Reduction (see above): warp reduce-scatter, then across warps in warp order.
  float x[kV];
#pragma unroll
  for (int i = 0; i < kRows; ++i)
#pragma unroll
    for (int j = 0; j < kCols; ++j) x[i * kCols + j] = acc[i][j];
  int base = 0;
  WarpReduce<0, kV>::run(x, lane, base);
  if ((lane & kLowMask) == 0) {
#pragma unroll
    for (int i = 0; i < kPerLane; ++i) red[warp][base + i] = x[i];
  }
  __syncthreads();
  for (int v = tid; v < kV; v += kThreads) {
    float s = red[0][v];
#pragma unroll
    for (int w = 1; w < kWarps; ++w) s += red[w][v];
#if SPLITK > 1
    part[v] = s;
#else
    const int row = row0 + v / kCols, col = col0 + v % kCols;
    if (row < M && col < N) C[static_cast<size_t>(row) * N + col] = s;
#endif
  }
#if SPLITK > 1
  sgemm_cluster::sync();  // every rank's part[] is written and visible cluster-wide
  if (rank == 0) {
    const unsigned part_base = static_cast<unsigned>(__cvta_generic_to_shared(part));
    for (int v = tid; v < kV; v += kThreads) {
      const unsigned off = part_base + 4u * static_cast<unsigned>(v);
      float s = sgemm_cluster::load1(sgemm_cluster::map(off, 0));
#pragma unroll
      for (int p = 1; p < SPLITK; ++p) s += sgemm_cluster::load1(sgemm_cluster::map(off, p));  // rank order
      const int row = row0 + v / kCols, col = col0 + v % kCols;
      if (row < M && col < N) C[static_cast<size_t>(row) * N + col] = s;
    }
  }
  sgemm_cluster::sync();  // no block leaves (freeing part[]) while rank 0 still reads it
#endif
}

#else
#error "KIND must be 0 (tiled) or 1 (rows)"
#endif  // KIND
#undef SGEMM_CLUSTER_DIMS

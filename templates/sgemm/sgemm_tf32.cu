// Split-TF32 ("3xTF32") SGEMM template: row-major C[M,N] = A[M,K] * B[K,N], float32 in and out,
// the products on the tensor cores (mma.sync m16n8k8 TF32, sm_80 and newer), FP32-accurate.
// Any M, N, K >= 1 is handled. Measurements: docs/performance.md.
//
// kopt:entry sgemm_tf32
// kopt:grid ceil_div(N, BN) * SPLITK, ceil_div(M, BM), 1
// kopt:block (BM / WM) * (BN / WN) * 32, 1, 1
// kopt:shared max(STAGES * (BM * (BK + 8) + BK * (BN + 4)) * 4, (SPLITK > 1) * BM * (BN + 8) * 4)
//
// ==== The arithmetic ==============================================================================
//
// Every element x of an A or B tile is split, after its shared-memory load, into two TF32 numbers
// (11 significant bits each): hi = tf32(x) and lo = tf32(x - hi), both rounded to nearest (see CVT
// for the instructions). x - hi is exact in FP32, |x - hi| <= 2^-11 |x|, and |x - (hi + lo)| <=
// 2^-23 |x| (one unit in the last place of x: the split keeps 22-23 of x's 24 bits). The product
// a*b is then taken as
//     lo_a*hi_b + hi_a*lo_b + hi_a*hi_b
// (three mma, the two small terms first), each product exact inside the tensor core (11 x 11 bits).
// The fourth term lo_a*lo_b is dropped, as Ootomo and Yokota do ("Recovering single precision
// accuracy from Tensor Cores while surpassing the FP32 theoretical peak performance", IJHPCA 2022,
// arXiv 2203.03341) and CUTLASS's OpMultiplyAddFastF32: |lo_a*lo_b| <= 2^-22 |a*b| at worst and
// about 2^-24 |a*b| on average, the size of the rounding error FP32 makes on every multiply-add
// anyway and of the split's own representation error, so computing it (a fourth mma, +33% tensor
// work) would not make the result more accurate.
//
// Accumulation. Inside the tensor core the sum of an mma is aligned to its largest term and
// truncated (round toward zero: Fasi, Higham, Mikaitis and Pranesh, "Numerical behavior of NVIDIA
// tensor cores", PeerJ CS 2021; the Ootomo-Yokota paper measures the same on A100). Accumulating all
// of K there biases the sum towards zero, by an amount that grows with K: on data of one sign, 1%
// relative error at K = 500000, over 200 times a plain FP32 dot product's, in the emulation of
// tests/unit/test_sgemm_tf32.cpp. So, as Ootomo and Yokota do, the tensor core only sums the three
// products of one k step (8 of K): t = lo*hi + hi*lo + hi*hi starts from a zero accumulator, and t
// is added to an FP32 accumulator with an ordinary FADD (round to nearest) after every step.
// Summing a whole k-tile of 32 in the tensor core before the FADD reached 3.5x FP32's RMS error at
// K = 64 in the emulation.
//
// The FP32 sums. A thread's accumulator is one chain of K / 8 FADDs (K / (8 SPLITK) per cluster
// rank): half the roundings of a thread of a SIMT SGEMM, which does K FMAs in a row, so on the large
// shapes the error is about 0.35x cuBLAS FP32's (measured on an H100). cuBLAS splits deep K with
// few outputs much further (a GEMV-like tree: 300x1x70000 at 0.6x its own large-shape error), and
// there a chain of K / 8 was 3-8x cuBLAS's error. ACC2 = 1 sums in two levels instead: the per-step
// FADDs go into a partial sum that is added to the accumulator and cleared every P k-tiles, with P
// = round(sqrt(8 KT / BK)) chosen at run time (KT: this rank's k-tiles), so that the two chains
// are about as long: 2 sqrt(K / 8) FADDs instead of K / 8 (K = 500000: about 500 instead of
// 62500). It costs one more register per accumulator, not one more instruction per step.
//
// Special values: NaN and Inf in the inputs give NaN or Inf in the outputs they reach (hi keeps
// them; a NaN whose payload is in the 13 low bits only becomes Inf, as with cvt.rna); finite inputs
// above (2 - 2^-11) * 2^127 round to Inf in the split (FP32 would not).
//
// ==== Parameters (preprocessor, -DNAME=VALUE; defaults below) ======================================
//
//   BM, BN, BK  block tile: a block computes C[row0 : row0+BM, col0 : col0+BN], K in steps of BK.
//   WM, WN      warp tile: the block's (BM/WM) x (BN/WN) warps each own WM x WN of it, as
//               (WM/16) x (WN/8) mma tiles of 16 x 8; each thread holds WM * WN / 32 accumulators
//               (twice that with ACC2 = 1) plus the split fragments and the mma temporaries:
//               WM * WN <= 4096 (64 x 64: 128 accumulators, about 230 registers).
//   STAGES      shared-memory buffers of the cp.async pipeline (>= 2; see Pipeline).
//   SPLITK      1: a block walks all of K. 2, 4 or 8 (sm_90): blocks x*SPLITK .. x*SPLITK+SPLITK-1
//               are one thread block cluster for one output tile; cluster rank r walks k-tiles
//               [r*KT/SPLITK, (r+1)*KT/SPLITK), writes its partial tile to its shared memory, and
//               after a cluster barrier rank r sums rows [r*BM/SPLITK, (r+1)*BM/SPLITK) of the tile
//               over ranks 0, 1, ..., SPLITK-1 in that order (DSMEM loads) and stores them; a second
//               barrier keeps every rank's shared memory alive until all reads are done.
//   SWZ         rasterization: 1 maps block (x, y) to output tile (row y, column x); SWZ > 1 walks
//               groups of SWZ tile rows column by column (Triton's GROUP_M), so that blocks that run
//               at the same time share A rows and B columns in L2.
//   MINB        min blocks per SM of __launch_bounds__.
//   CVT         how the split rounds to TF32 (the 13 low bits of a float are cleared, rounding to
//               nearest). 0: integer arithmetic, (bits + 0x1000) & ~0x1FFF, ties away from zero,
//               with a guard that leaves Inf and NaN unchanged (3 instructions for hi, FADD + 2 for
//               lo: 6 per element). 1: hi with cvt.rn.tf32.f32 (one F2FP instruction on sm_90, ties
//               to even), lo with the integer rounding (a NaN lo can only come from a NaN or Inf
//               x, whose hi carries it): 4 per element. 2: both with cvt.rn.tf32.f32: 3 per
//               element. cvt.rn.tf32.f32 exists from sm_90 on; below, CVT 1 and 2 act as 0. The
//               F2FP throughput is not documented: the tuning decides.
//   ACC2        0: one FP32 accumulator per output; 1: two-level sums (see The FP32 sums). The spec
//               allows 1 only: measured on an H100, every ACC2 = 0 configuration broke the 2x error
//               contract on deep K (8.9x cuBLAS FP32's max error on 300x1x70000, 5.3x its RMS on
//               3x2x500000), while every ACC2 = 1 one met it (at worst 1.38x max, 1.19x RMS, on
//               257x129x65), and the 128x128x32 block with ACC2 = 1 ran within 1% of its ACC2 = 0
//               twin on every large shape (docs/performance.md). 0 stays for the CPU tests.
// Threads per block: (BM/WM) * (BN/WN) * 32. Grid: x = ceil_div(N, BN) * SPLITK, y = ceil_div(M, BM).
//
// ==== Shared memory (dynamic, bytes = max(STAGES * (BM*(BK+8) + BK*(BN+4)) * 4, SPLITK > 1 ? BM*(BN+8)*4 : 0))
//
//   stage s of A: sA[s][m][k], m < BM, k < BK, row stride LDA = BK + 8 floats (A as in memory)
//   stage s of B: sB[s][k][n], k < BK, n < BN, row stride LDB = BN + 4 floats (B as in memory)
//   split-K only, after the main loop: red[m][n], row stride LDC = BN + 8 (reuses the stages)
// The paddings make every fragment load conflict-free (32-bit banks, b = word address mod 32):
//   A: a lane (g = lane/4, t = lane%4) reads a float2 at row (g or g+8), column kk*8 + 2t (see the
//      k-slot order below). A 64-bit load is served per half warp: g in 0..3 (4..7), t in 0..3; with
//      LDA = 8 (mod 32) (BK % 32 == 0) or 24 (BK % 32 == 16) the rows start at banks 0, 8, 16, 24 in
//      some order and the 16 float2 fill all 32 banks once.
//   B: a lane reads one float at row kk*8 + 2t (+1), column n0 + g; LDB = BN + 4 with BN % 16 == 0
//      puts the four rows 2t at banks 8t (+4): 8t + g covers 32 distinct banks.
//   The cp.async writes are 16 bytes per lane along a row: a quarter warp writes 128 contiguous
//   bytes (conflict-free) when a row holds at least 8 chunks (BK = 32, any BN >= 32).
//
// ==== Fragments (PTX ISA, "Matrix Fragments for mma.m16n8k8", .tf32) =================================
//
// g = lane / 4, t = lane % 4. The mma's A registers a0..a3 are (row g, k slot t), (g+8, t), (g, t+4),
// (g+8, t+4); B's b0, b1 are (k slot t, column g), (t+4, g); C's c0..c3 are (g, 2t), (g, 2t+1),
// (g+8, 2t), (g+8, 2t+1). Any one-to-one map of the mma's 8 k slots onto the 8 k of the step gives
// the same sum, as long as A and B use the same: slot t is k = 2t and slot t+4 is k = 2t+1, so a
// thread's two A values of a row are adjacent in shared memory (one 64-bit load for a0 and a2, one
// for a1 and a3) and its two B values are the rows 2t and 2t+1 of the step. tests/unit/
// test_sgemm_tf32.cpp runs this index arithmetic (struct Layout) on the CPU with an mma emulated
// from the PTX table, and counts the banks of every load.
//
// ==== Pipeline (KT = ceil_div(K, BK) k-tiles, tile t in stage t % STAGES) ============================
//
//   prologue: tiles 0 .. STAGES-2 issued, one cp.async group each (empty groups past KT).
//   iteration t: cp.async.wait_group(STAGES-2)  -> this thread's copies of tile t have landed
//                __syncthreads()                -> everyone's have, and everyone is done with tile t-1
//                issue tile t+STAGES-1 into stage (t-1) % STAGES, commit (always, maybe empty)
//                compute tile t: per k step of 8 (the next step's fragments loaded meanwhile):
//                split, per 16x8 mma tile t = 3 mma from zero, acc += t
//   The group count before the wait of iteration t is STAGES-1+t, so "all but the newest STAGES-2
//   complete" means groups 0..t complete.
//
// ==== Bounds (any M, N, K >= 1; buffers are 256-byte aligned and may end against a guard page) ======
//
// Every copy is predicated: an element outside the matrix is zero-filled by cp.async with src-size
// 0 (nothing is read; the source operand is then the matrix's first element, always valid). K % 4
// == 0: A is copied in 16-byte chunks (a chunk k..k+3 is all in or all out, rows 16-byte aligned);
// otherwise element by element (4-byte cp.async). Likewise B with N % 4 == 0. Zeros split into
// zeros and add nothing. C is stored where row < M and col < N: float2 when N is even (col even, so
// col < N implies col + 1 < N), else element by element; split-K stores float4 when N % 4 == 0.
// Offsets into A, B and C are 64-bit. Examples (BM = BN = 128, BK = 32): 1x1x1 -> one block, one
// nonzero element in each tile; 1000x1x17 -> 8 row blocks, element-wise A (K % 4 = 1) and B
// (N = 1), one k-tile with k < 17 real; 127x129x65 -> 2 x 1 blocks, k-tiles 0..2, the last with
// k = 64 only.

#ifndef BM
#define BM 128
#endif
#ifndef BN
#define BN 128
#endif
#ifndef BK
#define BK 32
#endif
#ifndef WM
#define WM 64
#endif
#ifndef WN
#define WN 32
#endif
#ifndef STAGES
#define STAGES 3
#endif
#ifndef SPLITK
#define SPLITK 1
#endif
#ifndef SWZ
#define SWZ 1
#endif
#ifndef MINB
#define MINB 1
#endif
#ifndef CVT
#define CVT 0
#endif
#ifndef ACC2
#define ACC2 1  // the spec allows 1 only: see ACC2 above
#endif

#if SPLITK != 1 && SPLITK != 2 && SPLITK != 4 && SPLITK != 8
#error "SPLITK must be 1, 2, 4 or 8 (a portable thread block cluster holds at most 8 blocks)"
#endif
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 800
#error "the split-TF32 kernel uses mma.sync m16n8k8 TF32 and cp.async: compile for sm_80 or newer"
#endif
#if SPLITK > 1 && defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 900
#error "SPLITK > 1 uses thread block clusters: compile for sm_90 or newer"
#endif

namespace tf32x3 {

#include "sgemm_tf32_index.cuh"

// Every index the kernel computes, as plain integer arithmetic of the tuning parameters, the thread
// and the loop counters; the kernel below and the CPU tests use these functions and nothing else.
// Offsets are in floats within one stage buffer; rows and columns within the block tile.
template <int kBM, int kBN, int kBK, int kWM, int kWN, int kSwz>
struct Layout {
  static constexpr int kTileM = kBM, kTileN = kBN, kTileK = kBK;
  static constexpr int kThreads = (kBM / kWM) * (kBN / kWN) * 32;
  static constexpr int kWarpsN = kBN / kWN;  // warps along N
  static constexpr int kMI = kWM / 16;       // mma tiles of a warp along M
  static constexpr int kNI = kWN / 8;        // mma tiles of a warp along N
  static constexpr int kSteps = kBK / 8;     // mma k steps per k-tile
  static constexpr int kLda = kBK + 8;       // smem row stride of A (floats)
  static constexpr int kLdb = kBN + 4;       // smem row stride of B
  static constexpr int kLdc = kBN + 8;       // smem row stride of the split-K partial tile
  static constexpr int kStageA = kBM * kLda;  // floats per A stage
  static constexpr int kStageB = kBK * kLdb;  // floats per B stage
  static constexpr int kChunksA = kBM * kBK / 4 / kThreads;  // 16-byte chunks of A per thread per tile
  static constexpr int kChunksB = kBK * kBN / 4 / kThreads;

  // Copies: chunk f = tid + l * kThreads of the A tile is row m = f / (BK/4), k = 4 * (f % (BK/4))
  // (consecutive lanes along a row of A); of the B tile row k = f / (BN/4), n = 4 * (f % (BN/4)).
  static SGEMM_TF32_HD void a_chunk(int tid, int l, int& m, int& k) { tile_chunk<kThreads, kBK / 4>(tid, l, m, k); }
  static SGEMM_TF32_HD void b_chunk(int tid, int l, int& k, int& n) { tile_chunk<kThreads, kBN / 4>(tid, l, k, n); }
  static SGEMM_TF32_HD int a_at(int m, int k) { return m * kLda + k; }
  static SGEMM_TF32_HD int b_at(int k, int n) { return k * kLdb + n; }

  static SGEMM_TF32_HD int warp_m0(int warp) { return (warp / kWarpsN) * kWM; }
  static SGEMM_TF32_HD int warp_n0(int warp) { return (warp % kWarpsN) * kWN; }
  // A fragment of mma tile mi at k step s: the float2 at a_frag(.., half) holds the k slots t and
  // t + 4 (.x, .y) of row g + 8 * half; mma register a_i is half (i & 1), component (i >> 1).
  static SGEMM_TF32_HD int a_frag(int warp, int lane, int mi, int s, int half) {
    return a_at(warp_m0(warp) + mi * 16 + (lane >> 2) + 8 * half, s * 8 + 2 * (lane & 3));
  }
  // B fragment of mma tile ni at k step s: register b_j (k slot t + 4j) is the float at b_frag(.., j).
  static SGEMM_TF32_HD int b_frag(int warp, int lane, int ni, int s, int j) {
    return b_at(s * 8 + 2 * (lane & 3) + j, warp_n0(warp) + ni * 8 + (lane >> 2));
  }
  // Accumulator c_i of mma tile (mi, ni): its row and column in the block tile.
  static SGEMM_TF32_HD int c_row(int warp, int lane, int mi, int i) {
    return warp_m0(warp) + mi * 16 + (lane >> 2) + 8 * (i >> 1);
  }
  static SGEMM_TF32_HD int c_col(int warp, int lane, int ni, int i) {
    return warp_n0(warp) + ni * 8 + 2 * (lane & 3) + (i & 1);
  }
  // ACC2: the k-tiles summed in the inner level before each fold, round(sqrt(8 * kt / BK)) >= 1 for
  // kt k-tiles (inner chain inner * BK / 8 FADDs, outer chain kt / inner: about equal).
  static SGEMM_TF32_HD int inner_tiles(int kt) { return round_sqrt_ratio(8 * kt, kBK); }
  // Rasterization (see swizzled_tile): block (bx, by) of a gx x gy grid of output tiles computes
  // tile row tm, tile column tn; 64-bit block numbers.
  static SGEMM_TF32_HD void tile_of(int bx, int by, int gx, int gy, int& tm, int& tn) {
    swizzled_tile<kSwz, long long>(bx, by, gx, gy, tm, tn);
  }
};

}  // namespace tf32x3

#if defined(__CUDACC__) || defined(__CUDACC_RTC__)

#if SPLITK > 1
#include "sgemm_cluster.cuh"
#endif  // SPLITK > 1
#undef TF32X3_CLUSTER_DIMS  // a generated file holds this source once per variant
#if SPLITK > 1
#define TF32X3_CLUSTER_DIMS __cluster_dims__(SPLITK, 1, 1)
#else
#define TF32X3_CLUSTER_DIMS
#endif

namespace tf32x3 {

using L = Layout<BM, BN, BK, WM, WN, SWZ>;
constexpr int kMI = L::kMI, kNI = L::kNI;

static_assert(BM > 0 && BN > 0 && BK > 0 && WM > 0 && WN > 0, "positive sizes");
static_assert(BM % WM == 0 && BN % WN == 0, "the block tile is a whole number of warp tiles");
static_assert(WM % 16 == 0 && WN % 8 == 0, "the warp tile is a whole number of 16 x 8 mma tiles");
static_assert(WM * WN <= 4096 && (ACC2 == 0 || WM * WN <= 2048),
              "warp tiles up to 64 x 64, 64 x 32 with ACC2 (128 accumulators per thread at most)");
static_assert(BK % 16 == 0, "BK % 16 == 0 keeps the A fragment loads conflict-free (LDA = BK + 8)");
static_assert(BN % 16 == 0, "BN % 16 == 0 keeps the B fragment loads conflict-free (LDB = BN + 4)");
static_assert(L::kThreads <= 1024, "at most 1024 threads per block");
static_assert((BM * BK / 4) % L::kThreads == 0 && L::kChunksA >= 1, "A tile chunks divide among the threads");
static_assert((BK * BN / 4) % L::kThreads == 0 && L::kChunksB >= 1, "B tile chunks divide among the threads");
static_assert(STAGES >= 2 && STAGES <= 8, "STAGES in 2..8");
static_assert(BM % SPLITK == 0, "each cluster rank reduces BM / SPLITK rows");
static_assert(SWZ >= 1 && MINB >= 1, "SWZ, MINB >= 1");
static_assert(CVT >= 0 && CVT <= 2 && (ACC2 == 0 || ACC2 == 1), "CVT in 0..2, ACC2 0 or 1");

#include "sgemm_async.cuh"
#include "sgemm_tf32_common.cuh"

// TF32 rounding to nearest (the 13 low bits cleared), see CVT. tf32_int: ties away from zero on the
// magnitude, a carry moving into the next binade (or to Inf); `guard`: Inf and NaN are left as they
// are (else the + 0x1000 could carry a NaN's payload into the sign bit).
template <bool kGuard>
__device__ __forceinline__ unsigned tf32_int(float x) {
  const unsigned u = __float_as_uint(x);
  if (kGuard) return (fabsf(x) < __int_as_float(0x7F800000) ? u + 0x1000u : u) & 0xFFFFE000u;
  return (u + 0x1000u) & 0xFFFFE000u;
}
__device__ __forceinline__ unsigned tf32_cvt(float x) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  unsigned r;
  asm("cvt.rn.tf32.f32 %0, %1;\n" : "=r"(r) : "f"(x));
  return r;
#else
  return tf32_int<true>(x);
#endif
}
// x = hi + lo + O(2^-23 |x|), both TF32.
__device__ __forceinline__ void split(float x, unsigned& hi, unsigned& lo) {
  hi = CVT >= 1 ? tf32_cvt(x) : tf32_int<true>(x);
  const float rest = x - __uint_as_float(hi);  // exact; NaN only where hi is Inf or NaN
  lo = CVT == 2 ? tf32_cvt(rest) : tf32_int<false>(rest);
}
// d += A(16x8) * B(8x8), TF32 operands, FP32 accumulators (the fragments: see the top).
__device__ __forceinline__ void mma(float (&d)[4], const unsigned (&a)[4], const unsigned (&b)[2]) {
  asm("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%0, %1, %2, %3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}
// d = A(16x8) * B(8x8) (a zero accumulator).
__device__ __forceinline__ void mma_first(float (&d)[4], const unsigned (&a)[4], const unsigned (&b)[2]) {
  asm("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%10, %10, %10, %10};\n"
      : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]), "f"(0.0f));
}

// Issues the copies of the k-tile starting at k0 into one A and one B stage (see Bounds).
__device__ __forceinline__ void load_tile(const BlockCtx& c, int k0, float* sa, float* sb) {
  const unsigned a_base = smem_addr(sa), b_base = smem_addr(sb);
#pragma unroll
  for (int l = 0; l < L::kChunksA; ++l) {
    int m, k;
    L::a_chunk(c.tid, l, m, k);
    const int gr = c.row0 + m;
    const float* row = c.A + static_cast<size_t>(gr < c.M ? gr : 0) * static_cast<size_t>(c.K);
    copy4(a_base + 4u * static_cast<unsigned>(L::a_at(m, k)), row, gr < c.M, k0 + k, c.K, c.kvec, c.A);
  }
#pragma unroll
  for (int l = 0; l < L::kChunksB; ++l) {
    int k, n;
    L::b_chunk(c.tid, l, k, n);
    const int gk = k0 + k;
    const float* row = c.B + static_cast<size_t>(gk < c.K ? gk : 0) * static_cast<size_t>(c.N);
    copy4(b_base + 4u * static_cast<unsigned>(L::b_at(k, n)), row, gk < c.K, c.col0 + n, c.N, c.nvec, c.B);
  }
}

// The raw fragments of k step s: per mma tile row mi the two float2 of A (halves 0 and 1), per mma
// tile column ni the two floats of B.
struct Frags {
  float2 a[kMI][2];
  float b[kNI][2];
};
__device__ __forceinline__ void load_a(Frags& f, const float* sa, int warp, int lane, int s) {
#pragma unroll
  for (int mi = 0; mi < kMI; ++mi)
#pragma unroll
    for (int half = 0; half < 2; ++half)
      f.a[mi][half] = *reinterpret_cast<const float2*>(sa + L::a_frag(warp, lane, mi, s, half));
}
__device__ __forceinline__ void load_b(Frags& f, const float* sb, int warp, int lane, int ni, int s) {
#pragma unroll
  for (int j = 0; j < 2; ++j) f.b[ni][j] = sb[L::b_frag(warp, lane, ni, s, j)];
}

// One k-tile from one stage into `sum`. Per k step of 8 and mma tile: t = lo*hi + hi*lo + hi*hi in
// the tensor core (t starts at zero: the first mma adds no accumulator), then sum += t with an FP32
// add. Registers are the limit (the accumulators take WM * WN / 32 of them, and every mma tile in
// flight 4 more for t), so each raw fragment is split as late as possible and its register refilled
// with the next step's value right after: A (kMI x 4 values, used by every mma tile column) at the
// start of a step, B (2 values, used by the kMI tiles of one column) column by column. The last
// step reloads its own fragments (harmless, and no branch). The steps are not unrolled: nothing but
// the accumulators and the raw fragments lives across them.
__device__ __forceinline__ void compute_tile(const float* sa, const float* sb, int warp, int lane,
                                             float (&sum)[kMI][kNI][4]) {
  Frags f;
  load_a(f, sa, warp, lane, 0);
#pragma unroll
  for (int ni = 0; ni < kNI; ++ni) load_b(f, sb, warp, lane, ni, 0);
#pragma unroll 1
  for (int s = 0; s < L::kSteps; ++s) {
    const int next = s + 1 < L::kSteps ? s + 1 : s;
    unsigned ahi[kMI][4], alo[kMI][4];
#pragma unroll
    for (int mi = 0; mi < kMI; ++mi)
#pragma unroll
      for (int half = 0; half < 2; ++half) {
        split(f.a[mi][half].x, ahi[mi][half], alo[mi][half]);          // a0 (half 0), a1 (half 1): k slot t
        split(f.a[mi][half].y, ahi[mi][half + 2], alo[mi][half + 2]);  // a2, a3: k slot t + 4
      }
    load_a(f, sa, warp, lane, next);
#pragma unroll
    for (int ni = 0; ni < kNI; ++ni) {
      unsigned bhi[2], blo[2];
      split(f.b[ni][0], bhi[0], blo[0]);
      split(f.b[ni][1], bhi[1], blo[1]);
      load_b(f, sb, warp, lane, ni, next);
#pragma unroll
      for (int mi = 0; mi < kMI; ++mi) {
        float t[4];
        mma_first(t, alo[mi], bhi);  // the small terms first
        mma(t, ahi[mi], blo);
        mma(t, ahi[mi], bhi);        // the large one last
#pragma unroll
        for (int i = 0; i < 4; ++i) sum[mi][ni][i] += t[i];
      }
    }
  }
}

__device__ __forceinline__ void zero(float (&x)[kMI][kNI][4]) {
#pragma unroll
  for (int mi = 0; mi < kMI; ++mi)
#pragma unroll
    for (int ni = 0; ni < kNI; ++ni)
#pragma unroll
      for (int i = 0; i < 4; ++i) x[mi][ni][i] = 0.f;
}

// acc += part; part = 0 (ACC2: the outer level of the two-level sums).
__device__ __forceinline__ void fold(float (&acc)[kMI][kNI][4], float (&part)[kMI][kNI][4]) {
#pragma unroll
  for (int mi = 0; mi < kMI; ++mi)
#pragma unroll
    for (int ni = 0; ni < kNI; ++ni)
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        acc[mi][ni][i] += part[mi][ni][i];
        part[mi][ni][i] = 0.f;
      }
}

}  // namespace tf32x3

extern "C" __global__ void TF32X3_CLUSTER_DIMS __launch_bounds__(tf32x3::L::kThreads, MINB)
sgemm_tf32(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C, int M, int N, int K) {
  using namespace tf32x3;
  extern __shared__ float4 tf32x3_smem[];
  float* const sA = reinterpret_cast<float*>(tf32x3_smem);  // STAGES stages of L::kStageA floats
  float* const sB = sA + STAGES * L::kStageA;                // STAGES stages of L::kStageB floats
  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;

  BlockCtx c;
  c.A = A; c.B = B; c.M = M; c.N = N; c.K = K;
  c.tid = tid;
  {
    int tm, tn;
    L::tile_of(static_cast<int>(blockIdx.x) / SPLITK, static_cast<int>(blockIdx.y),
               static_cast<int>(gridDim.x) / SPLITK, static_cast<int>(gridDim.y), tm, tn);
    c.row0 = tm * BM;
    c.col0 = tn * BN;
  }
  c.kvec = (K & 3) == 0;
  c.nvec = (N & 3) == 0;

  float acc[kMI][kNI][4];
  zero(acc);

  const int KT_all = K / BK + (K % BK != 0);  // k-tiles of K
#if SPLITK > 1
  const unsigned rank = sgemm_cluster::rank();
  const int t_begin = static_cast<int>(static_cast<long long>(KT_all) * rank / SPLITK);
  const int t_end = static_cast<int>(static_cast<long long>(KT_all) * (rank + 1) / SPLITK);
  const int KT = t_end - t_begin;  // may be 0: the rank contributes zeros
  const int kb = t_begin * BK;
#else
  const int KT = KT_all;
  constexpr int kb = 0;
#endif

  // Pipeline (see the top): prologue, then one wait + barrier per k-tile.
#pragma unroll
  for (int s = 0; s < STAGES - 1; ++s) {
    if (s < KT) load_tile(c, kb + s * BK, sA + s * L::kStageA, sB + s * L::kStageB);
    cp_async_commit();
  }
#if ACC2
  // Two-level sums: the k-tiles' FADDs go into part, folded into acc every `inner` k-tiles.
  float part[kMI][kNI][4];
  zero(part);
  const int inner = L::inner_tiles(KT);
  int left = inner;
#endif
  int rd = 0, wr = STAGES - 1;  // stages of tile t and of tile t + STAGES - 1
  for (int t = 0; t < KT; ++t) {
    cp_async_wait<STAGES - 2>();
    __syncthreads();
    if (t + STAGES - 1 < KT) load_tile(c, kb + (t + STAGES - 1) * BK, sA + wr * L::kStageA, sB + wr * L::kStageB);
    cp_async_commit();
#if ACC2
    compute_tile(sA + rd * L::kStageA, sB + rd * L::kStageB, warp, lane, part);
    if (--left == 0) {
      fold(acc, part);
      left = inner;
    }
#else
    compute_tile(sA + rd * L::kStageA, sB + rd * L::kStageB, warp, lane, acc);
#endif
    rd = rd + 1 == STAGES ? 0 : rd + 1;
    wr = wr + 1 == STAGES ? 0 : wr + 1;
  }
  cp_async_wait<0>();  // only empty groups can be left
#if ACC2
  fold(acc, part);
#endif

#if SPLITK > 1
  {
    unsigned dyn;
    asm volatile("mov.u32 %0, %%dynamic_smem_size;\n" : "=r"(dyn));
    if (dyn < static_cast<unsigned>(BM * L::kLdc * 4)) __trap();  // the launch gave too little
  }
  __syncthreads();  // every warp is done with the stages that red[] reuses
  float* const red = reinterpret_cast<float*>(tf32x3_smem);
#pragma unroll
  for (int mi = 0; mi < kMI; ++mi)
#pragma unroll
    for (int ni = 0; ni < kNI; ++ni)
#pragma unroll
      for (int h = 0; h < 2; ++h)  // c0, c1 (row g) and c2, c3 (row g + 8): adjacent columns
        *reinterpret_cast<float2*>(red + L::c_row(warp, lane, mi, 2 * h) * L::kLdc + L::c_col(warp, lane, ni, 0)) =
            make_float2(acc[mi][ni][2 * h], acc[mi][ni][2 * h + 1]);
  sgemm_cluster::sync();  // every rank's partial tile is written and visible cluster-wide
  splitk_store<BM / SPLITK, BN / 4, L::kLdc, L::kThreads>(C, M, N, c.row0, c.col0, c.nvec, tid, rank, smem_addr(red));
  sgemm_cluster::sync();  // no block leaves (freeing its shared memory) while others still read it
#else
  const bool even = (N & 1) == 0;
#pragma unroll
  for (int mi = 0; mi < kMI; ++mi)
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int row = c.row0 + L::c_row(warp, lane, mi, 2 * h);
      if (row >= M) continue;
      float* crow = C + static_cast<size_t>(row) * static_cast<size_t>(N);
#pragma unroll
      for (int ni = 0; ni < kNI; ++ni) {
        const int col = c.col0 + L::c_col(warp, lane, ni, 0);  // even
        const float x = acc[mi][ni][2 * h], y = acc[mi][ni][2 * h + 1];
        if (even) {
          if (col < N) *reinterpret_cast<float2*>(crow + col) = make_float2(x, y);  // col + 1 < N
        } else {
          if (col < N) crow[col] = x;
          if (col + 1 < N) crow[col + 1] = y;
        }
      }
    }
#endif  // SPLITK
}

#undef TF32X3_CLUSTER_DIMS
#endif  // __CUDACC__ || __CUDACC_RTC__

// Split-TF32 ("3xTF32") SGEMM on Hopper's warpgroup tensor-core instruction: row-major C[M,N] =
// A[M,K] * B[K,N], float32 in and out, the products with wgmma.mma_async (sm_90a only: H100, H200),
// FP32-accurate. Any M, N, K >= 1 is handled. The mma.sync kernel of the same arithmetic, for sm_80
// and newer, is sgemm_tf32.cu; the arithmetic and its error analysis are described there.
//
// kopt:entry sgemm_tf32_wgmma
// kopt:grid ceil_div(N, WN * WGN) * SPLITK, ceil_div(M, 64 * WGM), 1
// kopt:block 128 * WGM * WGN, 1, 1
// kopt:shared max(((2 + DEFER) * 2 * ((1 - AREG) * 64 * WGM + WN * WGN) + STAGES * (64 * WGM + WN * WGN)) * BK * 4, (SPLITK > 1) * 64 * WGM * (WN * WGN + 8) * 4) + 1024
// kopt:options --gpu-architecture=sm_90a
//
// wgmma.mma_async exists for sm_90a only (the "a" features of the H100/H200), so the file compiles
// for that target alone: the options line above makes kopt's NVRTC compile it for sm_90a whatever
// the device's plain architecture (a later --gpu-architecture replaces the earlier -arch); an nvcc
// build needs sm_90a code: -gencode arch=compute_90a,code=sm_90a, or CMake's CUDA_ARCHITECTURES 90a
// (nvcc 13's -arch=sm_90a also writes compute_90 PTX, in which the kernel is a trap: see below).
// NVRTC refuses any other target with an #error; the sm_80 build uses sgemm_tf32.cu.
//
// ==== The arithmetic ==============================================================================
//
// As sgemm_tf32.cu: every element x of A and B is split once, x = hi + lo with hi = tf32(x) and
// lo = tf32(x - hi) (cvt.rn.tf32.f32: round to nearest even), and a*b is taken as lo_a*hi_b +
// hi_a*lo_b + hi_a*hi_b, three TF32 products on the tensor cores. lo_a*lo_b is dropped (Ootomo and
// Yokota, IJHPCA 2022, arXiv 2203.03341; CUTLASS OpMultiplyAddFastF32): at most 2^-22 and on average
// about 2^-24 of |a*b|, the size of FP32's own rounding of each product, so a fourth product would
// cost a third more tensor work without making the result more accurate.
//
// Where the sums are formed. Inside the tensor core a wgmma's sum (its 8 products and the
// accumulator) is aligned to its largest term and truncated, not rounded (Fasi, Higham, Mikaitis and
// Pranesh, PeerJ CS 2021): summing all of K there biases the result towards zero by an amount that
// grows with K. So the tensor core only forms short chains: one chain is KSTEP k steps of 8 (3 *
// KSTEP wgmma, small products first, the first one from a zero accumulator: scale-d false), and its
// result is added to an FP32 partial sum with an ordinary FADD (round to nearest) when the chain is
// complete. The FP32 sums are two-level (sgemm_tf32.cu's ACC2 = 1, the only form that met the 2x
// error contract there): the partial sum is added to the accumulator and cleared every P k-tiles,
// P = round(sqrt(KT / CH)) (KT k-tiles, CH = BK / (8 KSTEP) chains per k-tile), so that the inner
// chain (P * CH adds) and the outer one (KT / P) are about equally long: about 2 sqrt(K / (8
// KSTEP)) FP32 roundings per output instead of K / (8 KSTEP). KSTEP = 1 is sgemm_tf32.cu's
// arithmetic; KSTEP 2 and 4 trade accuracy (longer truncated chains) for fewer waits and adds. In
// the truncating-adder model of tests/unit/test_sgemm_tf32_wgmma.cpp, chains of 1 and 2 steps stay
// within 2x of a plain FP32 dot product's max and RMS error from K = 64 on (worst 1.4x and 1.7x)
// and chains of 4 do not (3.3x the RMS on positive inputs at K = 64): the spec allows KSTEP 1 and 2.
//
// Special values: NaN and Inf reach the outputs they touch (hi keeps them); finite inputs above
// (2 - 2^-11) * 2^127 round to Inf in the split.
//
// ==== Parameters (preprocessor, -DNAME=VALUE; defaults below) ======================================
//
//   WGM, WGN    warpgroups (128 threads each) of a block along M and N: the block tile is BM x BN,
//               BM = 64 * WGM, BN = WN * WGN; warpgroup g = (wm, wn) = (g / WGN, g % WGN) owns rows
//               [64 wm, 64 wm + 64) and columns [WN wn, WN wn + WN) of it, one wgmma m64nWNk8 wide.
//   WN          the wgmma's N: 32, 64, 96 or 128. Each thread holds 3 * WN / 2 FP32 registers of
//               sums (the chain's tensor-core accumulator, the partial sum, the accumulator).
//   BK          k-tile: 32 (operand rows of 128 bytes, 128-byte swizzle) or 16 (64 bytes, 64-byte
//               swizzle). A k-tile is BK / 8 wgmma k steps.
//   STAGES      cp.async stages of the raw (unsplit) tiles, >= 2 (see Pipeline).
//   KSTEP       k steps per tensor-core chain: 1, 2 or 4, at most BK / 8 (see The arithmetic; the
//               spec allows 1 and 2).
//   LAYOUT      shared-memory layout of the split operands (see Shared memory): 1 swizzled rows (the
//               layout TMA writes; the usual one), 0 interleaved 8x16-byte core matrices, no swizzle.
//   SWZ         rasterization: 1 maps block (x, y) to output tile (row y, column x); SWZ > 1 walks
//               groups of SWZ tile rows column by column (Triton's GROUP_M), for L2 reuse.
//   MINB        min blocks per SM of __launch_bounds__.
//   DBUF        0: one chain accumulator, each chain waited for before the next is issued; 1: two,
//               alternating, so that chain q+1 is issued before chain q is waited for (wgmma.wait_group
//               1; all waited for at the end of a k-tile, before the barrier that frees its buffer):
//               a warpgroup keeps the tensor cores fed by itself, for WN / 2 more registers. The sums
//               are the same, in the same order.
//   AREG        0: A's hi and lo parts from shared memory, as B's. 1: A from registers (wgmma's
//               register form of A): each warpgroup reads its A fragments from the raw stage just
//               before each chain and splits them in registers (8 KSTEP registers), so the block
//               splits B alone and the tensor cores read only B from shared memory: of the shared
//               memory traffic per 128x128x32 tile (copies, split reads and writes, wgmma operand
//               reads), about 192 KB instead of 272 KB, against 128 bytes per clock. The raw stage
//               of the tile multiplied is read during its k-tile, so one stage fewer is ahead
//               (STAGES >= 3). The sums are the same, in the same order. Needs DBUF 0.
//   SPLITK      1: a block walks all of K. 2, 4 or 8: blocks x*SPLITK .. x*SPLITK+SPLITK-1 are one
//               thread block cluster for one output tile; cluster rank r walks k-tiles
//               [r*KT/SPLITK, (r+1)*KT/SPLITK) (its own two-level sums), writes its partial tile to
//               its shared memory (BM rows of BN + 8 floats, over the stages), and after a cluster
//               barrier rank r sums rows [r*BM/SPLITK, (r+1)*BM/SPLITK) of the tile over ranks 0,
//               1, ..., SPLITK-1 in that order (DSMEM loads) and stores them; a second barrier keeps
//               every block's shared memory alive until the others have read it (as sgemm_tf32.cu).
//               For shapes with few output tiles (a wave of 132 SMs only partly filled) and deep K.
//   DEFER       0: every chain is waited for within its k-tile. 1: the last chain of a k-tile is
//               issued and not waited for: the tile's barrier (and the copy wait before it) pass
//               while the tensor cores work on it, and it is waited for and added at the start of
//               the next k-tile (before that tile's fold), so the barrier no longer empties the
//               tensor cores' queue. A third operand buffer (tile t in buffer t % 3): the split of
//               tile t + 1 during k-tile t writes the buffer of tile t - 2, whose deferred chain
//               every thread waited for before the last barrier (with two it would be tile t - 1's,
//               whose deferred chain another warpgroup may still be running). The sums are the
//               same, in the same order. Needs DBUF 0.
//   WS          0: every warpgroup copies, splits and multiplies, one block barrier per k-tile (the
//               Pipeline below). 1: warp-specialized (sgemm_tf32_wgmma_ws.cuh): one more warpgroup,
//               the producer, copies and splits (B, and A with AREG 0) through mbarrier-handed
//               stages and buffers, and the WGM x WGN consumers only multiply and add, with the
//               producer's registers (setmaxnreg); no block barrier in the k loop. Same tiles,
//               chains, sums and order: the same result bit for bit as WS 0. STAGES raw stages, two
//               operand buffers, STAGES - 1 raw tiles ahead. Needs DBUF 0, DEFER 0. Not in the spec
//               (sgemm_tf32_wgmma.json) nor in the launch lines above until measured: its launch has
//               128 more threads and 128 more bytes (bench/tf32_wgmma_check.cu runs it).
// Threads per block: 128 * (WGM * WGN + WS). Grid: x = ceil_div(N, BN) * SPLITK, y = ceil_div(M, BM).
//
// ==== Shared memory (dynamic; bytes = ((2 + DEFER) 2 ((1 - AREG) BM + BN) + STAGES (BM + BN)) * BK * 4
// ==== + 1024, or BM * (BN + 8) * 4 + 1024 for the split-K partial tile where that is more; + 128 with
// ==== WS for its mbarriers, after both) ==========
//
// The base is rounded up to 1024 bytes (the slack is the + 1024): the swizzle is a function of the
// shared-memory address bits, so every operand tile must start at a multiple of its pattern (1024
// bytes for the 128-byte swizzle, 512 for the 64-byte one). From the base:
//   two operand buffers (three with DEFER; tile t in buffer t % 2 or t % 3), each: A hi, A lo (BM
//     rows; not with AREG), B hi, B lo (BN rows),
//     every row one k-tile along K (BK floats: K-major, what wgmma requires of TF32 operands; B is
//     transposed on the way in); the 16-byte chunk c (k = 4c .. 4c+3) of row r of a tile of R rows
//     is at (layout of the PTX ISA's "Shared Memory Matrix Layout", CUTLASS's canonical GMMA
//     layouts, K-major):
//       LAYOUT 1: swz(r * BK * 4 + 16 c), swz(x) = x ^ (((x >> 7) & m) << 4), m = 7 (BK 32:
//                 Swizzle<3,4,3>) or 3 (BK 16: Swizzle<2,4,3>); 8 rows make one 1024- (512-) byte
//                 swizzle atom;
//       LAYOUT 0: 16 (c R + r): each 8 rows x 16 bytes are one core matrix (128 contiguous bytes),
//                 the core matrices of a column of chunks one after another.
//   STAGES raw stages, each: A as loaded, BM rows of BK floats, chunk c of row r at swz(r*BK*4 + 16 c)
//     (the same swizzle, so that the splitting threads read it without bank conflicts), then B as
//     loaded, BK rows of BN floats, row-major (k, n) at 4 (k BN + n).
//
// ==== Matrix descriptors (PTX ISA, "Matrix Descriptor Format") =======================================
//
// 64 bits: [0, 14) start address >> 4, [16, 30) leading dimension byte offset (LBO) >> 4, [32, 46)
// stride dimension byte offset (SBO) >> 4, [49, 52) base offset (0: every atom starts aligned),
// [62, 64) swizzle mode (0 none, 1 128-byte, 2 64-byte, 3 32-byte). For the K-major operand of a
// wgmma (64 rows of A, or WN rows of B; 8 of K = 32 bytes per row) at k step s of a k-tile:
//   LAYOUT 1: start = tile + r0 * BK * 4 + 32 s (the k step moves inside the swizzle atom, as
//             CUTLASS's descriptor iterator does), SBO = 8 * BK * 4 (the next 8 rows), LBO = 16
//             (unused by swizzled K-major layouts), mode 1 (BK 32) or 2 (BK 16);
//   LAYOUT 0: start = tile + 16 r0 + 2 s * 16 R (chunk 2s), LBO = 16 R (the second chunk of the
//             step: the next core matrix along K), SBO = 128 (the next 8 rows), mode 0.
// The hardware reads element (row i, k j) of the operand at
//   LAYOUT 1: swz(start + (i / 8) SBO + (i % 8) BK * 4 + 16 (j / 4) + 4 (j % 4)),
//   LAYOUT 0: start + (i / 8) SBO + 16 (i % 8) + (j / 4) LBO + 4 (j % 4);
// tests/unit/test_sgemm_tf32_wgmma.cpp checks that this is where the splitting threads wrote it.
//
// ==== Fragments ======================================================================================
//
// The accumulator of wgmma m64nNk8 .f32 (PTX ISA, "Register Fragments and Shared Memory Matrix
// Layouts", D): warp w (0..3) of the warpgroup holds rows 16w .. 16w+15; lane = 4 g + t; register
// v = 4 j + 2 h + e is row 16 w + g + 8 h, column 8 j + 2 t + e (j < N / 8, h, e in {0, 1}).
//
// ==== Pipeline (KT = ceil_div(K, BK) k-tiles; raw tile t in stage t % STAGES) ==========================
//
// AHEAD = STAGES (AREG 0) or STAGES - 1 (AREG 1) raw tiles in flight; with SPLITK, t counts the
// rank's own k-tiles.
//   prologue: raw tiles 0 .. AHEAD-1 issued (one cp.async group each, empty past KT); wait for
//             tiles 0 and 1; barrier; tile 0 split into operand buffer 0; proxy fence; barrier.
//   iteration t (invariant: buffer t % 2 holds tile t, split, fenced, behind a barrier; raw tile
//             t+1 has landed and is visible to every thread; the raw stage of tile t is free
//             (AREG 0), or that of tile t - 1 (AREG 1: tile t's A fragments are read from its stage
//             during this iteration)):
//     issue raw tile t + AHEAD into stage (t + AHEAD) % STAGES, commit (always, maybe empty);
//     per chain q (CH = BK / (8 KSTEP) of them): (AREG: its A fragments loaded from raw stage t %
//       STAGES and split); wgmma.fence; 3 * KSTEP wgmma on buffer t % 2 into
//       the chain accumulator; commit; split 1/CH of raw tile t+1 into buffer (t+1) % 2 (while the
//       tensor cores work: that buffer held tile t-1, whose wgmma all completed before the last
//       barrier); wait for the chain; partial sum += chain accumulator;
//     wait for raw tile t+2 (cp.async.wait_group AHEAD-2: of tiles 0..t+AHEAD, all but the newest
//       AHEAD-2 complete); fence.proxy.async (the split values are generic-proxy writes that the
//       async proxy of wgmma will read); barrier; every P tiles acc += partial, partial = 0.
//
// ==== Bounds (any M, N, K >= 1) =======================================================================
//
// Every copy is predicated as in sgemm_tf32.cu: an element outside the matrix is zero-filled by
// cp.async with src-size 0; 16-byte copies where K % 4 == 0 (A) and N % 4 == 0 (B), else 4-byte
// ones; zeros split into zeros and add nothing. C is stored where row < M and col < N: float2 when N
// is even, else element by element. Offsets into A, B and C are 64-bit.

#ifndef WGM
#define WGM 2
#endif
#ifndef WGN
#define WGN 1
#endif
#ifndef WN
#define WN 128
#endif
#ifndef BK
#define BK 32
#endif
#ifndef STAGES
#define STAGES 3
#endif
#ifndef KSTEP
#define KSTEP 1
#endif
#ifndef LAYOUT
#define LAYOUT 1
#endif
#ifndef SWZ
#define SWZ 1
#endif
#ifndef MINB
#define MINB 1
#endif
#ifndef DBUF
#define DBUF 0
#endif
#ifndef AREG
#define AREG 0
#endif
#ifndef SPLITK
#define SPLITK 1
#endif
#ifndef DEFER
#define DEFER 0
#endif
#ifndef WS
#define WS 0
#endif

// A device pass for a target without wgmma: NVRTC stops with an error; nvcc compiles a kernel that
// traps (nvcc -arch=sm_90a also writes compute_90 PTX, in a pass where the sm_90a features are off;
// the sm_90a cubin it writes beside it is what an H100/H200 runs).
#undef TF32WG_NO_WGMMA
#if defined(__CUDA_ARCH__) && !defined(__CUDA_ARCH_FEAT_SM90_ALL)
#if defined(__CUDACC_RTC__)
#error "sgemm_tf32_wgmma uses wgmma.mma_async: compile for sm_90a (NVRTC --gpu-architecture=sm_90a, nvcc -arch=sm_90a); other targets use sgemm_tf32.cu"
#endif
#define TF32WG_NO_WGMMA 1
#else
#define TF32WG_NO_WGMMA 0
#endif

namespace tf32wg {

#include "sgemm_tf32_index.cuh"

// Every index the kernel computes, as integer arithmetic of the tuning parameters, the thread and
// the loop counters; the kernel and the CPU tests use these functions and nothing else. Offsets are
// in bytes from the (1024-aligned) shared-memory base unless said otherwise.
template <int kWGM, int kWGN, int kWN, int kBK, int kStages, int kLayout, int kSwz, int kAReg = 0, int kSplitK = 1,
          int kDefer = 0, int kWs = 0>
struct Layout {
  static constexpr int kBM = 64 * kWGM, kBN = kWN * kWGN;
  static constexpr int kOpN = kWN, kTileK = kBK;     // one wgmma's N (rows of its B operand); BK
  static constexpr int kStageCount = kStages;
  static constexpr int kARegs = kAReg;               // 1: A's fragments in registers (see AREG)
  static constexpr int kSplits = kSplitK;            // cluster ranks per output tile (see SPLITK)
  static constexpr int kOpBufs = 2 + kDefer;         // operand buffers (see DEFER)
  static constexpr bool kDeferLast = kDefer != 0;    // the last chain of a k-tile waited for in the next
  static constexpr int kThreads = 128 * kWGM * kWGN;  // the warpgroups that multiply (see WS)
  static constexpr int kWarpSpecialized = kWs;
  // WS: a producer warpgroup after the kThreads that multiply copies and splits; else they do.
  static constexpr int kCopyThreads = kWs ? 128 : kThreads;
  static constexpr int kBlockThreads = kThreads + 128 * kWs;
  static constexpr int kRowBytes = 4 * kBK;          // one row of an operand tile: a k-tile
  static constexpr int kChunks = kBK / 4;            // 16-byte chunks per row
  static constexpr int kSwzMask = kBK == 32 ? 7 : 3;  // Swizzle<3,4,3> (128 B) or <2,4,3> (64 B)
  static constexpr int kSteps = kBK / 8;             // wgmma k steps per k-tile
  // Operand buffers: [kOpBufs][A hi, A lo (not with AREG), B hi, B lo]; then the raw stages [kStages][A, B].
  static constexpr int kOpA = kBM * kRowBytes, kOpB = kBN * kRowBytes;
  static constexpr int kOpBuf = 2 * ((kAReg ? 0 : kOpA) + kOpB);
  static constexpr int kRawA = kBM * kRowBytes, kRawB = kBK * kBN * 4;
  static constexpr int kRawStage = kRawA + kRawB;
  // Split-K: the partial tiles, BM rows of kLdc floats, over the operand buffers and stages.
  static constexpr int kLdc = kBN + 8;
  static constexpr int kRedBytes = kSplitK > 1 ? kBM * kLdc * 4 : 0;
  static constexpr int kMainBytes = kOpBufs * kOpBuf + kStages * kRawStage;
  static constexpr int kSmemBytes = kMainBytes > kRedBytes ? kMainBytes : kRedBytes;  // + 1024 of slack
  // Raw tiles in flight ahead of the one the tensor cores read: with AREG the raw stage of tile t
  // is read (A's fragments) while tile t is multiplied, so one stage fewer is ahead.
  // WS: STAGES - 1 (sgemm_tf32_wgmma_ws.cuh, The pipeline).
  static constexpr int kAhead = kWs ? kStages - 1 : kStages - kAReg;
  // Per thread and k-tile: 16-byte chunks of A and of B, for the copies and for the split alike
  // (with AREG the block splits B only).
  static constexpr int kItemsA = kBM * kChunks / kCopyThreads, kItemsB = kBN * kChunks / kCopyThreads;
  static constexpr int kSplitItemsA = kAReg ? 0 : kItemsA;

  static SGEMM_TF32_HD int op_ahi(int buf) { return buf * kOpBuf; }
  static SGEMM_TF32_HD int op_alo(int buf) { return buf * kOpBuf + kOpA; }
  static SGEMM_TF32_HD int op_bhi(int buf) { return buf * kOpBuf + (kAReg ? 0 : 2 * kOpA); }
  static SGEMM_TF32_HD int op_blo(int buf) { return buf * kOpBuf + (kAReg ? 0 : 2 * kOpA) + kOpB; }
  static SGEMM_TF32_HD int raw_a(int stage) { return kOpBufs * kOpBuf + stage * kRawStage; }
  static SGEMM_TF32_HD int raw_b(int stage) { return kOpBufs * kOpBuf + stage * kRawStage + kRawA; }

  // The swizzle of a byte offset (relative to a 1024-aligned base): bits [4, 4 + b) ^= bits [7, 7 + b).
  static SGEMM_TF32_HD int swz(int x) { return x ^ (((x >> 7) & kSwzMask) << 4); }
  // Operand tile of `rows` rows: byte offset of chunk c (k = 4c .. 4c+3) of row r.
  static SGEMM_TF32_HD int op_chunk(int rows, int r, int c) {
    return kLayout == 0 ? 16 * (c * rows + r) : swz(r * kRowBytes + 16 * c);
  }
  // Raw A stage: chunk c of row r (swizzled rows); raw B stage: element (k, n).
  static SGEMM_TF32_HD int raw_a_chunk(int r, int c) { return swz(r * kRowBytes + 16 * c); }
  static SGEMM_TF32_HD int raw_b_at(int k, int n) { return 4 * (k * kBN + n); }

  // Copies, chunk l of this thread: A row r = f / kChunks, chunk c = f % kChunks (a row's chunks on
  // consecutive threads); B row k = f / (kBN / 4), columns n .. n+3, n = 4 (f % (kBN / 4)).
  static SGEMM_TF32_HD void copy_a(int tid, int l, int& r, int& c) {
    const int f = tid + l * kCopyThreads;
    r = f / kChunks;
    c = f % kChunks;
  }
  static SGEMM_TF32_HD void copy_b(int tid, int l, int& k, int& n) { tile_chunk<kCopyThreads, kBN / 4>(tid, l, k, n); }
  // Split, item i of this thread: A chunk (row r = f % kBM, chunk c = f / kBM), consecutive threads
  // on consecutive rows (conflict-free 16-byte reads of the swizzled raw rows and 16-byte writes in
  // either layout); B chunk (row n = f % kBN of the transposed tile, chunk c: raw rows 4c .. 4c+3,
  // column n: a warp reads 32 consecutive floats of a raw row per load).
  static SGEMM_TF32_HD void split_a(int tid, int i, int& r, int& c) {
    const int f = tid + i * kCopyThreads;
    r = f % kBM;
    c = f / kBM;
  }
  static SGEMM_TF32_HD void split_b(int tid, int i, int& n, int& c) {
    const int f = tid + i * kCopyThreads;
    n = f % kBN;
    c = f / kBN;
  }

  // Matrix descriptor of an operand tile of `rows` rows at shared-memory byte address `tile`: the
  // wgmma operand of its rows r0 .. r0 + 63 (A) or r0 .. r0 + WN - 1 (B) at k step s.
  static SGEMM_TF32_HD unsigned long long desc(unsigned tile, int rows, int r0, int s) {
    unsigned start, lbo, sbo;
    unsigned long long mode;
    if (kLayout == 0) {
      start = tile + 16u * static_cast<unsigned>(r0) + 32u * static_cast<unsigned>(s * rows);
      lbo = 16u * static_cast<unsigned>(rows);
      sbo = 128u;
      mode = 0;
    } else {
      start = tile + static_cast<unsigned>(r0 * kRowBytes + 32 * s);
      lbo = 16u;
      sbo = 8u * kRowBytes;
      mode = kBK == 32 ? 1 : 2;
    }
    return static_cast<unsigned long long>((start >> 4) & 0x3FFFu) |
           (static_cast<unsigned long long>((lbo >> 4) & 0x3FFFu) << 16) |
           (static_cast<unsigned long long>((sbo >> 4) & 0x3FFFu) << 32) | (mode << 62);
  }

  // Accumulator register v of lane `lane` of warp w (0..3) of a warpgroup: row and column in the
  // warpgroup's 64 x WN tile (see Fragments).
  static SGEMM_TF32_HD int d_row(int w, int lane, int v) { return 16 * w + (lane >> 2) + 8 * ((v >> 1) & 1); }
  static SGEMM_TF32_HD int d_col(int lane, int v) { return 8 * (v >> 2) + 2 * (lane & 3) + (v & 1); }
  // AREG: register v (0..3) of the A fragment of wgmma .tf32 from registers (the PTX ISA's
  // "Register Fragments" for A of m64nNk8, CUTLASS's SM90 RS ALayout 64x8; the m16n8k8 .tf32 A
  // fragment per warp): lane = 4 g + t of warp w holds row 16 w + g + 8 (v & 1), k 8 s + t +
  // 4 (v >> 1) of k step s, read from the raw A stage (byte offset in the stage).
  static SGEMM_TF32_HD int a_frag_row(int w, int lane, int v) { return 16 * w + (lane >> 2) + 8 * (v & 1); }
  static SGEMM_TF32_HD int a_frag_k(int lane, int v, int s) { return 8 * s + (lane & 3) + 4 * (v >> 1); }
  static SGEMM_TF32_HD int a_frag_at(int r0, int w, int lane, int v, int s) {
    const int k = a_frag_k(lane, v, s);
    return raw_a_chunk(r0 + a_frag_row(w, lane, v), k >> 2) + 4 * (k & 3);
  }
  // Split-K (SPLITK > 1): k-tiles [first, last) of cluster rank r of kSplitK.
  static SGEMM_TF32_HD void k_range(int kt, int r, int& first, int& last) {
    first = static_cast<int>(static_cast<long long>(kt) * r / kSplitK);
    last = static_cast<int>(static_cast<long long>(kt) * (r + 1) / kSplitK);
  }

  // Two-level sums: k-tiles per fold for kt k-tiles and ch chains per k-tile, round(sqrt(kt / ch))
  // >= 1 (inner chain p * ch adds, outer kt / p: about equal).
  static SGEMM_TF32_HD int inner_tiles(int kt, int ch) { return round_sqrt_ratio(kt, ch); }
  // Rasterization (see swizzled_tile): block (bx, by) of a gx x gy grid computes output tile row tm,
  // column tn. 32-bit block numbers: gx * gy <= M * N / (64 * 32), far below 2^31 for any C that fits
  // in memory.
  static SGEMM_TF32_HD void tile_of(int bx, int by, int gx, int gy, int& tm, int& tn) {
    swizzled_tile<kSwz, int>(bx, by, gx, gy, tm, tn);
  }
};

#include "sgemm_tf32_wgmma_ws.cuh"

}  // namespace tf32wg

#if (defined(__CUDACC__) || defined(__CUDACC_RTC__)) && TF32WG_NO_WGMMA

extern "C" __global__ void sgemm_tf32_wgmma(const float*, const float*, float*, int, int, int) { __trap(); }

#elif defined(__CUDACC__) || defined(__CUDACC_RTC__)

#if SPLITK > 1
#include "sgemm_cluster.cuh"
#endif
#undef TF32WG_CLUSTER_DIMS  // a generated file holds this source once per variant
#if SPLITK > 1
#define TF32WG_CLUSTER_DIMS __cluster_dims__(SPLITK, 1, 1)
#else
#define TF32WG_CLUSTER_DIMS
#endif

namespace tf32wg {

using L = Layout<WGM, WGN, WN, BK, STAGES, LAYOUT, SWZ, AREG, SPLITK, DEFER, WS>;
constexpr int kAcc = WN / 2;                 // accumulator registers per thread
constexpr int kChains = BK / (8 * KSTEP);    // tensor-core chains per k-tile
constexpr int kItems = L::kSplitItemsA + L::kItemsB;  // split items per thread and k-tile
constexpr int kItemsPerChain = (kItems + kChains - 1) / kChains;

static_assert(WGM >= 1 && WGN >= 1 && WGM * WGN <= 4, "1 to 4 warpgroups per block");
static_assert(WN == 32 || WN == 64 || WN == 96 || WN == 128, "WN: 32, 64, 96 or 128 (the wgmma N)");
static_assert(BK == 16 || BK == 32, "BK: 16 (64-byte rows) or 32 (128-byte rows)");
static_assert(KSTEP == 1 || KSTEP == 2 || KSTEP == 4, "KSTEP: 1, 2 or 4");
static_assert(BK % (8 * KSTEP) == 0, "a k-tile is a whole number of chains");
static_assert(STAGES >= 2 && STAGES <= 6, "STAGES in 2..6");
static_assert(LAYOUT == 0 || LAYOUT == 1, "LAYOUT 0 or 1");
static_assert(SWZ >= 1 && MINB >= 1 && (DBUF == 0 || DBUF == 1), "SWZ, MINB >= 1; DBUF 0 or 1");
static_assert(AREG == 0 || AREG == 1, "AREG 0 or 1");
static_assert(AREG == 0 || (STAGES >= 3 && DBUF == 0),
              "AREG: STAGES >= 3 (the stage of the tile multiplied stays), DBUF 0 (one fragment set)");
static_assert(SPLITK == 1 || SPLITK == 2 || SPLITK == 4 || SPLITK == 8,
              "SPLITK 1, 2, 4 or 8 (a portable thread block cluster holds at most 8 blocks)");
static_assert(L::kBM % SPLITK == 0 && L::kBN % 4 == 0, "each cluster rank reduces BM / SPLITK rows");
static_assert((DEFER == 0 || DEFER == 1) && (DEFER == 0 || DBUF == 0), "DEFER 0 or 1, and DEFER needs DBUF 0");
static_assert((L::kBM * L::kChunks) % L::kCopyThreads == 0 && (L::kBN * L::kChunks) % L::kCopyThreads == 0 &&
                  L::kItemsB >= 1 && L::kItemsA >= 1,
              "the chunks of A and B divide among the threads");
static_assert((BK * L::kBN / 4) % L::kCopyThreads == 0, "B's copy chunks divide among the threads");
static_assert(WS == 0 || (WS == 1 && DBUF == 0 && DEFER == 0 && MINB == 1),
              "WS 0 or 1; WS 1 needs DBUF 0, DEFER 0 and MINB 1 (its consumers take the producer's registers)");
static_assert(L::kSmemBytes + 1024 + WS * WsPipe<L>::kBarBytes <= 232448, "shared memory: at most 227 KB per block");
static_assert(WS == 0 || 8 * WsPipe<L>::kBarriers <= WsPipe<L>::kBarBytes, "WS: the mbarriers fit their bytes");

#include "sgemm_async.cuh"
#include "sgemm_tf32_common.cuh"

// The value of x, hidden from the optimizer: the index arithmetic derived from it is then redone
// where it is used instead of being hoisted out of the k loop into registers, which the three sets
// of sums need (without it, 128x128 blocks spill).
__device__ __forceinline__ int opaque(int x) {
  int y;
  asm volatile("mov.b32 %0, %1;\n" : "=r"(y) : "r"(x));
  return y;
}
// Generic-proxy shared-memory writes made visible to the async proxy (wgmma's operand reads); each
// writing thread issues it before the barrier that orders its writes before the wgmma.
__device__ __forceinline__ void fence_proxy_async() { asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory"); }
// wgmma.fence: orders this thread's earlier register accesses (the adds that read the chain
// accumulator) before the wgmma that write it. commit / wait: the wgmma groups.
__device__ __forceinline__ void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
template <int N>
__device__ __forceinline__ void wgmma_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
}
// Keeps the compiler from moving reads of the chain accumulator across the wgmma fence and wait
// (it does not know that the wgmma writes those registers asynchronously).
__device__ __forceinline__ void fence_regs(float (&d)[kAcc]) {
#pragma unroll
  for (int i = 0; i < kAcc; ++i) asm volatile("" : "+f"(d[i])::"memory");
}

// d (+)= A(64x8) * B(8xN), N = WN, FP32 accumulators; kScaleD 0 ignores d's old value (D = A*B), 1
// adds to it. wgmma: both operands from shared memory (descriptors da, db); wgmma_r (AREG): A from
// the four registers a of the A fragment (see Layout::a_frag_row), B from shared memory. Written by
// TF32WG_WGMMA for WN (the register list) from the accumulator count and the operand numbers that
// follow the accumulators.
#undef TF32WG_D8
#undef TF32WG_L16
#undef TF32WG_WGMMA
#define TF32WG_D8(i)                                                                                   \
  "+f"(d[i]), "+f"(d[i + 1]), "+f"(d[i + 2]), "+f"(d[i + 3]), "+f"(d[i + 4]), "+f"(d[i + 5]), "+f"(d[i + 6]), \
      "+f"(d[i + 7])
#define TF32WG_L16(a, b, c, e, f, g, h, i, j, k, l, m, n, o, p, q)                                      \
  "%" #a ", %" #b ", %" #c ", %" #e ", %" #f ", %" #g ", %" #h ", %" #i ", %" #j ", %" #k ", %" #l ", %" #m \
  ", %" #n ", %" #o ", %" #p ", %" #q
// NN: the wgmma N; REGS: NN / 2 accumulators; LIST: "%0, ..., %REGS-1"; DOPS: their operands;
// o0..o5: the operand numbers REGS .. REGS + 5.
#define TF32WG_WGMMA(NN, REGS, LIST, DOPS, o0, o1, o2, o3, o4, o5)                                      \
  template <int kScaleD>                                                                                \
  __device__ __forceinline__ void wgmma(float (&d)[REGS], unsigned long long da, unsigned long long db) { \
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %" #o2 ", 0;\n"                                         \
                 "wgmma.mma_async.sync.aligned.m64n" #NN "k8.f32.tf32.tf32 {" LIST "}, %" #o0 ", %" #o1     \
                 ", p, 1, 1;\n}\n"                                                                      \
                 : DOPS                                                                                 \
                 : "l"(da), "l"(db), "r"(kScaleD));                                                     \
  }                                                                                                     \
  template <int kScaleD>                                                                                \
  __device__ __forceinline__ void wgmma_r(float (&d)[REGS], const unsigned (&a)[4], unsigned long long db) { \
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %" #o5 ", 0;\n"                                         \
                 "wgmma.mma_async.sync.aligned.m64n" #NN "k8.f32.tf32.tf32 {" LIST "}, {%" #o0 ", %" #o1   \
                 ", %" #o2 ", %" #o3 "}, %" #o4 ", p, 1, 1;\n}\n"                                            \
                 : DOPS                                                                                 \
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db), "r"(kScaleD));                  \
  }
#undef TF32WG_D16
#undef TF32WG_D32
#undef TF32WG_D48
#undef TF32WG_D64
#undef TF32WG_L32
#undef TF32WG_L48
#undef TF32WG_L64
#define TF32WG_D16 TF32WG_D8(0), TF32WG_D8(8)
#define TF32WG_D32 TF32WG_D16, TF32WG_D8(16), TF32WG_D8(24)
#define TF32WG_D48 TF32WG_D32, TF32WG_D8(32), TF32WG_D8(40)
#define TF32WG_D64 TF32WG_D48, TF32WG_D8(48), TF32WG_D8(56)
#define TF32WG_L32 \
  TF32WG_L16(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15) ", " \
  TF32WG_L16(16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31)
#define TF32WG_L48 TF32WG_L32 ", " TF32WG_L16(32, 33, 34, 35, 36, 37, 38, 39, 40, 41, 42, 43, 44, 45, 46, 47)
#define TF32WG_L64 TF32WG_L48 ", " TF32WG_L16(48, 49, 50, 51, 52, 53, 54, 55, 56, 57, 58, 59, 60, 61, 62, 63)
#if WN == 32
TF32WG_WGMMA(32, 16, TF32WG_L16(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15), TF32WG_D16, 16, 17, 18, 19, 20, 21)
#elif WN == 64
TF32WG_WGMMA(64, 32, TF32WG_L32, TF32WG_D32, 32, 33, 34, 35, 36, 37)
#elif WN == 96
TF32WG_WGMMA(96, 48, TF32WG_L48, TF32WG_D48, 48, 49, 50, 51, 52, 53)
#else
TF32WG_WGMMA(128, 64, TF32WG_L64, TF32WG_D64, 64, 65, 66, 67, 68, 69)
#endif

// x = hi + lo + O(2^-23 |x|), both TF32 (cvt.rn.tf32.f32: one instruction on sm_90; the result is
// the float with its 13 low bits cleared).
__device__ __forceinline__ void split(float x, unsigned& hi, unsigned& lo) {
  asm("cvt.rn.tf32.f32 %0, %1;\n" : "=r"(hi) : "f"(x));
  const float rest = x - __uint_as_float(hi);  // exact; NaN only where hi is Inf or NaN
  asm("cvt.rn.tf32.f32 %0, %1;\n" : "=r"(lo) : "f"(rest));
}

// The block's context and its shared memory.
struct Ctx : BlockCtx {
  unsigned char* smem;  // the 1024-aligned base (generic pointer)
  unsigned sbase;       // the same, as a shared-memory address
};

// Issues the copies of raw k-tile t (k from t * BK) into raw stage `stage`.
__device__ __forceinline__ void load_raw(const Ctx& c, int t, int stage) {
  const int k0 = t * BK, tid = opaque(c.tid);
  const unsigned a_base = c.sbase + L::raw_a(stage), b_base = c.sbase + L::raw_b(stage);
#pragma unroll
  for (int l = 0; l < L::kItemsA; ++l) {
    int r, ch;
    L::copy_a(tid, l, r, ch);
    const int gr = c.row0 + r;
    const float* row = c.A + static_cast<size_t>(gr < c.M ? gr : 0) * static_cast<size_t>(c.K);
    copy4(a_base + L::raw_a_chunk(r, ch), row, gr < c.M, k0 + 4 * ch, c.K, c.kvec, c.A);
  }
#pragma unroll
  for (int l = 0; l < L::kItemsB; ++l) {
    int k, n;
    L::copy_b(tid, l, k, n);
    const int gk = k0 + k;
    const float* row = c.B + static_cast<size_t>(gk < c.K ? gk : 0) * static_cast<size_t>(c.N);
    copy4(b_base + L::raw_b_at(k, n), row, gk < c.K, c.col0 + n, c.N, c.nvec, c.B);
  }
}

// Splits items [first, last) of this thread's share of raw stage `stage` into operand buffer `buf`
// (see Layout::split_a / split_b; with AREG, B's items only): 4 floats in, a 16-byte hi chunk and a
// 16-byte lo chunk out.
template <int kFirst, int kLast>
__device__ __forceinline__ void split_items(const Ctx& c, int stage, int buf) {
  const int tid = opaque(c.tid);
#pragma unroll
  for (int i = kFirst; i < kLast; ++i) {
    float x[4];
    int row, ch, hi_off, lo_off;
    if (i < L::kSplitItemsA) {
      L::split_a(tid, i, row, ch);
      const float4 v = *reinterpret_cast<const float4*>(c.smem + L::raw_a(stage) + L::raw_a_chunk(row, ch));
      x[0] = v.x; x[1] = v.y; x[2] = v.z; x[3] = v.w;
      hi_off = L::op_ahi(buf) + L::op_chunk(L::kBM, row, ch);
      lo_off = L::op_alo(buf) + L::op_chunk(L::kBM, row, ch);
    } else {
      L::split_b(tid, i - L::kSplitItemsA, row, ch);
      const float* rb = reinterpret_cast<const float*>(c.smem + L::raw_b(stage));
#pragma unroll
      for (int e = 0; e < 4; ++e) x[e] = rb[L::raw_b_at(4 * ch + e, row) / 4];
      hi_off = L::op_bhi(buf) + L::op_chunk(L::kBN, row, ch);
      lo_off = L::op_blo(buf) + L::op_chunk(L::kBN, row, ch);
    }
    uint4 h, l;
    split(x[0], h.x, l.x);
    split(x[1], h.y, l.y);
    split(x[2], h.z, l.z);
    split(x[3], h.w, l.w);
    *reinterpret_cast<uint4*>(c.smem + hi_off) = h;
    *reinterpret_cast<uint4*>(c.smem + lo_off) = l;
  }
}

// AREG: the A fragments of chain q's KSTEP k steps, read from raw stage `stage` and split in
// registers (hi[j], lo[j]: k step q * KSTEP + j). ra: the warpgroup's first row in the block tile.
template <int kQ>
__device__ __forceinline__ void load_a_frags(const Ctx& c, int stage, int ra, unsigned (&hi)[KSTEP][4],
                                             unsigned (&lo)[KSTEP][4]) {
  const int tid = opaque(c.tid), w = (tid % 128) / 32, lane = tid % 32;
  const unsigned char* raw = c.smem + L::raw_a(stage);
#pragma unroll
  for (int j = 0; j < KSTEP; ++j)
#pragma unroll
    for (int v = 0; v < 4; ++v)
      split(*reinterpret_cast<const float*>(raw + L::a_frag_at(ra, w, lane, v, kQ * KSTEP + j)), hi[j][v], lo[j][v]);
}
// Keeps the A fragments alive (unchanged) until the wait for the wgmma that read them.
__device__ __forceinline__ void fence_frags(unsigned (&x)[KSTEP][4]) {
#pragma unroll
  for (int j = 0; j < KSTEP; ++j)
#pragma unroll
    for (int v = 0; v < 4; ++v) asm volatile("" : "+r"(x[j][v])::"memory");
}

// Chain q of the k-tile in operand buffer `buf`: d = sum over its KSTEP k steps of lo_a*hi_b, then
// hi_a*lo_b, then hi_a*hi_b (the small terms first; the first wgmma from a zero accumulator). wm, wn:
// this warpgroup's place in the block tile. With AREG, A's parts are the registers ahi, alo.
template <int kQ>
__device__ __forceinline__ void chain(const Ctx& c, int buf, int wm, int wn, float (&d)[kAcc],
                                      const unsigned (&ahi_r)[KSTEP][4], const unsigned (&alo_r)[KSTEP][4]) {
  const unsigned bhi = c.sbase + L::op_bhi(buf), blo = c.sbase + L::op_blo(buf);
  const int rb = WN * wn;
#if AREG
#pragma unroll
  for (int j = 0; j < KSTEP; ++j) {
    const int s = kQ * KSTEP + j;
    if (j == 0)
      wgmma_r<0>(d, alo_r[j], L::desc(bhi, L::kBN, rb, s));
    else
      wgmma_r<1>(d, alo_r[j], L::desc(bhi, L::kBN, rb, s));
    wgmma_r<1>(d, ahi_r[j], L::desc(blo, L::kBN, rb, s));
  }
#pragma unroll
  for (int j = 0; j < KSTEP; ++j) wgmma_r<1>(d, ahi_r[j], L::desc(bhi, L::kBN, rb, kQ * KSTEP + j));
#else
  const unsigned ahi = c.sbase + L::op_ahi(buf), alo = c.sbase + L::op_alo(buf);
  const int ra = 64 * wm;
#pragma unroll
  for (int j = 0; j < KSTEP; ++j) {
    const int s = kQ * KSTEP + j;
    if (j == 0)
      wgmma<0>(d, L::desc(alo, L::kBM, ra, s), L::desc(bhi, L::kBN, rb, s));
    else
      wgmma<1>(d, L::desc(alo, L::kBM, ra, s), L::desc(bhi, L::kBN, rb, s));
    wgmma<1>(d, L::desc(ahi, L::kBM, ra, s), L::desc(blo, L::kBN, rb, s));
  }
#pragma unroll
  for (int j = 0; j < KSTEP; ++j) {
    const int s = kQ * KSTEP + j;
    wgmma<1>(d, L::desc(ahi, L::kBM, ra, s), L::desc(bhi, L::kBN, rb, s));
  }
#endif
}

// The wait for the chain in flight (wgmma.wait_group 0) and its FP32 adds into `part`: after each
// chain of a k-tile, and with DEFER for the last chain of the previous k-tile at the start of the
// next (after the barrier: the tensor cores work through it) or after the last one.
__device__ __forceinline__ void add_chain(float (&d)[kAcc], float (&part)[kAcc], unsigned (&ahi)[KSTEP][4],
                                          unsigned (&alo)[KSTEP][4]) {
  wgmma_wait<0>();
  fence_regs(d);
#if AREG
  fence_frags(ahi);
  fence_frags(alo);
#else
  (void)ahi;
  (void)alo;
#endif
#pragma unroll
  for (int i = 0; i < kAcc; ++i) part[i] += d[i];
}

// Chain kQ of a k-tile into d (the register fences, the chain, its commit), then, while the tensor
// cores work, this thread's share of the split of the next k-tile's items for that chain (when
// split_next). Used by tile_chains and tile_chains2.
template <int kQ>
__device__ __forceinline__ void issue_chain(const Ctx& c, int buf, int nbuf, int next_stage, bool split_next, int wm,
                                            int wn, float (&d)[kAcc], unsigned (&ahi)[KSTEP][4],
                                            unsigned (&alo)[KSTEP][4]) {
  fence_regs(d);
  wgmma_fence();
  chain<kQ>(c, buf, wm, wn, d, ahi, alo);
  wgmma_commit();
  constexpr int first = kQ * kItemsPerChain;
  constexpr int last = first + kItemsPerChain < kItems ? first + kItemsPerChain : kItems;
  if (split_next) split_items<first, last>(c, next_stage, nbuf);
}

// One k-tile: its chains, each followed (while the tensor cores work) by this thread's share of the
// split of the next k-tile (when there is one), then the wait and the FP32 adds into `part`. stage:
// the raw stage of this tile (AREG reads A's fragments there into ahi, alo), next_stage: the next
// tile's, nbuf: the operand buffer of the next tile. DEFER: the last chain is issued and not waited
// for (see add_chain).
template <int kQ>
__device__ __forceinline__ void tile_chains(const Ctx& c, int buf, int nbuf, int stage, int next_stage,
                                            bool split_next, int wm, int wn, float (&d)[kAcc], float (&part)[kAcc],
                                            unsigned (&ahi)[KSTEP][4], unsigned (&alo)[KSTEP][4]) {
  if constexpr (kQ < kChains) {
#if AREG
    load_a_frags<kQ>(c, stage, 64 * wm, ahi, alo);
#else
    (void)stage;
#endif
    issue_chain<kQ>(c, buf, nbuf, next_stage, split_next, wm, wn, d, ahi, alo);
    if constexpr (!(DEFER && kQ == kChains - 1)) {
      add_chain(d, part, ahi, alo);
      tile_chains<kQ + 1>(c, buf, nbuf, stage, next_stage, split_next, wm, wn, d, part, ahi, alo);
    }
  }
}

// DBUF = 1 (not with AREG): chain kQ into accumulator kQ % 2 (d0 or d1), this thread's share of the
// split, then the wait for chain kQ - 1 only (wgmma.wait_group 1) and its adds; after the last chain,
// the wait for it (all of the k-tile's wgmma complete before the barrier).
template <int kQ>
__device__ __forceinline__ void tile_chains2(const Ctx& c, int buf, int nbuf, int next_stage, bool split_next, int wm,
                                             int wn, float (&d0)[kAcc], float (&d1)[kAcc], float (&part)[kAcc]) {
  if constexpr (kQ < kChains) {
    float(&d)[kAcc] = kQ % 2 == 0 ? d0 : d1;
    unsigned unused[KSTEP][4];
    issue_chain<kQ>(c, buf, nbuf, next_stage, split_next, wm, wn, d, unused, unused);
    if constexpr (kQ > 0) {
      float(&prev)[kAcc] = kQ % 2 == 0 ? d1 : d0;
      wgmma_wait<1>();
      fence_regs(prev);
#pragma unroll
      for (int i = 0; i < kAcc; ++i) part[i] += prev[i];
    }
    tile_chains2<kQ + 1>(c, buf, nbuf, next_stage, split_next, wm, wn, d0, d1, part);
  } else {
    float(&last)[kAcc] = (kChains - 1) % 2 == 0 ? d0 : d1;
    wgmma_wait<0>();
    fence_regs(last);
#pragma unroll
    for (int i = 0; i < kAcc; ++i) part[i] += last[i];
  }
}

__device__ __forceinline__ void zero(float (&x)[kAcc]) {
#pragma unroll
  for (int i = 0; i < kAcc; ++i) x[i] = 0.f;
}
// acc += part; part = 0 (the outer level of the two-level sums).
__device__ __forceinline__ void fold(float (&acc)[kAcc], float (&part)[kAcc]) {
#pragma unroll
  for (int i = 0; i < kAcc; ++i) {
    acc[i] += part[i];
    part[i] = 0.f;
  }
}

// k-tiles [t0, t1) of the tile into acc (see Pipeline): the raw copies, the split, the chains and
// the two-level sums.
__device__ __forceinline__ void mainloop(const Ctx& c, int t0, int t1, int wm, int wn, float (&acc)[kAcc]) {
  const int n = t1 - t0;
  // Prologue (see Pipeline).
#pragma unroll
  for (int s = 0; s < L::kAhead; ++s) {
    if (s < n) load_raw(c, t0 + s, s);
    cp_async_commit();
  }
  cp_async_wait<L::kAhead - 2>();
  __syncthreads();
  split_items<0, kItems>(c, 0, 0);
  fence_proxy_async();
  __syncthreads();

  float part[kAcc], d[kAcc];
#if DBUF
  float d1[kAcc];
  zero(d1);
#else
  unsigned ahi[KSTEP][4], alo[KSTEP][4];  // AREG: the A fragments of the chain in flight
#endif
  zero(part);
  zero(d);
  const int inner = L::inner_tiles(n, kChains);
  int left = inner;
  int stage = 0;  // raw stage of tile t
  int buf = 0;    // operand buffer of tile t (t % kOpBufs)
  for (int t = 0; t < n; ++t) {
    // Raw tile t + kAhead goes to stage (t + kAhead) % STAGES: tile t's (AREG 0: split in the last
    // iteration) or tile t - 1's (AREG 1: its A read in the last iteration).
    const int issue_stage = AREG ? (stage == 0 ? STAGES - 1 : stage - 1) : stage;
    if (t + L::kAhead < n) load_raw(c, t0 + t + L::kAhead, issue_stage);
    cp_async_commit();
    const int next_stage = stage + 1 == STAGES ? 0 : stage + 1;
    const int nbuf = buf + 1 == L::kOpBufs ? 0 : buf + 1;
#if DEFER
    if (t > 0) {  // the previous tile's last chain, then its fold, as without DEFER
      add_chain(d, part, ahi, alo);
      if (--left == 0) {
        fold(acc, part);
        left = inner;
      }
    }
#endif
#if DBUF
    tile_chains2<0>(c, buf, nbuf, next_stage, t + 1 < n, wm, wn, d, d1, part);
#else
    tile_chains<0>(c, buf, nbuf, stage, next_stage, t + 1 < n, wm, wn, d, part, ahi, alo);
#endif
    cp_async_wait<L::kAhead - 2>();  // raw tile t + 2 landed: of tiles ..t+kAhead, all but the newest kAhead-2
    fence_proxy_async();
    __syncthreads();
#if !DEFER
    if (--left == 0) {
      fold(acc, part);
      left = inner;
    }
#endif
    stage = next_stage;
    buf = nbuf;
  }
#if DEFER
  if (n > 0) add_chain(d, part, ahi, alo);
#endif
  cp_async_wait<0>();  // only empty groups can be left
  fold(acc, part);
}

#if WS
#include "sgemm_tf32_wgmma_ws_loop.cuh"
#endif

}  // namespace tf32wg

extern "C" __global__ void __launch_bounds__(tf32wg::L::kBlockThreads, MINB) TF32WG_CLUSTER_DIMS
sgemm_tf32_wgmma(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C, int M, int N,
                 int K) {
  using namespace tf32wg;
  extern __shared__ float4 tf32wg_smem[];
  Ctx c;
  {
    const unsigned raw = smem_addr(tf32wg_smem);
    const unsigned pad = (1024u - (raw & 1023u)) & 1023u;  // the + 1024 of the launch
    c.smem = reinterpret_cast<unsigned char*>(tf32wg_smem) + pad;
    c.sbase = raw + pad;
  }
  c.A = A; c.B = B; c.M = M; c.N = N; c.K = K;
  c.tid = static_cast<int>(threadIdx.x);
  {
    int tm, tn;
    L::tile_of(static_cast<int>(blockIdx.x) / SPLITK, static_cast<int>(blockIdx.y),
               static_cast<int>(gridDim.x) / SPLITK, static_cast<int>(gridDim.y), tm, tn);
    c.row0 = tm * L::kBM;
    c.col0 = tn * L::kBN;
  }
  c.kvec = (K & 3) == 0;
  c.nvec = (N & 3) == 0;
  const int wg = c.tid / 128, wm = wg / WGN, wn = wg % WGN;
  const int warp = (c.tid % 128) / 32, lane = c.tid % 32;

  const int KT = K / BK + (K % BK != 0);
#if WS
  ws_init(c);
  if (c.tid >= L::kThreads) {  // the producer warpgroup: copies and splits (with SPLITK, its share of the sum)
    ws_producer_role(c, C, KT);
    return;
  }
  if constexpr (WsPipe<L>::kSetMaxNReg) regs_inc<WsPipe<L>::kConsumerRegs>();
#define TF32WG_MAINLOOP ws_consumer
#else
#define TF32WG_MAINLOOP mainloop
#endif
  float acc[kAcc];
  zero(acc);
#if SPLITK > 1
  const unsigned rank = sgemm_cluster::rank();
  int t0, t1;
  L::k_range(KT, static_cast<int>(rank), t0, t1);
  TF32WG_MAINLOOP(c, t0, t1, wm, wn, acc);
  // Every rank's partial tile into its shared memory (over the stages: every thread is past the
  // main loop's last barrier and every wgmma is complete), then rank r sums rows [r BM / SPLITK,
  // (r + 1) BM / SPLITK) over ranks 0, 1, ..., SPLITK - 1 in that order and stores them.
  __syncthreads();
  float* const red = reinterpret_cast<float*>(c.smem);
#pragma unroll
  for (int v = 0; v < kAcc; v += 2)
    *reinterpret_cast<float2*>(red + (64 * wm + L::d_row(warp, lane, v)) * L::kLdc + WN * wn + L::d_col(lane, v)) =
        make_float2(acc[v], acc[v + 1]);
  sgemm_cluster::sync();  // every rank's partial tile is written and visible cluster-wide
  splitk_store<L::kBM / SPLITK, L::kBN / 4, L::kLdc, L::kBlockThreads>(C, M, N, c.row0, c.col0, c.nvec, c.tid, rank,
                                                                     c.sbase);
  sgemm_cluster::sync();  // no block leaves (freeing its shared memory) while others still read it
#else
  TF32WG_MAINLOOP(c, 0, KT, wm, wn, acc);
  const bool even = (N & 1) == 0;
#pragma unroll
  for (int v = 0; v < kAcc; v += 2) {  // registers v, v + 1: one row, adjacent columns
    const int row = c.row0 + 64 * wm + L::d_row(warp, lane, v);
    const int col = c.col0 + WN * wn + L::d_col(lane, v);  // even
    if (row >= M) continue;
    float* crow = C + static_cast<size_t>(row) * static_cast<size_t>(N);
    if (even) {
      if (col < N) *reinterpret_cast<float2*>(crow + col) = make_float2(acc[v], acc[v + 1]);  // col + 1 < N
    } else {
      if (col < N) crow[col] = acc[v];
      if (col + 1 < N) crow[col + 1] = acc[v + 1];
    }
  }
#endif
}

#undef TF32WG_CLUSTER_DIMS
#undef TF32WG_MAINLOOP
#endif  // __CUDACC__ || __CUDACC_RTC__, TF32WG_NO_WGMMA

// The optimization notes the agent reads through read_optimization_notes.
// Short, project-written notes by topic. They are compiled into the tool (no
// file to install or locate at run time); edit them here.
#include "agent/agent.h"

namespace kopt::agent {

const std::vector<std::pair<std::string, std::string>>& optimization_notes() {
  static const std::vector<std::pair<std::string, std::string>> notes = {
      {"coalescing", R"(# Global memory coalescing

A warp's 32 loads or stores are served in 32-byte sectors (128-byte cache lines). When consecutive
threads (threadIdx.x) touch consecutive addresses, one warp-wide 4-byte access needs 4 sectors;
when they stride by a row, it needs up to 32 sectors and wastes most of each one.

- Map threadIdx.x to the fastest-varying (contiguous) index of the array you read or write.
- For a row-major matrix A[rows][cols], thread x should walk `col`, not `row`.
- If reads and writes want different mappings (transpose), stage a tile through shared memory:
  read coalesced into the tile, __syncthreads(), write coalesced from the transposed tile.
- Alignment matters: a warp access that starts mid-sector touches one more sector. cudaMalloc
  (and this harness) returns 256-byte aligned buffers, so offsets that are multiples of 32
  elements (4-byte types) stay aligned.
- Check with Nsight Compute: "Memory Throughput" near DRAM peak and
  sectors-per-request close to 4 for 4-byte accesses means coalesced.
)"},
      {"bank-conflicts", R"(# Shared memory bank conflicts and padding

Shared memory has 32 banks, 4 bytes wide; address a (in 4-byte words) is in bank a % 32. A warp's
access is serviced in one pass when all 32 threads hit different banks, or the same word
(broadcast). N threads hitting different words in one bank take N passes (an N-way conflict).

- Column access of a [32][32] float tile (tile[threadIdx.x][k]) is a 32-way conflict: every
  row starts in bank 0.
- Pad the row: `__shared__ float tile[32][32 + 1];` moves each row one bank over, so a column
  read is conflict-free. The padding costs 1/33 of the tile.
- For 8-byte or 16-byte accesses (double, float2, float4) a warp is split into phases
  (16 or 8 threads per phase); think of conflicts per phase.
- An XOR swizzle (col ^ row) avoids conflicts without wasting memory; it is what tensor-core
  kernels use with ldmatrix, but padding is simpler and usually enough.
- Nsight Compute: l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum counts them.
)"},
      {"register-tiling", R"(# Register tiling (thread-level blocking)

In a GEMM-like kernel each thread computes a TM x TN micro-tile of outputs held in registers,
instead of one output. Per k step it loads TM values of A and TN of B (from shared memory) and does
TM*TN fused multiply-adds: the arithmetic intensity per shared-memory load grows with the tile.

- Typical FP32 tiles: a block of 128x128 outputs with 256 threads, each 8x8 (TM=TN=8); BK=8..32.
- Keep the accumulators in a fixed-size local array indexed with compile-time constants
  (fully unrolled loops, `#pragma unroll`); a runtime index sends the array to local memory
  (check "Local Memory" / spills in the compile log with -Xptxas -v style options).
- Load A's column and B's row for the current k into registers first (a "register double
  buffer"), then do the outer product.
- More registers per thread lowers occupancy (see occupancy); 128 registers per thread still
  allows 512 threads per SM on sm_90 (65536 registers). Use __launch_bounds__(threads, minBlocks)
  to tell the compiler the block size so it does not over-allocate.
- Store A transposed in shared memory (As[k][m]) so each thread's TM values are contiguous and
  can be read as float4.
)"},
      {"occupancy", R"(# Occupancy

Occupancy is the number of resident warps per SM over the maximum (64 warps, 2048 threads on
sm_80/sm_90). It is limited by whichever runs out first:
- registers: 65536 per SM, allocated per warp in units of 256 (regs per thread rounded up to 8);
- shared memory: up to 227 KB per SM on sm_90 (228 KB minus 1 KB per block reserved), 48 KB per
  block without the opt-in (this harness sets the opt-in for dynamic shared memory over 48 KB);
- threads: 1024 per block, 2048 per SM; blocks: 32 per SM.

High occupancy hides latency by switching warps, but it is not a goal in itself: a kernel with
more work per thread (register tiling, ILP) at 25-50% occupancy often beats one at 100%.
- Latency-bound, simple kernels (elementwise, reductions): aim for many warps, 256 threads per
  block is a good default, and enough blocks to fill every SM several times (grid >= 2-4 x SMs).
- Tail effect: a grid of slightly more than a multiple of (SMs x blocks per SM) leaves SMs idle in
  the last wave; grid-stride loops with a grid sized to the device avoid it.
- __launch_bounds__(maxThreads, minBlocksPerSM) caps registers so minBlocksPerSM blocks fit.
- Nsight Compute "Occupancy" section: theoretical vs achieved, and which limit binds.
)"},
      {"cp-async", R"(# cp.async pipelining (sm_80 and newer)

cp.async copies global memory into shared memory without passing through registers, and without
blocking the thread: the next tile can be loaded while the current one is computed.

    #include <cuda_pipeline.h>   // or inline PTX: cp.async.cg.shared.global [dst], [src], 16;
    __pipeline_memcpy_async(&smem[i], &gmem[j], 16);  // 4, 8 or 16 bytes, both aligned to it
    __pipeline_commit();                               // closes a group of copies
    __pipeline_wait_prior(STAGES - 2);                 // wait until at most N groups are pending
    __syncthreads();                                   // make the data visible to the block

- Multi-stage pipeline: STAGES shared-memory buffers; prologue loads STAGES-1 tiles; each
  iteration waits for the oldest, computes on it, and issues the load of the tile STAGES-1
  ahead. 3-4 stages is typical on sm_80/sm_90.
- 16-byte copies (cp.async.cg, which bypasses L1) are the efficient form; source and destination
  must be 16-byte aligned, so tails and unaligned leading dimensions need 4-byte copies or a
  zero-fill (the src-size operand of cp.async zero-fills the rest).
- Out-of-range elements: never issue a copy from outside the buffer; use the zero-fill form or
  write zeros to shared memory, then the compute loop needs no bounds checks.
- Shared memory for STAGES x (BM x BK + BK x BN) floats quickly exceeds 48 KB: use dynamic
  shared memory (extern __shared__) and set shared_bytes in the launch.
- On sm_90, TMA (cp.async.bulk.tensor) and wgmma are the next step, but they need tensor maps
  made on the host, which this harness does not do: stay with cp.async.
)"},
      {"vectorized-loads", R"(# Vectorized loads and stores

One 16-byte access (float4, int4, uint4) instead of four 4-byte ones issues a quarter of the
memory instructions and lets each thread move more bytes per request; bandwidth-bound kernels
(copies, elementwise, transpose, reductions) often gain 10-30%.

    const float4* a4 = reinterpret_cast<const float4*>(a);
    float4 v = a4[i];                // needs &a[4*i] 16-byte aligned

- Alignment: the base pointer is 256-byte aligned here, but a row of a matrix with cols % 4 != 0
  is not; vectorize only when the offset is a multiple of 4 elements, else fall back to scalar.
- Tails: process n / 4 vectors, then the n % 4 leftovers with scalar code (see tail-handling).
- half: use half2 (__hadd2, __hfma2) for 2-wide arithmetic and 8-byte/16-byte loads of
  4/8 halves.
- __ldg() or `const __restrict__` pointers let the compiler use the read-only path;
  `__restrict__` on every pointer also helps it reorder loads.
- Check the SASS or Nsight Compute: LDG.E.128 is a 16-byte load.
)"},
      {"warp-shuffles", R"(# Warp shuffles and reductions

__shfl_sync / __shfl_down_sync / __shfl_xor_sync exchange registers inside a warp without shared
memory or __syncthreads().

    __device__ float warp_sum(float v) {
      for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
      return v;   // every lane holds the sum (xor butterfly)
    }

- Block reduction: each warp reduces with shuffles, lane 0 writes the warp's result to
  shared memory (32 floats at most), __syncthreads(), then the first warp reduces those.
- The mask must name exactly the lanes that execute the call; with a partial last warp
  (blockDim not a multiple of 32, or threads that returned early) use __activemask() carefully,
  or better keep all lanes alive and feed the identity (0 for sums, -INFINITY for max).
- Softmax / layer norm: one warp (or one block) per row; compute max and sum with warp
  reductions; read the row once into registers when it fits.
- Floating-point sums in a different order give different bits: the harness compares against
  the reference within tolerance, but repeated runs must be bit-identical, so avoid atomics
  whose order varies (atomicAdd on floats) unless the result is exact.
- Warp-level matrix ops (mma.sync / wmma) compute with reduced precision on FP16/BF16/TF32
  inputs; an FP32 workload with a tight tolerance will reject TF32 results.
)"},
      {"tail-handling", R"(# Tail handling and bounds

Every case size must work, including 1, 17, 1000x1x17 and sizes that are not multiples of the
tile: the harness places each buffer against an unmapped page and checks canary bytes, so a read
or write one element past the end is caught (out_of_bounds), and outputs are poisoned with NaN so
an unwritten element is caught too (wrong_result).

- Round the grid up: grid = ceil_div(N, elements per block); then guard every access with
  `if (i < N)`, also in loads of shared-memory tiles (load 0 for out-of-range elements).
- Tiled kernels: guard both the load of the partial tile (zero-fill) and the store of partial
  output tiles; keep __syncthreads() outside the guard so every thread of the block reaches it.
- Vectorized code: vectors for the aligned body, scalar code for the remainder; never read a
  full float4 that straddles the end of the buffer.
- Grid-stride loops (for (i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x *
  blockDim.x)) handle any size with a fixed grid.
- Launch expressions are integer expressions of the case sizes: ceil_div(N, 256),
  min(ceil_div(N, 256), 1024), max(1, ...). Grid y and z are limited to 65535.
- Integer overflow: use size_t or int64 for index arithmetic when M * N may exceed 2^31.
)"},
  };
  return notes;
}

}  // namespace kopt::agent

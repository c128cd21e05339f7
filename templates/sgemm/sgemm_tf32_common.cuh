// What the two split-TF32 SGEMM templates (sgemm_tf32.cu, sgemm_tf32_wgmma.cu) share: the block's
// context, the predicated tile copies and the split-K reduction over a thread block cluster (their
// host-visible index arithmetic is sgemm_tf32_index.cuh). Included inside
// each template's own namespace, after sgemm_async.cuh (and sgemm_cluster.cuh for SPLITK > 1),
// whose helpers it uses. kopt expands it into the template (docs/spec-format.md, "Local
// includes"); it includes nothing itself, so that a file may include a template once per variant.

// Per-launch and per-thread values of a block: the operands, the problem size, the first row and
// column of the block's output tile, the thread, and whether K and N allow 16-byte copies.
struct BlockCtx {
  const float* __restrict__ A;
  const float* __restrict__ B;
  int M, N, K;
  int row0, col0, tid;
  bool kvec, nvec;  // K % 4 == 0, N % 4 == 0 (uniform per launch)
};

// Copies the 4 floats row[col .. col+3] to shared memory at dst, each one that lies in the matrix
// (in_row, and col + e < limit); the others are zero-filled. vec: limit % 4 == 0 and row is 16-byte
// aligned, so the 4 are all in or all out (one 16-byte copy); else 4-byte copies. `any`: a valid
// address for the copies that read nothing.
__device__ __forceinline__ void copy4(unsigned dst, const float* row, bool in_row, int col, int limit, bool vec,
                                      const float* any) {
  if (vec) {
    const bool ok = in_row && col < limit;
    cp_async16(dst, ok ? row + col : any, ok ? 16 : 0);
    return;
  }
#pragma unroll
  for (int e = 0; e < 4; ++e) {
    const bool ok = in_row && col + e < limit;
    cp_async4(dst + 4u * e, ok ? row + col + e : any, ok ? 4 : 0);
  }
}

#if SPLITK > 1
// The split-K sum, between two sgemm_cluster::sync(): every block of the cluster holds its partial
// tile in its shared memory at shared address `base` (row stride kLdc floats); the block of rank
// `rank` sums tile rows [rank kRows, (rank + 1) kRows), 4 kQ columns, over ranks 0, 1, ...,
// SPLITK - 1 in that order (the same sum on every run) and stores them to C (M x N, row-major) at
// (row0 + tile row, col0 + tile column), leaving out what lies outside the matrix. nvec: N % 4 ==
// 0 (whole float4 stores). Thread `tid` of kThreads takes the float4s tid, tid + kThreads, ...
template <int kRows, int kQ, int kLdc, int kThreads>
__device__ __forceinline__ void splitk_store(float* __restrict__ C, int M, int N, int row0, int col0, bool nvec,
                                             int tid, unsigned rank, unsigned base) {
  for (int f = tid; f < kRows * kQ; f += kThreads) {
    const int tm = static_cast<int>(rank) * kRows + f / kQ, tn = 4 * (f % kQ);
    const unsigned off = base + 4u * static_cast<unsigned>(tm * kLdc + tn);
    float4 s = sgemm_cluster::load4(sgemm_cluster::map(off, 0));
#pragma unroll
    for (int p = 1; p < SPLITK; ++p) {  // fixed order: rank 0, 1, ..., SPLITK-1
      const float4 v = sgemm_cluster::load4(sgemm_cluster::map(off, p));
      s.x += v.x; s.y += v.y; s.z += v.z; s.w += v.w;
    }
    const int row = row0 + tm, col = col0 + tn;
    if (row >= M) continue;
    float* crow = C + static_cast<size_t>(row) * static_cast<size_t>(N);
    if (nvec) {
      if (col < N) *reinterpret_cast<float4*>(crow + col) = s;  // N % 4 == 0: col + 3 < N
    } else {
      if (col + 0 < N) crow[col + 0] = s.x;
      if (col + 1 < N) crow[col + 1] = s.y;
      if (col + 2 < N) crow[col + 2] = s.z;
      if (col + 3 < N) crow[col + 3] = s.w;
    }
  }
}
#endif  // SPLITK > 1

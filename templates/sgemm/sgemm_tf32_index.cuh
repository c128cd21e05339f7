// The index arithmetic the two split-TF32 SGEMM templates (sgemm_tf32.cu, sgemm_tf32_wgmma.cu)
// share, host-visible: each template's Layout calls it, and the CPU tests (tests/unit/
// test_sgemm_tf32*.cpp) call Layout. Included inside each template's namespace, before its Layout.
// kopt expands it into the template (docs/spec-format.md, "Local includes"); it includes nothing
// itself, so that a file may include a template once per variant.

#undef SGEMM_TF32_HD
#if defined(__CUDACC__) || defined(__CUDACC_RTC__)
#define SGEMM_TF32_HD __host__ __device__ __forceinline__
#else
#define SGEMM_TF32_HD inline  // a host compiler reads the index arithmetic only (the CPU tests)
#endif

// The copies of a row-major tile whose rows hold kQ 16-byte chunks (4 floats each) by kThreads
// threads: chunk l of thread tid is f = tid + l * kThreads, at row f / kQ, floats col .. col + 3 of
// it with col = 4 (f % kQ) (consecutive threads on consecutive chunks of a row).
template <int kThreads, int kQ>
SGEMM_TF32_HD void tile_chunk(int tid, int l, int& row, int& col) {
  const int f = tid + l * kThreads;
  row = f / kQ;
  col = 4 * (f % kQ);
}

// round(sqrt(num / den)) for num >= 0, den >= 1, halves rounded up, and at least 1: the smallest p
// >= 1 with (p + 1/2)^2 > num / den, that is den (4 p (p + 1) + 1) > 4 num. Each Layout's
// inner_tiles: the k-tiles summed in the inner level of the two-level sums before each fold, which
// makes the inner and the outer chain of FP32 adds about as long.
SGEMM_TF32_HD int round_sqrt_ratio(int num, int den) {
  int p = 1;
  while (den * (4 * p * (p + 1) + 1) <= 4 * num) ++p;  // (p + 1/2)^2 <= num / den: round up
  return p;
}

// Rasterization: block (bx, by) of a gx x gy grid of output tiles (bx without the split-K rank)
// computes tile row tm, tile column tn. kSwz <= 1 maps it to (by, bx); kSwz > 1 walks groups of
// kSwz tile rows column by column (Triton's GROUP_M), so that blocks that run at the same time share
// A rows and B columns in L2. One-to-one on [0, gx) x [0, gy) for every kSwz >= 1. Index: the type
// of the block number by * gx + bx and of the arithmetic on it (it must hold gx * gy + kSwz * gx).
template <int kSwz, typename Index>
SGEMM_TF32_HD void swizzled_tile(int bx, int by, int gx, int gy, int& tm, int& tn) {
  if (kSwz <= 1) {
    tm = by;
    tn = bx;
    return;
  }
  const Index pid = static_cast<Index>(by) * gx + bx;
  const Index width = static_cast<Index>(kSwz) * gx;  // blocks per group of kSwz tile rows
  const Index first = pid / width * kSwz;             // the group's first tile row
  const Index rows = gy - first < kSwz ? gy - first : kSwz;
  const Index local = pid % width;
  tm = static_cast<int>(first + local % rows);
  tn = static_cast<int>(local / rows);
}

// Out-of-place transpose, tunable template of the transpose workload
// (templates/transpose/transpose.json): B[c, r] = A[r, c], row-major float32 A[ROWS, COLS],
// B[COLS, ROWS]. A tile of A is staged through shared memory so that both the global reads
// (along rows of A) and the global writes (along rows of B) are coalesced.
//
// Tuning parameters (-D NAME=VALUE; the defaults below are the spec's first values):
//   TILE        the tile is TILE x TILE elements (16, 32, 64).
//   BLOCK_ROWS  threads in y; each thread handles TILE / BLOCK_ROWS rows of the tile (4..32).
//   PAD         0 or 1 extra float per shared-memory row (TILE + 1 makes the column reads of the
//               write phase hit 32 different banks).
//   VEC         1, 2 or 4: floats per thread and tile row; float2/float4 global accesses on the
//               vector paths, scalar accesses otherwise.
//
// Mapping. Block (TILE / VEC, BLOCK_ROWS) threads, grid.x = ceil_div(COLS, TILE) *
// ceil_div(ROWS, TILE) (1-D, so no 65535 limit on either side). Block b transposes the tile of
// A at row0 = (b / tiles_x) * TILE, col0 = (b % tiles_x) * TILE, tiles_x = ceil_div(COLS, TILE);
// row0 < ROWS and col0 < COLS. Inside the tile, rows r = ty + j * BLOCK_ROWS for
// j < TILE / BLOCK_ROWS cover [0, TILE) (TILE % BLOCK_ROWS == 0), and the TILE / VEC threads of
// x cover the TILE columns (TILE % VEC == 0): VEC consecutive columns tx*VEC + i on the vector
// path, columns tx + i * (TILE / VEC) (coalesced scalar accesses) on the scalar path.
//
//   Read phase:  tile[r][c] = A[row0 + r, col0 + c] for every in-bounds (r, c).
//   __syncthreads()
//   Write phase: B[col0 + c, row0 + r] = tile[r][c] for every in-bounds (r, c), with c now
//                along y and r along x.
//
// Why no out-of-bounds access and no unwritten output: both phases test the same predicate,
// r < ROWS - row0 && c < COLS - col0 (differences, so nothing overflows near INT_MAX), before
// any global access; the tiles partition A, so every element of B is written exactly once, and
// the write phase reads only tile entries the read phase wrote (same predicate), after the
// barrier. Vector read path (VEC > 1, COLS % VEC == 0, A VEC*4-byte aligned, checked at run
// time): tile columns c = tx*VEC are multiples of VEC, as are col0 and COLS, so c < COLS - col0
// implies c + VEC - 1 < COLS - col0: the whole aligned vector is inside row row0 + r of A.
// Vector write path (VEC > 1, ROWS % VEC == 0, B aligned): the same argument with rows.
// Global offsets are computed in size_t. Shared memory accesses are scalar (no alignment needed).
//
// kopt:entry transpose_tuned
// kopt:grid ceil_div(COLS, TILE) * ceil_div(ROWS, TILE), 1, 1
// kopt:block TILE / VEC, BLOCK_ROWS, 1
// kopt:shared 0

#ifndef TILE
#define TILE 16
#endif
#ifndef BLOCK_ROWS
#define BLOCK_ROWS 4
#endif
#ifndef PAD
#define PAD 0
#endif
#ifndef VEC
#define VEC 1
#endif

namespace transpose_tuned_detail {

constexpr int kTile = TILE;
constexpr int kBlockRows = BLOCK_ROWS;
constexpr int kPad = PAD;
constexpr int kVec = VEC;
constexpr int kThreadsX = kTile / kVec;
constexpr int kThreads = kThreadsX * kBlockRows;
constexpr int kRowsPerThread = kTile / kBlockRows;

static_assert(kTile >= 1 && kBlockRows >= 1, "TILE and BLOCK_ROWS must be positive");
static_assert(kVec == 1 || kVec == 2 || kVec == 4, "VEC must be 1, 2 or 4");
static_assert(kTile % kVec == 0, "TILE must be a multiple of VEC (the x threads cover the tile columns)");
static_assert(kTile % kBlockRows == 0, "TILE must be a multiple of BLOCK_ROWS (the y threads cover the tile rows)");
static_assert(kPad == 0 || kPad == 1, "PAD must be 0 or 1");
static_assert(kThreads >= 32 && kThreads <= 1024, "(TILE / VEC) * BLOCK_ROWS must be in 32..1024");
static_assert(kTile * (kTile + kPad) * 4 <= 48 * 1024, "the tile must fit in 48 KB of static shared memory");

template <int W>
__device__ __forceinline__ void load_vec(const float* __restrict__ p, float (&v)[W]) {
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
__device__ __forceinline__ void store_vec(float* __restrict__ p, const float (&v)[W]) {
  if constexpr (W == 4) {
    *reinterpret_cast<float4*>(p) = make_float4(v[0], v[1], v[2], v[3]);
  } else if constexpr (W == 2) {
    *reinterpret_cast<float2*>(p) = make_float2(v[0], v[1]);
  } else {
    p[0] = v[0];
  }
}

}  // namespace transpose_tuned_detail

extern "C" __global__ void __launch_bounds__(transpose_tuned_detail::kThreads)
transpose_tuned(const float* __restrict__ A, float* __restrict__ B, int ROWS, int COLS) {
  using namespace transpose_tuned_detail;
  __shared__ float tile[kTile][kTile + kPad];

  const unsigned tiles_x = (unsigned)(COLS - 1) / kTile + 1;  // COLS >= 1
  const int col0 = (int)(blockIdx.x % tiles_x) * kTile;        // < COLS
  const int row0 = (int)(blockIdx.x / tiles_x) * kTile;        // < ROWS
  const int rows_left = ROWS - row0;                           // >= 1
  const int cols_left = COLS - col0;                           // >= 1
  const int tx = threadIdx.x;
  const int ty = threadIdx.y;
  const unsigned long long align_a = (unsigned long long)A % (kVec * sizeof(float));
  const unsigned long long align_b = (unsigned long long)B % (kVec * sizeof(float));

  // Read phase: tile[r][c] = A[row0 + r, col0 + c].
  const float* a = A + (size_t)row0 * COLS + col0;
  if (kVec > 1 && COLS % kVec == 0 && align_a == 0) {
    const int c = tx * kVec;
#pragma unroll
    for (int j = 0; j < kRowsPerThread; ++j) {
      const int r = ty + j * kBlockRows;
      if (r < rows_left && c < cols_left) {
        float v[kVec];
        load_vec<kVec>(a + (size_t)r * COLS + c, v);
#pragma unroll
        for (int i = 0; i < kVec; ++i) tile[r][c + i] = v[i];
      }
    }
  } else {
#pragma unroll
    for (int j = 0; j < kRowsPerThread; ++j) {
      const int r = ty + j * kBlockRows;
      if (r < rows_left) {
#pragma unroll
        for (int i = 0; i < kVec; ++i) {
          const int c = tx + i * kThreadsX;
          if (c < cols_left) tile[r][c] = __ldg(a + (size_t)r * COLS + c);
        }
      }
    }
  }

  __syncthreads();

  // Write phase: B[col0 + c, row0 + r] = tile[r][c].
  float* b = B + (size_t)col0 * ROWS + row0;
  if (kVec > 1 && ROWS % kVec == 0 && align_b == 0) {
    const int r = tx * kVec;
#pragma unroll
    for (int j = 0; j < kRowsPerThread; ++j) {
      const int c = ty + j * kBlockRows;
      if (c < cols_left && r < rows_left) {
        float v[kVec];
#pragma unroll
        for (int i = 0; i < kVec; ++i) v[i] = tile[r + i][c];
        store_vec<kVec>(b + (size_t)c * ROWS + r, v);
      }
    }
  } else {
#pragma unroll
    for (int j = 0; j < kRowsPerThread; ++j) {
      const int c = ty + j * kBlockRows;
      if (c < cols_left) {
#pragma unroll
        for (int i = 0; i < kVec; ++i) {
          const int r = tx + i * kThreadsX;
          if (r < rows_left) b[(size_t)c * ROWS + r] = tile[r][c];
        }
      }
    }
  }
}

// 3 shape-specialised variants of tr (entry points tr_v0..tr_v2); the launch header chooses among them by size.
// The kopt: lines describe variant 0, the best single configuration.
// kopt:entry tr_v0
// kopt:grid ceil_div(N, BM), 1, 1
// kopt:block 256, 1, 1
// kopt:shared 0
// kopt:options -O3 -lineinfo
// kopt:param BM=64

#include <cstdint>
#include <cuda_fp16.h>

// ===== variant 0: BM=64 =====
#undef BK
#undef BM
#undef ZZ
#define tr tr_v0
namespace kopt_variant_0 {
// kopt-variant:entry tr
// kopt-variant:grid ceil_div(N, BM), 1, 1
// kopt-variant:block 256
// kopt-variant:options -O3 -lineinfo
// kopt-variant:param BM=64
#ifndef BM
#define BM 64
#endif
extern "C" __global__ void tr(const float* A, const float* B, float* C, int N) {}
}  // namespace kopt_variant_0
#undef tr
using kopt_variant_0::tr_v0;

// ===== variant 1:  =====
#undef BK
#undef BM
#undef ZZ
#define tr tr_v1
namespace kopt_variant_1 {
// kopt-variant:entry tr
// kopt-variant:grid ceil_div(N, BM)
// kopt-variant:block 128, 2
// kopt-variant:shared BM * 4
// kopt-variant:options -O3 -lineinfo
// kopt-variant:param BM=128
// kopt-variant:param BK=4
int y; // kopt-variant:param ZZ=1
extern "C" __global__ void tr(const float* A, const float* B, float* C, int N) {}
}  // namespace kopt_variant_1
#undef tr
using kopt_variant_1::tr_v1;

// ===== variant 2: BM=32 =====
#undef BK
#undef BM
#undef ZZ
#define tr tr_v2
namespace kopt_variant_2 {
// kopt-variant:entry tr
// kopt-variant:grid 1
// kopt-variant:block 32, 1, 1
// kopt-variant:shared 0
// kopt-variant:options -O3 -lineinfo
// kopt-variant:param BM=32
extern "C" __global__ void tr(const float* A, const float* B, float* C, int N) {}
}  // namespace kopt_variant_2
#undef tr
using kopt_variant_2::tr_v2;
#undef BK
#undef BM
#undef ZZ

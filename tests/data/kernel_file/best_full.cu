// best.cu: the fastest kernel of @RUN_DIR@, written by KernelOptimizer @KOPT_VERSION@.
// Workload:  sgemm big
// GPU:       NVIDIA H200 (sm_90)
// Geomean:   0.7071 ms over 2 performance cases; 8x the reference; 2.83x the initial kernel
// Attempt:   #3 of 4 (candidate "BM=128,BN=64 second line")
// Reproduce: kopt evaluate --kernel best.cu (parameters are #defines below: override with -DNAME=VALUE)
//
// kopt:entry sgemm_tiled
// kopt:grid ceil_div(N, BN), ceil_div(M, BM), 1
// kopt:block 256, 1, 1
// kopt:shared 0
// kopt:options -O3 -DFOO=1 -maxrregcount=128
// kopt:param BM=128
// kopt:param BN=64

#ifndef BM
#define BM 128
#endif
#ifndef BN
#define BN 64
#endif

// tiled sgemm
// kopt-superseded:entry sgemm_tiled
// kopt-superseded:grid ceil_div(N, 16), ceil_div(M, 16), 1
  // kopt-superseded:block 16, 16, 1
int x; // kopt-superseded:shared 64
// kopt-superseded:options -O2
// kopt-superseded:param BM=64
// kopt:param BK=8
//kopt:grid 7
extern "C" __global__ void sgemm_tiled() { int x = BM * BN * BK; }

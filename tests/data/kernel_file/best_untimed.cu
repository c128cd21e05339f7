// best.cu: the fastest kernel of @RUN_DIR@, written by KernelOptimizer @KOPT_VERSION@.
// Workload:  (unnamed)
// GPU:       sm_80
// Geomean:   not timed (verdict compiled)
// Attempt:   #1 of 1 (initial)
// Reproduce: kopt evaluate --kernel best.cu (parameters are #defines below: override with -DNAME=VALUE)
//
// kopt:param TILE=4

#ifndef TILE
#define TILE 4
#endif



// variants/v1.cu: a shape-specialised variant of @RUN_DIR@ (see summary.json "specialization"), written by KernelOptimizer @KOPT_VERSION@.
// Workload:  sgemm big
// GPU:       NVIDIA H200 (sm_90)
// Geomean:   1.225 ms over 2 performance cases; 4.62x the reference; 1.63x the initial kernel
// Attempt:   #4 of 4 (candidate)
// Reproduce: kopt evaluate --kernel v1.cu (parameters are #defines below: override with -DNAME=VALUE)
//
// kopt:entry k
// kopt:grid 1, 1, 1
// kopt:block 32, 1, 1
// kopt:shared 0
// kopt:options -lineinfo

// kopt-superseded:entry k
// kopt-superseded:options -O1
// kopt-superseded:block 64
extern "C" __global__ void k() {}

// kopt-superseded:entry old
  //kopt-superseded:grid 1, 1, 1
//   kopt-superseded:block 32
int z; // kopt:shared 8
// kopt-superseded:options -O1
// kopt:param BM=4
// kopt:bogus x
extern "C" __global__ void k2() {}
// ---- kopt: the entry and launch this candidate was evaluated with ----
// kopt:entry k2
// kopt:grid ceil_div(N, 256), 1, (1)
// kopt:block 256, 1, 1
// kopt:shared BM * 4
// kopt:options -O3 --use_fast_math

// kopt:entry vadd
// kopt:grid ceil_div(N, 256), 1, 1
// kopt:shared 0
// kopt:block 128
extern "C" __global__ void vadd() {}

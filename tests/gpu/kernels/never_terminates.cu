// Hostile: a consumer that waits for a "ready" flag a producer kernel was meant
// to publish in device memory before this launch. In this workload nothing ever
// sets it, so every thread spins forever. The flag is read through a volatile
// pointer: each iteration is an observable load, so the compiler cannot remove
// or hoist the loop. The launch never finishes; the harness's launch watchdog
// (launch_timeout_ms) fires, the worker is killed and replaced: timeout.
// kopt-test:expect timeout
//
// kopt:entry sgemm_never_terminates
// kopt:grid ceil_div(N, 16), ceil_div(M, 16), 1
// kopt:block 16, 16, 1
// kopt:shared 0

__device__ int g_inputs_ready = 0;  // set to 1 by the (absent) producer

extern "C" __global__ void sgemm_never_terminates(const float* __restrict__ A,
                                                  const float* __restrict__ B,
                                                  float* __restrict__ C, int M, int N, int K) {
  const volatile int* ready = &g_inputs_ready;
  while (*ready == 0) {
    // BUG: waits for a producer that is never launched.
  }

  const int row = blockIdx.y * blockDim.y + threadIdx.y;
  const int col = blockIdx.x * blockDim.x + threadIdx.x;
  if (row >= M || col >= N) return;
  float acc = 0.0f;
  for (int k = 0; k < K; ++k) acc += A[(size_t)row * K + k] * B[(size_t)k * N + col];
  C[(size_t)row * N + col] = acc;
}

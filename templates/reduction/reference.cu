// Reference of the reduction workload (templates/reduction/reduction.json), written
// independently of the tuned kernel: the sum of all n floats of `array`, accumulated in double
// (one block, each thread a strided part, then a fixed pairwise tree over the threads' sums),
// rounded once to float and written to sum_global[0]. Deterministic: no atomics.
//
// The tuned kernel writes one partial sum per thread block into sum_global[0 .. num_blocks);
// its check is that those partial sums add up to this total.
//
// kopt:entry reduction_reference
// kopt:grid 1, 1, 1
// kopt:block 1024, 1, 1
// kopt:shared 0

extern "C" __global__ void __launch_bounds__(1024)
reduction_reference(float* __restrict__ sum_global, const float* __restrict__ array, int n) {
  __shared__ double partial[1024];
  double s = 0.0;
  for (long long i = threadIdx.x; i < n; i += blockDim.x) s += (double)array[i];
  partial[threadIdx.x] = s;
  __syncthreads();
  for (unsigned int half = blockDim.x / 2; half > 0; half /= 2) {
    if (threadIdx.x < half) partial[threadIdx.x] += partial[threadIdx.x + half];
    __syncthreads();
  }
  if (threadIdx.x == 0) sum_global[0] = (float)partial[0];
}

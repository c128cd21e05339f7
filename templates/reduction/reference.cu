// Reference of the reduction workload (templates/reduction/reduction.json), written
// independently of the tuned kernel: the sum of all n floats of `array`, accumulated in double,
// rounded once to float and written to sum_global[0]. Deterministic: the order of the additions
// depends on n alone (the grid is a function of n), never on which block finishes first.
//
// Each of the gridDim.x blocks adds a grid-strided part of the array (each thread its own
// elements, then a fixed pairwise tree over the block's 1024 threads) and stores its total in
// `block_totals`; the last block to finish (counted with one atomic on `blocks_done`, after a
// __threadfence(), the CUDA C Programming Guide's "last block" pattern) adds the block totals
// with the same tree, in block order, writes the result and resets the counter for the next
// launch. One block reading all of a 3.2 GB array took a sizeable share of each check (it runs
// again for every new output size); 1024 blocks read it at close to the DRAM bandwidth.
//
// The tuned kernel writes one partial sum per thread block into sum_global[0 .. num_blocks);
// its check is that those partial sums add up to this total.
//
// kopt:entry reduction_reference
// kopt:grid min(1024, ceil_div(n, 65536)), 1, 1
// kopt:block 1024, 1, 1
// kopt:shared 0

#define REFERENCE_THREADS 1024
#define REFERENCE_MAX_BLOCKS 1024

__device__ double block_totals[REFERENCE_MAX_BLOCKS];
__device__ unsigned int blocks_done;

/// The fixed pairwise tree over REFERENCE_THREADS doubles in shared memory; the total in [0].
__device__ void tree_sum(double* partial) {
  for (unsigned int half = REFERENCE_THREADS / 2; half > 0; half /= 2) {
    if (threadIdx.x < half) partial[threadIdx.x] += partial[threadIdx.x + half];
    __syncthreads();
  }
}

extern "C" __global__ void __launch_bounds__(REFERENCE_THREADS)
reduction_reference(float* __restrict__ sum_global, const float* __restrict__ array, int n) {
  __shared__ double partial[REFERENCE_THREADS];
  __shared__ bool last;
  double s = 0.0;
  const long long stride = (long long)gridDim.x * REFERENCE_THREADS;
  for (long long i = (long long)blockIdx.x * REFERENCE_THREADS + threadIdx.x; i < n; i += stride)
    s += (double)array[i];
  partial[threadIdx.x] = s;
  __syncthreads();
  tree_sum(partial);
  if (threadIdx.x == 0) {
    block_totals[blockIdx.x] = partial[0];
    __threadfence();  // the total is visible to every block before the count says so
    last = atomicAdd(&blocks_done, 1u) == gridDim.x - 1;
  }
  __syncthreads();
  if (!last) return;
  __threadfence();
  // volatile: the other blocks' totals are read from memory, not from a stale cache line.
  partial[threadIdx.x] = threadIdx.x < gridDim.x ? ((volatile double*)block_totals)[threadIdx.x] : 0.0;
  __syncthreads();
  tree_sum(partial);
  if (threadIdx.x == 0) {
    sum_global[0] = (float)partial[0];
    blocks_done = 0;
  }
}

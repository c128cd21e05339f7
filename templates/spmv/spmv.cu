// Sparse matrix-vector product y = A x, A in CSR (float32 values, int32 row offsets and column
// indices), one row per thread or per warp, from Kernel Tuner's examples:
// KernelTuner/kernel_tuner, examples/cuda/spmv.cu (the kernel) and examples/cuda/spmv.py (its
// search space and launch), https://github.com/KernelTuner/kernel_tuner; the revision with
// threads_per_row, as in Kernel Tuner 1.x.
//
// Copyright the Kernel Tuner authors (Netherlands eScience Center).
// Licensed under the Apache License, Version 2.0 (the "License"); you may not use this file
// except in compliance with the License. You may obtain a copy of the License at
//     http://www.apache.org/licenses/LICENSE-2.0
// Unless required by applicable law or agreed to in writing, software distributed under the
// License is distributed on an "AS IS" BASIS, WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND,
// either express or implied. See the License for the specific language governing permissions
// and limitations under the License.
//
// Changed from the original: only these comment lines and the kopt annotations below were added;
// the code is as its authors wrote it.
//
// The launch is Kernel Tuner's: problem size nrows, grid divisor block_size_x/threads_per_row
// (block_size_x threads serve block_size_x / threads_per_row rows).
//
// kopt:entry spmv_kernel
// kopt:grid ceil_div(nrows, block_size_x / threads_per_row), 1, 1
// kopt:block block_size_x, 1, 1
// kopt:shared 0

#ifndef block_size_x
    #define block_size_x 64
#endif
#ifndef threads_per_row
    #define threads_per_row 32
#endif
#ifndef read_only
    #define read_only 1
#endif


#define USE_READ_ONLY_CACHE read_only
#if USE_READ_ONLY_CACHE == 1
#define LDG(x) __ldg(x)
#elif USE_READ_ONLY_CACHE == 0
#define LDG(x) *(x)
#endif

#define warp_size threads_per_row

__global__ void spmv_kernel(float *y, int *rows, int *cols, float* values, float *__restrict__ x, int nrows) {

    //global warp index and within warp
    int i = (blockIdx.x * block_size_x + threadIdx.x)/warp_size;
    int tx = threadIdx.x & (warp_size-1);

    float local_y = 0.0;
    if (i < nrows) {
        //for each element on row
        int start = rows[i]+tx;
        int end = rows[i+1];

        //computation with somewhat improved memory access pattern
        for (int j = start; j < end; j+=threads_per_row) {
            local_y += values[j] * LDG(x + cols[j]);
        }

        #if (threads_per_row == 32)
        //reduce result to single value per warp
        #pragma unroll
        for (int s=warp_size/2; s>0; s>>=1) {
            local_y += __shfl_xor_sync(0xffffffff, local_y, s);
        }
        #endif

        //write result
        if (tx == 0) {
            y[i] = local_y;
        }

    }
}




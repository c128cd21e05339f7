// Sum of a float32 array, first pass: every thread block writes one partial sum (a second launch,
// or the host, adds the partial sums up), from Kernel Tuner's examples: KernelTuner/kernel_tuner,
// examples/cuda/reduction.cu (the kernel) and examples/cuda/reduction.py (its search space,
// launch and check), https://github.com/KernelTuner/kernel_tuner; the revision with
// loop_unroll_factor_0, as in Kernel Tuner 1.x.
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
// The launch is Kernel Tuner's: problem size "num_blocks" (a tunable parameter), no grid
// divisor, so the grid has num_blocks blocks of block_size_x threads. The kernel reads the array
// as n / vector vectors: n must be a multiple of 4 for every configuration to sum all of it.
// `#pragma unroll loop_unroll_factor_0`: NVRTC expands the -D define there (0 makes the pragma
// a warning that is ignored, as Kernel Tuner's removing the line for 0 does).
//
// kopt:entry sum_floats
// kopt:grid num_blocks, 1, 1
// kopt:block block_size_x, 1, 1
// kopt:shared 0

#ifndef vector
#define vector 1
#endif 

#if (vector==1)
#define floatvector float
#elif (vector == 2)
#define floatvector float2
#elif (vector == 4)
#define floatvector float4
#endif

#if use_shuffle == 1
#define stop_loop 16
#elif use_shuffle == 0
#define stop_loop 0
#endif

__global__ void sum_floats(float *sum_global, floatvector *array, int n) {
    int ti = threadIdx.x;
    int x = blockIdx.x * block_size_x + threadIdx.x;
    int step_size = num_blocks * block_size_x;
    float sum = 0.0f;

    //cooperatively iterate over input array with all thread blocks
    #pragma unroll loop_unroll_factor_0
    for (int i=x; i<n/vector; i+=step_size) {
        floatvector v = array[i];
        #if vector == 1
        sum += v;
        #elif vector == 2
        sum += v.x + v.y;
        #elif vector == 4
        sum += v.x + v.y + v.z + v.w;
        #endif
    }
    
    //reduce sum to single value (or last 32 in case of use_shuffle)
    __shared__ float sh_mem[block_size_x];

    sh_mem[ti] = sum;
    __syncthreads();
    #pragma unroll
    for (unsigned int s=block_size_x/2; s>stop_loop; s>>=1) {
        if (ti < s) {
            sh_mem[ti] += sh_mem[ti + s];
        }
        __syncthreads();
    }

    //reduce last 32 values to single value using warp shuffle instructions
    #if use_shuffle == 1
    if (ti < 32) {
        sum = sh_mem[ti];
        #pragma unroll
        for (unsigned int s=16; s>0; s>>=1) {
            sum += __shfl_down_sync(0xffffffff, sum, s);
        }
    }
    #else
    sum = sh_mem[0];
    #endif

    //write back one value per thread block, run kernel again with one tread block
    if (ti == 0) {
        sum_global[blockIdx.x] = sum;
    }
}

// 5-point stencil (Jacobi step) on a row-major float32 grid, from Kernel Tuner's examples:
// KernelTuner/kernel_tuner, examples/cuda/stencil.cu (the kernel) and examples/cuda/stencil.py
// (its search space and launch), https://github.com/KernelTuner/kernel_tuner.
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
// Changed from the original (the kernel's body is as its authors wrote it): these comment lines
// and the kopt: annotations below were added, and the two problem-size #defines were put under
// #ifndef so that a size given on the command line (-D domain_width=...) takes precedence; the
// original's 4096 x 2048 stays the default.
//
// Kernel Tuner passes block_size_x and block_size_y as -D defines (its tunable parameters), as
// kopt does. The launch is Kernel Tuner's: problem size (domain_width, domain_height), grid
// divisors block_size_x and block_size_y.
//
// kopt:entry stencil_kernel
// kopt:grid ceil_div(domain_width, block_size_x), ceil_div(domain_height, block_size_y), 1
// kopt:block block_size_x, block_size_y, 1
// kopt:shared 0

#ifndef domain_width
#define domain_width    4096
#endif
#ifndef domain_height
#define domain_height   2048
#endif

__global__ void stencil_kernel(float *x_new, float *x_old) {
    int x = blockIdx.x * block_size_x + threadIdx.x;
    int y = blockIdx.y * block_size_y + threadIdx.y;

    if (y>0 && y<domain_height-1 && x>0 && x<domain_width-1) {

    x_new[y*domain_width+x] = ( x_old[ (y  ) * domain_width + (x  ) ] +
                                x_old[ (y  ) * domain_width + (x-1) ] +
                                x_old[ (y  ) * domain_width + (x+1) ] +
                                x_old[ (y+1) * domain_width + (x  ) ] +
                                x_old[ (y-1) * domain_width + (x  ) ] ) / 5.0f;

    }
}

// A 2D convolution written the way Kernel Tuner's users write their kernels
// (its examples/cuda convolution): the problem sizes and the filter size are
// preprocessor names, the filter is in __constant__ memory, the tuning
// parameters (block_size_x, block_size_y, tile_size_x, tile_size_y,
// use_padding) are preprocessor names too, and the grid is the image divided
// by the tile. The image's sizes must be multiples of the block's tile (the
// kernel has no bounds checks, like the original). kopt passes every name as
// -D NAME=VALUE (the spec's "defines" and "tuning"), so the defaults below
// only serve a compile outside kopt.
//
// kopt:entry convolution_kernel
// kopt:grid ceil_div(image_width, block_size_x * tile_size_x), ceil_div(image_height, block_size_y * tile_size_y), 1
// kopt:block block_size_x, block_size_y, 1
// kopt:static_shared (block_size_y * tile_size_y + filter_height // 2 * 2) * (block_size_x * tile_size_x + filter_width // 2 * 2 + use_padding) * 4
#ifndef image_height
#define image_height 4096
#endif
#ifndef image_width
#define image_width 4096
#endif
#ifndef filter_height
#define filter_height 17
#endif
#ifndef filter_width
#define filter_width 17
#endif

#define border_height ((filter_height / 2) * 2)
#define border_width ((filter_width / 2) * 2)
#define input_height (image_height + border_height)
#define input_width (image_width + border_width)

#ifndef block_size_x
#define block_size_x 16
#endif
#ifndef block_size_y
#define block_size_y 16
#endif
#ifndef tile_size_x
#define tile_size_x 1
#endif
#ifndef tile_size_y
#define tile_size_y 1
#endif
#ifndef use_padding
#define use_padding 0
#endif

__constant__ float d_filter[filter_height * filter_width];

extern "C" __global__ void convolution_kernel(float* output, float* input, float* filter) {
  const int ty = threadIdx.y;
  const int tx = threadIdx.x;
  const int by = blockIdx.y * block_size_y * tile_size_y;
  const int bx = blockIdx.x * block_size_x * tile_size_x;

  // The input this block needs, with its border; a padded row avoids bank conflicts.
  __shared__ float sh_input[block_size_y * tile_size_y + border_height]
                           [block_size_x * tile_size_x + border_width + use_padding];
#pragma unroll
  for (int i = ty; i < block_size_y * tile_size_y + border_height; i += block_size_y) {
#pragma unroll
    for (int j = tx; j < block_size_x * tile_size_x + border_width; j += block_size_x) {
      sh_input[i][j] = input[(by + i) * input_width + (bx + j)];
    }
  }
  __syncthreads();

  float sum[tile_size_y][tile_size_x];
#pragma unroll
  for (int yi = 0; yi < tile_size_y; yi++)
#pragma unroll
    for (int xi = 0; xi < tile_size_x; xi++) sum[yi][xi] = 0.0f;

#pragma unroll
  for (int i = 0; i < filter_height; i++) {
#pragma unroll
    for (int j = 0; j < filter_width; j++) {
#pragma unroll
      for (int yi = 0; yi < tile_size_y; yi++) {
#pragma unroll
        for (int xi = 0; xi < tile_size_x; xi++) {
          sum[yi][xi] += sh_input[ty + yi * block_size_y + i][tx + xi * block_size_x + j] * d_filter[i * filter_width + j];
        }
      }
    }
  }

#pragma unroll
  for (int yi = 0; yi < tile_size_y; yi++)
#pragma unroll
    for (int xi = 0; xi < tile_size_x; xi++)
      output[(by + ty + yi * block_size_y) * image_width + bx + tx + xi * block_size_x] = sum[yi][xi];
}

// The reference: one output element a thread, everything from global and
// constant memory, bounds checked.
extern "C" __global__ void convolution_naive(float* output, float* input, float* filter) {
  const int x = blockIdx.x * blockDim.x + threadIdx.x;
  const int y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x >= image_width || y >= image_height) return;
  float sum = 0.0f;
  for (int j = 0; j < filter_height; j++)
    for (int i = 0; i < filter_width; i++) sum += input[(y + j) * input_width + (x + i)] * d_filter[j * filter_width + i];
  output[y * image_width + x] = sum;
}

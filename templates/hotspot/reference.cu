// Reference of the hotspot workload (templates/hotspot/hotspot.json), written independently of the
// tuned kernel: one thread per output cell, no shared memory, no tiles. With the cells indexed in
// the bordered input (X, Y: 0 <= X < grid_width + 2 max_tfactor, the same for Y), every cell
// follows, temporal_tiling_factor times,
//     u'(X, Y) = u + step_div_cap * (P(X, Y) + (u(X, Y+1) + u(X, Y-1) - 2u) * Ry_1
//                                   + (u(X+1, Y) + u(X-1, Y) - 2u) * Rx_1 + (80 - u) * Rz_1)
// from u = temp and P = power (the border cells included: they follow the same update), and
// temp_dst[y][x] is u(x + max_tfactor, y + max_tfactor) after the last step. A cell after s steps
// depends on the cells within s of it, so each thread keeps the square of the cells within
// temporal_tiling_factor of its own and shrinks it by one each step; the border of max_tfactor
// cells holds every cell it reads (temporal_tiling_factor <= max_tfactor).
//
// Arithmetic: each update in double from the float values, rounded to float after every step
// (the temperatures are float between steps, as in the kernel's shared memory). The tuned kernel
// rounds three of its terms to float as well (the two neighbour sums and the ambient product):
// the spec's tolerance covers that (README).
//
// kopt:entry hotspot_reference
// kopt:grid ceil_div(grid_width, 16), ceil_div(grid_height, 16), 1
// kopt:block 16, 16, 1
// kopt:shared 0

#define HOTSPOT_R temporal_tiling_factor
#define HOTSPOT_D (2 * temporal_tiling_factor + 1)

extern "C" __global__ void hotspot_reference(const float* power, const float* temp, float* temp_dst,
                                             float Rx_1, float Ry_1, float Rz_1, float step_div_cap) {
  const int x = blockIdx.x * blockDim.x + threadIdx.x;
  const int y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x >= grid_width || y >= grid_height) return;
  const long long row = grid_width + 2 * max_tfactor;  // cells in a row of power and temp
  // Element (a, b) of u is the cell X = x + max_tfactor - R + a, Y = y + max_tfactor - R + b.
  const long long origin = (long long)(y + max_tfactor - HOTSPOT_R) * row + (x + max_tfactor - HOTSPOT_R);
  float u[HOTSPOT_D][HOTSPOT_D], next[HOTSPOT_D][HOTSPOT_D];
  for (int b = 0; b < HOTSPOT_D; ++b)
    for (int a = 0; a < HOTSPOT_D; ++a) u[b][a] = temp[origin + b * row + a];
  for (int s = 1; s <= HOTSPOT_R; ++s) {
    for (int b = s; b < HOTSPOT_D - s; ++b)
      for (int a = s; a < HOTSPOT_D - s; ++a) {
        const double c = u[b][a];
        const double p = power[origin + b * row + a];
        const double vertical = (double)u[b + 1][a] + (double)u[b - 1][a] - 2.0 * c;
        const double horizontal = (double)u[b][a + 1] + (double)u[b][a - 1] - 2.0 * c;
        const double ambient = 80.0 - c;
        next[b][a] = (float)(c + (double)step_div_cap * (p + vertical * (double)Ry_1 + horizontal * (double)Rx_1 +
                                                         ambient * (double)Rz_1));
      }
    for (int b = s; b < HOTSPOT_D - s; ++b)
      for (int a = s; a < HOTSPOT_D - s; ++a) u[b][a] = next[b][a];
  }
  temp_dst[(long long)y * grid_width + x] = u[HOTSPOT_R][HOTSPOT_R];
}

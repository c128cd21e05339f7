// Reference of the stencil workload (templates/stencil/stencil.json), written independently of
// the tuned kernel: for every interior point (0 < x < W-1, 0 < y < H-1) of a row-major W x H
// grid, x_new = (centre + left + right + below + above) / 5, summed and divided in double and
// rounded once to float; border points are not written (x_new keeps its initial contents
// there, as in the tuned kernel). One thread per point over a 1-D grid, 64-bit indices.
//
// The grid size comes as -D domain_width / domain_height (the spec's defines: each case's
// sizes), the names the tuned kernel uses.
//
// kopt:entry stencil_reference
// kopt:grid ceil_div(domain_width * domain_height, 256), 1, 1
// kopt:block 256, 1, 1
// kopt:shared 0

extern "C" __global__ void stencil_reference(float* __restrict__ x_new, const float* __restrict__ x_old) {
  const long long W = domain_width, H = domain_height;
  const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= W * H) return;
  const long long y = i / W, x = i % W;
  if (x == 0 || y == 0 || x == W - 1 || y == H - 1) return;
  const double s = (double)x_old[i] + (double)x_old[i - 1] + (double)x_old[i + 1] + (double)x_old[i + W] +
                   (double)x_old[i - W];
  x_new[i] = (float)(s / 5.0);
}

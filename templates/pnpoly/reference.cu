// Reference of the pnpoly workload (templates/pnpoly/pnpoly.json), written independently of the
// tuned kernel: bitmap[i] = 1 when point i (x = points[2i], y = points[2i + 1]) lies inside the
// polygon, by the crossing number (an edge counts when it straddles the point's y and the point
// lies left of it), 0 otherwise. One thread per point.
//
// The polygon is computed here, not read from the tuned kernel's __constant__ arrays: the 600
// vertices of make_inputs.py (which writes the same ones for d_vertices), on the unit circle at
// angles 2 pi (599 - j + frac(j * 0.6180339887498949)) / 600, descending, computed in double and
// rounded to float. Each edge's slope is computed in float as the tuned kernel does.
//
// kopt:entry pnpoly_reference
// kopt:grid ceil_div(n, 256), 1, 1
// kopt:block 256, 1, 1
// kopt:shared 0

#define REF_VERTICES 600

// Each double operation rounded on its own (the _rn intrinsics are never contracted into a fused
// multiply-add), as Python computes them in make_inputs.py.
__device__ float2 ref_vertex(int j) {
  const double golden = 0.6180339887498949;
  const double t = __dmul_rn((double)j, golden);
  const double u = __dsub_rn(t, floor(t));
  const double turns = __ddiv_rn(__dadd_rn(599.0 - (double)j, u), 600.0);
  const double angle = __dmul_rn(turns, 6.283185307179586);
  return make_float2((float)cos(angle), (float)sin(angle));
}

extern "C" __global__ void pnpoly_reference(int* __restrict__ bitmap, const float2* __restrict__ points, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const float2 p = points[i];
  int inside = 0;
  float2 vk = ref_vertex(REF_VERTICES - 1);
  for (int j = 0; j < REF_VERTICES; ++j) {
    const float2 vj = ref_vertex(j);
    const bool straddles = (vj.y > p.y) != (vk.y > p.y);
    if (straddles) {
      const float slope = (vk.x - vj.x) / (vk.y - vj.y);
      if (p.x < slope * (p.y - vj.y) + vj.x) inside = !inside;
    }
    vk = vj;
  }
  bitmap[i] = inside;
}

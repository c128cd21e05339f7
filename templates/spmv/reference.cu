// Reference of the spmv workload (templates/spmv/spmv.json), written independently of the tuned
// kernel: y[i] = sum over j in [rows[i], rows[i+1]) of values[j] * x[cols[j]], accumulated in
// double in index order and rounded once to float. One thread per row, 1-D grid.
//
// kopt:entry spmv_reference
// kopt:grid ceil_div(nrows, 128), 1, 1
// kopt:block 128, 1, 1
// kopt:shared 0

extern "C" __global__ void spmv_reference(float* __restrict__ y, const int* __restrict__ rows,
                                          const int* __restrict__ cols, const float* __restrict__ values,
                                          const float* __restrict__ x, int nrows) {
  const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= nrows) return;
  double s = 0.0;
  for (int j = rows[i]; j < rows[i + 1]; ++j) s += (double)values[j] * (double)x[cols[j]];
  y[i] = (float)s;
}

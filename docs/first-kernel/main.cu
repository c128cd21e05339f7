// app: y = x * gamma + beta on a ROWS x COLS matrix with the kernel
// KernelOptimizer generated (build/kernel_optimizer/affine/affine.cu),
// checked on the CPU. Usage: app [ROWS COLS]. Exit 77 without a GPU.
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>
#include <vector>

#include "affine_launch.h"

int main(int argc, char** argv) {
  const long long rows = argc == 3 ? std::atoll(argv[1]) : 4096, cols = argc == 3 ? std::atoll(argv[2]) : 4096;
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::printf("app: no CUDA device found; skipping\n");
    return 77;
  }
  std::vector<float> x(rows * cols), gamma(cols), beta(cols), y(rows * cols);
  for (long long i = 0; i < rows * cols; ++i) x[i] = static_cast<float>(i % 1000) / 1000.f;
  for (long long c = 0; c < cols; ++c) gamma[c] = 1.f + c % 7, beta[c] = -0.5f * (c % 3);
  float *dx, *dg, *db, *dy;
  cudaMalloc(&dx, x.size() * 4), cudaMalloc(&dg, cols * 4), cudaMalloc(&db, cols * 4), cudaMalloc(&dy, y.size() * 4);
  cudaMemcpy(dx, x.data(), x.size() * 4, cudaMemcpyHostToDevice);
  cudaMemcpy(dg, gamma.data(), cols * 4, cudaMemcpyHostToDevice);
  cudaMemcpy(db, beta.data(), cols * 4, cudaMemcpyHostToDevice);

  // The launch configuration for these sizes (and, after tuning on several
  // shapes, the variant tuned for them).
  const kopt_affine::LaunchConfig cfg = kopt_affine::launch_config(rows, cols);
  const auto kernel = kopt_affine::kernel_for(cfg);
  kernel<<<dim3(cfg.grid[0], cfg.grid[1], cfg.grid[2]), dim3(cfg.block[0], cfg.block[1], cfg.block[2]),
           cfg.shared_bytes>>>(dx, dg, db, dy, static_cast<int>(rows), static_cast<int>(cols));
  if (cudaDeviceSynchronize() != cudaSuccess) return 1;
  cudaMemcpy(y.data(), dy, y.size() * 4, cudaMemcpyDeviceToHost);
  long long bad = 0;
  for (long long i = 0; i < rows * cols; ++i) bad += y[i] != x[i] * gamma[i % cols] + beta[i % cols];
  std::printf("app: %lldx%lld with %s: %s\n", rows, cols, kopt_affine::kEntry, bad ? "WRONG" : "result checked");
  return bad ? 1 : 0;
}

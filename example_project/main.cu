// matmul: multiplies rectangular float32 matrices with the SGEMM kernel tuned
// by KernelOptimizer (build/kernel_optimizer/sgemm/sgemm.cu), checks the result
// against a float64 computation on the CPU, and prints the kernel's time.
//
// Usage: matmul [M N K]   (default 3000 1000 2000). Exit 77 without a GPU.
#include <cuda_runtime.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

#include "sgemm_launch.h"

#define CHECK(call)                                                                       \
  do {                                                                                    \
    cudaError_t e_ = (call);                                                              \
    if (e_ != cudaSuccess) {                                                              \
      std::fprintf(stderr, "%s failed: %s\n", #call, cudaGetErrorString(e_));             \
      std::exit(1);                                                                       \
    }                                                                                     \
  } while (0)

int main(int argc, char** argv) {
  long long M = 3000, N = 1000, K = 2000;
  if (argc == 4) {
    M = std::atoll(argv[1]);
    N = std::atoll(argv[2]);
    K = std::atoll(argv[3]);
  }
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::printf("matmul: no CUDA device found; skipping\n");
    return 77;
  }

  std::mt19937 rng(42);
  std::uniform_real_distribution<float> dist(-1.f, 1.f);
  std::vector<float> A(M * K), B(K * N), C(M * N);
  for (auto& x : A) x = dist(rng);
  for (auto& x : B) x = dist(rng);

  float *dA, *dB, *dC;
  CHECK(cudaMalloc(&dA, A.size() * sizeof(float)));
  CHECK(cudaMalloc(&dB, B.size() * sizeof(float)));
  CHECK(cudaMalloc(&dC, C.size() * sizeof(float)));
  CHECK(cudaMemcpy(dA, A.data(), A.size() * sizeof(float), cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(dB, B.data(), B.size() * sizeof(float), cudaMemcpyHostToDevice));

  // Launch configuration and kernel from the generated header: with
  // shape-specialised variants, launch_config() picks the variant tuned on the
  // nearest tuned shape and kernel_for() gives its kernel.
  const kopt_sgemm::LaunchConfig cfg = kopt_sgemm::launch_config(M, N, K);
  const auto kernel = kopt_sgemm::kernel_for(cfg);
  if (cfg.shared_bytes > 48 * 1024)
    CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                               static_cast<int>(cfg.shared_bytes)));
  const dim3 grid(cfg.grid[0], cfg.grid[1], cfg.grid[2]), block(cfg.block[0], cfg.block[1], cfg.block[2]);
  auto launch = [&] {
    kernel<<<grid, block, cfg.shared_bytes>>>(dA, dB, dC, static_cast<int>(M), static_cast<int>(N),
                                              static_cast<int>(K));
  };
  launch();
  CHECK(cudaGetLastError());
  CHECK(cudaDeviceSynchronize());

  cudaEvent_t start, stop;
  CHECK(cudaEventCreate(&start));
  CHECK(cudaEventCreate(&stop));
  const int reps = 20;
  CHECK(cudaEventRecord(start));
  for (int i = 0; i < reps; ++i) launch();
  CHECK(cudaEventRecord(stop));
  CHECK(cudaEventSynchronize(stop));
  float ms = 0;
  CHECK(cudaEventElapsedTime(&ms, start, stop));
  ms /= reps;
  CHECK(cudaMemcpy(C.data(), dC, C.size() * sizeof(float), cudaMemcpyDeviceToHost));

  // Check 4096 random elements against float64 with the K-aware FP32 bound.
  int bad = 0;
  std::uniform_int_distribution<long long> pick_m(0, M - 1), pick_n(0, N - 1);
  for (int s = 0; s < 4096; ++s) {
    const long long i = pick_m(rng), j = pick_n(rng);
    double ref = 0, sumsq = 0;
    for (long long k = 0; k < K; ++k) {
      const double p = static_cast<double>(A[i * K + k]) * B[k * N + j];
      ref += p;
      sumsq += p * p;
    }
    const double allowed = 8 * std::sqrt(static_cast<double>(K)) * std::ldexp(1.0, -24) * std::sqrt(sumsq) +
                           std::ldexp(1.0, -24) * std::fabs(ref) + 1e-30;
    if (!(std::fabs(C[i * N + j] - ref) <= allowed)) {
      if (bad++ < 5)
        std::fprintf(stderr, "C[%lld,%lld] = %.9g, expected %.9g\n", i, j, C[i * N + j], ref);
    }
  }
  std::printf("matmul %lldx%lldx%lld with %s (variant %d of %d): %.4f ms, %.2f TFLOP/s, %s\n", M, N, K,
              kopt_sgemm::kEntry, cfg.variant, kopt_sgemm::kVariants, ms, 2.0 * M * N * K / (ms * 1e-3) / 1e12,
              bad ? "WRONG" : "result checked");
  cudaFree(dA);
  cudaFree(dB);
  cudaFree(dC);
  return bad ? 1 : 0;
}

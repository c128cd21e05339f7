// tf32_peak: the tensor-core and FP32 throughput ceilings one card reaches with each instruction,
// measured with no memory traffic (registers and a zeroed shared-memory tile only):
//   ffma        FP32 FMA on the SIMT cores (8 independent chains per thread)
//   mma.sync    mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32, the instruction of
//               templates/sgemm/sgemm_tf32.cu (8 independent accumulators per warp)
//   wgmma       wgmma.mma_async.sync.aligned.m64n128k8.f32.tf32.tf32 (sm_90a only: the Hopper
//               warpgroup instruction, both operands from shared memory, one accumulator of 64x128
//               per warpgroup, 2 warpgroups per block)
// For each: TFLOP/s (2 per multiply-add) over the whole grid (4 blocks per SM), best of 5 timed
// launches, and the split-TF32 ceiling it implies (a third of the TF32 rate: three products per
// FLOP). The values computed are meaningless (zeros); only the rate matters.
//
//   nvcc -O3 -arch=sm_90a -o tf32_peak bench/tf32_peak.cu && ./tf32_peak
//   (-arch=sm_80 or sm_90 builds without the wgmma test)
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

[[noreturn]] void cuda_failed(const char* call, const char*, int, cudaError_t e) {
  std::fprintf(stderr, "tf32_peak: %s failed: %s\n", call, cudaGetErrorString(e));
  std::exit(1);
}
#define CUDA_CHECK(call) BENCH_CHECK(cudaError_t, cudaSuccess, call, cuda_failed)
#include "bench_util.cuh"

constexpr int kIters = 4096;

__global__ void ffma_peak(float* out, float seed) {
  float x[8];
#pragma unroll
  for (int i = 0; i < 8; ++i) x[i] = seed + i;
  for (int it = 0; it < kIters; ++it)
#pragma unroll
    for (int u = 0; u < 8; ++u)
#pragma unroll
      for (int i = 0; i < 8; ++i) x[i] = fmaf(x[i], 0.999f, 0.001f);
  float s = 0;
#pragma unroll
  for (int i = 0; i < 8; ++i) s += x[i];
  if (s == 12345.f) out[threadIdx.x] = s;  // never true: keeps the work
}

__global__ void mma_sync_peak(float* out, unsigned seed) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  float c[8][4] = {};
  const unsigned a0 = seed, a1 = seed + 1, a2 = seed + 2, a3 = seed + 3, b0 = seed + 4, b1 = seed + 5;
  for (int it = 0; it < kIters; ++it)
#pragma unroll
    for (int j = 0; j < 8; ++j)
      asm volatile(
          "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
          "{%0, %1, %2, %3};\n"
          : "+f"(c[j][0]), "+f"(c[j][1]), "+f"(c[j][2]), "+f"(c[j][3])
          : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
  float s = 0;
#pragma unroll
  for (int j = 0; j < 8; ++j) s += c[j][0] + c[j][1] + c[j][2] + c[j][3];
  if (s == 12345.f) out[threadIdx.x] = s;
#endif
}

#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
// A shared-memory matrix descriptor (PTX ISA, "Matrix Descriptor Format"): start address, leading
// and stride byte offsets (each >> 4), no swizzle.
__device__ __forceinline__ unsigned long long smem_desc(const void* p, unsigned lbo, unsigned sbo) {
  const unsigned a = static_cast<unsigned>(__cvta_generic_to_shared(p));
  return static_cast<unsigned long long>((a >> 4) & 0x3FFF) | (static_cast<unsigned long long>((lbo >> 4) & 0x3FFF) << 16) |
         (static_cast<unsigned long long>((sbo >> 4) & 0x3FFF) << 32);
}
#endif

__global__ void wgmma_peak(float* out) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  __shared__ __align__(128) float tile[2][64 * 8 + 128 * 8];  // A 64x8 and B 128x8 per warpgroup
  for (int i = threadIdx.x; i < 2 * (64 * 8 + 128 * 8); i += blockDim.x) (&tile[0][0])[i] = 0.f;
  __syncthreads();
  const int wg = threadIdx.x / 128;
  const unsigned long long da = smem_desc(&tile[wg][0], 128, 256), db = smem_desc(&tile[wg][64 * 8], 128, 256);
  float d[64];
#pragma unroll
  for (int i = 0; i < 64; ++i) d[i] = 0.f;
  for (int it = 0; it < kIters / 4; ++it) {
    asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
#pragma unroll
    for (int u = 0; u < 8; ++u)
      asm volatile(
          "wgmma.mma_async.sync.aligned.m64n128k8.f32.tf32.tf32 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, %64, %65, 1, 1, 1;\n"
          : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
          : "l"(da), "l"(db));
    asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
    asm volatile("wgmma.wait_group.sync.aligned 1;\n" ::: "memory");
  }
  asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
  float s = 0;
#pragma unroll
  for (int i = 0; i < 64; ++i) s += d[i];
  if (s == 12345.f) out[threadIdx.x] = s;
#endif
}

template <class F>
float best_ms(F launch) {
  cudaEvent_t a, b;
  CUDA_CHECK(cudaEventCreate(&a));
  CUDA_CHECK(cudaEventCreate(&b));
  const std::vector<float> ms = bench::event_times(a, b, 5, launch, [] {});
  CUDA_CHECK(cudaGetLastError());
  return *std::min_element(ms.begin(), ms.end());
}

int main() {
  cudaDeviceProp p;
  CUDA_CHECK(cudaGetDeviceProperties(&p, 0));
  int clock_khz = 0;
  CUDA_CHECK(cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, 0));
  float* out = nullptr;
  CUDA_CHECK(cudaMalloc(&out, 1024 * sizeof(float)));
  const int blocks = 4 * p.multiProcessorCount;
  std::printf("tf32_peak on %s (sm_%d%d, %d SMs, max SM clock %.0f MHz), %d blocks, no memory traffic\n", p.name,
              p.major, p.minor, p.multiProcessorCount, clock_khz / 1e3, blocks);
  {
    const float ms = best_ms([&] { ffma_peak<<<blocks, 256>>>(out, 1.f); });
    const double flop = 2.0 * blocks * 256.0 * kIters * 64;
    std::printf("  ffma      %8.1f TFLOP/s FP32 (SIMT)\n", flop / ms / 1e9);
  }
  if (p.major >= 8) {
    const float ms = best_ms([&] { mma_sync_peak<<<blocks, 256>>>(out, 0x3f800000u); });
    const double flop = 2.0 * 16 * 8 * 8 * (blocks * 256.0 / 32) * kIters * 8;
    std::printf("  mma.sync  %8.1f TFLOP/s TF32 (m16n8k8)      -> split TF32 ceiling %6.1f TFLOP/s\n", flop / ms / 1e9,
                flop / ms / 1e9 / 3);
  }
#if defined(KOPT_TF32_PEAK_WGMMA)
  if (p.major == 9) {
    const float ms = best_ms([&] { wgmma_peak<<<blocks, 256>>>(out); });
    const double flop = 2.0 * 64 * 128 * 8 * (blocks * 2.0) * (kIters / 4) * 8;
    std::printf("  wgmma     %8.1f TFLOP/s TF32 (m64n128k8)    -> split TF32 ceiling %6.1f TFLOP/s\n", flop / ms / 1e9,
                flop / ms / 1e9 / 3);
  }
#endif
  std::printf("  (datasheet, H100 SXM and H200: dense TF32 494.7 TFLOP/s at 1830 MHz, FP32 66.9 at 1980 MHz)\n");
  CUDA_CHECK(cudaFree(out));
  return 0;
}

// sgemm_bench: cuBLAS FP32 SGEMM (TF32 off) vs the KernelOptimizer-tuned SGEMM kernel, side by
// side in one process, on the same device buffers, compiled by nvcc the way a user's build
// compiles the generated sgemm.cu (see bench/README.md for the method).
//
// Row-major C[M,N] = A[M,K] * B[K,N]. Contenders, timed interleaved round by round:
//   cublas       cublasSgemm with CUBLAS_PEDANTIC_MATH (FP32, no TF32). cuBLAS is column-major,
//                so the row-major product is computed as C^T = B^T A^T:
//                cublasSgemm(h, N, N, n, m, k, 1, B, n, A, k, 0, C, n).
//   single       kopt_sgemm::kernels[0] with launch_config_variant(0, M, N, K): the best single
//                configuration, the same for every shape.
//   specialised  kopt_sgemm::kernel_for(launch_config(M, N, K)): the variant the launch header
//                picks for this shape. When it is the same launch as `single` (kVariants == 1, or
//                the header picks variant 0) it is not timed twice: it is reported once.
//
//   variant v    (--all-variants, the default when the header has several variants) every
//                kernels[v] with launch_config_variant(v, M, N, K), each checked and timed, so that
//                the table shows how far the dispatched variant is from the fastest on each shape.
//
// Usage: sgemm_bench [--shape MxNxK]... [--shapes-file FILE] [--json FILE] [--label TEXT]
//                    [--warmup N] [--iters N] [--seed S] [--device D] [--no-default-shapes]
//                    [--spin-us U] [--all-variants | --no-all-variants]
// Exit: 0 all results checked, 1 a result failed its check (or a launch failed), 2 usage or
// setup error, 77 no CUDA device.
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "sgemm_launch.h"

// ---------------------------------------------------------------------------------------------
// Compatibility with launch headers written before shape specialisation (one kernel, no
// `variant`, no kernels[]): the names below are found by qualified lookup kopt_sgemm::NAME only
// when the header does not declare NAME itself (a using-directive is followed only when the
// namespace has no declaration of its own), so a header with the new API always wins.
namespace kopt_sgemm {
namespace bench_compat {
inline constexpr int kVariants = 1;
inline constexpr const char* kVariantLabels[] = {"single configuration"};
inline LaunchConfig launch_config_variant(int, long long M, long long N, long long K) {
  return launch_config(M, N, K);
}
inline constexpr std::decay_t<decltype(::kopt_sgemm::kernel)> kernels[1] = {::kopt_sgemm::kernel};
inline std::decay_t<decltype(::kopt_sgemm::kernel)> kernel_for(const LaunchConfig&) { return kernels[0]; }
}  // namespace bench_compat
using namespace bench_compat;
}  // namespace kopt_sgemm

namespace {

// LaunchConfig::variant where the header has it, else 0.
template <class C>
auto variant_of(const C& c, int) -> decltype(static_cast<int>(c.variant)) {
  return static_cast<int>(c.variant);
}
template <class C>
int variant_of(const C&, long) {
  return 0;
}
int variant_of(const kopt_sgemm::LaunchConfig& c) { return variant_of(c, 0); }

using KernelFn = std::decay_t<decltype(kopt_sgemm::kernels[0])>;
static_assert(std::is_same<KernelFn, void (*)(const float*, const float*, float*, int, int, int)>::value,
              "kopt_sgemm::kernels[] must hold kernels (const float* A, const float* B, float* C, int M, "
              "int N, int K)");
constexpr int kNumVariants = kopt_sgemm::kVariants;
static_assert(kNumVariants >= 1, "kopt_sgemm::kVariants must be at least 1");

#ifndef KOPT_BENCH_GENERATED_DIR
#define KOPT_BENCH_GENERATED_DIR "?"
#endif

[[noreturn]] void cuda_failed(const char* call, const char* file, int line, cudaError_t e) {
  std::fprintf(stderr, "sgemm_bench: %s failed at %s:%d: %s\n", call, file, line, cudaGetErrorString(e));
  std::exit(e == cudaErrorMemoryAllocation ? 2 : 1);
}
[[noreturn]] void cublas_failed(const char* call, const char* file, int line, cublasStatus_t s) {
  std::fprintf(stderr, "sgemm_bench: %s failed at %s:%d: %s\n", call, file, line, cublasGetStatusString(s));
  std::exit(1);
}
#define CUDA_CHECK(call) BENCH_CHECK(cudaError_t, cudaSuccess, call, cuda_failed)
#define CUBLAS_CHECK(call) BENCH_CHECK(cublasStatus_t, CUBLAS_STATUS_SUCCESS, call, cublas_failed)
#include "bench_util.cuh"

#include "precision.cuh"  // --precision: the FP64 oracle, cuBLAS FAST_TF32, the tensor-core ceilings

// The five rectangular performance cases of templates/sgemm/sgemm.json: the tuned-on shapes.
struct Shape {
  long long M, N, K;
};
const Shape kTunedShapes[] = {
    {4096, 2048, 1024}, {2048, 4096, 3072}, {8192, 1024, 4096}, {1024, 8192, 512}, {3000, 1000, 2000}};

bool is_tuned_shape(const Shape& s) {
  for (const Shape& t : kTunedShapes)
    if (t.M == s.M && t.N == s.N && t.K == s.K) return true;
  return false;
}

std::string shape_name(const Shape& s) {
  return std::to_string(s.M) + "x" + std::to_string(s.N) + "x" + std::to_string(s.K);
}

// Shape classes (issue 13's table), first match wins. Plain rules on M, N, K so that a shape in no
// list still has a class.
struct ShapeClass {
  const char* name;
  const char* rule;
};
const ShapeClass kClasses[] = {
    {"deep-K", "N <= 4 and K >= 100000 (512x1x500000, 1024x4x500000)"},
    {"small-M", "M <= 64 (35x700x2048, 35x1500x2560)"},
    {"skinny-N", "N <= 16 (7680x1x2560, 3072x4x1024, 6144x2x2048)"},
    {"mid", "min(M, N) <= 1024 (512x1500x2048, 1024x3000x2560, 5124x700x2048)"},
    {"large", "M > 1024 and N > 1024 (7680x1500x2560, 4096x2048x1024)"},
};
constexpr int kNumClasses = sizeof(kClasses) / sizeof(kClasses[0]);
int class_of(const Shape& s) {
  if (s.N <= 4 && s.K >= 100000) return 0;
  if (s.M <= 64) return 1;
  if (s.N <= 16) return 2;
  if (std::min(s.M, s.N) <= 1024) return 3;
  return 4;
}

// ---------------------------------------------------------------------------------------------
// Inputs: uniform in (-1, 1), never zero. splitmix64 -> 24 random bits r -> (2r + 1 - 2^24) / 2^24:
// an odd numerator, so never 0, and exactly representable in float.
struct SplitMix64 {
  uint64_t x;
  uint64_t next() {
    uint64_t z = (x += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  float uniform_nonzero() {
    const int64_t r = static_cast<int64_t>(next() >> 40);  // 24 bits
    return static_cast<float>(2 * r + 1 - (int64_t(1) << 24)) * (1.0f / 16777216.0f);
  }
};

// A single-thread kernel that spins for `ns` nanoseconds (globaltimer). Launched after the L2
// flush and before each start event, outside the timed region: it keeps the GPU busy while the
// host enqueues the start event and the launch, so the timed interval never contains the GPU
// waiting for the host.
__global__ void bench_spin(unsigned long long ns) {
  unsigned long long t0, t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
  do {
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  } while (t - t0 < ns);
}

// FP32 lanes (FFMA units) per SM by compute capability, from NVIDIA's architecture whitepapers:
// Volta/Turing (7.x) 64; A100 (8.0) 64; GA10x/Orin/Ada (8.6, 8.7, 8.9) 128; Hopper H100/H200 (9.0)
// 128 ("NVIDIA H100 Tensor Core GPU Architecture" whitepaper: 128 FP32 CUDA cores per SM);
// Blackwell (10.x, 12.x) 128.
int fp32_lanes_per_sm(int major, int minor, bool* known) {
  *known = true;
  if (major == 9 && minor == 0) return 128;
  if (major == 8 && minor == 0) return 64;
  if (major == 8) return 128;
  if (major == 7) return 64;
  if (major == 10 || major == 12) return 128;
  *known = false;
  return 128;
}

struct Stats {
  double median = 0, min = 0, p10 = 0, p90 = 0, max = 0;
  int n = 0;
};

Stats stats_of(std::vector<float> v) {
  Stats s;
  s.n = static_cast<int>(v.size());
  if (v.empty()) return s;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  s.median = (n % 2) ? v[n / 2] : 0.5 * (static_cast<double>(v[n / 2 - 1]) + v[n / 2]);
  s.min = v.front();
  s.max = v.back();
  s.p10 = v[static_cast<size_t>(std::floor(0.1 * (n - 1)))];
  s.p90 = v[static_cast<size_t>(std::ceil(0.9 * (n - 1)))];
  return s;
}

std::string json_str(const std::string& s) {
  std::string o = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') {
      o += '\\';
      o += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      o += buf;
    } else {
      o += c;
    }
  }
  return o + "\"";
}

std::string json_num(double x) {
  if (!std::isfinite(x)) return "null";
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.6g", x);
  return buf;
}

bool same_launch(const kopt_sgemm::LaunchConfig& a, const kopt_sgemm::LaunchConfig& b) {
  for (int i = 0; i < 3; ++i)
    if (a.grid[i] != b.grid[i] || a.block[i] != b.block[i]) return false;
  return a.shared_bytes == b.shared_bytes && variant_of(a) == variant_of(b);
}

// One tuned contender for one case.
struct Tuned {
  int variant = 0;
  KernelFn fn = nullptr;  // single: kernels[0]; specialised: kernel_for(cfg)
  kopt_sgemm::LaunchConfig cfg{};
  bool runnable = false;
  std::string problem;  // why it cannot be launched, or how its result failed
  // check against cuBLAS (all elements) and against FP64 (sample)
  double max_rel_vs_cublas = 0;     // max |t - c| / (||a_i|| ||b_j||)
  double worst_vs_cublas_bound = 0;  // max |t - c| / bound
  long long bad_vs_cublas = 0;
  double worst_vs_fp64_bound = 0;   // max |t - ref64| / bound64 over the sample
  long long bad_vs_fp64 = 0;
  bool guard_ok = true;
  bool ok = false;
  Stats time;
  double probe_ms = 0;   // --skip-slower: one launch after the checked one, timed
  bool skipped = false;  // --skip-slower: not timed (probe over the limit)
  bench_precision::ErrorStats err;  // --precision: against the FP64 oracle, every element
};

struct CaseResult {
  Shape shape{};
  bool tuned_on = false;
  bool spec_is_single = true;  // the specialised launch is the single one: timed once
  Stats cublas;
  double cublas_worst_vs_fp64_bound = 0;
  long long cublas_bad_vs_fp64 = 0;
  Tuned single, spec;
  std::vector<Tuned> var;  // --all-variants: variant v = var[v] (checked and timed), else empty
  int fastest = -1;        // --all-variants: the variant with the smallest median
  bool ok = false;
  // --precision: cuBLAS FAST_TF32's time, and both cuBLAS results against the FP64 oracle
  Stats cublas_tf32;
  bench_precision::ErrorStats err_cublas, err_cublas_tf32;
};

struct VariantInfo {
  cudaFuncAttributes attr{};
  size_t dyn_min = SIZE_MAX, dyn_max = 0;  // dynamic shared memory over the benchmarked shapes
  unsigned threads = 0;
  int blocks_per_sm = -1;  // occupancy at the first shape
  std::vector<std::string> chosen_for;  // shapes where launch_config() picks this variant
};

struct Options {
  std::vector<Shape> shapes;
  bool default_shapes = true;
  int all_variants = -1;  // -1: when the header has several variants; 0 no; 1 yes
  std::string json_file, label, shapes_file;
  int warmup = 10, iters = 100, device = 0;
  uint64_t seed = 20261130;
  double spin_us = 20;
  double skip_slower = 0;  // --skip-slower X: with --all-variants, leave out variants X times slower than cuBLAS
  bool precision = false;  // --precision: FP64 oracle on every element, cuBLAS FAST_TF32, tensor-core ceilings
};

[[noreturn]] void usage(const char* msg) {
  std::fprintf(stderr,
               "sgemm_bench: %s\n"
               "usage: sgemm_bench [--shape MxNxK]... [--shapes-file FILE] [--no-default-shapes] [--json FILE]\n"
               "                   [--label TEXT] [--warmup N (10)] [--iters N (100)] [--seed S] [--device D]\n"
               "                   [--spin-us U (20)] [--all-variants | --no-all-variants] [--skip-slower X]\n"
               "                   [--precision]\n"
               "  --shapes-file FILE: one shape per line, \"M N K\" (or MxNxK), '#' starts a comment;\n"
               "                      replaces the five default shapes (add --shape for more)\n",
               msg);
  std::exit(2);
}

Options parse(int argc, char** argv) {
  Options o;
  auto value = [&](int& i) -> std::string {
    if (i + 1 >= argc) usage((std::string(argv[i]) + " needs a value").c_str());
    return argv[++i];
  };
  auto in_range = [](long long m, long long n, long long k) {
    return m >= 1 && n >= 1 && k >= 1 && m <= 0x7fffffffLL && n <= 0x7fffffffLL && k <= 0x7fffffffLL;
  };
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--shape") {
      const std::string v = value(i);
      long long m = 0, n = 0, k = 0;
      char tail = 0;
      if (std::sscanf(v.c_str(), "%lldx%lldx%lld%c", &m, &n, &k, &tail) != 3 || !in_range(m, n, k))
        usage(("--shape " + v + ": expected MxNxK with 1 <= M, N, K < 2^31, e.g. 4096x4096x4096").c_str());
      o.shapes.push_back({m, n, k});
    } else if (a == "--shapes-file") {
      o.shapes_file = value(i);
      std::ifstream f(o.shapes_file);
      if (!f) usage(("--shapes-file " + o.shapes_file + ": cannot open the file").c_str());
      std::string line;
      int lineno = 0;
      while (std::getline(f, line)) {
        ++lineno;
        const size_t hash = line.find('#');
        if (hash != std::string::npos) line.erase(hash);
        for (char& ch : line)
          if (ch == 'x' || ch == 'X' || ch == ',' || ch == '\t' || ch == '\r') ch = ' ';
        std::istringstream ls(line);
        long long m = 0, n = 0, k = 0;
        std::string extra;
        if (!(ls >> m)) continue;  // blank or comment line
        if (!(ls >> n >> k) || (ls >> extra) || !in_range(m, n, k))
          usage(("--shapes-file " + o.shapes_file + ":" + std::to_string(lineno) +
                 ": expected \"M N K\" with 1 <= M, N, K < 2^31")
                    .c_str());
        o.shapes.push_back({m, n, k});
      }
      o.default_shapes = false;
    } else if (a == "--skip-slower") {
      o.skip_slower = std::atof(value(i).c_str());
      if (!(o.skip_slower > 0)) usage("--skip-slower must be > 0");
    } else if (a == "--all-variants") {
      o.all_variants = 1;
    } else if (a == "--no-all-variants") {
      o.all_variants = 0;
    } else if (a == "--precision") {
      o.precision = true;
    } else if (a == "--no-default-shapes") {
      o.default_shapes = false;
    } else if (a == "--json") {
      o.json_file = value(i);
    } else if (a == "--label") {
      o.label = value(i);
    } else if (a == "--warmup") {
      o.warmup = std::atoi(value(i).c_str());
      if (o.warmup < 0) usage("--warmup must be >= 0");
    } else if (a == "--iters") {
      o.iters = std::atoi(value(i).c_str());
      if (o.iters < 1) usage("--iters must be >= 1");
    } else if (a == "--seed") {
      o.seed = std::strtoull(value(i).c_str(), nullptr, 10);
    } else if (a == "--device") {
      o.device = std::atoi(value(i).c_str());
    } else if (a == "--spin-us") {
      o.spin_us = std::atof(value(i).c_str());
      if (!(o.spin_us >= 0)) usage("--spin-us must be >= 0");
    } else if (a == "-h" || a == "--help") {
      usage("help");
    } else {
      usage(("unknown argument '" + a + "'").c_str());
    }
  }
  std::vector<Shape> all;
  if (o.default_shapes) all.assign(std::begin(kTunedShapes), std::end(kTunedShapes));
  for (const Shape& s : o.shapes) {
    bool dup = false;
    for (const Shape& t : all) dup = dup || (t.M == s.M && t.N == s.N && t.K == s.K);
    if (!dup) all.push_back(s);
  }
  if (all.empty()) usage("no shapes (--no-default-shapes needs at least one --shape)");
  o.shapes = all;
  if (o.all_variants < 0) o.all_variants = kNumVariants > 1 ? 1 : 0;
  return o;
}

// ---------------------------------------------------------------------------------------------
struct Bench {
  Options opt;
  cudaDeviceProp prop{};
  int clock_khz = 0, l2_bytes = 0, lanes = 128;
  bool lanes_known = true;
  double peak_tflops = 0;
  cudaStream_t stream = nullptr;
  cublasHandle_t handle = nullptr;
  cublasHandle_t handle_tf32 = nullptr;  // --precision: CUBLAS_DEFAULT_MATH, for CUBLAS_COMPUTE_32F_FAST_TF32
  bench_precision::Oracle oracle;        // --precision: the current case's FP64 result
  double tf32_peak_tflops = 0;
  bool tf32_rate_known = true;
  void* flush = nullptr;
  size_t flush_bytes = 0;
  unsigned flush_count = 0;
  std::vector<cudaEvent_t> ev_start, ev_stop;  // [contender * iters + round]
  std::vector<VariantInfo> variants;

  // --- launches: the timed region holds exactly one of these -----------------------------------
  void launch_cublas(const float* A, const float* B, float* C, const Shape& s) {
    const float alpha = 1.0f, beta = 0.0f;
    const int m = static_cast<int>(s.M), n = static_cast<int>(s.N), k = static_cast<int>(s.K);
    CUBLAS_CHECK(cublasSgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, n, m, k, &alpha, B, n, A, k, &beta, C, n));
  }
  cudaError_t launch_tuned(const Tuned& t, const float* A, const float* B, float* C, const Shape& s) {
    int m = static_cast<int>(s.M), n = static_cast<int>(s.N), k = static_cast<int>(s.K);
    void* args[] = {&A, &B, &C, &m, &n, &k};
    const dim3 grid(t.cfg.grid[0], t.cfg.grid[1], t.cfg.grid[2]);
    const dim3 block(t.cfg.block[0], t.cfg.block[1], t.cfg.block[2]);
    return cudaLaunchKernel(reinterpret_cast<const void*>(t.fn), grid, block, args,
                            t.cfg.shared_bytes, stream);
  }
  // Outside the timed region: evict A, B, C from L2, then a short spin (see bench_spin).
  void before_launch() {
    // The byte value changes every time (as kopt's worker does), so no flush is a no-op rewrite.
    CUDA_CHECK(cudaMemsetAsync(flush, static_cast<int>(++flush_count & 0xFF), flush_bytes, stream));
    if (opt.spin_us > 0) {
      bench_spin<<<1, 1, 0, stream>>>(static_cast<unsigned long long>(opt.spin_us * 1000.0));
      CUDA_CHECK(cudaGetLastError());
    }
  }

  void setup() {
    CUDA_CHECK(cudaSetDevice(opt.device));
    CUDA_CHECK(cudaGetDeviceProperties(&prop, opt.device));
    CUDA_CHECK(cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, opt.device));
    CUDA_CHECK(cudaDeviceGetAttribute(&l2_bytes, cudaDevAttrL2CacheSize, opt.device));
    lanes = fp32_lanes_per_sm(prop.major, prop.minor, &lanes_known);
    peak_tflops = static_cast<double>(prop.multiProcessorCount) * lanes * 2.0 * clock_khz * 1e3 / 1e12;
    CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    CUBLAS_CHECK(cublasCreate(&handle));
    CUBLAS_CHECK(cublasSetStream(handle, stream));
    CUBLAS_CHECK(cublasSetMathMode(handle, CUBLAS_PEDANTIC_MATH));  // FP32 math, no TF32
    tf32_peak_tflops = static_cast<double>(prop.multiProcessorCount) *
                       bench_precision::tf32_flop_per_clock_per_sm(prop.major, prop.minor, &tf32_rate_known) *
                       clock_khz * 1e3 / 1e12;
    if (opt.precision) {
      CUBLAS_CHECK(cublasCreate(&handle_tf32));
      CUBLAS_CHECK(cublasSetStream(handle_tf32, stream));
      CUBLAS_CHECK(cublasSetMathMode(handle_tf32, CUBLAS_DEFAULT_MATH));
    }
    flush_bytes = std::max<size_t>(2 * static_cast<size_t>(l2_bytes), 8u << 20);
    CUDA_CHECK(cudaMalloc(&flush, flush_bytes));
    ev_start.resize(static_cast<size_t>(kNumVariants + 4) * static_cast<size_t>(opt.iters));
    ev_stop.resize(ev_start.size());
    for (size_t i = 0; i < ev_start.size(); ++i) {
      CUDA_CHECK(cudaEventCreate(&ev_start[i]));
      CUDA_CHECK(cudaEventCreate(&ev_stop[i]));
    }
    if (kopt_sgemm::kernel != kopt_sgemm::kernels[0])
      std::fprintf(stderr, "sgemm_bench: warning: kopt_sgemm::kernel is not kernels[0]; the bench uses kernels[0]\n");
    variants.resize(kNumVariants);
    for (int v = 0; v < kNumVariants; ++v)
      CUDA_CHECK(cudaFuncGetAttributes(&variants[v].attr, reinterpret_cast<const void*>(kopt_sgemm::kernels[v])));
  }

  // Checks that a variant's configuration can be launched on this device; raises the dynamic
  // shared memory limit above 48 KB where it needs it.
  bool prepare(Tuned& t, const Shape& s) {
    if (t.variant < 0 || t.variant >= kNumVariants) {
      t.problem = "launch_config chose variant " + std::to_string(t.variant) + ", not in [0, kVariants)";
      return false;
    }
    if (t.fn != kopt_sgemm::kernels[t.variant]) {
      t.problem = "kernel_for(cfg) is not kernels[cfg.variant]";
      return false;
    }
    VariantInfo& vi = variants[t.variant];
    const unsigned threads = t.cfg.block[0] * t.cfg.block[1] * t.cfg.block[2];
    const cudaFuncAttributes& at = vi.attr;
    if (threads == 0 || static_cast<int>(threads) > at.maxThreadsPerBlock) {
      t.problem = "block of " + std::to_string(threads) + " threads; the kernel allows at most " +
                  std::to_string(at.maxThreadsPerBlock);
      return false;
    }
    for (int i = 0; i < 3; ++i)
      if (t.cfg.grid[i] == 0 || t.cfg.grid[i] > static_cast<unsigned>(prop.maxGridSize[i])) {
        t.problem = "grid dimension " + std::to_string(i) + " = " + std::to_string(t.cfg.grid[i]) +
                    " out of range for " + shape_name(s);
        return false;
      }
    if (t.cfg.shared_bytes + at.sharedSizeBytes > prop.sharedMemPerBlockOptin) {
      t.problem = std::to_string(t.cfg.shared_bytes) + " B dynamic + " + std::to_string(at.sharedSizeBytes) +
                  " B static shared memory exceeds the device's " + std::to_string(prop.sharedMemPerBlockOptin) +
                  " B per block";
      return false;
    }
    if (t.cfg.shared_bytes > 48 * 1024 && static_cast<int>(t.cfg.shared_bytes) > at.maxDynamicSharedSizeBytes) {
      CUDA_CHECK(cudaFuncSetAttribute(reinterpret_cast<const void*>(kopt_sgemm::kernels[t.variant]),
                                      cudaFuncAttributeMaxDynamicSharedMemorySize,
                                      static_cast<int>(t.cfg.shared_bytes)));
      CUDA_CHECK(cudaFuncGetAttributes(&vi.attr, reinterpret_cast<const void*>(kopt_sgemm::kernels[t.variant])));
    }
    return true;
  }

  // Every variant's launch over the benchmarked shapes (whether launch_config picks it or not):
  // dynamic shared memory range, block size and occupancy at the first shape.
  void describe_variants() {
    for (int v = 0; v < kNumVariants; ++v) {
      VariantInfo& vi = variants[v];
      const void* fn = reinterpret_cast<const void*>(kopt_sgemm::kernels[v]);
      for (const Shape& s : opt.shapes) {
        const kopt_sgemm::LaunchConfig c = kopt_sgemm::launch_config_variant(v, s.M, s.N, s.K);
        vi.dyn_min = std::min(vi.dyn_min, c.shared_bytes);
        vi.dyn_max = std::max(vi.dyn_max, c.shared_bytes);
        if (!vi.threads) vi.threads = c.block[0] * c.block[1] * c.block[2];
      }
      if (vi.dyn_max > 48 * 1024 && vi.dyn_max + vi.attr.sharedSizeBytes <= prop.sharedMemPerBlockOptin &&
          static_cast<int>(vi.dyn_max) > vi.attr.maxDynamicSharedSizeBytes) {
        CUDA_CHECK(cudaFuncSetAttribute(fn, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(vi.dyn_max)));
        CUDA_CHECK(cudaFuncGetAttributes(&vi.attr, fn));
      }
      const Shape& s0 = opt.shapes.front();
      const kopt_sgemm::LaunchConfig c0 = kopt_sgemm::launch_config_variant(v, s0.M, s0.N, s0.K);
      int b = 0;
      if (vi.threads > 0 && static_cast<int>(vi.threads) <= vi.attr.maxThreadsPerBlock &&
          cudaOccupancyMaxActiveBlocksPerMultiprocessor(&b, fn, static_cast<int>(vi.threads), c0.shared_bytes) ==
              cudaSuccess)
        vi.blocks_per_sm = b;
      else
        (void)cudaGetLastError();
    }
  }

  // --- one case ---------------------------------------------------------------------------------
  CaseResult run_case(const Shape& s, size_t case_index) {
    CaseResult r;
    r.shape = s;
    r.tuned_on = is_tuned_shape(s);
    const size_t M = s.M, N = s.N, K = s.K;

    // Fresh random inputs for this case (seeded: reproducible, different per case).
    SplitMix64 rng{opt.seed * 0x100000001B3ull + 0x9E3779B97F4A7C15ull * (case_index + 1)};
    std::vector<float> hA(M * K), hB(K * N);
    for (float& x : hA) x = rng.uniform_nonzero();
    for (float& x : hB) x = rng.uniform_nonzero();

    const size_t guard = 1 << 16;  // floats past C, checked for stray writes
    float *dA = nullptr, *dB = nullptr, *dC = nullptr, *dRef = nullptr;
    CUDA_CHECK(cudaMalloc(&dA, M * K * sizeof(float)));
    CUDA_CHECK(cudaMalloc(&dB, K * N * sizeof(float)));
    CUDA_CHECK(cudaMalloc(&dC, (M * N + guard) * sizeof(float)));
    CUDA_CHECK(cudaMalloc(&dRef, M * N * sizeof(float)));
    // Every copy and memset goes through `stream` (non-blocking: the legacy default stream does
    // not order against it) and is waited for before the host or the next step relies on it.
    CUDA_CHECK(cudaMemcpyAsync(dA, hA.data(), M * K * sizeof(float), cudaMemcpyHostToDevice, stream));
    CUDA_CHECK(cudaMemcpyAsync(dB, hB.data(), K * N * sizeof(float), cudaMemcpyHostToDevice, stream));
    CUDA_CHECK(cudaStreamSynchronize(stream));
    if (opt.precision) oracle.compute(dA, dB, s.M, s.N, s.K, stream);

    // Launch configurations: variant 0 for `single`, the header's choice for `spec`.
    r.single.variant = 0;
    r.single.cfg = kopt_sgemm::launch_config_variant(0, s.M, s.N, s.K);
    r.spec.cfg = kopt_sgemm::launch_config(s.M, s.N, s.K);
    r.spec.variant = variant_of(r.spec.cfg);
    r.single.fn = kopt_sgemm::kernels[0];
    if (r.spec.variant >= 0 && r.spec.variant < kNumVariants) r.spec.fn = kopt_sgemm::kernel_for(r.spec.cfg);
    r.spec_is_single = same_launch(r.single.cfg, r.spec.cfg);
    r.single.runnable = prepare(r.single, s);
    r.spec.runnable = r.spec_is_single ? r.single.runnable : prepare(r.spec, s);
    if (r.spec_is_single && !r.single.runnable) r.spec.problem = r.single.problem;
    if (opt.all_variants) {
      r.var.resize(kNumVariants);
      for (int v = 0; v < kNumVariants; ++v) {
        Tuned& t = r.var[v];
        t.variant = v;
        t.cfg = kopt_sgemm::launch_config_variant(v, s.M, s.N, s.K);
        t.fn = kopt_sgemm::kernels[v];
        t.runnable = prepare(t, s);
      }
    }

    // ---- correctness: cuBLAS into dRef, each tuned launch into dC (NaN-filled first) ----------
    std::vector<float> hRef(M * N), hC(M * N + guard);
    CUDA_CHECK(cudaMemsetAsync(dRef, 0xFF, M * N * sizeof(float), stream));  // NaN everywhere
    launch_cublas(dA, dB, dRef, s);
    CUDA_CHECK(cudaMemcpyAsync(hRef.data(), dRef, M * N * sizeof(float), cudaMemcpyDeviceToHost, stream));
    CUDA_CHECK(cudaStreamSynchronize(stream));
    if (opt.precision) {
      r.err_cublas = oracle.of(dRef);
      CUDA_CHECK(cudaMemsetAsync(dC, 0xFF, M * N * sizeof(float), stream));
      bench_precision::gemm_fast_tf32(handle_tf32, dA, dB, dC, s.M, s.N, s.K);
      r.err_cublas_tf32 = oracle.of(dC);
    }
    // --skip-slower: one timed launch of each contender after its first (which may load modules).
    auto probe = [&](auto&& launch_once) {
      before_launch();
      CUDA_CHECK(cudaEventRecord(ev_start[0], stream));
      launch_once();
      CUDA_CHECK(cudaEventRecord(ev_stop[0], stream));
      CUDA_CHECK(cudaStreamSynchronize(stream));
      float ms = 0;
      CUDA_CHECK(cudaEventElapsedTime(&ms, ev_start[0], ev_stop[0]));
      return static_cast<double>(ms);
    };
    double cublas_probe_ms = 0;
    if (opt.skip_slower > 0) cublas_probe_ms = probe([&] { launch_cublas(dA, dB, dRef, s); });

    std::vector<double> row_norm(M, 0.0), col_norm(N, 0.0);
    for (size_t i = 0; i < M; ++i) {
      double acc = 0;
      for (size_t k = 0; k < K; ++k) acc += static_cast<double>(hA[i * K + k]) * hA[i * K + k];
      row_norm[i] = std::sqrt(acc);
    }
    for (size_t k = 0; k < K; ++k)
      for (size_t j = 0; j < N; ++j) col_norm[j] += static_cast<double>(hB[k * N + j]) * hB[k * N + j];
    for (double& x : col_norm) x = std::sqrt(x);

    // FP64 reference on a sample: the four corners plus random elements.
    const double u = std::ldexp(1.0, -24);
    struct Sample {
      size_t i, j;
      double ref, bound;
    };
    std::vector<Sample> sample;
    {
      SplitMix64 pick{rng.next()};
      std::vector<std::pair<size_t, size_t>> where = {{0, 0}, {0, N - 1}, {M - 1, 0}, {M - 1, N - 1}};
      for (int n = 0; n < 1020; ++n) where.push_back({pick.next() % M, pick.next() % N});
      for (auto [i, j] : where) {
        double ref = 0, sumsq = 0;
        for (size_t k = 0; k < K; ++k) {
          const double p = static_cast<double>(hA[i * K + k]) * hB[k * N + j];
          ref += p;
          sumsq += p * p;
        }
        // The project's GEMM tolerance (spec "tolerance": gemm, factor 8):
        // 8 * sqrt(K) * 2^-24 * sqrt(sum_k (a_ik b_kj)^2) + 2^-24 * |ref|. TF32 products fail it.
        sample.push_back({i, j, ref, 8.0 * std::sqrt(static_cast<double>(K)) * u * std::sqrt(sumsq) +
                                         u * std::fabs(ref) + 1e-30});
      }
    }
    for (const Sample& p : sample) {
      const double e = std::fabs(hRef[p.i * N + p.j] - p.ref) / p.bound;
      if (!(e <= 1.0)) ++r.cublas_bad_vs_fp64;
      r.cublas_worst_vs_fp64_bound = std::max(r.cublas_worst_vs_fp64_bound, std::isfinite(e) ? e : INFINITY);
    }

    auto check = [&](Tuned& t) {
      if (!t.runnable) return;
      CUDA_CHECK(cudaMemsetAsync(dC, 0xFF, (M * N + guard) * sizeof(float), stream));  // NaN everywhere
      cudaError_t e = launch_tuned(t, dA, dB, dC, s);
      if (e == cudaSuccess) e = cudaStreamSynchronize(stream);
      if (e != cudaSuccess) {
        std::fprintf(stderr, "sgemm_bench: variant %d on %s: %s\n", t.variant, shape_name(s).c_str(),
                     cudaGetErrorString(e));
        std::exit(1);  // a launch error or a fault poisons the context: nothing later is trustworthy
      }
      if (opt.precision) t.err = oracle.of(dC);
      CUDA_CHECK(cudaMemcpyAsync(hC.data(), dC, (M * N + guard) * sizeof(float), cudaMemcpyDeviceToHost, stream));
      CUDA_CHECK(cudaStreamSynchronize(stream));
      for (size_t g = M * N; g < M * N + guard; ++g) {
        uint32_t bits;
        std::memcpy(&bits, &hC[g], 4);
        if (bits != 0xFFFFFFFFu) {
          t.guard_ok = false;
          break;
        }
      }
      // Against cuBLAS, every element: |t - c| <= 8 sqrt(K) 2^-24 ||a_i|| ||b_j|| (both results are
      // FP32 sums of K products; the bound is loose but catches wrong or unwritten elements).
      const double c8 = 8.0 * std::sqrt(static_cast<double>(K)) * u;
      for (size_t i = 0; i < M; ++i)
        for (size_t j = 0; j < N; ++j) {
          const double scale = row_norm[i] * col_norm[j] + 1e-30;
          const double d = std::fabs(static_cast<double>(hC[i * N + j]) - hRef[i * N + j]);
          const double rel = std::isfinite(d) ? d / scale : INFINITY;
          const double ratio = rel / c8;
          if (!(ratio <= 1.0)) {
            if (t.bad_vs_cublas < 3)
              std::fprintf(stderr, "sgemm_bench: variant %d %s: C[%zu,%zu] = %.9g, cuBLAS %.9g\n", t.variant,
                           shape_name(s).c_str(), i, j, hC[i * N + j], hRef[i * N + j]);
            ++t.bad_vs_cublas;
          }
          t.max_rel_vs_cublas = std::max(t.max_rel_vs_cublas, rel);
          t.worst_vs_cublas_bound = std::max(t.worst_vs_cublas_bound, ratio);
        }
      for (const Sample& p : sample) {
        const double e2 = std::fabs(hC[p.i * N + p.j] - p.ref) / p.bound;
        if (!(e2 <= 1.0)) ++t.bad_vs_fp64;
        t.worst_vs_fp64_bound = std::max(t.worst_vs_fp64_bound, std::isfinite(e2) ? e2 : INFINITY);
      }
      t.ok = t.guard_ok && t.bad_vs_cublas == 0 && t.bad_vs_fp64 == 0;
      if (!t.ok && t.problem.empty())
        t.problem = !t.guard_ok ? "wrote past the end of C" : "result outside the error bound";
      if (opt.skip_slower > 0 && opt.all_variants)
        t.probe_ms = probe([&] {
          const cudaError_t e2 = launch_tuned(t, dA, dB, dC, s);
          if (e2 != cudaSuccess) {
            std::fprintf(stderr, "sgemm_bench: launch failed: %s\n", cudaGetErrorString(e2));
            std::exit(1);
          }
        });
    };
    check(r.single);
    for (Tuned& t : r.var) check(t);
    if (r.spec_is_single) {
      Tuned keep = r.spec;
      r.spec = r.single;
      r.spec.cfg = keep.cfg;
    } else {
      check(r.spec);
    }

    // ---- timing: interleaved rounds on the same buffers (output: dC) -----------------------------
    // Contender order rotates every round so that none is always first after the flush/spin.
    // Contender c: 0 cuBLAS, else slot[c] (single and spec; with --all-variants every variant, and
    // spec only if its launch is none of theirs).
    std::vector<Tuned*> slot = {nullptr};
    std::vector<int> contenders = {0};
    auto add = [&](Tuned* t) {
      if (!t->runnable) return;
      contenders.push_back(static_cast<int>(slot.size()));
      slot.push_back(t);
    };
    int spec_var = -1;  // --all-variants: the variant whose launch is the specialised one
    if (opt.all_variants) {
      for (Tuned& t : r.var) {
        // Never left out: variant 0 (single) and the dispatched one.
        t.skipped = opt.skip_slower > 0 && t.runnable && t.variant != 0 && t.variant != r.spec.variant &&
                    t.probe_ms > opt.skip_slower * cublas_probe_ms;
        if (!t.skipped) add(&t);
      }
      for (const Tuned& t : r.var)
        if (t.variant == r.spec.variant && same_launch(t.cfg, r.spec.cfg)) spec_var = t.variant;
      if (spec_var < 0 && !r.spec_is_single) add(&r.spec);
    } else {
      add(&r.single);
      if (!r.spec_is_single) add(&r.spec);
    }
    int tf32_c = -1;  // --precision: cuBLAS FAST_TF32's contender number
    if (opt.precision) {
      tf32_c = static_cast<int>(slot.size());
      contenders.push_back(tf32_c);
      slot.push_back(nullptr);
    }
    auto launch = [&](int c) {
      if (c == 0) {
        launch_cublas(dA, dB, dC, s);
      } else if (c == tf32_c) {
        bench_precision::gemm_fast_tf32(handle_tf32, dA, dB, dC, s.M, s.N, s.K);
      } else {
        const cudaError_t e = launch_tuned(*slot[c], dA, dB, dC, s);
        if (e != cudaSuccess) {
          std::fprintf(stderr, "sgemm_bench: launch failed: %s\n", cudaGetErrorString(e));
          std::exit(1);
        }
      }
    };
    const size_t nc = contenders.size();
    for (int w = 0; w < opt.warmup; ++w)
      for (size_t q = 0; q < nc; ++q) {
        before_launch();
        launch(contenders[(q + w) % nc]);
      }
    for (int it = 0; it < opt.iters; ++it)
      for (size_t q = 0; q < nc; ++q) {
        const int c = contenders[(q + it) % nc];
        before_launch();
        CUDA_CHECK(cudaEventRecord(ev_start[c * opt.iters + it], stream));
        launch(c);
        CUDA_CHECK(cudaEventRecord(ev_stop[c * opt.iters + it], stream));
      }
    CUDA_CHECK(cudaStreamSynchronize(stream));
    CUDA_CHECK(cudaGetLastError());
    for (int c : contenders) {
      std::vector<float> ms(opt.iters);
      for (int it = 0; it < opt.iters; ++it)
        CUDA_CHECK(cudaEventElapsedTime(&ms[it], ev_start[c * opt.iters + it], ev_stop[c * opt.iters + it]));
      const Stats st = stats_of(ms);
      if (c == 0)
        r.cublas = st;
      else if (c == tf32_c)
        r.cublas_tf32 = st;
      else
        slot[c]->time = st;
    }
    if (opt.all_variants) {
      if (!r.var.empty()) r.single.time = r.var[0].time;
      if (spec_var >= 0) r.spec.time = r.var[spec_var].time;
      for (const Tuned& t : r.var)
        if (t.runnable && t.time.n > 0 && (r.fastest < 0 || t.time.median < r.var[r.fastest].time.median))
          r.fastest = t.variant;
    }
    if (r.spec_is_single) r.spec.time = r.single.time;

    CUDA_CHECK(cudaFree(dA));
    CUDA_CHECK(cudaFree(dB));
    CUDA_CHECK(cudaFree(dC));
    CUDA_CHECK(cudaFree(dRef));
    r.ok = r.single.ok && r.spec.ok && r.cublas_bad_vs_fp64 == 0;
    for (const Tuned& t : r.var) r.ok = r.ok && (t.ok || !t.runnable);  // a variant that cannot launch here is shown, not failed
    return r;
  }
};

double tflops(const Shape& s, double ms) { return ms > 0 ? 2.0 * s.M * s.N * s.K / (ms * 1e-3) / 1e12 : 0; }

struct Geo {
  std::string name;
  int n = 0;
  double cublas = 0, single = 0, spec = 0, single_tflops = 0, spec_tflops = 0, cublas_tflops = 0;
};

Geo geomean(const std::string& name, const std::vector<CaseResult>& rs, int which /*0 all,1 tuned,2 untuned*/) {
  Geo g;
  g.name = name;
  double lc = 0, ls = 0, lp = 0, lts = 0, ltp = 0, ltc = 0;
  for (const CaseResult& r : rs) {
    if ((which == 1 && !r.tuned_on) || (which == 2 && r.tuned_on)) continue;
    if (r.cublas.median <= 0 || r.single.time.median <= 0 || r.spec.time.median <= 0) continue;
    ++g.n;
    lc += std::log(r.cublas.median);
    ls += std::log(r.single.time.median);
    lp += std::log(r.spec.time.median);
    lts += std::log(tflops(r.shape, r.single.time.median));
    ltp += std::log(tflops(r.shape, r.spec.time.median));
    ltc += std::log(tflops(r.shape, r.cublas.median));
  }
  if (g.n) {
    g.cublas = std::exp(lc / g.n);
    g.single = std::exp(ls / g.n);
    g.spec = std::exp(lp / g.n);
    g.single_tflops = std::exp(lts / g.n);
    g.spec_tflops = std::exp(ltp / g.n);
    g.cublas_tflops = std::exp(ltc / g.n);
  }
  return g;
}

std::string stats_json(const Stats& s) {
  return "{\"median_ms\": " + json_num(s.median) + ", \"min_ms\": " + json_num(s.min) + ", \"p10_ms\": " +
         json_num(s.p10) + ", \"p90_ms\": " + json_num(s.p90) + ", \"max_ms\": " + json_num(s.max) +
         ", \"samples\": " + std::to_string(s.n) + "}";
}

}  // namespace

int main(int argc, char** argv) {
  Bench b;
  b.opt = parse(argc, argv);
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::printf("sgemm_bench: no CUDA device found; nothing measured\n");
    return 77;
  }
  if (b.opt.device < 0 || b.opt.device >= devices) usage("--device out of range");
  b.setup();
  const bool multi = kNumVariants > 1;
  const char* tf32_env = std::getenv("NVIDIA_TF32_OVERRIDE");
  int cublas_version = 0;
  cublasGetVersion(b.handle, &cublas_version);

  std::printf("sgemm_bench%s%s\n", b.opt.label.empty() ? "" : ": ", b.opt.label.c_str());
  std::printf("device        %s (cc %d.%d), %d SMs, max clock %.0f MHz, L2 %.1f MB\n", b.prop.name, b.prop.major,
              b.prop.minor, b.prop.multiProcessorCount, b.clock_khz / 1e3, b.l2_bytes / 1048576.0);
  std::printf("FP32 peak     %.2f TFLOP/s = %d SMs x %d FP32 lanes/SM%s x 2 FLOP x %.0f MHz (max clock)\n",
              b.peak_tflops, b.prop.multiProcessorCount, b.lanes,
              b.lanes_known ? "" : " (ASSUMED: compute capability not in the table)", b.clock_khz / 1e3);
  std::printf("cuBLAS        %d, CUBLAS_PEDANTIC_MATH (FP32, TF32 off)%s%s\n", cublas_version,
              tf32_env ? ", NVIDIA_TF32_OVERRIDE=" : "", tf32_env ? tf32_env : "");
  std::printf("kernel        %s (%d variant%s), from %s\n", kopt_sgemm::kEntry, kNumVariants, multi ? "s" : "",
              KOPT_BENCH_GENERATED_DIR);
  std::printf("method        %d warm-up + %d measured launches per contender, interleaved; CUDA events per launch;\n"
              "              L2 flushed (%.0f MB memset) + %.0f us GPU spin before each launch, outside the timing;"
              " median\n\n",
              b.opt.warmup, b.opt.iters, b.flush_bytes / 1048576.0, b.opt.spin_us);

  b.describe_variants();
  std::vector<CaseResult> results;
  for (size_t i = 0; i < b.opt.shapes.size(); ++i) {
    std::fprintf(stderr, "sgemm_bench: %s ...\n", shape_name(b.opt.shapes[i]).c_str());
    results.push_back(b.run_case(b.opt.shapes[i], i));
    const CaseResult& r = results.back();
    if (r.spec.variant >= 0 && r.spec.variant < kNumVariants)
      b.variants[r.spec.variant].chosen_for.push_back(shape_name(r.shape));
  }

  // ---- variants ------------------------------------------------------------------------------
  std::printf("variants (cudaFuncGetAttributes; dynamic shared memory from the launch configuration)\n");
  std::printf("  %-3s %-5s %-10s %-12s %-13s %-11s %-9s %-7s %-7s %s\n", "v", "regs", "static B", "dynamic B",
              "local(spill)B", "max thr/blk", "block thr", "blk/SM", "chosen", "label");
  for (int v = 0; v < kNumVariants; ++v) {
    const VariantInfo& vi = b.variants[v];
    std::string dyn = vi.dyn_min == SIZE_MAX ? std::string("(unused)")
                      : vi.dyn_min == vi.dyn_max ? std::to_string(vi.dyn_max)
                                                 : std::to_string(vi.dyn_min) + ".." + std::to_string(vi.dyn_max);
    const std::string thr = vi.threads ? std::to_string(vi.threads) : std::string("-");
    const std::string occ = vi.blocks_per_sm >= 0 ? std::to_string(vi.blocks_per_sm) : std::string("-");
    const std::string chosen = std::to_string(vi.chosen_for.size()) + "/" + std::to_string(results.size());
    std::printf("  %-3d %-5d %-10zu %-12s %-13zu %-11d %-9s %-7s %-7s %s\n", v, vi.attr.numRegs,
                vi.attr.sharedSizeBytes, dyn.c_str(), vi.attr.localSizeBytes, vi.attr.maxThreadsPerBlock, thr.c_str(),
                occ.c_str(), chosen.c_str(), kopt_sgemm::kVariantLabels[v]);
  }
  std::printf("  (dynamic B: over the benchmarked shapes; blk/SM: occupancy at %s; chosen: shapes for which"
              " launch_config() picks it)\n",
              shape_name(b.opt.shapes.front()).c_str());

  // ---- timing table --------------------------------------------------------------------------
  std::printf("\ntimes: median of %d launches (ms); ratio = cuBLAS time / tuned time (> 1: tuned is faster);"
              " %% peak of %.2f TFLOP/s\n",
              b.opt.iters, b.peak_tflops);
  if (multi) {
    std::printf("  %-16s %-5s %10s %10s %7s %8s %6s | %10s %3s %7s %8s %6s\n", "case MxNxK", "tuned", "cuBLAS",
                "single", "ratio", "TFLOP/s", "%peak", "special", "v", "ratio", "TFLOP/s", "%peak");
  } else {
    std::printf("  %-16s %-5s %10s %10s %7s %8s %6s %8s\n", "case MxNxK", "tuned", "cuBLAS", "tuned", "ratio",
                "TFLOP/s", "%peak", "cuBLAS TF");
  }
  auto row = [&](const std::string& name, const char* on, double c, double s1, double sp, double tf1, double tfp,
                 double tfc, const char* vlabel) {
    const double p1 = 100.0 * tf1 / b.peak_tflops, pp = 100.0 * tfp / b.peak_tflops;
    if (multi)
      std::printf("  %-16s %-5s %10.4f %10.4f %7.3f %8.2f %5.1f%% | %10.4f %3s %7.3f %8.2f %5.1f%%\n", name.c_str(),
                  on, c, s1, s1 > 0 ? c / s1 : 0, tf1, p1, sp, vlabel, sp > 0 ? c / sp : 0, tfp, pp);
    else
      std::printf("  %-16s %-5s %10.4f %10.4f %7.3f %8.2f %5.1f%% %8.2f\n", name.c_str(), on, c, s1,
                  s1 > 0 ? c / s1 : 0, tf1, p1, tfc);
  };
  for (const CaseResult& r : results) {
    const std::string v = r.spec_is_single ? std::to_string(r.spec.variant) + "=" : std::to_string(r.spec.variant);
    row(shape_name(r.shape), r.tuned_on ? "yes" : "no", r.cublas.median, r.single.time.median, r.spec.time.median,
        tflops(r.shape, r.single.time.median), tflops(r.shape, r.spec.time.median), tflops(r.shape, r.cublas.median),
        v.c_str());
  }
  std::vector<Geo> geos;
  bool any_untuned = false;
  for (const CaseResult& r : results) any_untuned = any_untuned || !r.tuned_on;
  bool any_tuned = false;
  for (const CaseResult& r : results) any_tuned = any_tuned || r.tuned_on;
  if (any_tuned) geos.push_back(geomean("geomean tuned-on", results, 1));
  if (any_untuned) geos.push_back(geomean("geomean other", results, 2));
  if (any_tuned && any_untuned) geos.push_back(geomean("geomean all", results, 0));
  for (const Geo& g : geos)
    if (g.n) row(g.name, "", g.cublas, g.single, g.spec, g.single_tflops, g.spec_tflops, g.cublas_tflops, "");
  std::printf("  tuned: yes = one of the five performance cases the kernel was tuned on (templates/sgemm/sgemm.json)\n");
  if (multi)
    std::printf("  single = variant 0 for every shape; special = launch_config()'s variant v (\"N=\": same launch as"
                " single, timed once)\n");

  // ---- per shape class ---------------------------------------------------------------------------
  struct ClassGeo {
    int n = 0;
    double log_single = 0, log_spec = 0, min_spec = INFINITY;
    std::string min_shape;
  };
  std::vector<ClassGeo> cls(kNumClasses);
  for (const CaseResult& r : results) {
    if (r.cublas.median <= 0 || r.single.time.median <= 0 || r.spec.time.median <= 0) continue;
    ClassGeo& g = cls[class_of(r.shape)];
    ++g.n;
    const double rs = r.cublas.median / r.single.time.median, rp = r.cublas.median / r.spec.time.median;
    g.log_single += std::log(rs);
    g.log_spec += std::log(rp);
    if (rp < g.min_spec) {
      g.min_spec = rp;
      g.min_shape = shape_name(r.shape);
    }
  }
  std::printf("\nper shape class: geomean of cuBLAS time / tuned time%s\n",
              multi ? " (single = variant 0; special = the dispatched variant)" : "");
  std::printf("  %-9s %6s %8s %8s %8s  %-18s %s\n", "class", "shapes", "single", "special", "min", "(min at)", "rule");
  for (int k = 0; k < kNumClasses; ++k) {
    const ClassGeo& g = cls[k];
    if (!g.n) continue;
    std::printf("  %-9s %6d %8.3f %8.3f %8.3f  %-18s %s\n", kClasses[k].name, g.n, std::exp(g.log_single / g.n),
                std::exp(g.log_spec / g.n), g.min_spec, g.min_shape.c_str(), kClasses[k].rule);
  }

  // ---- every variant on every shape; dispatched against fastest -----------------------------------
  int within5 = 0, dispatch_n = 0;
  double worst_slowdown = 0;
  std::string worst_shape;
  // The no-regression rule (docs/dispatch.md): shapes where the dispatched
  // variant is more than 5% slower than variant 0, and the worst of them.
  int slower_than_v0 = 0;
  double worst_vs_v0 = 0;
  std::string worst_vs_v0_shape;
  if (b.opt.all_variants) {
    std::printf("\nvariants on every shape: median ms (* = fastest; [ ] = the one launch_config() dispatches);"
                " slowdown = dispatched / fastest - 1\n  %-16s %-9s", "case MxNxK", "class");
    for (int v = 0; v < kNumVariants; ++v) std::printf(" %11s", ("v" + std::to_string(v)).c_str());
    std::printf(" %9s %9s\n", "dispatch", "slowdown");
    for (const CaseResult& r : results) {
      std::printf("  %-16s %-9s", shape_name(r.shape).c_str(), kClasses[class_of(r.shape)].name);
      for (const Tuned& t : r.var) {
        char cell[32];
        if (t.skipped)
          std::snprintf(cell, sizeof cell, ">%gx", b.opt.skip_slower);
        else if (!t.runnable || t.time.n == 0)
          std::snprintf(cell, sizeof cell, "-");
        else
          std::snprintf(cell, sizeof cell, "%s%.4f%s%s", t.variant == r.spec.variant ? "[" : "", t.time.median,
                        t.variant == r.fastest ? "*" : "", t.variant == r.spec.variant ? "]" : "");
        std::printf(" %11s", cell);
      }
      double slow = NAN;
      if (r.fastest >= 0 && r.spec.time.median > 0) {
        slow = r.spec.time.median / r.var[r.fastest].time.median - 1.0;
        ++dispatch_n;
        if (slow <= 0.05) ++within5;
        if (worst_shape.empty() || slow > worst_slowdown) {
          worst_slowdown = slow;
          worst_shape = shape_name(r.shape);
        }
      }
      if (!r.var.empty() && r.var[0].time.n > 0 && r.var[0].time.median > 0 && r.spec.time.median > 0) {
        const double vs0 = r.spec.time.median / r.var[0].time.median - 1.0;
        if (vs0 > 0.05) ++slower_than_v0;
        if (worst_vs_v0_shape.empty() || vs0 > worst_vs_v0) {
          worst_vs_v0 = vs0;
          worst_vs_v0_shape = shape_name(r.shape);
        }
      }
      std::printf(" %9d %8.1f%%\n", r.spec.variant, 100.0 * slow);
    }
    std::printf("  dispatched within 5%% of the fastest variant on %d of %d shapes; worst %s (+%.1f%%)\n", within5,
                dispatch_n, worst_shape.c_str(), 100.0 * worst_slowdown);
    std::printf("  dispatched more than 5%% slower than variant 0 on %d of %d shapes; worst %s (%+.1f%%)\n",
                slower_than_v0, dispatch_n, worst_vs_v0_shape.c_str(), 100.0 * worst_vs_v0);
    if (b.opt.skip_slower > 0)
      std::printf("  >%gx: one launch took more than %g x cuBLAS's, so the variant was not timed on that shape\n",
                  b.opt.skip_slower, b.opt.skip_slower);
  }

  // ---- correctness -----------------------------------------------------------------------------
  std::printf("\nchecks: vs cuBLAS on all elements, max |t-c|/(|a_i||b_j|) (bound 8*sqrt(K)*2^-24); vs FP64 on"
              " %d sampled elements, worst err/bound (bound 8*sqrt(K)*2^-24*sqrt(sum (a_ik b_kj)^2) + 2^-24|c|)\n",
              1024);
  std::printf("  %-16s %-8s %-12s %-10s %-10s %s\n", "case MxNxK", "who", "max rel", "/bound", "fp64 /bnd", "verdict");
  bool all_ok = true;
  for (const CaseResult& r : results) {
    const std::string nm = shape_name(r.shape);
    std::printf("  %-16s %-8s %-12s %-10s %-10.3g %s\n", nm.c_str(), "cuBLAS", "-", "-", r.cublas_worst_vs_fp64_bound,
                r.cublas_bad_vs_fp64 ? "FAIL (cuBLAS outside the FP32 bound: TF32?)" : "ok");
    auto line = [&](const char* who, const Tuned& t) {
      std::printf("  %-16s %-8s %-12.3e %-10.3g %-10.3g %s%s%s\n", nm.c_str(), who, t.max_rel_vs_cublas,
                  t.worst_vs_cublas_bound, t.worst_vs_fp64_bound, t.ok ? "ok" : "FAIL",
                  t.problem.empty() ? "" : ": ", t.problem.c_str());
    };
    line(multi ? "single" : "tuned", r.single);
    if (!r.spec_is_single) line("special", r.spec);
    for (const Tuned& t : r.var)
      if (t.variant > 0 && t.variant != r.spec.variant) line(("v" + std::to_string(t.variant)).c_str(), t);
    all_ok = all_ok && r.ok;
  }

  // ---- precision (--precision) -------------------------------------------------------------------
  // The tuned kernel's ceiling: the split-TF32 one for the tensor-core template, else FP32.
  const bool tensor_kernel = std::strstr(kopt_sgemm::kEntry, "tf32") != nullptr;
  auto precision_rows = [&](const CaseResult& r) {
    using bench_precision::Row;
    const double tc = tensor_kernel ? b.tf32_peak_tflops / 3 : b.peak_tflops;
    const char* tc_name = tensor_kernel ? "3xtf32" : "fp32";
    std::vector<Row> rows = {
        {"cuBLAS FP32", r.cublas.median, tflops(r.shape, r.cublas.median), b.peak_tflops, "fp32", r.err_cublas},
        {"cuBLAS TF32", r.cublas_tf32.median, tflops(r.shape, r.cublas_tf32.median), b.tf32_peak_tflops, "tf32",
         r.err_cublas_tf32},
        {multi ? "single" : "tuned", r.single.time.median, tflops(r.shape, r.single.time.median), tc, tc_name,
         r.single.err}};
    if (!r.spec_is_single)
      rows.push_back({"special v" + std::to_string(r.spec.variant), r.spec.time.median,
                      tflops(r.shape, r.spec.time.median), tc, tc_name, r.spec.err});
    return rows;
  };
  double worst_max_ratio = 0, worst_rms_ratio = 0;
  std::string worst_max_case, worst_rms_case;
  if (b.opt.precision) {
    bench_precision::print_header(b.peak_tflops, b.tf32_peak_tflops, b.tf32_rate_known, b.clock_khz);
    for (const CaseResult& r : results) {
      bench_precision::print_rows(shape_name(r.shape), precision_rows(r), b.peak_tflops);
      // The contract (docs/evaluation.md): the dispatched kernel's max and RMS error within 2x of cuBLAS FP32's.
      const double mr = r.spec.err.max / r.err_cublas.max, rr = r.spec.err.rms / r.err_cublas.rms;
      if (worst_max_case.empty() || !(mr <= worst_max_ratio)) {
        worst_max_ratio = mr;
        worst_max_case = shape_name(r.shape);
      }
      if (worst_rms_case.empty() || !(rr <= worst_rms_ratio)) {
        worst_rms_ratio = rr;
        worst_rms_case = shape_name(r.shape);
      }
    }
    std::printf("  the dispatched kernel's error / cuBLAS FP32's, worst over the shapes: max %.2f (%s), RMS %.2f (%s)"
                " (contract: <= 2)\n",
                worst_max_ratio, worst_max_case.c_str(), worst_rms_ratio, worst_rms_case.c_str());
  }

  std::printf("\n%s\n", all_ok ? "sgemm_bench: all results checked" : "sgemm_bench: FAILED: see the checks above");

  // ---- JSON ------------------------------------------------------------------------------------
  if (!b.opt.json_file.empty()) {
    std::string j = "{\n  \"format_version\": 1,\n  \"tool\": \"kopt bench/sgemm_bench\",\n";
    j += "  \"label\": " + json_str(b.opt.label) + ",\n";
    j += "  \"generated_dir\": " + json_str(KOPT_BENCH_GENERATED_DIR) + ",\n";
    j += "  \"entry\": " + json_str(kopt_sgemm::kEntry) + ",\n";
    j += "  \"ok\": " + std::string(all_ok ? "true" : "false") + ",\n";
    j += "  \"device\": {\"name\": " + json_str(b.prop.name) + ", \"compute_capability\": \"" +
         std::to_string(b.prop.major) + "." + std::to_string(b.prop.minor) +
         "\", \"sms\": " + std::to_string(b.prop.multiProcessorCount) +
         ", \"max_clock_khz\": " + std::to_string(b.clock_khz) + ", \"l2_bytes\": " + std::to_string(b.l2_bytes) +
         ", \"fp32_lanes_per_sm\": " + std::to_string(b.lanes) +
         ", \"fp32_lanes_known\": " + (b.lanes_known ? "true" : "false") +
         ", \"fp32_peak_tflops\": " + json_num(b.peak_tflops) +
         ", \"peak_formula\": \"sms * fp32_lanes_per_sm * 2 * max_clock\"},\n";
    j += "  \"method\": {\"warmup\": " + std::to_string(b.opt.warmup) + ", \"iterations\": " +
         std::to_string(b.opt.iters) +
         ", \"interleaved\": true, \"statistic\": \"median\", \"timer\": \"cudaEvent pair per launch\"" +
         ", \"l2_flush_bytes\": " + std::to_string(b.flush_bytes) + ", \"spin_us\": " + json_num(b.opt.spin_us) +
         ", \"seed\": " + std::to_string(b.opt.seed) +
         ", \"cublas_math_mode\": \"CUBLAS_PEDANTIC_MATH\", \"cublas_version\": " + std::to_string(cublas_version) +
         ", \"nvidia_tf32_override\": " + (tf32_env ? json_str(tf32_env) : std::string("null")) + "},\n";
    j += "  \"variants\": [\n";
    for (int v = 0; v < kNumVariants; ++v) {
      const VariantInfo& vi = b.variants[v];
      j += "    {\"variant\": " + std::to_string(v) + ", \"label\": " + json_str(kopt_sgemm::kVariantLabels[v]) +
           ", \"registers\": " + std::to_string(vi.attr.numRegs) +
           ", \"static_shared_bytes\": " + std::to_string(vi.attr.sharedSizeBytes) +
           ", \"dynamic_shared_bytes_min\": " + (vi.dyn_min == SIZE_MAX ? "null" : std::to_string(vi.dyn_min)) +
           ", \"dynamic_shared_bytes_max\": " + (vi.dyn_min == SIZE_MAX ? "null" : std::to_string(vi.dyn_max)) +
           ", \"local_bytes\": " + std::to_string(vi.attr.localSizeBytes) +
           ", \"max_threads_per_block\": " + std::to_string(vi.attr.maxThreadsPerBlock) +
           ", \"block_threads\": " + std::to_string(vi.threads) +
           ", \"blocks_per_sm\": " + (vi.blocks_per_sm < 0 ? "null" : std::to_string(vi.blocks_per_sm)) +
           ", \"chosen_for\": [" + [&] {
             std::string l;
             for (size_t i = 0; i < vi.chosen_for.size(); ++i) l += (i ? ", " : "") + json_str(vi.chosen_for[i]);
             return l;
           }() + "]}" +
           (v + 1 < kNumVariants ? ",\n" : "\n");
    }
    j += "  ],\n  \"cases\": [\n";
    auto tuned_json = [&](const Tuned& t, const Shape& s, double cublas_ms) {
      std::string o = "{\"variant\": " + std::to_string(t.variant) + ", \"grid\": [" + std::to_string(t.cfg.grid[0]) +
                      ", " + std::to_string(t.cfg.grid[1]) + ", " + std::to_string(t.cfg.grid[2]) + "], \"block\": [" +
                      std::to_string(t.cfg.block[0]) + ", " + std::to_string(t.cfg.block[1]) + ", " +
                      std::to_string(t.cfg.block[2]) + "], \"dynamic_shared_bytes\": " +
                      std::to_string(t.cfg.shared_bytes) + ", \"time\": " + stats_json(t.time) +
                      ", \"tflops\": " + json_num(tflops(s, t.time.median)) +
                      ", \"pct_peak\": " + json_num(100.0 * tflops(s, t.time.median) / b.peak_tflops) +
                      ", \"ratio_cublas_over_tuned\": " +
                      json_num(t.time.median > 0 ? cublas_ms / t.time.median : NAN) +
                      ", \"check\": {\"ok\": " + (t.ok ? "true" : "false") +
                      ", \"max_rel_err_vs_cublas\": " + json_num(t.max_rel_vs_cublas) +
                      ", \"worst_over_bound_vs_cublas\": " + json_num(t.worst_vs_cublas_bound) +
                      ", \"bad_vs_cublas\": " + std::to_string(t.bad_vs_cublas) +
                      ", \"worst_over_bound_vs_fp64_sample\": " + json_num(t.worst_vs_fp64_bound) +
                      ", \"bad_vs_fp64_sample\": " + std::to_string(t.bad_vs_fp64) +
                      ", \"guard_ok\": " + (t.guard_ok ? "true" : "false") + ", \"problem\": " + json_str(t.problem) +
                      "}}";
      return o;
    };
    for (size_t i = 0; i < results.size(); ++i) {
      const CaseResult& r = results[i];
      j += "    {\"case\": " + json_str(shape_name(r.shape)) + ", \"M\": " + std::to_string(r.shape.M) +
           ", \"N\": " + std::to_string(r.shape.N) + ", \"K\": " + std::to_string(r.shape.K) +
           ", \"tuned_on\": " + (r.tuned_on ? "true" : "false") + ", \"ok\": " + (r.ok ? "true" : "false") +
           ", \"class\": " + json_str(kClasses[class_of(r.shape)].name) +
           ",\n     \"cublas\": {\"time\": " + stats_json(r.cublas) +
           ", \"tflops\": " + json_num(tflops(r.shape, r.cublas.median)) +
           ", \"pct_peak\": " + json_num(100.0 * tflops(r.shape, r.cublas.median) / b.peak_tflops) +
           ", \"worst_over_bound_vs_fp64_sample\": " + json_num(r.cublas_worst_vs_fp64_bound) +
           ", \"bad_vs_fp64_sample\": " + std::to_string(r.cublas_bad_vs_fp64) + "},\n     \"single\": " +
           tuned_json(r.single, r.shape, r.cublas.median) + ",\n     \"specialised_same_as_single\": " +
           (r.spec_is_single ? "true" : "false") + ",\n     \"specialised\": " +
           tuned_json(r.spec, r.shape, r.cublas.median) + [&] {
             if (r.var.empty()) return std::string();
             std::string o = ",\n     \"variants\": [";
             for (size_t v = 0; v < r.var.size(); ++v)
               o += (v ? ",\n       " : "\n       ") + std::string("{\"runnable\": ") +
                    (r.var[v].runnable ? "true" : "false") + ", \"skipped\": " +
                    (r.var[v].skipped ? "true" : "false") + ", \"probe_ms\": " + json_num(r.var[v].probe_ms) +
                    ", \"result\": " +
                    tuned_json(r.var[v], r.shape, r.cublas.median) + "}";
             const double slow = r.fastest >= 0 && r.spec.time.median > 0
                                     ? r.spec.time.median / r.var[r.fastest].time.median - 1.0
                                     : NAN;
             o += "],\n     \"dispatch\": {\"dispatched_variant\": " + std::to_string(r.spec.variant) +
                  ", \"fastest_variant\": " + std::to_string(r.fastest) +
                  ", \"slowdown_vs_fastest\": " + json_num(slow) + "}";
             return o;
           }() + [&] {
             if (!b.opt.precision) return std::string();
             std::string o = ",\n     \"precision\": [";
             const std::vector<bench_precision::Row> rows = precision_rows(r);
             for (size_t k = 0; k < rows.size(); ++k)
               o += std::string(k ? ", " : "") + "{\"who\": " + json_str(rows[k].who) +
                    ", \"median_ms\": " + json_num(rows[k].ms) + ", \"tflops\": " + json_num(rows[k].tflops) +
                    ", \"ceiling\": " + json_str(rows[k].ceiling_name) +
                    ", \"pct_ceiling\": " + json_num(100.0 * rows[k].tflops / rows[k].ceiling) +
                    ", \"pct_fp32_peak\": " + json_num(100.0 * rows[k].tflops / b.peak_tflops) +
                    ", \"rel_error_max\": " + json_num(rows[k].err.max) +
                    ", \"rel_error_rms\": " + json_num(rows[k].err.rms) +
                    ", \"nonfinite\": " + std::to_string(rows[k].err.nonfinite) + "}";
             return o + "]";
           }() + "}" + (i + 1 < results.size() ? ",\n" : "\n");
    }
    j += "  ],\n  \"geomean\": [\n";
    for (size_t i = 0; i < geos.size(); ++i) {
      const Geo& g = geos[i];
      j += "    {\"set\": " + json_str(g.name) + ", \"cases\": " + std::to_string(g.n) +
           ", \"cublas_ms\": " + json_num(g.cublas) + ", \"single_ms\": " + json_num(g.single) +
           ", \"specialised_ms\": " + json_num(g.spec) +
           ", \"ratio_cublas_over_single\": " + json_num(g.single > 0 ? g.cublas / g.single : NAN) +
           ", \"ratio_cublas_over_specialised\": " + json_num(g.spec > 0 ? g.cublas / g.spec : NAN) +
           ", \"cublas_tflops\": " + json_num(g.cublas_tflops) + ", \"single_tflops\": " + json_num(g.single_tflops) +
           ", \"specialised_tflops\": " + json_num(g.spec_tflops) +
           ", \"single_pct_peak\": " + json_num(100.0 * g.single_tflops / b.peak_tflops) +
           ", \"specialised_pct_peak\": " + json_num(100.0 * g.spec_tflops / b.peak_tflops) + "}" +
           (i + 1 < geos.size() ? ",\n" : "\n");
    }
    j += "  ],\n  \"classes\": [\n";
    {
      bool first = true;
      for (int k = 0; k < kNumClasses; ++k) {
        const ClassGeo& g = cls[k];
        if (!g.n) continue;
        j += std::string(first ? "" : ",\n") + "    {\"class\": " + json_str(kClasses[k].name) +
             ", \"rule\": " + json_str(kClasses[k].rule) + ", \"cases\": " + std::to_string(g.n) +
             ", \"ratio_cublas_over_single\": " + json_num(std::exp(g.log_single / g.n)) +
             ", \"ratio_cublas_over_specialised\": " + json_num(std::exp(g.log_spec / g.n)) +
             ", \"min_ratio_specialised\": " + json_num(g.min_spec) + ", \"min_case\": " + json_str(g.min_shape) +
             "}";
        first = false;
      }
    }
    j += "\n  ],\n  \"dispatch\": {\"all_variants\": " + std::string(b.opt.all_variants ? "true" : "false") +
         ", \"shapes\": " + std::to_string(dispatch_n) + ", \"within_5pct\": " + std::to_string(within5) +
         ", \"worst_slowdown\": " + json_num(b.opt.all_variants ? worst_slowdown : NAN) +
         ", \"worst_case\": " + json_str(worst_shape) +
         ", \"slower_than_variant0_by_5pct\": " + std::to_string(slower_than_v0) +
         ", \"worst_vs_variant0\": " + json_num(b.opt.all_variants ? worst_vs_v0 : NAN) +
         ", \"worst_vs_variant0_case\": " + json_str(worst_vs_v0_shape) + "},\n";
    if (b.opt.precision)
      j += "  \"precision\": {\"tf32_peak_tflops\": " + json_num(b.tf32_peak_tflops) +
           ", \"tf32_rate_known\": " + (b.tf32_rate_known ? "true" : "false") +
           ", \"split_tf32_peak_tflops\": " + json_num(b.tf32_peak_tflops / 3) +
           ", \"worst_max_ratio_vs_cublas\": " + json_num(worst_max_ratio) + ", \"worst_max_case\": " +
           json_str(worst_max_case) + ", \"worst_rms_ratio_vs_cublas\": " + json_num(worst_rms_ratio) +
           ", \"worst_rms_case\": " + json_str(worst_rms_case) + "},\n";
    j += "  \"shapes_file\": " + json_str(b.opt.shapes_file) + "\n}\n";
    FILE* f = std::fopen(b.opt.json_file.c_str(), "w");
    if (!f || std::fwrite(j.data(), 1, j.size(), f) != j.size() || std::fclose(f) != 0) {
      std::fprintf(stderr, "sgemm_bench: cannot write %s\n", b.opt.json_file.c_str());
      return 2;
    }
    std::printf("sgemm_bench: wrote %s\n", b.opt.json_file.c_str());
  }

  for (size_t i = 0; i < b.ev_start.size(); ++i) {
    cudaEventDestroy(b.ev_start[i]);
    cudaEventDestroy(b.ev_stop[i]);
  }
  cudaFree(b.flush);
  cublasDestroy(b.handle);
  if (b.handle_tf32) cublasDestroy(b.handle_tf32);
  cudaStreamDestroy(b.stream);
  return all_ok ? 0 : 1;
}

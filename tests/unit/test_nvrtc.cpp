// NVRTC compilation and the compile cache: no GPU needed.
#include <gtest/gtest.h>

#include <filesystem>

#include "cuda/nvrtc.h"
#include "eval/worker.h"
#include "temp_dir.h"
#include "util/fs.h"

namespace {

namespace fsys = std::filesystem;
using kopt::test::TempDir;

const char* kKernel = R"(
extern "C" __global__ void scale(float* x, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] *= SCALE;
}
)";

kopt::cuda::CompileRequest request() {
  kopt::cuda::CompileRequest r;
  r.source = kKernel;
  r.entry = "scale";
  r.arch = "sm_90";
  r.defines = {{"SCALE", 3}};
  return r;
}

TEST(Nvrtc, CompilesToSm90CubinWithoutGpu) {
  kopt::cuda::Compiler c;
  auto res = c.compile(request());
  ASSERT_TRUE(res.ok) << res.log;
  ASSERT_GE(res.cubin.size(), 4u);
  // A cubin is an ELF image.
  EXPECT_EQ(std::string(res.cubin.data() + 1, 3), "ELF");
  EXPECT_EQ(res.lowered_entry, "scale");
  EXPECT_FALSE(res.cache_hit);
  EXPECT_EQ(res.key.size(), 32u);
}

TEST(Nvrtc, CompileErrorIsAValueWithTheLog) {
  kopt::cuda::Compiler c;
  auto r = request();
  r.source = "extern \"C\" __global__ void scale(float* x) { x[0] = undefined_name; }";
  auto res = c.compile(r);
  EXPECT_FALSE(res.ok);
  EXPECT_EQ(res.error_name, "NVRTC_ERROR_COMPILATION");
  EXPECT_NE(res.log.find("undefined_name"), std::string::npos) << res.log;
}

TEST(Nvrtc, MissingEntryPointFailsToCompile) {
  kopt::cuda::Compiler c;
  auto r = request();
  r.entry = "no_such_kernel";
  auto res = c.compile(r);
  EXPECT_FALSE(res.ok);
  EXPECT_NE(res.log.find("no_such_kernel"), std::string::npos) << res.log;
}

TEST(Nvrtc, RelocatableDeviceCodeIsRefused) {
  kopt::cuda::Compiler c;
  auto r = request();
  r.options = {"-rdc=true"};
  auto res = c.compile(r);
  EXPECT_FALSE(res.ok);
  EXPECT_NE(res.log.find("device-side launches"), std::string::npos);
}

TEST(Nvrtc, CacheKeyCoversSourceOptionsDefinesAndArch) {
  auto base = request();
  const std::string k = kopt::cuda::Compiler::cache_key(base);
  EXPECT_EQ(k, kopt::cuda::Compiler::cache_key(base));
  auto r = base;
  r.source += " ";
  EXPECT_NE(k, kopt::cuda::Compiler::cache_key(r));
  r = base;
  r.options = {"-O3"};
  EXPECT_NE(k, kopt::cuda::Compiler::cache_key(r));
  r = base;
  r.defines["SCALE"] = 4;
  EXPECT_NE(k, kopt::cuda::Compiler::cache_key(r));
  r = base;
  r.arch = "sm_80";
  EXPECT_NE(k, kopt::cuda::Compiler::cache_key(r));
  r = base;
  r.entry = "other";
  EXPECT_NE(k, kopt::cuda::Compiler::cache_key(r));
}

TEST(Nvrtc, DiskCacheHitsAcrossCompilerInstances) {
  const TempDir tmp;
  const auto dir = tmp / "cache";  // not created yet
  std::vector<char> first;
  {
    kopt::cuda::Compiler c(dir);
    auto res = c.compile(request());
    ASSERT_TRUE(res.ok);
    EXPECT_FALSE(res.cache_hit);
    first = res.cubin;
    EXPECT_EQ(c.misses(), 1);
  }
  kopt::cuda::Compiler c(dir);
  auto res = c.compile(request());
  ASSERT_TRUE(res.ok);
  EXPECT_TRUE(res.cache_hit);
  EXPECT_EQ(res.compile_ms, 0.0);
  EXPECT_EQ(res.cubin, first);
  EXPECT_EQ(res.lowered_entry, "scale");
  EXPECT_EQ(c.hits(), 1);
  EXPECT_EQ(c.misses(), 0);
  // Compile failures are cached too (a broken candidate is never recompiled).
  auto bad = request();
  bad.source = "this is not CUDA";
  EXPECT_FALSE(c.compile(bad).cache_hit);
  auto again = c.compile(bad);
  EXPECT_FALSE(again.ok);
  EXPECT_TRUE(again.cache_hit);
}

TEST(Nvrtc, TornCacheEntryIsRecompiled) {
  const TempDir tmp;
  const auto dir = tmp / "torn";  // not created yet
  kopt::cuda::Compiler c(dir);
  auto res = c.compile(request());
  ASSERT_TRUE(res.ok);
  // Simulate a crash between writing the cubin and the metadata: truncate the cubin.
  kopt::fs::write_file_atomic(dir / (res.key + ".cubin"), std::string());
  auto again = c.compile(request());
  ASSERT_TRUE(again.ok);
  EXPECT_FALSE(again.cache_hit);
  EXPECT_EQ(again.cubin, res.cubin);
}

TEST(Nvrtc, StoreCubinIsContentAddressed) {
  const TempDir tmp;
  const auto dir = tmp / "store";  // not created yet
  kopt::cuda::Compiler c;
  auto res = c.compile(request());
  ASSERT_TRUE(res.ok);
  auto p = kopt::cuda::store_cubin(dir, res);
  EXPECT_EQ(p.filename().string(), res.key + ".cubin");
  EXPECT_EQ(kopt::fs::read_file(p).size(), res.cubin.size());
}

}  // namespace

// The worker compiles its built-in kernels at start-up on the GPU machine; a
// mistake there would only show on a GPU, so compile them here for the
// architectures the project targets.
TEST(Nvrtc, WorkerBuiltinKernelsCompile) {
  for (const char* arch : {"sm_80", "sm_90"}) {
    kopt::cuda::Compiler c;
    kopt::cuda::CompileRequest r;
    r.source = kopt::eval::builtin_kernels_source();
    r.source_name = "kopt_builtin.cu";
    r.arch = arch;
    auto res = c.compile(r);
    ASSERT_TRUE(res.ok) << arch << ": " << res.log;
    const std::string image(res.cubin.begin(), res.cubin.end());
    for (const char* fn : {"kopt_poison_shared", "kopt_gemm_sumsq", "kopt_screen_f32", "kopt_gemm_error_stats",
                           "kopt_first_diff_u32", "kopt_first_diff_u8"})
      EXPECT_NE(image.find(fn), std::string::npos) << arch << ": " << fn << " missing from the cubin";
  }
}

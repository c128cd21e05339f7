// NVRTC compilation and the compile cache: no GPU needed.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

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

/// The pid of a process that has ended (and been reaped).
long long dead_pid() {
  const pid_t pid = ::fork();
  if (pid == 0) ::_exit(0);
  int status = 0;
  ::waitpid(pid, &status, 0);
  return pid;
}

/// Writes `text` to `dir/name`, last written `age` ago.
fsys::path put(const fsys::path& dir, const std::string& name, const std::string& text,
               std::chrono::seconds age = std::chrono::seconds(0)) {
  const fsys::path p = dir / name;
  std::ofstream(p) << text;
  fsys::last_write_time(p, fsys::file_time_type::clock::now() - age);
  return p;
}

// What a killed writer leaves in the cache (a temporary of write_file_atomic,
// a compiler process's request file) goes when the cache is next opened,
// once stale: its process gone for a minute, or an hour old whoever wrote
// it; a write that may still be running, or a file of another name, stays.
TEST(Nvrtc, OpeningTheCacheRemovesStaleTemporaries) {
  using std::chrono::minutes;
  using std::chrono::seconds;
  const TempDir tmp;
  const fsys::path dir = tmp / "cache";
  fsys::create_directories(dir);
  const std::string gone = std::to_string(dead_pid()), me = std::to_string(::getpid());
  const std::string key = std::string(32, 'a');
  const fsys::path removed[] = {
      put(dir, key + ".cubin.tmp." + gone + ".17", "torn", minutes(2)),
      put(dir, key + ".json.tmp." + gone + ".3", "{", minutes(2)),
      put(dir, key + ".request." + gone + ".0.json", "{}", minutes(2)),
      put(dir, key + ".request." + gone + ".0.json.tmp." + gone + ".9", "{", minutes(2)),
      put(dir, key + ".cubin.tmp." + me + ".5", "old", minutes(61)),  // a live pid, but an hour old
  };
  const fsys::path kept[] = {
      put(dir, key + ".cubin.tmp." + gone + ".18", "just written", seconds(5)),  // within the grace
      put(dir, key + ".cubin.tmp." + me + ".6", "being written", minutes(2)),    // its writer runs
      put(dir, key + ".request." + me + ".1.json", "{}", minutes(2)),
      put(dir, key + ".json", "{}", minutes(90)),
      put(dir, key + ".cubin", "x", minutes(90)),
      put(dir, "notes.tmp.txt", "x", minutes(90)),
      put(dir, key + ".cubin.tmp.x1.2", "x", minutes(90)),
  };
  fsys::create_directories(dir / ("sub.tmp." + gone + ".1"));  // a folder: never removed
  EXPECT_EQ(kopt::cuda::remove_stale_cache_files(dir), 5);
  for (const auto& p : removed) EXPECT_FALSE(fsys::exists(p)) << p;
  for (const auto& p : kept) EXPECT_TRUE(fsys::exists(p)) << p;
  EXPECT_TRUE(fsys::is_directory(dir / ("sub.tmp." + gone + ".1")));

  // A Compiler opening the folder does the same; a missing folder is no error.
  const fsys::path again = put(dir, key + ".json.tmp." + gone + ".4", "{", minutes(2));
  kopt::cuda::Compiler c(dir);
  EXPECT_FALSE(fsys::exists(again));
  EXPECT_EQ(kopt::cuda::remove_stale_cache_files(tmp / "missing"), 0);
}

// Nothing reads a temporary: an entry is <key>.json and <key>.cubin, even
// when a temporary of that key holds a complete entry.
TEST(Nvrtc, ATemporaryOfAnEntryIsNeverRead) {
  const TempDir tmp;
  const fsys::path dir = tmp / "cache";
  fsys::create_directories(dir);
  const std::string key = kopt::cuda::Compiler::cache_key(request());
  put(dir, key + ".json.tmp." + std::to_string(::getpid()) + ".1",
      R"({"ok": false, "error_name": "FROM_A_TEMPORARY", "log": "", "lowered_entry": ""})");
  kopt::cuda::Compiler c(dir);
  const auto res = c.compile(request());
  EXPECT_TRUE(res.ok) << res.error_name;
  EXPECT_FALSE(res.cache_hit);
}

// A compiler process killed at the end of a search leaves its temporary
// behind; the next Compiler on the folder removes it once its grace is over.
TEST(Nvrtc, AKilledCompilerProcessLeavesNothingThatStays) {
  const TempDir tmp;
  const fsys::path dir = tmp / "cache";
  kopt::cuda::CompilerOptions o;
  // argv: sh -c SCRIPT sh --request FILE --cache-dir DIR: $4 is the cache.
  o.helper_argv = {"/bin/sh", "-c", "echo torn > \"$4/0123.cubin.tmp.$$.7\"; exec sleep 30", "sh"};
  o.timeout_s = 60;
  kopt::cuda::Compiler compiler(dir, o);
  auto written = [&dir] {
    for (const auto& e : fsys::directory_iterator(dir))
      if (e.path().filename().string().find(".cubin.tmp.") != std::string::npos) return true;
    return false;
  };
  std::thread stopper([&compiler, &written] {  // once the process has written its temporary
    for (int i = 0; i < 1000 && !written(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    compiler.stop(true);
  });
  const auto r = compiler.compile(request());
  stopper.join();
  EXPECT_EQ(r.error_name, kopt::cuda::kCompileStopped);
  std::vector<fsys::path> left;
  for (const auto& e : fsys::directory_iterator(dir)) left.push_back(e.path());
  ASSERT_EQ(left.size(), 1u);  // the temporary; the request file went with the compile
  EXPECT_NE(left[0].filename().string().find("0123.cubin.tmp."), std::string::npos) << left[0];
  // A minute later (its process is gone), the next run's Compiler removes it.
  fsys::last_write_time(left[0], fsys::file_time_type::clock::now() - std::chrono::minutes(2));
  kopt::cuda::Compiler next(dir);
  EXPECT_TRUE(fsys::is_empty(dir));
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
    for (const char* fn : {"kopt_poison_shared", "kopt_gemm_sumsq", "kopt_screen_f32", "kopt_screen_f64",
                           "kopt_screen_i8", "kopt_screen_u8", "kopt_screen_i32", "kopt_screen_u32", "kopt_screen_i64",
                           "kopt_screen_u64", "kopt_gemm_error_stats", "kopt_first_diff_u32", "kopt_first_diff_u8"})
      EXPECT_NE(image.find(fn), std::string::npos) << arch << ": " << fn << " missing from the cubin";
  }
}

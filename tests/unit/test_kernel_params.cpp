// A kernel's parameters against the spec's signature: the PTX parameter list
// (cuda/ptx.h), NVRTC's compile results carrying it, the comparison
// (eval/kernel_params.h) and the compile-only verdict. No GPU needed.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>

#include <nlohmann/json.hpp>

#include "cuda/nvrtc.h"
#include "cuda/ptx.h"
#include "eval/evaluator.h"
#include "eval/kernel_params.h"
#include "spec/spec.h"
#include "temp_dir.h"
#include "util/fs.h"

namespace kopt {
namespace {

namespace stdfs = std::filesystem;
using kopt::test::TempDir;

// ---------------------------------------------------------------------------
// The PTX parameter list

TEST(PtxParams, ReadsEveryParameterKind) {
  const std::string ptx = R"(
.version 9.0
.target sm_90
.address_size 64

	// .globl	k
.visible .entry k2(
	.param .u32 k2_param_0
)
{ ret; }
.visible .entry k(
	.param .u64 k_param_0,
	.param .u64 .ptr .global .align 4 k_param_1,
	.param .u32 k_param_2,
	.param .f32 k_param_3,
	.param .f64 k_param_4,
	.param .u16 k_param_5,
	.param .align 4 .b8 k_param_6[12],
	.param .u8 k_param_7,
	.param .align 2 .b8 k_param_8[2]
)
{ ret; }
.weak .entry _Z1tILi3EEvPf(
	.param .u64 _Z1tILi3EEvPf_param_0
)
.maxntid 128, 1, 1
{ ret; }
.visible .entry none()
{ ret; }
)";
  EXPECT_EQ(cuda::ptx_param_sizes(ptx, "k"), (std::vector<size_t>{8, 8, 4, 4, 8, 2, 12, 1, 2}));
  EXPECT_EQ(cuda::ptx_param_sizes(ptx, "k2"), (std::vector<size_t>{4}));  // not a prefix match
  EXPECT_EQ(cuda::ptx_param_sizes(ptx, "_Z1tILi3EEvPf"), (std::vector<size_t>{8}));
  EXPECT_EQ(cuda::ptx_param_sizes(ptx, "none"), (std::vector<size_t>{}));
  EXPECT_EQ(cuda::ptx_param_sizes(ptx, "missing"), std::nullopt);
  EXPECT_EQ(cuda::ptx_param_sizes(ptx, ""), std::nullopt);
  // Unreadable lists check nothing rather than something wrong.
  EXPECT_EQ(cuda::ptx_param_sizes(".entry k(\n\t.param .weird k_param_0\n)", "k"), std::nullopt);
  EXPECT_EQ(cuda::ptx_param_sizes(".entry k(\n\t.param .u32 k_param_0", "k"), std::nullopt);
  EXPECT_EQ(cuda::ptx_param_sizes(".entry k(\n\t.param .b8 k_param_0[x]\n)", "k"), std::nullopt);
}

TEST(PtxParams, NvrtcResultsCarryTheParameterSizes) {
  const TempDir tmp;
  const stdfs::path dir = tmp / "ptx-params";  // not created yet
  cuda::Compiler c(dir);
  cuda::CompileRequest r;
  r.source = R"(
#include <cuda_fp16.h>
struct Three { float a, b, c; };
extern "C" __global__ void ln(const float* x, float* y, int cols, float eps, __half h, Three t, long long n) {
  if (cols) y[0] = x[0] + eps + __half2float(h) + t.a + n;
}
template <int N> __global__ void scaled(float* p, double s) { p[0] = N * s; }
)";
  r.entry = "ln";
  r.arch = "sm_90";
  cuda::CompileResult res = c.compile(r);
  ASSERT_TRUE(res.ok) << res.log;
  EXPECT_EQ(res.param_sizes, (std::vector<size_t>{8, 8, 4, 4, 2, 12, 8}));
  // A C++ entry: looked up by its lowered (mangled) name.
  r.entry = "scaled<3>";
  res = c.compile(r);
  ASSERT_TRUE(res.ok) << res.log;
  EXPECT_NE(res.lowered_entry, "scaled<3>");
  EXPECT_EQ(res.param_sizes, (std::vector<size_t>{8, 8}));
  // From the cache: the same sizes.
  cuda::CompileResult again = c.compile(r);
  EXPECT_TRUE(again.cache_hit);
  EXPECT_EQ(again.param_sizes, res.param_sizes);
  // A cache entry written before the sizes were recorded is compiled again.
  const stdfs::path meta = dir / (res.key + ".json");
  nlohmann::json m = nlohmann::json::parse(fs::read_file(meta));
  m.erase("param_sizes");
  fs::write_file_atomic(meta, m.dump());
  cuda::CompileResult old = c.compile(r);
  EXPECT_FALSE(old.cache_hit);
  EXPECT_EQ(old.param_sizes, res.param_sizes);
}

// ---------------------------------------------------------------------------
// The comparison

std::vector<eval::ExpectedParam> layernorm_signature() {
  return {{"x", "pointer to float", 8}, {"y", "pointer to float", 8}, {"cols", "int32", 4}, {"eps", "float", 4}};
}

TEST(KernelParams, MatchingListsPass) {
  EXPECT_EQ(eval::param_mismatch(layernorm_signature(), {8, 8, 4, 4}), std::nullopt);
  EXPECT_EQ(eval::param_mismatch({}, {}), std::nullopt);
}

TEST(KernelParams, TheMessageNamesTheParameterAndBothSizes) {
  EXPECT_EQ(eval::param_mismatch(layernorm_signature(), {8, 8, 4}),
            "the kernel's parameters do not match the spec's signature: it has 3 parameters, the signature 4 "
            "(x, y, cols, eps); parameter 3 ('eps', float, 4 bytes) is missing from the kernel");
  EXPECT_EQ(eval::param_mismatch(layernorm_signature(), {8, 8, 8, 4}),
            "the kernel's parameters do not match the spec's signature: parameter 2 ('cols', int32, 4 bytes) "
            "is 8 bytes in the kernel");
  // A missing parameter in the middle shows as the first size that differs.
  EXPECT_EQ(eval::param_mismatch(layernorm_signature(), {8, 4, 4}),
            "the kernel's parameters do not match the spec's signature: it has 3 parameters, the signature 4 "
            "(x, y, cols, eps); parameter 1 ('y', pointer to float, 8 bytes) is 4 bytes in the kernel");
  EXPECT_EQ(eval::param_mismatch(layernorm_signature(), {8, 8, 4, 4, 1}),
            "the kernel's parameters do not match the spec's signature: it has 5 parameters, the signature 4 "
            "(x, y, cols, eps); the kernel's parameter 4 (1 byte) has no entry in the signature");
}

TEST(KernelParams, ExpectedSizesFollowTheSignature) {
  spec::Param buf;
  buf.name = "x";
  buf.is_buffer = true;
  buf.dtype = spec::DType::f16;
  spec::Param h = buf;
  h.name = "alpha";
  h.is_buffer = false;
  spec::Param n = h;
  n.name = "n";
  n.dtype = spec::DType::i64;
  const std::vector<eval::ExpectedParam> e = eval::expected_params({buf, h, n});
  ASSERT_EQ(e.size(), 3u);
  EXPECT_EQ(e[0].size, 8u);  // a device pointer, whatever the element type
  EXPECT_EQ(e[0].type, "pointer to half");
  EXPECT_EQ(e[1].size, 2u);
  EXPECT_EQ(e[2].size, 8u);
  EXPECT_EQ(e[2].type, "int64");
}

// ---------------------------------------------------------------------------
// The compile-only verdict: a kernel missing a parameter is rejected at compile time.

TEST(KernelParams, TheEvaluatorRefusesAKernelWhoseParametersDoNotMatch) {
  const spec::Spec s = spec::load_spec(stdfs::path(KOPT_SOURCE_DIR) / "templates" / "sgemm" / "sgemm.json");
  const TempDir tmp;
  const stdfs::path dir = tmp / "param-verdict";  // not created yet
  eval::EvaluatorOptions eo;
  eo.cache_dir = dir;
  eo.arch = "sm_90";  // no device needed
  eval::Evaluator ev(s, eo);
  spec::Candidate c;
  c.label = "no_k.cu";
  c.entry = "sg";
  // The signature is (A, B, C, M, N, K): this kernel has no K.
  c.source = "extern \"C\" __global__ void sg(const float* A, const float* B, float* C, int M, int N) {}\n";
  cuda::CompileResult r = ev.compile(c);
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.error_name, eval::kParamMismatch);
  EXPECT_NE(r.detail.find("parameter 5 ('K', int32, 4 bytes) is missing from the kernel"), std::string::npos)
      << r.detail;
  EXPECT_EQ(r.log.rfind(r.detail, 0), 0u) << "the log starts with the reason";
  // start() turns it into the compile_error verdict with the reason as its detail, without a worker.
  ev.start(c, r);
  const model::Result res = ev.finish();
  EXPECT_EQ(res.verdict, model::Verdict::compile_error);
  EXPECT_EQ(res.detail, r.detail);
  // The matching kernel compiles.
  c.source = "extern \"C\" __global__ void sg(const float* A, const float* B, float* C, int M, int N, int K) {}\n";
  EXPECT_TRUE(ev.compile(c).ok);
}

}  // namespace
}  // namespace kopt

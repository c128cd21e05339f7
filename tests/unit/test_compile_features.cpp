// Compiling what peer tuners' kernels need, without a GPU: __constant__
// symbols resolved from NVRTC and sized from the PTX, compiles per case when
// the spec's defines depend on the sizes, a compile in a process of its own
// stopped at its time limit, logs without NUL bytes, the first error line;
// and the device limits per architecture with the launch limits the search
// filters before compiling.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstdlib>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli_run.h"
#include "cuda/nvrtc.h"
#include "cuda/ptx.h"
#include "eval/evaluator.h"
#include "gen/generate.h"
#include "model/device_info.h"
#include "spec/launch.h"
#include "search/device_constants.h"
#include "spec/spec.h"
#include "temp_dir.h"
#include "util/error.h"

namespace kopt {
namespace {

namespace stdfs = std::filesystem;
using json = nlohmann::json;

const char* kFilterKernel = R"(
__constant__ float d_filter[FW * FW];
namespace tables { __constant__ int lut[3]; }
extern "C" __global__ void conv(float* out, const float* in, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = in[i] * d_filter[i % (FW * FW)] + tables::lut[i % 3] + WIDTH;
}
)";

cuda::CompileRequest filter_request() {
  cuda::CompileRequest r;
  r.source = kFilterKernel;
  r.entry = "conv";
  r.arch = "sm_90";
  r.defines = {{"FW", 17}, {"WIDTH", 64}};
  r.symbols = {"d_filter", "tables::lut"};
  return r;
}

/// Compiler options that compile in a `kopt compile-worker` process, stopped after `timeout_s`.
cuda::CompilerOptions in_a_worker(double timeout_s) {
  cuda::CompilerOptions o;
  o.helper_argv = {KOPT_CLI, "compile-worker"};
  o.timeout_s = timeout_s;
  return o;
}

TEST(CompileFeatures, PtxVariableSizes) {
  const std::string ptx =
      ".version 8.8\n.target sm_90\n"
      ".const .align 4 .b8 d_filter[1156];\n"
      ".const .align 4 .u32 c_scalar;\n"
      ".const .align 4 .b8 c_init[8] = {0, 0, 128, 63, 0, 0, 0, 64};\n"
      ".const .align 8 .b8 _ZN2ns4c_nsE[24];\n"
      ".global .align 4 .f32 g_val;\n";
  EXPECT_EQ(cuda::ptx_variable_bytes(ptx, "d_filter"), 1156u);
  EXPECT_EQ(cuda::ptx_variable_bytes(ptx, "c_scalar"), 4u);
  EXPECT_EQ(cuda::ptx_variable_bytes(ptx, "c_init"), 8u);
  EXPECT_EQ(cuda::ptx_variable_bytes(ptx, "_ZN2ns4c_nsE"), 24u);
  EXPECT_EQ(cuda::ptx_variable_bytes(ptx, "g_val"), std::nullopt);  // not .const
  EXPECT_EQ(cuda::ptx_variable_bytes(ptx, "g_val", ".global"), 4u);
  EXPECT_EQ(cuda::ptx_variable_bytes(ptx, "d_filt"), std::nullopt);
  EXPECT_EQ(cuda::ptx_variable_bytes(ptx, "missing"), std::nullopt);
}

TEST(CompileFeatures, ConstantSymbolsAreResolvedAndSized) {
  test::TempDir dir("kopt-cf");
  cuda::Compiler c(dir.path());
  const cuda::CompileResult r = c.compile(filter_request());
  ASSERT_TRUE(r.ok) << r.log;
  ASSERT_EQ(r.symbols.size(), 2u);
  EXPECT_EQ(r.symbols.at("d_filter").lowered, "d_filter");
  EXPECT_EQ(r.symbols.at("d_filter").bytes, 17u * 17u * 4u);
  EXPECT_EQ(r.symbols.at("tables::lut").lowered, "_ZN6tables3lutE");
  EXPECT_EQ(r.symbols.at("tables::lut").bytes, 12u);
  // A cache hit gives them back.
  const cuda::CompileResult again = c.compile(filter_request());
  EXPECT_TRUE(again.cache_hit);
  EXPECT_EQ(again.symbols.at("d_filter").bytes, 1156u);
  // The same source without symbols keeps another key (and the key it always had).
  cuda::CompileRequest plain = filter_request();
  plain.symbols.clear();
  EXPECT_NE(cuda::Compiler::cache_key(plain), r.key);
}

TEST(CompileFeatures, AMissingSymbolIsACompileErrorNamingIt) {
  cuda::CompileRequest r = filter_request();
  r.symbols = {"d_weights"};
  const cuda::CompileResult res = cuda::Compiler().compile(r);
  EXPECT_FALSE(res.ok);
  EXPECT_NE(res.log.find("d_weights"), std::string::npos) << res.log;
}

TEST(CompileFeatures, LogsHaveNoNulAndTheFirstErrorLineSaysWhy) {
  cuda::CompileRequest r;
  r.source =
      "extern \"C\" __global__ void big(float* x) { __shared__ float s[20000]; s[threadIdx.x] = x[threadIdx.x];"
      " __syncthreads(); x[threadIdx.x] = s[threadIdx.x + 1]; }";
  r.entry = "big";
  r.arch = "sm_90";
  const cuda::CompileResult res = cuda::Compiler().compile(r);
  ASSERT_FALSE(res.ok);
  EXPECT_EQ(res.log.find('\0'), std::string::npos) << "a NUL in: " << json(res.log).dump();
  EXPECT_NE(cuda::first_error_line(res.log).find("too much shared data"), std::string::npos) << res.log;
  EXPECT_EQ(cuda::first_error_line(""), "no log");
  EXPECT_EQ(cuda::first_error_line("  note one\nk.cu(3): error: bad\n"), "k.cu(3): error: bad");
  EXPECT_EQ(cuda::first_error_line("\n  just a warning  \n"), "just a warning");
  EXPECT_EQ(cuda::first_error_line(std::string(500, 'x'), 20).size(), 20u);
}

// BAT's hotspot (templates/hotspot) unrolls its time loop by a tuning parameter
// named in the pragma itself, `#pragma unroll loop_unroll_factor_t`, as Kernel
// Tuner's users write it. The parameter reaches NVRTC as a -D define, and NVRTC
// expands a macro there (nvcc does not: "identifier ... is undefined"; Kernel
// Tuner declares such parameters constexpr): each factor is its own code.
TEST(CompileFeatures, ATuningParameterNamedInPragmaUnrollTakesEffect) {
  auto compile = [](int64_t factor) {
    cuda::CompileRequest r;
    r.source =
        "extern \"C\" __global__ void steps(float* x, float c, int n) {\n"
        "  float v = x[threadIdx.x];\n"
        "  #pragma unroll loop_unroll_factor_t\n"
        "  for (int s = 0; s < n; ++s) v = v * c + x[s];\n"
        "  x[threadIdx.x] = v;\n"
        "}\n";
    r.entry = "steps";
    r.arch = "sm_90";
    r.defines = {{"loop_unroll_factor_t", factor}};
    return cuda::Compiler().compile(r);
  };
  const cuda::CompileResult once = compile(1), by4 = compile(4), by8 = compile(8);
  ASSERT_TRUE(once.ok && by4.ok && by8.ok) << once.log << by4.log << by8.log;
  EXPECT_EQ(once.log, "");  // no "unrecognized #pragma" or the like
  EXPECT_LT(once.cubin.size(), by4.cubin.size());
  EXPECT_LT(by4.cubin.size(), by8.cubin.size());
}

TEST(CompileFeatures, ACompileInItsOwnProcessLandsInTheCache) {
  test::TempDir dir("kopt-cf");
  cuda::Compiler c(dir.path(), in_a_worker(120));
  const cuda::CompileResult r = c.compile(filter_request());
  ASSERT_TRUE(r.ok) << r.log;
  EXPECT_FALSE(r.cache_hit);
  EXPECT_GT(r.compile_ms, 0);
  EXPECT_EQ(std::string(r.cubin.data() + 1, 3), "ELF");
  EXPECT_EQ(r.symbols.at("d_filter").bytes, 1156u);
  EXPECT_TRUE(c.compile(filter_request()).cache_hit);
  // A compile error comes back the same way, with its log.
  cuda::CompileRequest bad = filter_request();
  bad.source += "\nint broken = undefined_name;\n";
  const cuda::CompileResult b = c.compile(bad);
  EXPECT_FALSE(b.ok);
  EXPECT_EQ(b.error_name, "NVRTC_ERROR_COMPILATION");
  EXPECT_NE(b.log.find("undefined_name"), std::string::npos) << b.log;
  // No request file is left behind.
  for (const auto& e : stdfs::directory_iterator(dir.path()))
    EXPECT_EQ(e.path().string().find(".request."), std::string::npos) << e.path();
}

TEST(CompileFeatures, ACompilePastItsTimeLimitIsStoppedAndNotCached) {
  test::TempDir dir("kopt-cf");
  cuda::Compiler c(dir.path(), in_a_worker(0.5));
  // A long dependent chain written out: seconds of NVRTC and ptxas on any machine.
  cuda::CompileRequest r;
  r.source = "extern \"C\" __global__ void heavy(float* x) {\n  float a = x[threadIdx.x];\n";
  for (int i = 0; i < 40000; ++i)
    r.source += "  a = a * 1.0001f + x[(threadIdx.x + " + std::to_string(i * 7) + ") & 1023];\n";
  r.source += "  x[threadIdx.x] = a;\n}\n";
  r.entry = "heavy";
  r.arch = "sm_90";
  const auto t0 = std::chrono::steady_clock::now();
  const cuda::CompileResult res = c.compile(r);
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_FALSE(res.ok);
  EXPECT_EQ(res.error_name, "KOPT_COMPILE_TIMEOUT");
  EXPECT_NE(res.log.find("longer than 0.5 s"), std::string::npos) << res.log;
  EXPECT_LT(s, 30.0);
  EXPECT_FALSE(stdfs::exists(dir.path() / (res.key + ".json")));  // a later, longer limit compiles it
}

TEST(CompileFeatures, ACompilerProcessThatDiesIsACompileError) {
  test::TempDir dir("kopt-cf");
  cuda::CompilerOptions o;
  o.helper_argv = {"/bin/false"};
  o.timeout_s = 10;
  const cuda::CompileResult res = cuda::Compiler(dir.path(), o).compile(filter_request());
  EXPECT_FALSE(res.ok);
  EXPECT_EQ(res.error_name, "KOPT_COMPILER_CRASHED");
  o.helper_argv = {(dir.path() / "no-such-program").string()};
  try {
    cuda::Compiler(dir.path(), o).compile(filter_request());
    ADD_FAILURE() << "no error";
  } catch (const EnvironmentError& e) {
    EXPECT_EQ(e.id(), "kopt.nvrtc.003");
  }
}

// ---- the evaluator: spec defines, compiles per case, constants ----

class EvaluatorFeatures : public ::testing::Test {
 protected:
  void SetUp() override {
    std::ofstream(dir_ / "conv.cu") << kFilterKernel << "\n// kopt:entry conv\n// kopt:grid ceil_div(n_total, 64)\n"
                                       "// kopt:block 64\n";
    std::ofstream(dir_ / "ref.cu") << R"(
// kopt:grid ceil_div(n_total, 128)
// kopt:block 128
__constant__ float d_filter[FW * FW];
namespace tables { __constant__ int lut[3]; }
extern "C" __global__ void ref(float* out, const float* in, int n) {}
)";
  }
  spec::Spec spec(int filter_count = 17 * 17) const {
    json doc = json::parse(R"J({
      "name": "conv",
      "defines": {"FW": 17, "WIDTH": "W", "n_total": "W * 2"},
      "signature": [
        {"name": "out", "type": "float", "role": "output", "count": "n_total"},
        {"name": "in", "type": "float", "role": "input", "count": "n_total"},
        {"name": "d_filter", "type": "float", "role": "constant", "count": 289},
        {"name": "tables::lut", "type": "int32", "role": "constant", "count": 3},
        {"name": "n", "type": "int32", "value": "n_total"}
      ],
      "reference": {"kind": "kernel", "source": "ref.cu", "entry": "ref"},
      "initial": {"source": "conv.cu", "entry": "conv"},
      "cases": [
        {"name": "a", "sizes": {"W": 64}},
        {"name": "b", "sizes": {"W": 64}},
        {"name": "c", "role": "performance", "sizes": {"W": 128}}
      ]
    })J");
    doc["signature"][2]["count"] = filter_count;
    return spec::parse_spec(doc, dir_ / "conv.json");
  }
  eval::EvaluatorOptions options() const {
    eval::EvaluatorOptions o;
    o.cache_dir = dir_ / "cache";
    o.arch = "sm_90";
    o.worker_argv = {"/bin/false"};  // never started here
    return o;
  }
  eval::Candidate initial(const spec::Spec& s) const {
    eval::Candidate c = eval::candidate_from_file(s.initial->source);
    return c;
  }

  test::TempDir tmp_{"kopt-evf"};
  stdfs::path dir_ = tmp_.path();
};

TEST_F(EvaluatorFeatures, OneCompilePerDistinctSetOfCaseDefines) {
  const spec::Spec s = spec();
  eval::Evaluator ev(s, options());
  const cuda::CompileResult r = ev.compile(initial(s));
  ASSERT_TRUE(r.ok) << r.log;
  EXPECT_EQ(ev.compiler().misses(), 2);  // W=64 (cases a and b), W=128
  EXPECT_FALSE(r.cache_hit);
  EXPECT_TRUE(ev.compile(initial(s)).cache_hit);
  EXPECT_EQ(ev.compiler().misses(), 2);

  // The request: the constants apart from the arguments, the symbols of each
  // module, and case c's own compile of the candidate.
  const std::string cubin = cuda::store_cubin(dir_ / "cache", r).string();
  const eval::EvalRequest rq = ev.build_request(initial(s), r, cubin);
  ASSERT_EQ(rq.cases.size(), 3u);
  EXPECT_EQ(rq.candidate.symbols.at("d_filter"), "d_filter");
  EXPECT_EQ(rq.candidate.symbols.at("tables::lut"), "_ZN6tables3lutE");
  EXPECT_EQ(rq.reference.symbols.at("d_filter"), "d_filter");
  for (const eval::CaseSpec& c : rq.cases) {
    ASSERT_EQ(c.args.size(), 3u) << c.name;  // out, in, n: the kernel's parameters
    ASSERT_EQ(c.constants.size(), 2u);
    EXPECT_EQ(c.constants[0].name, "d_filter");
    EXPECT_EQ(c.constants[0].count, 289);
    EXPECT_EQ(c.constants[0].role, spec::Role::constant);
  }
  EXPECT_FALSE(rq.cases[0].kernel);
  EXPECT_FALSE(rq.cases[1].kernel);
  ASSERT_TRUE(rq.cases[2].kernel);
  EXPECT_NE(rq.cases[2].kernel->cubin_path, rq.candidate.cubin_path);
  ASSERT_TRUE(rq.cases[2].reference_kernel);
  EXPECT_EQ(rq.cases[2].launch.grid[0], 128 * 2 / 64);

  // Through the protocol and back.
  const eval::EvalRequest back = eval::EvalRequest::from_json(rq.to_json());
  EXPECT_EQ(back.to_json(), rq.to_json());
  EXPECT_EQ(back.cases[2].kernel->cubin_path, rq.cases[2].kernel->cubin_path);
  EXPECT_EQ(back.cases[0].constants[1].name, "tables::lut");
  EXPECT_EQ(back.candidate.symbols, rq.candidate.symbols);
}

TEST_F(EvaluatorFeatures, AConstantLargerThanItsSymbolIsRefusedAtCompileTime) {
  const spec::Spec s = spec(300);  // d_filter holds 289 floats
  eval::Evaluator ev(s, options());
  const cuda::CompileResult r = ev.compile(initial(s));
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.error_name, "KOPT_CONSTANT_MISMATCH");
  EXPECT_NE(r.detail.find("'d_filter' needs 1200 bytes"), std::string::npos) << r.detail;
  EXPECT_NE(r.detail.find("holds 1156"), std::string::npos) << r.detail;
}

TEST_F(EvaluatorFeatures, ACaseThatDoesNotCompileIsNamed) {
  spec::Spec s = spec();
  eval::Candidate c = initial(s);
  c.source += "\n#if WIDTH == 128\n#error wide\n#endif\n";
  eval::Evaluator ev(s, options());
  const cuda::CompileResult r = ev.compile(c);
  EXPECT_FALSE(r.ok);
  EXPECT_NE(r.log.find("[compiled for case 'c' (FW=17, WIDTH=128, n_total=256)]"), std::string::npos) << r.log;
}

TEST_F(EvaluatorFeatures, AReferenceNeedNotDeclareTheConstantsItDoesNotRead) {
  // A reference that computes the answer its own way (pnpoly's computes the
  // polygon) declares no constant: compiled without those symbols.
  std::ofstream(dir_ / "ref.cu") << "extern \"C\" __global__ void ref(float* out, const float* in, int n) {}\n"
                                    "// kopt:grid 1\n// kopt:block 32\n";
  const spec::Spec s = spec();
  eval::Evaluator ev(s, options());
  const cuda::CompileResult r = ev.compile(initial(s));
  ASSERT_TRUE(r.ok) << r.log;
  const eval::EvalRequest rq = ev.build_request(initial(s), r, cuda::store_cubin(dir_ / "cache", r).string());
  EXPECT_TRUE(rq.reference.symbols.empty());
  EXPECT_EQ(rq.candidate.symbols.size(), 2u);  // a candidate must declare them (a misspelt name shows)
  // Another error in the reference is still the reference's.
  std::ofstream(dir_ / "ref.cu") << "extern \"C\" __global__ void ref(float* out, const float* in, int n) { x; }\n"
                                    "// kopt:grid 1\n// kopt:block 32\n";
  eval::Evaluator ev2(s, options());
  try {
    ev2.build_request(initial(s), r, cuda::store_cubin(dir_ / "cache", r).string());
    ADD_FAILURE() << "the reference compiled";
  } catch (const SpecError& e) {
    EXPECT_EQ(e.id(), "kopt.eval.602");
    EXPECT_NE(std::string(e.what()).find("\"x\" is undefined"), std::string::npos) << e.what();
  }
}

TEST_F(EvaluatorFeatures, ASumToleranceIsResolvedPerCaseAndConfiguration) {
  // One partial sum per block of B threads: the output's count and the
  // tolerance's partials follow the configuration.
  json doc = to_json(spec());
  doc["signature"][0]["count"] = "n_total // B";
  doc["tolerance"] = {{"out", {{"kind", "sum"}, {"terms", "n_total"}, {"totals", 2}}}};  // two halves, say
  doc["tuning"] = {{"params", {{"B", {32, 64, 48}}}}};
  const spec::Spec s = spec::parse_spec(doc, dir_ / "conv.json");
  eval::Evaluator ev(s, options());
  eval::Candidate c = initial(s);
  c.params = {{"B", 64}};
  const cuda::CompileResult r = ev.compile(c);
  ASSERT_TRUE(r.ok) << r.log;
  const std::string cubin = cuda::store_cubin(dir_ / "cache", r).string();
  const eval::EvalRequest rq = ev.build_request(c, r, cubin);
  EXPECT_EQ(rq.cases[2].tolerance.at("out").terms_value, 256);
  EXPECT_EQ(rq.cases[2].tolerance.at("out").partials_value, 2);  // 256 / 64 partials in 2 totals
  EXPECT_EQ(rq.cases[0].tolerance.at("out").partials_value, 1);  // 128 / 64
  // At B = 48 case c has 256 // 48 = 5 partials, no whole number of 2
  // totals: that configuration cannot be checked (the run records it infeasible).
  c.params = {{"B", 48}};
  try {
    ev.build_request(c, r, cubin);
    ADD_FAILURE() << "expected kopt.eval.606";
  } catch (const SpecError& e) {
    EXPECT_EQ(e.id(), "kopt.eval.606");
    EXPECT_NE(std::string(e.what()).find("$.tolerance.out"), std::string::npos) << e.what();
  }
}

// ---- device limits ----

TEST(DeviceLimits, PerArchitectureWithoutAGpu) {
  const spec::Bindings h = search::device_constants(nullptr, "sm_90");
  EXPECT_EQ(h.at("MAX_SHARED_PER_BLOCK"), 232448);
  EXPECT_EQ(h.at("MAX_STATIC_SHARED_PER_BLOCK"), 49152);
  EXPECT_EQ(h.at("MAX_THREADS_PER_BLOCK"), 1024);
  EXPECT_EQ(h.at("MAX_THREADS_PER_SM"), 2048);
  EXPECT_EQ(h.at("SM_COUNT"), 132);
  EXPECT_EQ(search::device_constants(nullptr, "sm_90a"), h);
  EXPECT_EQ(search::device_constants(nullptr, ""), h);  // no architecture: sm_90
  const spec::Bindings a = search::device_constants(nullptr, "sm_86");
  EXPECT_EQ(a.at("MAX_SHARED_PER_BLOCK"), 99 * 1024);
  EXPECT_EQ(a.at("MAX_THREADS_PER_SM"), 1536);
  EXPECT_EQ(search::device_constants(nullptr, "sm_80").at("MAX_SHARED_PER_BLOCK"), 163 * 1024);
  EXPECT_EQ(search::device_constants(nullptr, "sm_75").at("MAX_THREADS_PER_SM"), 1024);
  EXPECT_EQ(search::device_constants(nullptr, "sm_121").at("MAX_SHARED_PER_BLOCK"), 99 * 1024);  // row below
  // Every name constraints may use is bound.
  for (const std::string& n : spec::constraint_constant_names()) EXPECT_TRUE(h.count(n)) << n;
  EXPECT_EQ(h.size(), spec::constraint_constant_names().size());
  // With a device: its attributes (a Hopper's limits but sm_86's shared memory and threads, and 84 SMs).
  model::DeviceInfo d = model::hopper_limits("test device");
  d.shared_per_block_optin_bytes = 101376;
  d.max_threads_per_sm = 1536;
  d.sm_count = 84;
  const spec::Bindings g = search::device_constants(&d, "sm_90");
  EXPECT_EQ(g.at("MAX_SHARED_PER_BLOCK"), 101376);
  EXPECT_EQ(g.at("SM_COUNT"), 84);
}

TEST(DeviceLimits, TheLaunchImpliesConstraintsOnTheParameters) {
  spec::Launch l;
  l.grid[0] = spec::Expr::parse("ceil_div(N, BX)");
  l.block[0] = spec::Expr::parse("BX");
  l.block[1] = spec::Expr::parse("BY");
  l.block[2] = spec::Expr::constant(1);
  l.shared_bytes = spec::Expr::constant(0);
  l.static_shared_bytes = spec::Expr::parse("BX * BY * 4 + PAD");
  const std::vector<spec::Expr> c = search::launch_limit_constraints(l, {"BX", "BY", "PAD"});
  ASSERT_EQ(c.size(), 2u);
  EXPECT_EQ(c[0].text(), "(BX) * (BY) * (1) <= MAX_THREADS_PER_BLOCK");
  EXPECT_EQ(c[1].text(), "(BX * BY * 4 + PAD) <= MAX_STATIC_SHARED_PER_BLOCK");
  // A block that depends on a size is left to the worker; dynamic shared memory of a parameter adds the total.
  l.block[1] = spec::Expr::parse("N");
  l.shared_bytes = spec::Expr::parse("BX * 8");
  const std::vector<spec::Expr> d = search::launch_limit_constraints(l, {"BX", "BY", "PAD"});
  ASSERT_EQ(d.size(), 2u);
  EXPECT_EQ(d[1].text(), "(BX * BY * 4 + PAD) + (BX * 8) <= MAX_SHARED_PER_BLOCK");
  EXPECT_TRUE(search::names_device_limit(d[0]));
  EXPECT_FALSE(search::names_device_limit(spec::Expr::parse("BX % 32 == 0")));
}

TEST(DeviceLimits, ConfigurationsOverTheLimitsAreCountedApart) {
  const std::vector<spec::TuningParam> params = {{"BX", {32, 64, 128, 256, 512, 1024, 2048}}, {"BY", {1, 2, 4}}};
  std::vector<spec::Expr> constraints = {spec::Expr::parse("BX * BY >= 64")};
  spec::Launch l;
  l.block[0] = spec::Expr::parse("BX");
  l.block[1] = spec::Expr::parse("BY");
  l.block[2] = spec::Expr::constant(1);
  for (const spec::Expr& e : search::launch_limit_constraints(l, {"BX", "BY"})) constraints.push_back(e);
  const auto f = search::count_limit_filtered(params, constraints, search::device_constants(nullptr, "sm_90"));
  ASSERT_TRUE(f);
  // 21 configurations; BX*BY >= 64 leaves 20 (not 32x1), and 1024 threads at most 14 of those.
  EXPECT_EQ(f->space, 14u);
  EXPECT_EQ(f->filtered, 6u);
  ASSERT_EQ(f->limits.size(), 1u);
  EXPECT_EQ(f->limits[0], "(BX) * (BY) * (1) <= MAX_THREADS_PER_BLOCK");
}

// ---- generate: the launch header means what kopt computed ----

TEST(GenerateFeatures, PythonOperatorsAndDefinesInTheLaunchHeader) {
  test::TempDir dir("kopt-genf");
  const std::string kernel =
      "// kopt:entry k\n"
      "// kopt:grid (width + halo) // 32 + (width & 7 == 0), 2 ** 3 - (not width < 5), -7 // 2 + 5\n"
      "// kopt:block 64 * (32 <= width <= 4096) + 16, 1, 1\n"
      "// kopt:shared width << 2 | 1\n"
      "extern \"C\" __global__ void k(float* out, int W) {}\n";
  std::ofstream(dir / "k.cu") << kernel;
  std::ofstream(dir / "g.json") << R"J({
    "name": "g", "defines": {"FW": 5, "halo": "FW // 2 * 2", "width": "W", "W": "W"},
    "signature": [{"name": "out", "type": "float", "role": "output", "count": "width"},
                  {"name": "W", "type": "int32", "value": "W"}],
    "reference": {"kind": "kernel", "source": "k.cu", "entry": "k"},
    "cases": [{"name": "a", "sizes": {"W": 1000}}]
  })J";
  const spec::Spec s = spec::load_spec(dir / "g.json");
  const spec::LaunchDims want = spec::resolve_launch(s.launch, s.cases[0], {});
  EXPECT_EQ(want.grid, (std::array<int64_t, 3>{32, 7, 1}));
  EXPECT_EQ(want.block[0], 80);
  EXPECT_EQ(want.shared_bytes, 4001);
  const std::string h = gen::launch_header("k", kernel, s, "k.cu");
  std::ofstream(dir / "k_launch.h") << h;
  std::ofstream(dir / "use.cpp") << "#include \"k_launch.h\"\nint main() {\n"
                                 << "  kopt_k::LaunchConfig c = kopt_k::launch_config(1000);\n"
                                 << "  return c.grid[0] == 32 && c.grid[1] == 7 && c.grid[2] == 1 && c.block[0] == 80 &&\n"
                                 << "         c.shared_bytes == 4001 && kopt_k::tuned_for(1000) && !kopt_k::tuned_for(999) ? 0 : 1;\n}\n";
  const std::string cmd = "c++ -std=c++17 -Wall -Werror -o " + (dir / "use").string() + " -I" + dir.path().string() +
                          " " + (dir / "use.cpp").string() + " && " + (dir / "use").string();
  EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd << "\n" << h;
  EXPECT_NE(h.find("const long long halo = (floor_div(FW, 2) * 2);"), std::string::npos) << h;
}

// ---- the ported Kernel Tuner convolution (templates/convolution), as a user runs it ----

TEST(PortedConvolution, LoadsAndCompilesForSm90WithoutAGpu) {
  if (test::run_kopt("devices").code == 0) GTEST_SKIP() << "a CUDA device is present; this covers the compile-only path";
  test::TempDir dir("kopt-conv");
  const std::string spec = (stdfs::path(KOPT_SOURCE_DIR) / "templates" / "convolution" / "convolution.json").string();
  const test::CliRun r = test::run_kopt(
      "evaluate --spec " + spec + " --arch sm_90 --cache-dir " + (dir.path() / "cache").string() +
      " --params block_size_x=16,block_size_y=16,tile_size_x=1,tile_size_y=1,use_padding=0,read_only=0");
  EXPECT_EQ(r.code, 77) << r.err;
  const json j = json::parse(r.out);
  ASSERT_EQ(j.size(), 1u);
  EXPECT_TRUE(j[0]["compiled"].get<bool>()) << j.dump(2);
  // The search's listing: device limits counted apart, a compile past its limit recorded as such.
  const test::CliRun o = test::run_kopt("optimize --spec " + spec + " --arch sm_90 --budget evals=1 --compile-timeout 0.5 "
                                        "--cache-dir " + (dir.path() / "cache").string());
  EXPECT_EQ(o.code, 77) << o.err;
  const json listing = json::parse(o.out);
  ASSERT_TRUE(listing.contains("filtered_before_compile")) << listing.dump(2);
  EXPECT_GT(listing["filtered_before_compile"]["configurations"].get<int>(), 0);
  EXPECT_EQ(listing["valid_configurations"], listing["filtered_before_compile"]["space"]);
  EXPECT_NE(o.err.find("left out before compiling, over the device's limits"), std::string::npos) << o.err;
  // A headline, then the limits one a line (the listing has them all).
  const int left_out = listing["filtered_before_compile"]["configurations"].get<int>();
  const size_t head = o.err.find("kopt: " + std::to_string(left_out) + " configuration" + (left_out == 1 ? "" : "s") +
                                 " left out before compiling, over the device's limits; " +
                                 listing["filtered_before_compile"]["space"].dump() + " remain. The limits:\n");
  ASSERT_NE(head, std::string::npos) << o.err;
  std::string expected;
  for (const auto& limit : listing["filtered_before_compile"]["limits"]) expected += "  " + limit.get<std::string>() + "\n";
  EXPECT_FALSE(expected.empty());
  EXPECT_EQ(o.err.substr(o.err.find('\n', head) + 1, expected.size()), expected) << o.err;
  EXPECT_NE(o.err.find("KOPT_COMPILE_TIMEOUT"), std::string::npos) << o.err;
}

// compile() in parts: one per distinct set of case defines, compiled in any
// order (the pipeline runs them on separate threads), joined into what
// compile() gives; a part that fails is the joined result, named by its case.
TEST_F(EvaluatorFeatures, CompilePartsJoinIntoWhatCompileGives) {
  const spec::Spec s = spec();
  eval::Evaluator ev(s, options());
  const eval::Candidate c = initial(s);
  ASSERT_EQ(ev.compile_parts(c), 2u);  // W=64 (cases a and b), W=128
  std::vector<cuda::CompileResult> parts(2);
  parts[1] = ev.compile_part(c, 1);  // the second first: any order
  parts[0] = ev.compile_part(c, 0);
  EXPECT_EQ(ev.compiler().misses(), 2);
  const double ms = parts[0].compile_ms + parts[1].compile_ms;
  const std::string first_key = parts[0].key;
  const cuda::CompileResult joined = ev.join_parts(c, std::move(parts));
  ASSERT_TRUE(joined.ok) << joined.log;
  EXPECT_EQ(joined.key, first_key);  // the first case's module, as compile() gives
  EXPECT_DOUBLE_EQ(joined.compile_ms, ms);
  EXPECT_FALSE(joined.cache_hit);
  const cuda::CompileResult whole = ev.compile(c);
  EXPECT_TRUE(whole.cache_hit);
  EXPECT_EQ(whole.key, joined.key);

  eval::Candidate wide = c;
  wide.source += "\n#if WIDTH == 128\n#error wide\n#endif\n";
  std::vector<cuda::CompileResult> wide_parts{ev.compile_part(wide, 0), ev.compile_part(wide, 1)};
  EXPECT_TRUE(wide_parts[0].ok);
  const cuda::CompileResult failed = ev.join_parts(wide, std::move(wide_parts));
  EXPECT_FALSE(failed.ok);
  EXPECT_NE(failed.log.find("[compiled for case 'c' (FW=17, WIDTH=128, n_total=256)]"), std::string::npos) << failed.log;
  EXPECT_THROW(ev.compile_part(c, 2), std::logic_error);
}

}  // namespace
}  // namespace kopt

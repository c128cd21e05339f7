// The NVRTC options a kernel was tuned with, for the application's nvcc
// (gen/nvcc_options.h): the translation, checked against the NVRTC and nvcc
// of this machine; then `kopt generate`, which writes them to
// <name>.nvcc_options beside the generated file: from a tuning cache entry of
// the nbody template (tuned with -use_fast_math), and from the initial
// kernel with options at every level of the spec. nvcc given that file (as
// optimize_kernel() does, tests/cmake/nvcc_options_test.sh) compiles the
// generated nbody with fast math, as NVRTC did.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cuda/nvrtc.h"
#include "gen/nvcc_options.h"
#include "spec/kernel_file.h"
#include "spec/local_include.h"
#include "spec/spec.h"
#include "store/fingerprint.h"
#include "util/fs.h"

#include "cli_run.h"
#include "support/shell.h"
#include "temp_dir.h"

namespace {

namespace fsys = std::filesystem;
using kopt::gen::DroppedOption;
using kopt::gen::NvccOptions;
using kopt::gen::nvcc_options;
using Strings = std::vector<std::string>;

const char* const kNvcc = "/usr/local/cuda/bin/nvcc";

Strings options_of(const std::vector<DroppedOption>& d) {
  Strings out;
  for (const DroppedOption& o : d) out.push_back(o.option);
  return out;
}

std::string why_of(const std::vector<DroppedOption>& d, const std::string& option) {
  for (const DroppedOption& o : d)
    if (o.option == option) return o.why;
  return "(not there)";
}

TEST(NvccOptions, FastMathAndTheFloatingPointSwitchesKeepTheirMeaning) {
  const NvccOptions n = nvcc_options({"-use_fast_math", "--ftz=true", "-prec-div=false", "-prec-sqrt", "false",
                                      "--fmad=false", "-extra-device-vectorization"},
                                     "/w");
  EXPECT_EQ(n.options, (Strings{"--use_fast_math", "--ftz=true", "--prec-div=false", "--prec-sqrt=false",
                                "--fmad=false", "--extra-device-vectorization"}));
  EXPECT_TRUE(n.left_out.empty() && n.not_translated.empty());
  // Both of NVRTC's spellings are one option; each is written once.
  EXPECT_EQ(nvcc_options({"--use_fast_math", "-use_fast_math"}, "/w").options, Strings{"--use_fast_math"});
}

// NVRTC's forms: long or short name, one dash or two, the value after '=' or
// in the next element; -D, -U and -I with the value attached, after '=' or
// blanks. A relative include folder is where NVRTC looked: kopt's folder.
TEST(NvccOptions, EveryFormNvrtcReads) {
  const NvccOptions n = nvcc_options({"-DA=1", "-D=B", "-D C=2", "-D", "D", "--define-macro=E=3", "-UF", "-Iinc",
                                      "-I /abs/inc", "--include-path=../up", "-include=pre.h", "-std=c++20",
                                      "-maxrregcount=64", "--maxrregcount", "32", "-lineinfo", "-G", "-dopt", "on",
                                      "-Xptxas", "-v", "--ptxas-options=-O2", "-Ofc=max", "-jtd=50", "-restrict",
                                      "-w", "-err-no", "-diag-suppress=177", "-device-stack-protector=true",
                                      "-frandom-seed=7", "-ewp", "-brief-diag=true"},
                                     "/work/dir");
  EXPECT_EQ(n.options,
            (Strings{"-DA=1", "-DB", "-DC=2", "-DD", "-DE=3", "-UF", "-I/work/dir/inc", "-I/abs/inc", "-I/work/up",
                     "--pre-include=pre.h", "--std=c++20", "--maxrregcount=64", "--maxrregcount=32",
                     "--generate-line-info", "--device-debug", "--dopt=on", "--ptxas-options=-v",
                     "--ptxas-options=-O2", "--Ofast-compile=max", "--jump-table-density=50", "--restrict",
                     "--disable-warnings", "--display-error-number", "--diag-suppress=177",
                     "--device-stack-protector=true", "--frandom-seed=7", "--extensible-whole-program",
                     "--brief-diagnostics=true"}));
  EXPECT_TRUE(n.left_out.empty()) << options_of(n.left_out).size();
  EXPECT_TRUE(n.not_translated.empty()) << (n.not_translated.empty() ? "" : n.not_translated[0].option);
}

// What the build decides itself, or what changes nothing in the code: left
// out, each with its reason; -arch of an architecture-specific target says
// what the build needs.
TEST(NvccOptions, WhatTheBuildDecidesOrWhatMakesNoCodeIsLeftOutWithAReason) {
  const NvccOptions n = nvcc_options({"-arch=sm_90", "--gpu-architecture", "sm_90a", "-rdc=false", "-dw",
                                      "-split-compile=0", "-no-cache", "-minimal", "-pch", "-time=-",
                                      "-builtin-move-forward=false", "-modify-stack-limit=false", "-device-int128",
                                      "-no-source-include", "-opt-info=inline"},
                                     "/w");
  EXPECT_TRUE(n.options.empty());
  EXPECT_TRUE(n.not_translated.empty());
  EXPECT_EQ(options_of(n.left_out),
            (Strings{"-arch=sm_90", "--gpu-architecture sm_90a", "-rdc=false", "-dw", "-split-compile=0", "-no-cache",
                     "-minimal", "-pch", "-time=-", "-builtin-move-forward=false", "-modify-stack-limit=false",
                     "-device-int128", "-no-source-include", "-opt-info=inline"}));
  EXPECT_EQ(why_of(n.left_out, "-arch=sm_90"),
            "the build's CUDA_ARCHITECTURES chooses the GPU code; kopt compiled for sm_90");
  EXPECT_NE(why_of(n.left_out, "--gpu-architecture sm_90a").find("build it with CUDA_ARCHITECTURES 90a"),
            std::string::npos);
  EXPECT_NE(why_of(n.left_out, "-split-compile=0").find("not the code"), std::string::npos);
}

// What kopt cannot give nvcc is never dropped in silence: each is named, with
// why, for generate's warning.
TEST(NvccOptions, WhatCannotBeTranslatedIsNamedWithWhy) {
  const NvccOptions n = nvcc_options({"-rdc=true", "-dc", "-dlto", "-default-device", "-device-float128", "-O3",
                                      "-DQ=\"s\"", "-DP=a\\b", "-use_fast_math=true", "stray", "-fdevice-syntax-only",
                                      "-optix-ir", "-Xptxas"},
                                     "/w");
  EXPECT_TRUE(n.options.empty()) << n.options[0];
  EXPECT_TRUE(n.left_out.empty());
  EXPECT_EQ(options_of(n.not_translated),
            (Strings{"-rdc=true", "-dc", "-dlto", "-default-device", "-device-float128", "-O3", "-DQ=\"s\"",
                     "-DP=a\\b", "-use_fast_math=true", "stray", "-fdevice-syntax-only", "-optix-ir", "-Xptxas"}));
  EXPECT_NE(why_of(n.not_translated, "-rdc=true").find("relocatable device code"), std::string::npos);
  EXPECT_EQ(why_of(n.not_translated, "-default-device").find("nvcc has no such option"), 0u);
  EXPECT_EQ(why_of(n.not_translated, "-O3"), "not an NVRTC option kopt knows (nvrtc.h, CUDA 13.0)");
  EXPECT_NE(why_of(n.not_translated, "-DQ=\"s\"").find("--options-file cannot hold a quote"), std::string::npos);
  EXPECT_EQ(why_of(n.not_translated, "-use_fast_math=true"), "it takes no value");
  EXPECT_EQ(why_of(n.not_translated, "-Xptxas"), "it needs a value");
}

TEST(NvccOptions, TheOptionsFileQuotesBlanks) {
  EXPECT_EQ(kopt::gen::options_file_text({}), "");
  EXPECT_EQ(kopt::gen::options_file_text({"--use_fast_math", "-DX=a b"}), "--use_fast_math\n\"-DX=a b\"\n");
}

// The table against the compilers of this machine: NVRTC takes every input,
// and nvcc, reading the options file, takes every translation.
TEST(NvccOptions, NvrtcTakesTheInputsAndNvccTheTranslations) {
  const Strings nvrtc = {"-use_fast_math", "-ftz=false", "-prec-div=true", "-prec-sqrt=true", "-fmad=true",
                         "-extra-device-vectorization", "-DA=a b", "-UB", "-maxrregcount=64", "-lineinfo", "-dopt=on",
                         "-Xptxas=-O3", "-Ofc=0", "-jtd=50", "-restrict", "-w", "-err-no", "-diag-suppress=177",
                         "-device-stack-protector=false", "-frandom-seed=7", "-std=c++17", "-brief-diag=false",
                         "--include-path=inc"};
  kopt::test::TempDir d("kopt-nvcc-options");
  fsys::create_directories(d.path() / "inc");
  const std::string src = "__global__ void k(float* x) { x[0] = sqrtf(x[1]) / x[2]; }\n";
  kopt::cuda::CompileRequest r;
  r.source = src;
  r.entry = "k";
  r.arch = "sm_90";
  r.options = nvrtc;
  r.options.back() = "--include-path=" + (d.path() / "inc").string();
  const kopt::cuda::CompileResult c = kopt::cuda::Compiler().compile(r);
  ASSERT_TRUE(c.ok) << c.log;

  const NvccOptions n = nvcc_options(nvrtc, d.path());
  ASSERT_EQ(n.options.size(), nvrtc.size());
  if (!fsys::exists(kNvcc)) GTEST_SKIP() << "nvcc not found at " << kNvcc;
  std::ofstream(d.path() / "k.cu") << src;
  std::ofstream(d.path() / "k.nvcc_options") << kopt::gen::options_file_text(n.options);
  const kopt::test::ShellRun run = kopt::test::run_shell(
      std::string(kNvcc) + " -arch=sm_90 -c -o " + (d.path() / "k.o").string() + " --options-file=" +
          (d.path() / "k.nvcc_options").string() + " " + (d.path() / "k.cu").string(),
      kopt::test::Stderr::into_out);
  EXPECT_EQ(run.code, 0) << run.out;
  EXPECT_EQ(run.out.find("nvcc fatal"), std::string::npos) << run.out;
}

// ---------------------------------------------------------------------------
// kopt generate

const std::string kNbodyDir = std::string(KOPT_SOURCE_DIR) + "/templates/nbody/";
const std::map<std::string, int64_t> kNbodyConfig = {
    {"BLOCK_SIZE", 128}, {"OUTER_UNROLL_FACTOR", 2}, {"INNER_UNROLL_FACTOR1", 4}, {"INNER_UNROLL_FACTOR2", 2},
    {"USE_SOA", 0},      {"LOCAL_MEM", 1},           {"USE_CONSTANT_MEMORY", 0}, {"VECTOR_TYPE", 1}};

/// A run's best.cu of templates/nbody with kNbodyConfig, compiled with `options`
/// (its kopt:options line).
std::string nbody_best_cu(const Strings& options) {
  kopt::spec::SelfContainedKernel k;
  k.header.title = "best.cu: nbody";
  k.entry = "nbody_kernel";
  k.compile_options = options;
  k.params = kNbodyConfig;
  k.source = kopt::spec::read_kernel_text(kNbodyDir + "nbody.cu");
  return kopt::spec::self_contained_kernel_file(k);
}

/// `kopt generate --no-tune` of templates/nbody from a tuning cache entry
/// whose kernel, or (with several) whose shape-specialised variants, were
/// compiled with `options`: by default the template's -use_fast_math (and,
/// here, the -arch a kernel file may carry). Returns the run; the files in
/// dir/out.
kopt::test::CliRun generate_nbody(const fsys::path& dir,
                                  const std::vector<Strings>& options = {{"-use_fast_math", "-arch=sm_90"}},
                                  const std::string& flags = "") {
  const kopt::spec::Spec spec = kopt::spec::load_spec(kNbodyDir + "nbody.json");
  nlohmann::json entry = {{"workload", "nbody"},
                          {"spec_hash", kopt::store::spec_fingerprint(spec)},
                          {"gpu", {{"name", "NVIDIA H100 80GB HBM3"}, {"compute_capability", "9.0"}}},
                          {"kernel_source", nbody_best_cu(options[0])},
                          {"params", kNbodyConfig}};
  for (size_t i = 0; options.size() > 1 && i < options.size(); ++i)
    entry["variants"].push_back({{"label", "v" + std::to_string(i)},
                                 {"kernel_source", nbody_best_cu(options[i])},
                                 {"shapes", {{{"n", 4096 << (4 * i)}}}}});
  std::ofstream(dir / "cache.json") << nlohmann::json{{"format_version", 1}, {"entries", {entry}}}.dump(1);
  return kopt::test::run_kopt("generate --spec " + kNbodyDir + "nbody.json --name nbody --no-tune --cache-file " +
                              (dir / "cache.json").string() + " --out-dir " + (dir / "out").string() + flags);
}

TEST(GenerateOptions, TheTunedKernelsOptionsAreWrittenForNvcc) {
  kopt::test::TempDir d("kopt-gen-options");
  const kopt::test::CliRun r = generate_nbody(d.path());
  ASSERT_EQ(r.code, 0) << r.err;
  const fsys::path out = d.path() / "out";
  EXPECT_EQ(kopt::fs::read_file(out / "nbody.nvcc_options"), "--use_fast_math\n");
  const std::string cu = kopt::fs::read_file(out / "nbody.cu");
  EXPECT_NE(cu.find("\n// nvcc options, as kopt compiled the kernel (nbody.nvcc_options, which optimize_kernel() "
                    "passes to nvcc with --options-file): --use_fast_math\n"),
            std::string::npos)
      << cu.substr(0, 600);
  EXPECT_NE(cu.find("\n// NVRTC options left out for nvcc: -arch=sm_90 (the build's CUDA_ARCHITECTURES"),
            std::string::npos)
      << cu.substr(0, 600);
  EXPECT_NE(cu.find("// kopt:options -use_fast_math -arch=sm_90\n"), std::string::npos);
  EXPECT_EQ(nlohmann::json::parse(kopt::fs::read_file(out / "nbody.json"))["nvcc_options"],
            nlohmann::json::array({"--use_fast_math"}));
  EXPECT_NE(r.err.find("kopt generate: nbody.nvcc_options: --use_fast_math\n"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("kopt generate: nbody.cu: NVRTC option '-arch=sm_90' (the kernel's kopt:options line) is left "
                       "out of nbody.nvcc_options: the build's CUDA_ARCHITECTURES chooses the GPU code"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(r.err.find("warning"), std::string::npos) << r.err;
}

// Shape-specialised variants share one file, so one set of options: variants
// compiled with others are refused, naming both sets and what to do, and
// nothing is written; variant 0 alone (--no-specialize) is generated.
TEST(GenerateOptions, VariantsCompiledWithOtherOptionsAreRefused) {
  kopt::test::TempDir d("kopt-gen-options");
  const kopt::test::CliRun same = generate_nbody(d.path(), {{"-use_fast_math"}, {"-use_fast_math"}});
  ASSERT_EQ(same.code, 0) << same.err;
  EXPECT_NE(same.err.find("2 shape-specialised variants"), std::string::npos) << same.err;
  EXPECT_EQ(kopt::fs::read_file(d.path() / "out" / "nbody.nvcc_options"), "--use_fast_math\n");

  kopt::test::TempDir e("kopt-gen-options");
  const kopt::test::CliRun other = generate_nbody(e.path(), {{"-use_fast_math"}, {}});
  EXPECT_EQ(other.code, 2) << other.err;
  EXPECT_NE(other.first_err_line().find("[kopt.gen.110]"), std::string::npos) << other.err;
  EXPECT_NE(other.err.find(": variant 1 was compiled with the options none, variant 0 with '-use_fast_math': one "
                           "generated file (nbody.cu) compiles all its variants with one set of options "
                           "(nbody.nvcc_options). Generate variant 0 alone (kopt generate --no-specialize)"),
            std::string::npos)
      << other.err;
  EXPECT_FALSE(fsys::exists(e.path() / "out" / "nbody.cu"));
  EXPECT_FALSE(fsys::exists(e.path() / "out" / "nbody.nvcc_options"));
  const kopt::test::CliRun alone = generate_nbody(e.path(), {{"-use_fast_math"}, {}}, " --no-specialize");
  ASSERT_EQ(alone.code, 0) << alone.err;
  EXPECT_EQ(kopt::fs::read_file(e.path() / "out" / "nbody.nvcc_options"), "--use_fast_math\n");
}

/// The PTX nvcc makes of `cu` for sm_90, with `options_file` when given.
std::string nvcc_ptx(const fsys::path& cu, const fsys::path& options_file = {}) {
  const fsys::path ptx = cu.string() + (options_file.empty() ? ".plain.ptx" : ".optf.ptx");
  std::string cmd = std::string(kNvcc) + " -std=c++17 -arch=sm_90 -ptx -o " + ptx.string();
  if (!options_file.empty()) cmd += " --options-file=" + options_file.string();
  const kopt::test::ShellRun run = kopt::test::run_shell(cmd + " " + cu.string(), kopt::test::Stderr::into_out);
  EXPECT_EQ(run.code, 0) << cmd << "\n" << run.out;
  return run.code == 0 ? kopt::fs::read_file(ptx) : "";
}

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// nvcc with the options file makes the fast-math code NVRTC made while tuning
// (denormals flushed: .ftz instructions); without it, IEEE code, which was
// neither tuned nor validated.
TEST(GenerateOptions, NvccWithTheOptionsFileCompilesTheKernelThatWasTuned) {
  if (!fsys::exists(kNvcc)) GTEST_SKIP() << "nvcc not found at " << kNvcc;
  kopt::test::TempDir d("kopt-gen-options");
  ASSERT_EQ(generate_nbody(d.path()).code, 0);
  const fsys::path cu = d.path() / "out" / "nbody.cu";
  const std::string with = nvcc_ptx(cu, d.path() / "out" / "nbody.nvcc_options");
  const std::string without = nvcc_ptx(cu);
  EXPECT_GT(count(with, ".ftz.f32"), 0u);
  EXPECT_EQ(count(without, ".ftz.f32"), 0u);
}

// The initial kernel, when nothing was tuned: the spec's options of every
// level and the file's own line, in the order NVRTC gets them (the spec's
// tuning.compile_options, then the kernel's: its kopt:options line, then its
// compile_options); its compile_options join its kopt:options line, so that
// `kopt evaluate` of the file compiles it so too; an option nvcc cannot take
// is a warning that names it and where it came from.
TEST(GenerateOptions, TheInitialKernelsOptionsFromEveryLevel) {
  kopt::test::TempDir d("kopt-gen-options");
  std::ofstream(d.path() / "initial.cu") << "// kopt:entry scale\n// kopt:options -lineinfo\n"
                                            "extern \"C\" __global__ void scale(float* x, int n) {\n"
                                            "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
                                            "  if (i < n) x[i] = 1.0f / sqrtf(x[i]);\n}\n";
  std::ofstream(d.path() / "k.json") << R"json({"name": "scale",
 "signature": [{"name": "x", "type": "float", "role": "inout", "count": "n"}, {"name": "n", "type": "int32", "value": "n"}],
 "launch": {"grid": ["ceil_div(n, 128)", 1, 1], "block": [128, 1, 1]},
 "initial": {"source": "initial.cu", "entry": "scale", "compile_options": ["-maxrregcount=32", "-use_fast_math"]},
 "reference": {"kind": "kernel", "source": "initial.cu", "entry": "scale"},
 "cases": [{"name": "n1", "role": "correctness", "sizes": {"n": 1}}, {"name": "n4k", "role": "performance", "sizes": {"n": 4096}}],
 "tuning": {"compile_options": ["-use_fast_math", "-default-device"]}})json";
  const kopt::test::CliRun r = kopt::test::run_kopt("generate --spec " + (d.path() / "k.json").string() +
                                                    " --name k --no-tune --out-dir " + (d.path() / "out").string());
  ASSERT_EQ(r.code, 0) << r.err;
  const fsys::path out = d.path() / "out";
  EXPECT_EQ(kopt::fs::read_file(out / "k.nvcc_options"), "--use_fast_math\n--generate-line-info\n--maxrregcount=32\n");
  const std::string cu = kopt::fs::read_file(out / "k.cu");
  EXPECT_NE(cu.find("// kopt:options -lineinfo -maxrregcount=32 -use_fast_math\n"), std::string::npos) << cu;
  EXPECT_NE(cu.find("// kopt-superseded:options -lineinfo\n"), std::string::npos) << cu;
  EXPECT_NE(cu.find("\n// NVRTC options kopt compiled the kernel with that nvcc does not get: -default-device (nvcc "
                    "has no such option"),
            std::string::npos)
      << cu;
  EXPECT_NE(r.err.find("kopt generate: warning: k.cu: NVRTC option '-default-device' (the spec's "
                       "tuning.compile_options) has no nvcc translation (nvcc has no such option"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("the build compiles the kernel without it, unlike kopt, which checked and timed it with it"),
            std::string::npos)
      << r.err;
  // The file's options as kopt reads them back (kopt evaluate --kernel).
  const kopt::spec::Annotations a = kopt::spec::parse_annotations(cu, "k.cu");
  EXPECT_EQ(a.options, (Strings{"-lineinfo", "-maxrregcount=32", "-use_fast_math"}));
}

// Without options, an empty file (nvcc takes it) and no comment line.
TEST(GenerateOptions, NoOptionsAnEmptyFile) {
  kopt::test::TempDir d("kopt-gen-options");
  const kopt::test::CliRun r = kopt::test::run_kopt("generate --spec " + std::string(KOPT_SOURCE_DIR) +
                                                    "/docs/first-kernel/affine.json --name k --no-tune --out-dir " +
                                                    (d.path() / "out").string());
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(fsys::exists(d.path() / "out" / "k.nvcc_options"));
  EXPECT_EQ(kopt::fs::read_file(d.path() / "out" / "k.nvcc_options"), "");
  EXPECT_EQ(kopt::fs::read_file(d.path() / "out" / "k.cu").find("nvcc options"), std::string::npos);
}

}  // namespace

// `#pragma unroll NAME` in a file written by `kopt generate` (gen/unroll_pragma.h):
// NVRTC, which kopt tunes with, expands macros there and nvcc does not, so the
// generated file carries the value (or KOPT_PRAGMA_UNROLL). The text, then the
// reduction and hotspot templates through `kopt generate`: NVRTC makes the same
// cubin of the generated file as of the template with the tuned -D values, and
// nvcc compiles it.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cuda/nvrtc.h"
#include "gen/unroll_pragma.h"
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
using kopt::gen::rewrite_unroll_pragmas;
using kopt::gen::UnrollNames;
using kopt::gen::UnrollRewrite;

UnrollRewrite rewrite(const std::string& src, const std::map<std::string, int64_t>& fixed,
                      const std::set<std::string>& macros = {}) {
  UnrollNames names;
  names.fixed = fixed;
  names.macros = macros;
  return rewrite_unroll_pragmas(src, names);
}

size_t lines(const std::string& s) { return static_cast<size_t>(std::count(s.begin(), s.end(), '\n')); }

const std::string kLoop = "  for (int i = 0; i < n; ++i) s += a[i];\n";

TEST(UnrollPragma, ATuningParameterBecomesItsValueAndOneKeepsTheLoopRolled) {
  const std::string src = "  #pragma unroll loop_unroll_factor_0\n" + kLoop;
  const UnrollRewrite by8 = rewrite(src, {{"loop_unroll_factor_0", 8}});
  EXPECT_EQ(by8.source, "  #pragma unroll 8 /* loop_unroll_factor_0 */\n" + kLoop);
  EXPECT_EQ(by8.valued, std::vector<std::string>{"loop_unroll_factor_0=8"});
  EXPECT_TRUE(by8.left_out.empty() && by8.through_macro.empty());
  EXPECT_EQ(rewrite(src, {{"loop_unroll_factor_0", 1}}).source, "  #pragma unroll 1 /* loop_unroll_factor_0 */\n" + kLoop);
  // Spaces in the directive, a comment after it: the comment stays.
  EXPECT_EQ(rewrite("# pragma  unroll  F // why\n", {{"F", 4}}).source, "#pragma unroll 4 /* F */ // why\n");
}

// NVRTC ignores `#pragma unroll 0` (warning #20168-D), so the generated file
// leaves the pragma out, in a comment on the same line.
TEST(UnrollPragma, AValueBelowOneLeavesThePragmaOutOnItsLine) {
  for (int64_t v : {0, -2}) {
    const std::string src = "  #pragma unroll F /* open\n  still a comment */\n" + kLoop;
    const UnrollRewrite r = rewrite(src, {{"F", v}});
    EXPECT_EQ(r.source, "  /* #pragma unroll F (= " + std::to_string(v) +
                            ") left out: NVRTC and nvcc ignore a value below 1 (warning #20168-D) */"
                            " /* open\n  still a comment */\n" + kLoop);
    EXPECT_EQ(r.left_out, std::vector<std::string>{"F=" + std::to_string(v)});
    EXPECT_EQ(lines(r.source), lines(src));
  }
}

TEST(UnrollPragma, ThePragmaOperatorToo) {
  EXPECT_EQ(rewrite("#define U _Pragma ( \"unroll F\" )\n", {{"F", 16}}).source,
            "#define U _Pragma(\"unroll 16\") /* F */\n");
  const UnrollRewrite zero = rewrite("  _Pragma(\"unroll F\") for (;;) {}\n", {{"F", 0}});
  EXPECT_EQ(zero.source.find("_Pragma(\"unroll F\") (= 0) left out"), 5u) << zero.source;
  EXPECT_EQ(zero.source.substr(0, 5), "  /* ");
}

// `#define PRAGMA(x) _Pragma(#x)` then `PRAGMA(unroll F)`: the # stringizes F
// unexpanded, NVRTC expands it in the pragma and nvcc does not, so the use is
// rewritten as a pragma is.
TEST(UnrollPragma, AMacroThatStringizesItsArgumentIntoThePragma) {
  const std::string def = "#define PRAGMA(x) _Pragma(#x)\n";
  const UnrollRewrite r = rewrite(def + "  PRAGMA( unroll F )\n" + kLoop, {{"F", 8}});
  EXPECT_EQ(r.source, def + "  PRAGMA(unroll 8) /* F */\n" + kLoop);
  EXPECT_EQ(r.valued, std::vector<std::string>{"F=8"});
  // #__VA_ARGS__, and a name the file does not fix: KOPT_PRAGMA_UNROLL stands
  // for the macro, whose body is the pragma alone.
  const std::string va = "#define DO_PRAGMA(...) _Pragma( # __VA_ARGS__ )\n";
  const UnrollRewrite m = rewrite(va + "DO_PRAGMA(unroll W)\n", {}, {"W"});
  EXPECT_EQ(m.source, va + "KOPT_PRAGMA_UNROLL(W)\n");
  EXPECT_EQ(m.through_macro.size(), 1u);
  // A body that does more than the pragma: left as it is, and reported.
  const std::string more = "#define LOOP(x) _Pragma(#x) for (int i = 0; i < 4; ++i)\n";
  const UnrollRewrite kept = rewrite(more + "LOOP(unroll W) s += i;\n", {}, {"W"});
  EXPECT_EQ(kept.source, more + "LOOP(unroll W) s += i;\n");
  ASSERT_EQ(kept.not_rewritten.size(), 1u);
  EXPECT_NE(kept.not_rewritten[0].find("line 2: LOOP(unroll W)"), std::string::npos) << kept.not_rewritten[0];
  // Its value can still be written: a fixed name.
  EXPECT_EQ(rewrite(more + "LOOP(unroll F) s += i;\n", {{"F", 2}}).source, more + "LOOP(unroll 2) /* F */ s += i;\n");
  // Other uses of the macro, and macros that do not stringize, are not touched.
  const std::string other = def + "PRAGMA(nounroll)\n#define Q(x) x\nQ(unroll F)\n";
  EXPECT_EQ(rewrite(other, {{"F", 8}}).source, other);
}

// What the stringizing-macro rewrite must not do (each found by a review):
// drop a macro's other code, read the wrong definition, reach into another
// macro's parameters, or miss a use nvcc would then refuse.
TEST(UnrollPragma, AStringizingMacroIsRewrittenOnlyWhereItsMeaningIsKnown) {
  // A value below 1 through a macro that also opens the loop: the use stays.
  const std::string loop = "#define LOOP(x) _Pragma(#x) for (int i = 0; i < n; ++i)\n";
  EXPECT_EQ(rewrite(loop + "LOOP(unroll F) s += x[i];\n", {{"F", 0}}).source,
            loop + "LOOP(unroll 0) /* F */ s += x[i];\n");
  // #undef'd or #defined twice: which definition a use sees is not read here.
  const std::string twice = "#define P(x) _Pragma(#x)\nP(unroll W)\n#undef P\n#define P(x)\nP(unroll W)\n";
  const UnrollRewrite t = rewrite(twice, {}, {"W"});
  EXPECT_EQ(t.source, twice);
  EXPECT_EQ(t.not_rewritten.size(), 2u);
  // A definition in a comment is none.
  const std::string commented = "/* #define P(x) _Pragma(#x) */\nP(unroll F)\n";
  EXPECT_EQ(rewrite(commented, {{"F", 8}}).source, commented);
  // In another macro's body, an argument naming that macro's parameter is its own.
  const std::string outer = "#define PRAGMA(x) _Pragma(#x)\n#define UNROLL(F) PRAGMA(unroll F)\nUNROLL(2)\n";
  EXPECT_EQ(rewrite(outer, {{"F", 8}}).source, outer);
  // A parenthesised argument, and a definition continued over two lines.
  const std::string cont = "#define PRAGMA(x) \\\n  _Pragma(#x)\nPRAGMA(unroll (F * 2))\n";
  EXPECT_EQ(rewrite(cont, {{"F", 4}}).source,
            "#define PRAGMA(x) \\\n  _Pragma(#x)\nPRAGMA(unroll 8) /* (F * 2) */\n");
  // A macro named R does not hide a raw string literal.
  const std::string raw = "#define R(x) _Pragma(#x)\nconst char* t = R\"(R(unroll F))\";\n";
  EXPECT_EQ(rewrite(raw, {{"F", 8}}).source, raw);
}

TEST(UnrollPragma, AnExpressionOfCsOperatorsIsEvaluatedAndOthersGoThroughTheMacro) {
  EXPECT_EQ(rewrite("#pragma unroll (F * 2 + G)\n", {{"F", 4}, {"G", 1}}).source, "#pragma unroll 9 /* (F * 2 + G) */\n");
  // '&' binds as in Python in kopt's expressions: not evaluated here.
  const UnrollRewrite bitwise = rewrite("#pragma unroll F & 6\n", {{"F", 4}});
  EXPECT_EQ(bitwise.source, "KOPT_PRAGMA_UNROLL(F & 6)\n");
  ASSERT_EQ(bitwise.through_macro.size(), 1u);
  EXPECT_NE(bitwise.through_macro[0].find("C's operators"), std::string::npos) << bitwise.through_macro[0];
  // A name the file does not fix beside one it does (a C++ constant K).
  EXPECT_EQ(rewrite("#pragma unroll (F * K)\n", {{"F", 4}}).source, "KOPT_PRAGMA_UNROLL((F * K))\n");
}

TEST(UnrollPragma, WithoutAMacroThePragmaStaysAsItIs) {
  const std::string src = "#pragma unroll\n#pragma unroll 4\n#pragma unroll K\n#pragma unroll (8u)\n"
                          "#pragma unrolled F\n#pragma nounroll\n_Pragma(\"unroll\")\n";
  const UnrollRewrite r = rewrite(src, {{"F", 4}});
  EXPECT_EQ(r.source, src);
  EXPECT_TRUE(r.valued.empty() && r.through_macro.empty() && r.left_out.empty());
}

TEST(UnrollPragma, CommentsAndLiteralsAreNotTouched) {
  const std::string src = "// #pragma unroll F\n/*\n#pragma unroll F\n*/\nconst char* s = \"_Pragma(\\\"unroll F\\\")\";\n"
                          "const char* r = R\"x(\n#pragma unroll F\n)x\";\nint k = 1'000; char c = '#';\n"
                          "#pragma unroll F\n";
  const UnrollRewrite r = rewrite(src, {{"F", 2}});
  EXPECT_EQ(r.source, src.substr(0, src.size() - 17) + "#pragma unroll 2 /* F */\n");
  EXPECT_EQ(r.valued.size(), 1u);
}

// The value at the pragma is the preprocessor's where the source defines the
// name again, or the name is the application's -D or a macro of the source:
// KOPT_PRAGMA_UNROLL. Defaults under `#ifndef X`, X a name the file fixes
// (hotspot's under `#ifndef kernel_tuner`), are skipped there and do not count.
TEST(UnrollPragma, AMacroTheFileDoesNotFixGoesThroughKoptPragmaUnroll) {
  const std::string defaults = "#ifndef kernel_tuner\n  #define loop_unroll_factor_t 1\n#endif\n";
  const std::string pragma = "  #pragma unroll loop_unroll_factor_t\n";
  EXPECT_EQ(rewrite(defaults + pragma, {{"loop_unroll_factor_t", 5}, {"kernel_tuner", 1}}).source,
            defaults + "  #pragma unroll 5 /* loop_unroll_factor_t */\n");
  const UnrollRewrite again = rewrite(defaults + pragma, {{"loop_unroll_factor_t", 5}});
  EXPECT_EQ(again.source, defaults + "  KOPT_PRAGMA_UNROLL(loop_unroll_factor_t)\n");
  ASSERT_EQ(again.through_macro.size(), 1u);
  EXPECT_NE(again.through_macro[0].find("#defined again"), std::string::npos) << again.through_macro[0];
  // Its #else branch is compiled; so is a nested #if's, unless skipped itself.
  const std::string branches = "#ifndef kernel_tuner\n#if A\n#define F 1\n#endif\n#else\n#define G 2\n#endif\n"
                               "#pragma unroll F\n#pragma unroll G\n";
  EXPECT_EQ(rewrite(branches, {{"F", 4}, {"G", 4}, {"kernel_tuner", 1}}).source,
            branches.substr(0, branches.size() - 34) + "#pragma unroll 4 /* F */\nKOPT_PRAGMA_UNROLL(G)\n");
  // A default right under `#ifndef NAME` (best.cu's own #defines, a guarded
  // default) is not: the generated value comes first.
  EXPECT_EQ(rewrite("#ifndef F\n\n#define F 2\n#endif\n#pragma unroll F\n", {{"F", 8}}).source,
            "#ifndef F\n\n#define F 2\n#endif\n#pragma unroll 8 /* F */\n");
  EXPECT_EQ(rewrite("#undef F\n#pragma unroll F\n", {{"F", 8}}).source, "#undef F\nKOPT_PRAGMA_UNROLL(F)\n");
  const UnrollRewrite sized = rewrite("#pragma unroll W\n", {}, {"W"});
  EXPECT_EQ(sized.source, "KOPT_PRAGMA_UNROLL(W)\n");
  EXPECT_NE(sized.through_macro.at(0).find("depends on the sizes"), std::string::npos);
  EXPECT_EQ(rewrite("#define TW (F * 2)\n#pragma unroll TW\n", {{"F", 8}}).source,
            "#define TW (F * 2)\nKOPT_PRAGMA_UNROLL(TW)\n");
  // A directive continued on the next line is left, and said.
  const UnrollRewrite cont = rewrite("\n#pragma unroll F \\\n  * 2\n", {{"F", 8}});
  EXPECT_EQ(cont.source, "\n#pragma unroll F \\\n  * 2\n");
  EXPECT_EQ(cont.continued, std::vector<std::string>{"line 2: F \\"});
}

// ---------------------------------------------------------------------------
// Templates through `kopt generate`: the reduction (`#pragma unroll
// loop_unroll_factor_0`) and hotspot (`#pragma unroll loop_unroll_factor_t`,
// its defaults under `#ifndef kernel_tuner`, its grid size the application's -D).

struct Template {
  std::string name;  // templates/<name>/<name>.json and .cu
  std::string entry;
  std::string unroll;                          // the tuning parameter named in the pragma
  std::map<std::string, int64_t> params;       // the other tuning parameters
  std::map<std::string, int64_t> application;  // -D the application's build gives (sizes)
  std::string dir() const { return std::string(KOPT_SOURCE_DIR) + "/templates/" + name + "/"; }
  std::map<std::string, int64_t> config(int64_t factor) const {
    std::map<std::string, int64_t> c = params;
    c[unroll] = factor;
    return c;
  }
};

const Template kReduction{"reduction", "sum_floats", "loop_unroll_factor_0",
                          {{"block_size_x", 256}, {"vector", 4}, {"num_blocks", 1024}, {"use_shuffle", 1}}, {}};
const Template kHotspot{"hotspot", "calculate_temp", "loop_unroll_factor_t",
                        {{"block_size_x", 32}, {"block_size_y", 8}, {"block_size_z", 1}, {"tile_size_x", 1},
                         {"tile_size_y", 1}, {"sh_power", 0}, {"blocks_per_sm", 0}},
                        {{"grid_width", 4096}, {"grid_height", 4096}}};

/// A variant as a run folder's best.cu holds it.
std::string best_cu(const Template& t, int64_t factor) {
  kopt::spec::SelfContainedKernel k;
  k.header.title = t.name + ", " + t.unroll + "=" + std::to_string(factor);
  k.entry = t.entry;
  k.params = t.config(factor);
  k.source = kopt::spec::read_kernel_text(t.dir() + t.name + ".cu");
  return kopt::spec::self_contained_kernel_file(k);
}

/// `kopt generate --no-tune` of the template's spec from a tuning cache entry
/// of these variants (one per unroll factor; with several, each tuned on one
/// of the reduction's sizes); the generated .cu's path, stderr in `err`.
fsys::path generate(const fsys::path& dir, const Template& t, const std::vector<int64_t>& factors, std::string* err) {
  const kopt::spec::Spec spec = kopt::spec::load_spec(t.dir() + t.name + ".json");
  nlohmann::json entry = {{"workload", t.name},
                          {"spec_hash", kopt::store::spec_fingerprint(spec)},
                          {"gpu", {{"name", "NVIDIA H100 80GB HBM3"}, {"compute_capability", "9.0"}}},
                          {"kernel_source", best_cu(t, factors[0])},
                          {"params", t.config(factors[0])}};
  if (factors.size() > 1) {
    const int64_t sizes[] = {4, 4100, 800000000};
    for (size_t i = 0; i < factors.size(); ++i)
      entry["variants"].push_back({{"label", t.unroll + "=" + std::to_string(factors[i])},
                                   {"kernel_source", best_cu(t, factors[i])},
                                   {"shapes", {{{"n", sizes[i % 3]}}}}});
  }
  std::ofstream(dir / "cache.json") << nlohmann::json{{"format_version", 1}, {"entries", {entry}}}.dump(1);
  const kopt::test::CliRun r =
      kopt::test::run_kopt("generate --spec " + t.dir() + t.name + ".json --name k --no-tune --cache-file " +
                           (dir / "cache.json").string() + " --out-dir " + (dir / "out").string());
  *err = r.err;
  EXPECT_EQ(r.code, 0) << r.err;
  return dir / "out" / "k.cu";
}

kopt::cuda::CompileResult nvrtc(const std::string& source, const std::string& entry,
                                const std::map<std::string, int64_t>& defines) {
  kopt::cuda::CompileRequest r;
  r.source = source;
  r.entry = entry;
  r.arch = "sm_90";
  r.defines = defines;
  return kopt::cuda::Compiler().compile(r);
}

// What NVRTC compiled while tuning (the template with the tuned values and
// the workload's defines as -D) and the generated file (one variant: its
// #ifndef defaults, the pragma through KOPT_PRAGMA_UNROLL; the sizes as the
// application's -D) are the same cubin, byte for byte, 0 included (NVRTC's
// warning #20168-D both times); and a -D of the parameter (kopt evaluate
// --params on the file, an application's own value) still reaches the
// pragma, as it reaches the rest of the kernel.
TEST(GenerateUnroll, TheGeneratedKernelIsTheCubinNvrtcTuned) {
  for (const auto& [t, factors] : std::vector<std::pair<Template, std::vector<int64_t>>>{{kReduction, {0, 1, 8}},
                                                                                         {kHotspot, {1, 5}}}) {
    const kopt::spec::Spec spec = kopt::spec::load_spec(t.dir() + t.name + ".json");
    const std::string tmpl = kopt::spec::read_kernel_text(t.dir() + t.name + ".cu");
    std::map<int64_t, std::vector<char>> cubins;
    auto tuned_with = [&](int64_t factor) {
      std::map<std::string, int64_t> d = t.config(factor);
      for (const auto& [k, v] : spec.constant_defines()) d[k] = v;
      for (const auto& [k, v] : t.application) d[k] = v;
      return d;
    };
    for (int64_t factor : factors) {
      const std::string at = t.name + ", " + t.unroll + "=" + std::to_string(factor);
      kopt::test::TempDir d("kopt-unroll");
      std::string err;
      const std::string cu = kopt::fs::read_file(generate(d.path(), t, {factor}, &err));
      EXPECT_NE(cu.find("KOPT_PRAGMA_UNROLL(" + t.unroll + ")"), std::string::npos) << at << "\n" << cu;
      EXPECT_NE(err.find("written KOPT_PRAGMA_UNROLL(...), which expands its macros there as NVRTC did: " + t.unroll),
                std::string::npos)
          << at << "\n" << err;
      const kopt::cuda::CompileResult tuned = nvrtc(tmpl, t.entry, tuned_with(factor));
      const kopt::cuda::CompileResult generated = nvrtc(cu, t.entry, t.application);
      ASSERT_TRUE(tuned.ok && generated.ok) << at << "\n" << tuned.log << generated.log;
      EXPECT_EQ(generated.log.find("#20168-D") != std::string::npos, factor == 0) << at << "\n" << generated.log;
      EXPECT_EQ(generated.cubin, tuned.cubin) << at;
      cubins[factor] = generated.cubin;
      // The override: the file compiled with -D of another factor is the
      // template compiled with that factor.
      const int64_t other = factor == 1 ? 2 : 1;
      std::map<std::string, int64_t> overridden = t.application;
      overridden[t.unroll] = other;
      const kopt::cuda::CompileResult over = nvrtc(cu, t.entry, overridden);
      const kopt::cuda::CompileResult tuned_other = nvrtc(tmpl, t.entry, tuned_with(other));
      ASSERT_TRUE(over.ok && tuned_other.ok) << at << "\n" << over.log << tuned_other.log;
      EXPECT_EQ(over.cubin, tuned_other.cubin) << at << ", -D" << t.unroll << "=" << other;
    }
    // Each factor is its own code.
    for (size_t i = 1; i < factors.size(); ++i) EXPECT_NE(cubins[factors[i - 1]], cubins[factors[i]]) << t.name;
  }
}

const char* const kNvcc = "/usr/local/cuda/bin/nvcc";

/// nvcc -c of `cu` for sm_90 with `defines`, as the application's build
/// compiles it; its output (stderr in it).
kopt::test::ShellRun nvcc(const fsys::path& cu, const std::map<std::string, int64_t>& defines = {}) {
  std::string cmd = std::string(kNvcc) + " -std=c++17 -arch=sm_90 -c -o " + cu.string() + ".o";
  for (const auto& [k, v] : defines) cmd += " -D" + k + "=" + std::to_string(v);
  return kopt::test::run_shell(cmd + " " + cu.string(), kopt::test::Stderr::into_out);
}

// The user's build: nvcc compiles the generated reduction for 0, 1 and 8,
// alone (through KOPT_PRAGMA_UNROLL: 0 warns as NVRTC did) and as three
// shape-specialised variants of one file (each variant's pragma with its own
// value, 0 left out: no warning), and hotspot.
TEST(GenerateUnroll, NvccCompilesTheGeneratedKernels) {
  if (!fsys::exists(kNvcc)) GTEST_SKIP() << "nvcc not found at " << kNvcc;
  for (const auto& [t, factor] : std::vector<std::pair<Template, int64_t>>{
           {kReduction, 0}, {kReduction, 1}, {kReduction, 8}, {kHotspot, 5}}) {
    kopt::test::TempDir d("kopt-unroll");
    std::string err;
    const kopt::test::ShellRun r = nvcc(generate(d.path(), t, {factor}, &err), t.application);
    EXPECT_EQ(r.code, 0) << t.name << ", " << t.unroll << "=" << factor << ":\n" << r.out;
    // 0: NVRTC's warning while tuning, the same in the application's build.
    if (factor == 0)
      EXPECT_NE(r.out.find("#20168-D"), std::string::npos) << r.out;
    else
      EXPECT_EQ(r.out.find("warning"), std::string::npos) << r.out;
  }
  kopt::test::TempDir d("kopt-unroll");
  std::string err;
  const fsys::path cu = generate(d.path(), kReduction, {8, 0, 1}, &err);
  EXPECT_NE(err.find("v0: loop_unroll_factor_0=8, v2: loop_unroll_factor_0=1"), std::string::npos) << err;
  EXPECT_NE(err.find("v1: loop_unroll_factor_0=0"), std::string::npos) << err;
  const std::string text = kopt::fs::read_file(cu);
  const size_t v0 = text.find("// ===== variant 0"), v1 = text.find("// ===== variant 1"),
               v2 = text.find("// ===== variant 2");
  ASSERT_TRUE(v0 < v1 && v1 < v2 && v2 != std::string::npos) << text;
  EXPECT_NE(text.substr(v0, v1 - v0).find("#pragma unroll 8 "), std::string::npos);
  EXPECT_NE(text.substr(v1, v2 - v1).find("/* #pragma unroll loop_unroll_factor_0 (= 0) left out"), std::string::npos);
  EXPECT_NE(text.substr(v2).find("#pragma unroll 1 "), std::string::npos);
  const kopt::test::ShellRun r = nvcc(cu);
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(r.out.find("warning"), std::string::npos) << r.out;
}

// KOPT_PRAGMA_UNROLL as the generated file defines it: nvcc (and NVRTC)
// unroll by the macro's value where the pragma stands, a size define given
// with -D as the application does.
TEST(GenerateUnroll, KoptPragmaUnrollTakesTheMacrosValueUnderNvccAndNvrtc) {
  const std::string body =
      "extern \"C\" __global__ void steps(float* x, float c, int n) {\n"
      "  float v = x[threadIdx.x];\n"
      "  #pragma unroll W\n"
      "  for (int s = 0; s < n; ++s) v = v * c + x[s];\n"
      "  x[threadIdx.x] = v;\n"
      "}\n";
  UnrollNames names;
  names.macros = {"W"};
  const UnrollRewrite r = rewrite_unroll_pragmas(body, names);
  ASSERT_EQ(r.through_macro.size(), 1u);
  const std::string src = kopt::gen::unroll_macro_definition() + r.source;
  auto nvrtc_cubin = [&](const std::string& s, int64_t w) {
    kopt::cuda::CompileRequest q;
    q.source = s;
    q.entry = "steps";
    q.defines = {{"W", w}};
    const kopt::cuda::CompileResult c = kopt::cuda::Compiler().compile(q);
    EXPECT_TRUE(c.ok) << c.log;
    return c.cubin;
  };
  EXPECT_EQ(nvrtc_cubin(src, 4), nvrtc_cubin(body, 4));
  EXPECT_NE(nvrtc_cubin(src, 4), nvrtc_cubin(src, 1));
  if (!fsys::exists(kNvcc)) GTEST_SKIP() << "nvcc not found at " << kNvcc;
  kopt::test::TempDir d("kopt-unroll");
  std::ofstream(d / "m.cu") << src;
  std::ofstream(d / "lit.cu") << "#define W 4\n" << kopt::gen::unroll_macro_definition()
                              << rewrite_unroll_pragmas(body, {{{"W", 4}}, {}}).source;
  for (const char* f : {"m.cu", "lit.cu"}) {
    const kopt::test::ShellRun c = kopt::test::run_shell(std::string(kNvcc) + " -arch=sm_90 -cubin -DW=4 -o " +
                                                             (d / (std::string(f) + ".cubin")).string() + " " +
                                                             (d / f).string(),
                                                         kopt::test::Stderr::into_out);
    ASSERT_EQ(c.code, 0) << f << ":\n" << c.out;
  }
  // The macro's 4 and the literal 4: the same code.
  EXPECT_EQ(kopt::fs::read_file(d / "m.cu.cubin"), kopt::fs::read_file(d / "lit.cu.cubin"));
}

// The stringizing-macro idiom through the rewrite: nvcc compiles it, and the
// code is that of the literal pragma (without the rewrite nvcc stops at the
// undefined name).
TEST(GenerateUnroll, AStringizingPragmaMacroCompilesUnderNvccAfterTheRewrite) {
  if (!fsys::exists(kNvcc)) GTEST_SKIP() << "nvcc not found at " << kNvcc;
  const std::string body =
      "#define PRAGMA(x) _Pragma(#x)\n"
      "extern \"C\" __global__ void steps(float* x, float c, int n) {\n"
      "  float v = x[threadIdx.x];\n"
      "  PRAGMA(unroll W)\n"
      "  for (int s = 0; s < n; ++s) v = v * c + x[s];\n"
      "  x[threadIdx.x] = v;\n"
      "}\n";
  std::string literal = body;
  literal.replace(literal.find("PRAGMA(unroll W)"), 16, "PRAGMA(unroll 4)");
  kopt::test::TempDir d("kopt-unroll");
  std::ofstream(d / "raw.cu") << body;
  std::ofstream(d / "fixed.cu") << rewrite_unroll_pragmas(body, {{{"W", 4}}, {}}).source;
  std::ofstream(d / "lit.cu") << literal;
  auto nvcc_cubin = [&](const char* f) {
    return kopt::test::run_shell(std::string(kNvcc) + " -arch=sm_90 -cubin -o " + (d / (std::string(f) + ".cubin")).string() +
                                     " " + (d / f).string(),
                                 kopt::test::Stderr::into_out);
  };
  EXPECT_NE(nvcc_cubin("raw.cu").code, 0) << "nvcc does not expand W in the pragma";
  for (const char* f : {"fixed.cu", "lit.cu"}) {
    const kopt::test::ShellRun c = nvcc_cubin(f);
    ASSERT_EQ(c.code, 0) << f << ":\n" << c.out;
  }
  EXPECT_EQ(kopt::fs::read_file(d / "fixed.cu.cubin"), kopt::fs::read_file(d / "lit.cu.cubin"));
}

}  // namespace

// The workload spec (spec/spec.h): loading, validation errors, round trip.
#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "store/fingerprint.h"
#include "spec/inputs.h"
#include "spec/spec.h"
#include "util/error.h"

namespace kopt::spec {
namespace {

namespace stdfs = std::filesystem;
using json = nlohmann::json;

void write_text(const stdfs::path& p, const std::string& text) {
  stdfs::create_directories(p.parent_path());
  std::ofstream(p) << text;
}

/// A temp folder holding the kernel sources a spec names; each test edits a
/// valid document (base()) to provoke one error.
class SpecTest : public ::testing::Test {
 protected:
  void SetUp() override {
    static std::atomic<int> counter{0};
    dir_ = stdfs::temp_directory_path() /
           ("kopt_spec_test_" + std::to_string(::getpid()) + "_" + std::to_string(counter++));
    write_text(dir_ / "naive.cu", "extern \"C\" __global__ void sgemm_naive() {}\n");
    write_text(dir_ / "kernels" / "reference.cu", "extern \"C\" __global__ void sgemm_reference() {}\n");
  }
  void TearDown() override {
    std::error_code ec;
    stdfs::remove_all(dir_, ec);
  }

  stdfs::path origin() const { return dir_ / "my_spec.json"; }

  static json base() {
    return json::parse(R"J({
      "name": "sgemm",
      "signature": [
        {"name": "A", "type": "float", "role": "input", "count": "M*K"},
        {"name": "B", "type": "float", "role": "input", "count": "K*N"},
        {"name": "C", "type": "float", "role": "output", "count": "M*N"},
        {"name": "M", "type": "int32", "value": "M"},
        {"name": "N", "type": "int32", "value": "N"},
        {"name": "K", "type": "int32", "value": "K"},
        {"name": "alpha", "type": "float", "value": 1.5}
      ],
      "launch": {"grid": ["ceil_div(N, 16)", "ceil_div(M, 16)", 1], "block": [16, 16, 1]},
      "reference": {"kind": "kernel", "source": "kernels/reference.cu", "entry": "sgemm_reference"},
      "initial": {"source": "naive.cu", "entry": "sgemm_naive"},
      "cases": [
        {"name": "1x1x1", "role": "correctness", "sizes": {"M": 1, "N": 1, "K": 1}},
        {"name": "64x32x16", "role": "performance", "sizes": {"M": 64, "N": 32, "K": 16}}
      ]
    })J");
  }

  Spec parse(const json& doc) const { return parse_spec(doc, origin()); }

  /// Expects kopt::SpecError `id` whose message names the file and contains `needles`.
  void expect_error(const json& doc, const std::string& id, const std::vector<std::string>& needles) const {
    try {
      parse(doc);
    } catch (const SpecError& e) {
      EXPECT_EQ(e.id(), id) << e.what();
      std::vector<std::string> all = needles;
      all.push_back("my_spec.json: ");
      for (const std::string& n : all) {
        EXPECT_NE(std::string(e.what()).find(n), std::string::npos)
            << "'" << n << "' not in: " << e.what();
      }
      return;
    }
    ADD_FAILURE() << "expected SpecError " << id << " for " << doc.dump();
  }

  stdfs::path dir_;
};

// ---------------------------------------------------------------------------
// Names and helpers
// ---------------------------------------------------------------------------

TEST(SpecNames, DTypes) {
  const DType all[] = {DType::f16, DType::bf16, DType::f32, DType::f64, DType::i8,
                       DType::u8,  DType::i32,  DType::u32, DType::i64, DType::u64};
  const size_t sizes[] = {2, 2, 4, 8, 1, 1, 4, 4, 8, 8};
  for (size_t i = 0; i < std::size(all); ++i) {
    EXPECT_EQ(parse_dtype(dtype_name(all[i])), all[i]);
    EXPECT_EQ(dtype_size(all[i]), sizes[i]) << dtype_name(all[i]);
    EXPECT_EQ(dtype_is_float(all[i]), i < 4) << dtype_name(all[i]);
  }
  EXPECT_STREQ(dtype_name(DType::f32), "float");
  EXPECT_STREQ(dtype_name(DType::bf16), "bfloat16");
  EXPECT_EQ(parse_dtype("float32"), DType::f32);
  EXPECT_EQ(parse_dtype("float64"), DType::f64);
  EXPECT_EQ(parse_dtype("float16"), DType::f16);
  EXPECT_EQ(parse_dtype("fp32"), DType::f32);
  EXPECT_EQ(parse_dtype("fp16"), DType::f16);
  EXPECT_EQ(parse_dtype("bf16"), DType::bf16);
  EXPECT_EQ(parse_dtype("int"), DType::i32);
  EXPECT_EQ(parse_dtype("uint"), DType::u32);
  EXPECT_FALSE(parse_dtype("Float").has_value());
  EXPECT_FALSE(parse_dtype("").has_value());
  EXPECT_STREQ(role_name(Role::inout), "inout");
  EXPECT_STREQ(case_role_name(CaseRole::performance), "performance");
  EXPECT_STREQ(reference_kind_name(Reference::Kind::cublas), "cublas");
  EXPECT_STREQ(generator_kind_name(Generator::Kind::int_range), "int_range");
}

TEST(SpecNames, BindingsFor) {
  Case c;
  c.name = "c1";
  c.sizes = {{"M", 4}, {"N", 8}};
  const Bindings b = bindings_for(c, {{"BM", 64}});
  EXPECT_EQ(b, (Bindings{{"M", 4}, {"N", 8}, {"BM", 64}}));
  try {
    bindings_for(c, {{"N", 1}});
    FAIL();
  } catch (const SpecError& e) {
    EXPECT_EQ(e.id(), "kopt.spec.130");
    EXPECT_NE(std::string(e.what()).find("'N'"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("'c1'"), std::string::npos);
  }
}

TEST(SpecNames, ExpandCase) {
  EXPECT_EQ(expand_case("/g/{case}_C.npy", "17x17"), stdfs::path("/g/17x17_C.npy"));
  EXPECT_EQ(expand_case("/g/{case}/{case}.npy", "a"), stdfs::path("/g/a/a.npy"));
  EXPECT_EQ(expand_case("/g/x.npy", "a"), stdfs::path("/g/x.npy"));
}

TEST(SpecNames, GeneratorJsonRoundTrip) {
  std::vector<Generator> gens(6);
  gens[0].low = -3;
  gens[1].kind = Generator::Kind::normal;
  gens[1].stddev = 0.5;
  gens[2].kind = Generator::Kind::int_range;
  gens[2].int_low = -7;
  gens[3].kind = Generator::Kind::constant;
  gens[3].value = 0.25;
  gens[4].kind = Generator::Kind::iota;
  gens[4].step = 3;
  gens[5].kind = Generator::Kind::npy;
  gens[5].npy = "/data/x_{case}.npy";
  for (const Generator& g : gens) {
    EXPECT_EQ(Generator::from_json(g.to_json()), g) << g.to_json().dump();
  }
  EXPECT_EQ(gens[3].to_json(), json::parse(R"({"kind":"constant","value":0.25})"));
  EXPECT_THROW(Generator::from_json(json::parse(R"({"kind":"uniform","lo":0})")), SpecError);
}

// ---------------------------------------------------------------------------
// Loading valid specs
// ---------------------------------------------------------------------------

TEST_F(SpecTest, ParsesTheBaseDocumentWithDefaults) {
  const Spec s = parse(base());
  EXPECT_EQ(s.path, origin());
  EXPECT_EQ(s.name, "sgemm");
  EXPECT_EQ(s.description, "");
  EXPECT_EQ(s.seed, 0x5eedu);
  ASSERT_EQ(s.signature.size(), 7u);
  const Param& a = s.signature[0];
  EXPECT_TRUE(a.is_buffer);
  EXPECT_EQ(a.role, Role::input);
  EXPECT_EQ(a.count.text(), "M*K");
  EXPECT_EQ(a.generator.kind, Generator::Kind::uniform);  // default uniform [-1, 1)
  EXPECT_EQ(a.generator.low, -1.0);
  EXPECT_EQ(a.generator.high, 1.0);
  EXPECT_EQ(s.signature[2].role, Role::output);
  EXPECT_FALSE(s.signature[3].is_buffer);
  EXPECT_EQ(s.signature[3].dtype, DType::i32);
  EXPECT_EQ(s.signature[3].value.text(), "M");
  EXPECT_EQ(s.signature[6].float_value, std::optional<double>(1.5));
  EXPECT_TRUE(s.signature[6].value.empty());
  EXPECT_EQ(s.launch.grid[0].text(), "ceil_div(N, 16)");
  EXPECT_EQ(s.launch.block[1].eval({}), 16);
  EXPECT_EQ(s.launch.shared_bytes.eval({}), 0);  // default
  EXPECT_EQ(s.reference.kind, Reference::Kind::kernel);
  EXPECT_EQ(s.reference.kernel.source, dir_ / "kernels" / "reference.cu");  // absolute
  EXPECT_TRUE(s.reference.kernel.source.is_absolute());
  EXPECT_FALSE(s.reference.kernel.launch.has_value());
  ASSERT_TRUE(s.initial.has_value());
  EXPECT_EQ(s.initial->entry, "sgemm_naive");
  ASSERT_EQ(s.cases.size(), 2u);
  EXPECT_EQ(s.cases[1].sizes.at("N"), 32);
  // Outputs without a tolerance get the default allclose.
  ASSERT_EQ(s.tolerance.count("C"), 1u);
  EXPECT_EQ(s.tolerance.at("C").kind, Tolerance::Kind::allclose);
  EXPECT_EQ(s.tolerance.at("C").rtol, 1e-5);
  EXPECT_EQ(s.tolerance.at("C").atol, 1e-6);
  EXPECT_FALSE(s.tolerance.at("C").rel_l2.has_value());
  EXPECT_EQ(s.timing.warmup, 10);
  EXPECT_EQ(s.timing.iterations, 100);
  EXPECT_TRUE(s.timing.flush_l2);  // the default: timing as in deployment, cold L2
  EXPECT_EQ(s.checks.trials, 3);
  EXPECT_EQ(s.checks.repeats, 3);
  EXPECT_TRUE(s.tuning.params.empty());
  // Helpers.
  ASSERT_NE(s.find_param("B"), nullptr);
  EXPECT_EQ(s.find_param("B")->count.text(), "K*N");
  EXPECT_EQ(s.find_param("Z"), nullptr);
  const auto perf = s.performance_cases();
  ASSERT_EQ(perf.size(), 1u);
  EXPECT_EQ(perf[0]->name, "64x32x16");
}

TEST_F(SpecTest, LoadsTheFixtureFile) {
  const stdfs::path file = stdfs::path(KOPT_TEST_DATA_DIR) / "spec" / "sgemm.json";
  const Spec s = load_spec(file);
  EXPECT_EQ(s.name, "sgemm");
  EXPECT_EQ(s.seed, 1234u);
  EXPECT_EQ(s.initial->source, (stdfs::path(KOPT_TEST_DATA_DIR) / "spec" / "naive.cu").lexically_normal());
  EXPECT_TRUE(stdfs::exists(s.initial->source));
  EXPECT_EQ(s.tolerance.at("C").kind, Tolerance::Kind::gemm);
  EXPECT_EQ(s.tuning.params.size(), 2u);
  EXPECT_EQ(s.cases[3].input_overrides.at("A").kind, Generator::Kind::normal);
  EXPECT_EQ(s.launch.grid[2].text(), "1");  // missing entries are 1
  EXPECT_EQ(s.checks.repeats, 2);
  // Every case's counts and launch evaluate.
  for (const Case& c : s.cases) {
    const Bindings b = bindings_for(c, {{"BM", 64}, {"TM", 4}});
    EXPECT_GT(s.find_param("C")->count.eval(b), 0);
    EXPECT_GE(s.launch.grid[0].eval(b), 1);
  }
  EXPECT_EQ(parse_spec(to_json(s), s.path), s);
}

TEST_F(SpecTest, RoundTripOfAFullSpec) {
  // Every feature at once: all generator kinds, overrides, inout, scalars of
  // each flavor, per-kernel launches, defines, tolerances, timing, tuning.
  NpyArray x;
  x.dtype = DType::f32;
  x.shape = {1};  // M*K elements: 1 for 1x1x1
  x.data.assign(4, 0);
  write_npy(dir_ / "data" / "x_1x1x1.npy", x);
  x.shape = {64 * 16};
  x.data.assign(64 * 16 * 4, 0);
  write_npy(dir_ / "data" / "x_64x32x16.npy", x);
  json d = base();
  d["format_version"] = 1;
  d["description"] = "full";
  d["seed"] = 18446744073709551615ull;  // max uint64
  d["signature"][0]["init"] = json::parse(R"({"kind": "int_range", "low": -2, "high": 2})");
  d["signature"][0]["count"] = "M * K";
  d["signature"][1]["init"] = json::parse(R"({"kind": "iota", "start": 1, "step": 0.5})");
  d["signature"].push_back(json::parse(R"({"name": "D", "type": "half", "role": "inout", "count": "M*N",
                                           "init": {"kind": "constant", "value": 2}})"));
  d["signature"].push_back(json::parse(R"({"name": "E", "type": "int8", "role": "input", "count": 4})"));
  d["signature"].push_back(json::parse(R"({"name": "X", "type": "float", "role": "input", "count": "M*K",
                                           "init": {"kind": "npy", "path": "data/x_{case}.npy"}})"));
  d["signature"].push_back(json::parse(R"({"name": "beta", "type": "double", "value": 2})"));
  d["signature"].push_back(json::parse(R"J({"name": "lda", "type": "int64", "value": "align_up(K, 4)"})J"));
  d["launch"]["shared_bytes"] = "BM * 4";
  d["reference"]["launch"] = json::parse(R"({"grid": "M*N", "block": [1]})");
  d["reference"]["compile_options"] = {"-DREF"};
  d["reference"]["defines"] = {{"TILE", 8}};
  d["initial"]["launch"] = json::parse(R"J({"grid": ["ceil_div(N, BM)", "M"], "block": ["BM"], "shared_bytes": 128})J");
  d["initial"]["compile_options"] = {"-lineinfo"};
  d["cases"][1]["inputs"] = json::parse(R"({"A": {"kind": "normal", "mean": 1, "stddev": 2},
                                            "B": {"kind": "uniform", "low": 0, "high": 4}})");
  d["tolerance"] = json::parse(R"({"C": {"rtol": 1e-3, "atol": 0, "rel_l2": 1e-4},
                                   "D": {"kind": "gemm", "factor": 8}})");
  d["timing"] = json::parse(R"({"warmup": 0, "iterations": 1, "flush_l2": true, "launch_timeout_ms": 2500.5})");
  d["checks"] = json::parse(R"({"trials": 1, "repeats": 7})");
  d["tuning"] = json::parse(R"({"params": {"BM": [32, 64], "TN": [1]}, "constraints": ["BM % 16 == 0", 1],
                                "compile_options": ["-O3", "--use_fast_math"]})");
  const Spec s = parse(d);
  EXPECT_EQ(s.seed, 18446744073709551615ull);
  EXPECT_EQ(s.find_param("E")->generator.kind, Generator::Kind::int_range);  // integer default
  EXPECT_EQ(s.find_param("E")->generator.int_low, 0);
  EXPECT_EQ(s.find_param("E")->generator.int_high, 9);
  EXPECT_EQ(s.find_param("beta")->value.text(), "2");
  EXPECT_FALSE(s.find_param("beta")->float_value.has_value());
  EXPECT_EQ(s.find_param("X")->generator.npy, dir_ / "data" / "x_{case}.npy");
  EXPECT_EQ(s.tolerance.at("D").kind, Tolerance::Kind::gemm);
  EXPECT_EQ(s.tolerance.at("C").rel_l2, std::optional<double>(1e-4));
  EXPECT_EQ(s.reference.kernel.launch->grid[0].text(), "M*N");
  EXPECT_EQ(s.reference.kernel.defines.at("TILE"), 8);
  EXPECT_EQ(s.tuning.params[0].name, "BM");

  const json j = to_json(s);
  const Spec back = parse_spec(j, s.path);
  EXPECT_EQ(back, s);
  EXPECT_EQ(to_json(back), j);
  // Field by field, so that a failure says which one.
  EXPECT_EQ(back.signature, s.signature);
  EXPECT_EQ(back.cases, s.cases);
  EXPECT_EQ(back.reference, s.reference);
  EXPECT_EQ(back.initial, s.initial);
  EXPECT_EQ(back.launch, s.launch);
  EXPECT_EQ(back.tolerance, s.tolerance);
  EXPECT_EQ(back.timing, s.timing);
  EXPECT_EQ(back.checks, s.checks);
  EXPECT_EQ(back.tuning, s.tuning);
  // Through text too (what a run folder stores), from another folder: paths are absolute.
  const Spec again = parse_spec(json::parse(j.dump(2)), s.path);
  EXPECT_EQ(again, s);
  // Changing a field is noticed.
  Spec changed = s;
  changed.cases[1].input_overrides["A"].stddev = 3;
  EXPECT_FALSE(changed == s);
  changed = s;
  changed.launch.block[0] = Expr::parse("BM*2");
  EXPECT_FALSE(changed == s);
}

TEST_F(SpecTest, RoundTripOfNpyAndCublasReferences) {
  NpyArray c;
  c.dtype = DType::f32;
  c.shape = {1};
  c.data.assign(4, 0);
  write_npy(dir_ / "golden" / "1x1x1_C.npy", c);
  c.shape = {64, 32};
  c.data.assign(64 * 32 * 4, 0);
  write_npy(dir_ / "golden" / "64x32x16_C.npy", c);
  json d = base();
  d["reference"] = json::parse(R"({"kind": "npy", "outputs": {"C": "golden/{case}_C.npy"}})");
  Spec s = parse(d);
  EXPECT_EQ(s.reference.npy.at("C"), dir_ / "golden" / "{case}_C.npy");
  EXPECT_EQ(parse_spec(to_json(s), s.path), s);

  d["reference"] = json::parse(R"({"kind": "cublas", "op": "sgemm"})");
  s = parse(d);
  EXPECT_EQ(s.reference.kind, Reference::Kind::cublas);
  EXPECT_EQ(s.reference.gemm.a, "A");
  EXPECT_EQ(parse_spec(to_json(s), s.path), s);
}

TEST_F(SpecTest, ExpressionsMayUseTuningParameters) {
  json d = base();
  d["tuning"] = json::parse(R"({"params": {"BN": [16, 32]}})");
  d["launch"]["grid"][0] = "ceil_div(N, BN)";
  d["launch"]["block"][0] = "BN";
  const Spec s = parse(d);
  EXPECT_EQ(s.launch.grid[0].eval(bindings_for(s.cases[1], {{"BN", 32}})), 1);
}

TEST_F(SpecTest, LaunchMayBeOmittedWhenEveryKernelHasItsOwn) {
  json d = base();
  const json launch = d["launch"];
  d.erase("launch");
  d["initial"]["launch"] = launch;
  d["reference"]["launch"] = json::parse(R"({"grid": [1], "block": [32]})");
  Spec s = parse(d);
  EXPECT_EQ(s.launch, *s.initial->launch);  // defaults to the initial kernel's
  EXPECT_EQ(parse_spec(to_json(s), s.path), s);
  // No initial kernel: the reference kernel's launch.
  d.erase("initial");
  s = parse(d);
  EXPECT_EQ(s.launch.block[0].text(), "32");
  // A cublas reference with an initial kernel of its own.
  d["reference"] = json::parse(R"({"kind": "cublas"})");
  d["initial"] = json::parse(R"({"source": "naive.cu", "entry": "k"})");
  d["initial"]["launch"] = launch;
  EXPECT_NO_THROW(parse(d));
}

TEST_F(SpecTest, TemplateAndBaseline) {
  json d = base();
  d["tuning"] = json::parse(R"({"params": {"BM": [32, 64]}, "constraints": ["BM % 32 == 0"]})");
  d["template"] = json::parse(R"J({"source": "naive.cu", "entry": "tiled",
                                   "launch": {"grid": ["ceil_div(N, BM)"], "block": ["BM"]},
                                   "compile_options": ["-O3"], "defines": {"PAD": 4}})J");
  d["baseline"] = json::parse(R"({"kind": "cublas", "op": "sgemm"})");
  Spec s = parse(d);
  ASSERT_TRUE(s.template_kernel.has_value());
  EXPECT_EQ(s.template_kernel->source, dir_ / "naive.cu");
  EXPECT_EQ(s.template_kernel->entry, "tiled");
  EXPECT_EQ(s.template_kernel->launch->block[0].text(), "BM");
  EXPECT_EQ(s.template_kernel->defines.at("PAD"), 4);
  ASSERT_TRUE(s.cublas_baseline.has_value());
  EXPECT_EQ(s.cublas_baseline->c, "C");
  EXPECT_EQ(parse_spec(to_json(s), s.path), s);
  EXPECT_EQ(to_json(s)["baseline"]["kind"], "cublas");
  // A template without a launch is fine (its kopt: annotations may give one).
  d["template"].erase("launch");
  s = parse(d);
  EXPECT_FALSE(s.template_kernel->launch.has_value());
  EXPECT_EQ(parse_spec(to_json(s), s.path), s);
  // Its errors name $.template / $.baseline.
  d["template"]["source"] = "missing.cu";
  expect_error(d, "kopt.spec.122", {"$.template.source"});
  d["template"] = json::parse(R"({"source": "naive.cu", "entry": "t", "launch": {"grid": ["Q"], "block": [1]}})");
  expect_error(d, "kopt.spec.112", {"$.template.launch.grid[0]", "'Q'"});
  d["template"] = json::parse(R"({"source": "naive.cu", "entry": "t", "launch": {"grid": ["16 / BM"], "block": [1]}})");
  expect_error(d, "kopt.spec.126", {"$.template.launch.grid[0]", "is 0", "BM=32"});  // at BM's first value
  d["template"] = json::parse(R"({"source": "naive.cu", "entry": "t", "defines": {"BM": 1}})");
  expect_error(d, "kopt.spec.107", {"$.template.defines.BM"});
  d["template"] = json::parse(R"({"source": "naive.cu", "entry": "t", "grid": 1})");
  expect_error(d, "kopt.spec.105", {"$.template.grid"});
  d.erase("template");
  d["baseline"] = json::parse(R"({"kind": "mkl"})");
  expect_error(d, "kopt.spec.110", {"$.baseline.kind", "'mkl'", "cublas"});
  d["baseline"] = json::parse(R"({"op": "sgemm"})");
  expect_error(d, "kopt.spec.103", {"$.baseline", "'kind'"});
  d["baseline"] = json::parse(R"({"kind": "cublas", "a": "X"})");
  expect_error(d, "kopt.spec.123", {"$.baseline.a", "'X'"});
  d["baseline"] = json::parse(R"({"kind": "cublas", "a": "B", "b": "A"})");
  expect_error(d, "kopt.spec.124", {"$.baseline.a"});
}

TEST_F(SpecTest, LaunchMayComeFromTheTemplateAlone) {
  json d = base();
  const json launch = d["launch"];
  d.erase("launch");
  d.erase("initial");
  d["reference"] = json::parse(R"({"kind": "cublas"})");
  d["template"] = json::parse(R"({"source": "naive.cu", "entry": "t"})");
  expect_error(d, "kopt.spec.125", {"no kernel has a launch of its own"});
  d["template"]["launch"] = launch;
  const Spec s = parse(d);
  EXPECT_EQ(s.launch, *s.template_kernel->launch);
}

TEST_F(SpecTest, ConstraintsMayUseDeviceConstants) {
  json d = base();
  d["tuning"] = json::parse(R"({"params": {"BM": [32, 64]}, "constraints": [
      "BM * 4 <= MAX_SHARED_PER_BLOCK && BM <= MAX_THREADS_PER_BLOCK",
      "WARP_SIZE == 32 && SM_COUNT > 0", "BM <= 64"]})");
  EXPECT_NO_THROW(parse(d));
  EXPECT_EQ(constraint_constant_names().size(), 10u);  // search/device_constants.h lists them
  d["tuning"]["constraints"].push_back("MAX_SMEM >= 1");
  expect_error(d, "kopt.spec.112", {"$.tuning.constraints[3]", "'MAX_SMEM'", "device constants: MAX_SHARED_PER_BLOCK"});
  // Device constants are for constraints only.
  d = base();
  d["launch"]["block"][0] = "WARP_SIZE";
  expect_error(d, "kopt.spec.112", {"$.launch.block[0]", "'WARP_SIZE'"});
}

TEST_F(SpecTest, Error133ConstraintsMayNotNameSizes) {
  // A size in a constraint used to load and then fail at `kopt optimize`
  // (kopt.space.701 "unknown name"): it is refused at load, saying why and
  // what to do instead.
  json d = base();
  d["tuning"] = json::parse(R"({"params": {"VEC": [1, 2, 4]}, "constraints": ["VEC <= 4", "N % VEC == 0"]})");
  expect_error(d, "kopt.spec.133",
               {"$.tuning.constraints[1]", "'N % VEC == 0' names the size 'N'", "tuning parameters and device constants",
                "MAX_SHARED_PER_BLOCK", "in the kernel"});
  // Also a size that only some cases have.
  d = base();
  d["cases"][1]["sizes"]["P"] = 3;
  d["tuning"] = json::parse(R"({"params": {"VEC": [1, 2]}, "constraints": ["P > VEC || VEC == 1"]})");
  expect_error(d, "kopt.spec.133", {"$.tuning.constraints[0]", "'P'"});
}

TEST_F(SpecTest, Error134TrafficBytesNeedsBlockWork) {
  // traffic_bytes is the cost model's second term; alone it would be read by nothing.
  json d = base();
  d["launch"]["traffic_bytes"] = "4 * N";
  expect_error(d, "kopt.spec.134", {"$.launch.traffic_bytes", "needs block_work"});
  d["launch"]["block_work"] = "N";
  EXPECT_NO_THROW(parse(d));
}

TEST_F(SpecTest, SeedsAreWholeConfigurationsOfTheSpace) {
  json d = base();
  d["tuning"] = json::parse(R"({"params": {"BM": [32, 64], "TM": [4, 8]},
                                "seeds": [{"BM": 64, "TM": 4}, {"TM": 8, "BM": 32}]})");
  const Spec s = parse(d);
  ASSERT_EQ(s.tuning.seeds.size(), 2u);
  EXPECT_EQ(s.tuning.seeds[0], (std::map<std::string, int64_t>{{"BM", 64}, {"TM", 4}}));
  EXPECT_EQ(s.tuning.seeds[1], (std::map<std::string, int64_t>{{"BM", 32}, {"TM", 8}}));
  EXPECT_EQ(parse_spec(to_json(s), s.path), s);  // the seeds survive the round trip, in order

  d["tuning"]["seeds"] = json::parse(R"([{"BM": 64, "TM": 4, "BN": 16}])");
  expect_error(d, "kopt.spec.135", {"$.tuning.seeds[0].BN", "'BN' is not a tuning parameter"});
  d["tuning"]["seeds"] = json::parse(R"([{"BM": 64, "TM": 4}, {"BM": 48, "TM": 4}])");
  expect_error(d, "kopt.spec.135", {"$.tuning.seeds[1].BM", "48 is not one of the values", "'BM'"});
  d["tuning"]["seeds"] = json::parse(R"([{"BM": 64}])");
  expect_error(d, "kopt.spec.135", {"$.tuning.seeds[0]", "no value of tuning parameter 'TM'", "whole configuration"});
  d["tuning"]["seeds"] = json::parse(R"([{"BM": 64, "TM": 4}, {"TM": 4, "BM": 64}])");
  expect_error(d, "kopt.spec.135", {"$.tuning.seeds[1]", "same configuration as an earlier seed"});
  d["tuning"]["seeds"] = json::parse(R"([{"BM": 64, "TM": 4.5}])");
  expect_error(d, "kopt.spec.104", {"$.tuning.seeds[0].TM"});
  d["tuning"]["seeds"] = json::parse(R"({"BM": 64, "TM": 4})");
  expect_error(d, "kopt.spec.104", {"$.tuning.seeds"});
}

TEST_F(SpecTest, SeedsLeaveTheFingerprintAsItIs) {
  // They only order the search: run folders and tuning caches of the same
  // workload without them still match.
  json d = base();
  d["tuning"] = json::parse(R"({"params": {"BM": [32, 64], "TM": [4, 8]}})");
  const std::string without = kopt::store::spec_fingerprint(parse(d));
  d["tuning"]["seeds"] = json::parse(R"([{"BM": 64, "TM": 4}])");
  EXPECT_EQ(kopt::store::spec_fingerprint(parse(d)), without);
  d["tuning"]["params"]["TM"] = json::parse("[4, 8, 16]");  // the space is part of the workload
  EXPECT_NE(kopt::store::spec_fingerprint(parse(d)), without);
}

TEST_F(SpecTest, TheSgemmTemplateSpecLoads) {
  // The workload shipped in templates/: must always load.
  const stdfs::path file = stdfs::path(KOPT_SOURCE_DIR) / "templates" / "sgemm" / "sgemm.json";
  if (!stdfs::exists(file)) GTEST_SKIP() << file << " not present";
  const Spec s = load_spec(file);
  EXPECT_EQ(s.name, "sgemm");
  EXPECT_EQ(parse_spec(to_json(s), s.path), s);
}

TEST_F(SpecTest, InoutBuffersAreOutputsAndInputs) {
  json d = base();
  d["signature"][2]["role"] = "inout";
  d["signature"][2]["init"] = json::parse(R"({"kind": "constant", "value": 0})");
  const Spec s = parse(d);
  EXPECT_EQ(s.tolerance.count("C"), 1u);
  EXPECT_EQ(s.find_param("C")->generator.kind, Generator::Kind::constant);
}

// ---------------------------------------------------------------------------
// Errors: every id, with file, JSON path and what was expected
// ---------------------------------------------------------------------------

TEST_F(SpecTest, UnreadableSpecFilesNameTheFileAndTheReason) {
  auto expect_load_error = [&](const stdfs::path& file, const std::string& id,
                               const std::vector<std::string>& needles) {
    try {
      load_spec(file);
      ADD_FAILURE() << "expected " << id << " for " << file;
    } catch (const SpecError& e) {
      const std::string what = e.what();
      EXPECT_EQ(e.id(), id) << what;
      EXPECT_EQ(what.find('\n'), std::string::npos) << what;
      EXPECT_EQ(what.find("json.exception"), std::string::npos) << what;
      EXPECT_NE(what.find(file.string() + ": "), std::string::npos) << what;
      for (const std::string& n : needles) EXPECT_NE(what.find(n), std::string::npos) << n << " not in " << what;
    }
  };
  expect_load_error(dir_ / "nope.json", "kopt.io.003", {"cannot read the spec: not found"});
  expect_load_error(dir_, "kopt.io.005", {"a directory, not a file"});
  // Before: read until std::bad_alloc.
  expect_load_error("/dev/zero", "kopt.io.006", {"not a regular file (a character device)"});
  expect_load_error("/dev/urandom", "kopt.io.006", {"not a regular file"});
  ASSERT_EQ(::mkfifo((dir_ / "fifo.json").c_str(), 0600), 0);
  expect_load_error(dir_ / "fifo.json", "kopt.io.006", {"named pipe"});
  write_text(dir_ / "broken.json", "{\"name\": \"x\",\n  \"cases\": [}\n");
  expect_load_error(dir_ / "broken.json", "kopt.json.001", {"not valid JSON", "line 2"});
  write_text(dir_ / "dup.json", R"({"name": "a", "name": "b"})");
  expect_load_error(dir_ / "dup.json", "kopt.json.002", {"$: duplicate key 'name'"});
  // Before: nlohmann's raw [json.exception.out_of_range.406].
  json d = base();
  d["tolerance"] = json::parse(R"({"C": {"rtol": 1}})");
  std::string text = d.dump();
  text.replace(text.find("\"rtol\":1"), 8, "\"rtol\":1e999");
  write_text(dir_ / "inf.json", text);
  expect_load_error(dir_ / "inf.json", "kopt.json.003", {"$.tolerance.C.rtol", "1e999", "out of range"});
}

TEST_F(SpecTest, PermissionDeniedSpecFile) {
  if (::geteuid() == 0) GTEST_SKIP() << "running as root, which ignores file permissions";
  write_text(dir_ / "locked.json", base().dump());
  ::chmod((dir_ / "locked.json").c_str(), 0);
  try {
    load_spec(dir_ / "locked.json");
    FAIL();
  } catch (const SpecError& e) {
    EXPECT_EQ(e.id(), "kopt.io.004") << e.what();
    EXPECT_NE(std::string(e.what()).find("permission denied"), std::string::npos) << e.what();
  }
}

TEST_F(SpecTest, DuplicateKeysInsideTheSpecNameTheirPath) {
  write_text(dir_ / "dup.json", R"({"name": "x", "cases": [{"name": "a", "sizes": {"M": 1, "M": 2}}]})");
  try {
    load_spec(dir_ / "dup.json");
    FAIL();
  } catch (const SpecError& e) {
    EXPECT_EQ(e.id(), "kopt.json.002") << e.what();
    EXPECT_NE(std::string(e.what()).find("dup.json: $.cases[0].sizes: duplicate key 'M'"), std::string::npos)
        << e.what();
  }
}

TEST_F(SpecTest, AFloatWrittenAsAStringSaysToDropTheQuotes) {
  // Before: "malformed number '1e' at column 1", with no hint.
  json d = base();
  d["signature"][6]["value"] = "1e-5";
  expect_error(d, "kopt.spec.111", {"$.signature[6].value", "numbers are written without quotes (1e-5, not \"1e-5\")"});
  d = base();
  d["tolerance"] = json::parse(R"({"C": {"rtol": "1e-5"}})");
  expect_error(d, "kopt.spec.104", {"$.tolerance.C.rtol", "expected a number", "without quotes"});
  d = base();
  d["timing"] = json::parse(R"({"iterations": "10"})");
  expect_error(d, "kopt.spec.104", {"$.timing.iterations", "expected an integer", "without quotes"});
  // An expression string is not a number in quotes.
  d = base();
  d["signature"][6]["value"] = "M*";
  try {
    parse(d);
    FAIL();
  } catch (const SpecError& e) {
    EXPECT_EQ(std::string(e.what()).find("without quotes"), std::string::npos) << e.what();
  }
}

TEST_F(SpecTest, ScalarsAndGeneratorsMustFitTheirFloatingPointType) {
  // Before: a half scalar of 1e10 was accepted (and became infinity).
  json d = base();
  d["signature"][6] = json::parse(R"({"name": "alpha", "type": "half", "value": 1e10})");
  expect_error(d, "kopt.spec.127", {"$.signature[6].value", "beyond the range of half", "65504"});
  d["signature"][6]["value"] = 65504.0;
  EXPECT_NO_THROW(parse(d));
  d["signature"][6]["value"] = 70000;  // an integer literal for a half scalar
  expect_error(d, "kopt.spec.127", {"$.signature[6].value", "does not fit in half"});
  d["signature"][6] = json::parse(R"({"name": "alpha", "type": "float", "value": 1e300})");
  expect_error(d, "kopt.spec.127", {"beyond the range of float"});
  d["signature"][6] = json::parse(R"({"name": "alpha", "type": "double", "value": 1e300})");
  EXPECT_NO_THROW(parse(d));
  // Generators of half buffers.
  d = base();
  d["signature"][0]["type"] = "half";
  d["signature"][0]["init"] = json::parse(R"({"kind": "constant", "value": 1e10})");
  expect_error(d, "kopt.spec.119", {"$.signature[0].init.value", "beyond the range of half"});
  d["signature"][0]["init"] = json::parse(R"({"kind": "uniform", "low": -1e6, "high": 1})");
  expect_error(d, "kopt.spec.119", {"$.signature[0].init.low", "beyond the range of half"});
  d["signature"][0]["init"] = json::parse(R"({"kind": "normal", "mean": 1e5, "stddev": 1})");
  expect_error(d, "kopt.spec.119", {"$.signature[0].init.mean"});
  // iota: the last element of the largest case (64*16 = 1024 elements) counts.
  d["signature"][0]["init"] = json::parse(R"({"kind": "iota", "start": 0, "step": 100})");
  expect_error(d, "kopt.spec.119", {"$.signature[0].init.step", "last iota element", "count 1024"});
  d["signature"][0]["init"] = json::parse(R"({"kind": "iota", "start": 0, "step": 1})");
  EXPECT_NO_THROW(parse(d));
  // A case's override is checked too.
  d = base();
  d["signature"][0]["type"] = "half";
  d["cases"][0]["inputs"] = json::parse(R"({"A": {"kind": "constant", "value": -1e9}})");
  expect_error(d, "kopt.spec.119", {"$.cases[0].inputs.A.value"});
}

TEST_F(SpecTest, Int32ScalarOfAHugeSizeIsRejected) {
  json d = base();
  d["cases"][1]["sizes"]["M"] = 3000000000LL;  // M is passed as an int32 scalar
  d["signature"][0]["count"] = "K";            // keep the buffers small
  d["signature"][2]["count"] = "N";
  expect_error(d, "kopt.spec.127", {"$.signature[3].value", "does not fit in int32", "case '64x32x16'"});
}

TEST_F(SpecTest, LaunchTimeoutIsCapped) {
  json d = base();
  d["timing"] = json::parse(R"({"launch_timeout_ms": 1e300})");
  expect_error(d, "kopt.spec.119", {"$.timing.launch_timeout_ms", "at most"});
  d["timing"]["launch_timeout_ms"] = 60000;
  EXPECT_NO_THROW(parse(d));
}

TEST_F(SpecTest, HugeNamesAreCutInMessagesAndRefused) {
  // Before: a 10 MB spec name was echoed in full.
  json d = base();
  d["name"] = std::string(10 << 20, 'n');
  try {
    parse(d);
    FAIL();
  } catch (const SpecError& e) {
    EXPECT_EQ(e.id(), "kopt.spec.106");
    EXPECT_LT(std::string(e.what()).size(), 600u);
  }
  d = base();
  d["name"] = std::string(129, 'n');  // longer than a file name should be
  expect_error(d, "kopt.spec.106", {"$.name", "at most 128 bytes"});
  d = base();
  d["bogus_" + std::string(1 << 20, 'k')] = 1;
  try {
    parse(d);
    FAIL();
  } catch (const SpecError& e) {
    EXPECT_EQ(e.id(), "kopt.spec.105");
    EXPECT_LT(std::string(e.what()).size(), 1000u);
  }
  d = base();
  d["signature"][0]["count"] = std::string(1 << 20, '1') ;
  try {
    parse(d);
    FAIL();
  } catch (const SpecError& e) {
    EXPECT_EQ(e.id(), "kopt.spec.111");
    EXPECT_LT(std::string(e.what()).size(), 600u);
  }
}

TEST_F(SpecTest, PathsInsideTheSpecMustBeRegularFiles) {
  json d = base();
  d["initial"]["source"] = "/dev/zero";
  expect_error(d, "kopt.spec.122", {"$.initial.source", "not a regular file", "/dev/zero"});
  d = base();
  d["reference"]["source"] = "kernels";
  expect_error(d, "kopt.spec.122", {"$.reference.source", "a directory, not a file"});
  d = base();
  stdfs::create_directories(dir_ / "in" / "1x1x1_A.npy");
  d["signature"][0]["init"] = json::parse(R"({"kind": "npy", "path": "in/{case}_A.npy"})");
  expect_error(d, "kopt.spec.122", {"$.signature[0].init.path", "a directory", "case '1x1x1'"});
}

TEST_F(SpecTest, CasesFromAnotherFileNameThatFile) {
  // optimize --input-cases: errors in the cases name that file and its own path.
  json d = base();
  d["cases"][1]["sizes"]["M"] = -4;
  try {
    parse_spec(d, origin(), {{"cases", SectionOrigin{"cases.json", "$"}}});
    FAIL();
  } catch (const SpecError& e) {
    EXPECT_EQ(e.id(), "kopt.spec.115");
    EXPECT_NE(std::string(e.what()).find("cases.json: $[1].sizes.M: "), std::string::npos) << e.what();
    EXPECT_EQ(std::string(e.what()).find("my_spec.json"), std::string::npos) << e.what();
  }
  try {
    parse_spec(d, origin(), {{"cases", SectionOrigin{"cases.json", "$.cases"}}});
    FAIL();
  } catch (const SpecError& e) {
    EXPECT_NE(std::string(e.what()).find("cases.json: $.cases[1].sizes.M: "), std::string::npos) << e.what();
  }
  // Other sections still name the spec.
  d = base();
  d["signature"][0]["count"] = "Q";
  try {
    parse_spec(d, origin(), {{"cases", SectionOrigin{"cases.json", "$"}}});
    FAIL();
  } catch (const SpecError& e) {
    EXPECT_NE(std::string(e.what()).find("my_spec.json: $.signature[0].count"), std::string::npos) << e.what();
  }
}

TEST_F(SpecTest, Error102FormatVersion) {
  json d = base();
  d["format_version"] = 2;
  expect_error(d, "kopt.spec.102", {"$.format_version", "version 1"});
  d["format_version"] = "1";
  expect_error(d, "kopt.spec.102", {"$.format_version"});
}

TEST_F(SpecTest, Error103MissingKeys) {
  for (const char* key : {"name", "signature", "cases", "reference"}) {
    json d = base();
    d.erase(key);
    expect_error(d, "kopt.spec.103", {"$: missing required key '" + std::string(key) + "'"});
  }
  json d = base();
  d["signature"][1].erase("count");
  expect_error(d, "kopt.spec.103", {"$.signature[1]: missing required key 'count'"});
  d = base();
  d["signature"][1].erase("role");
  expect_error(d, "kopt.spec.103", {"$.signature[1]", "'role'"});
  d = base();
  d["signature"][1].erase("type");
  expect_error(d, "kopt.spec.103", {"$.signature[1]", "'type'"});
  d = base();
  d["initial"].erase("entry");
  expect_error(d, "kopt.spec.103", {"$.initial", "'entry'"});
  d = base();
  d["launch"].erase("block");
  expect_error(d, "kopt.spec.103", {"$.launch", "'block'"});
  d = base();
  d["cases"][0].erase("name");
  expect_error(d, "kopt.spec.103", {"$.cases[0]", "'name'"});
  d = base();
  d["cases"][0]["inputs"] = json::parse(R"({"A": {"low": 0}})");
  expect_error(d, "kopt.spec.103", {"$.cases[0].inputs.A", "'kind'"});
}

TEST_F(SpecTest, Error104WrongTypes) {
  json d = base();
  d["signature"][2]["count"] = true;
  expect_error(d, "kopt.spec.104",
               {"$.signature[2].count: expected an expression string or an integer, got a boolean"});
  d = base();
  d["cases"] = json::object();
  expect_error(d, "kopt.spec.104", {"$.cases: expected an array, got an object"});
  d = base();
  d["launch"]["grid"] = {1, 1, 1, 1};
  expect_error(d, "kopt.spec.104", {"$.launch.grid", "1 to 3 entries", "got 4"});
  d = base();
  d["launch"]["block"] = json::array();
  expect_error(d, "kopt.spec.104", {"$.launch.block", "got 0"});
  d = base();
  d["name"] = 5;
  expect_error(d, "kopt.spec.104", {"$.name: expected a string, got an integer"});
  d = base();
  d["timing"] = {{"warmup", 1.5}};
  expect_error(d, "kopt.spec.104", {"$.timing.warmup: expected an integer, got a floating-point number"});
  d = base();
  d["timing"] = {{"flush_l2", "yes"}};
  expect_error(d, "kopt.spec.104", {"$.timing.flush_l2: expected a boolean"});
  d = base();
  d["seed"] = -1;
  expect_error(d, "kopt.spec.104", {"$.seed", "non-negative integer"});
  d = base();
  d["initial"]["compile_options"] = {"-O3", 3};
  expect_error(d, "kopt.spec.104", {"$.initial.compile_options[1]: expected a string"});
  d = base();
  d["initial"]["defines"] = {{"TILE", "8"}};
  expect_error(d, "kopt.spec.104", {"$.initial.defines.TILE: expected an integer"});
  d = base();
  d["signature"][0] = "A";
  expect_error(d, "kopt.spec.104", {"$.signature[0]: expected an object"});
  expect_error(json::array(), "kopt.spec.104", {"$: expected an object"});
}

TEST_F(SpecTest, Error105UnknownKeys) {
  json d = base();
  d["tolernace"] = json::object();
  expect_error(d, "kopt.spec.105",
               {"$.tolernace: unknown key 'tolernace'", "did you mean 'tolerance'?", "allowed keys:",
                "format_version", "tuning"});
  d = base();
  d["cases"][1]["size"] = json::object();
  expect_error(d, "kopt.spec.105", {"$.cases[1].size", "allowed keys: name, role, sizes, inputs"});
  d = base();
  d["timing"] = {{"iteration", 5}};
  expect_error(d, "kopt.spec.105", {"$.timing.iteration", "did you mean 'iterations'?"});
  d = base();
  d["signature"][0]["init"] = json::parse(R"({"kind": "uniform", "lo": 0})");
  expect_error(d, "kopt.spec.105", {"$.signature[0].init.lo", "allowed keys: kind, low, high"});
  d = base();
  d["signature"][0]["init"] = json::parse(R"({"kind": "normal", "low": 0})");  // keys of another kind
  expect_error(d, "kopt.spec.105", {"$.signature[0].init.low", "mean, stddev"});
  d = base();
  d["signature"][0]["dtype"] = "float";
  expect_error(d, "kopt.spec.105", {"$.signature[0].dtype"});
  d = base();
  d["reference"]["outputs"] = json::object();
  expect_error(d, "kopt.spec.105", {"$.reference.outputs"});
  d = base();
  d["launch"]["shared"] = 0;
  expect_error(d, "kopt.spec.105", {"$.launch.shared", "did you mean 'shared_bytes'?"});
  d = base();
  d["tuning"] = {{"param", json::object()}};
  expect_error(d, "kopt.spec.105", {"$.tuning.param"});
  d = base();
  d["checks"] = {{"trial", 1}};
  expect_error(d, "kopt.spec.105", {"$.checks.trial"});
  d = base();
  d["tolerance"] = json::parse(R"({"C": {"rtol": 1, "factor": 2}})");
  expect_error(d, "kopt.spec.105", {"$.tolerance.C.factor"});
}

TEST_F(SpecTest, Error106InvalidNames) {
  json d = base();
  d["signature"][0]["name"] = "1A";
  expect_error(d, "kopt.spec.106", {"$.signature[0].name", "'1A'", "identifier"});
  d = base();
  d["cases"][0]["name"] = "a/b";
  expect_error(d, "kopt.spec.106", {"$.cases[0].name", "'a/b'"});
  d = base();
  d["cases"][0]["name"] = "";
  expect_error(d, "kopt.spec.106", {"$.cases[0].name"});
  d = base();
  d["cases"][0]["sizes"]["M-1"] = 4;
  expect_error(d, "kopt.spec.106", {"$.cases[0].sizes[\"M-1\"]", "size name"});
  d = base();
  d["name"] = "..";
  expect_error(d, "kopt.spec.106", {"$.name"});
  d = base();
  d["tuning"] = json::parse(R"({"params": {"B M": [1]}})");
  expect_error(d, "kopt.spec.106", {"$.tuning.params[\"B M\"]"});
  d = base();
  d["initial"]["defines"] = {{"-X", 1}};
  expect_error(d, "kopt.spec.106", {"define name"});
}

TEST_F(SpecTest, Error107DuplicateNames) {
  json d = base();
  d["signature"][1]["name"] = "A";
  expect_error(d, "kopt.spec.107", {"$.signature[1].name", "duplicate parameter name 'A'"});
  d = base();
  d["cases"][1]["name"] = "1x1x1";
  expect_error(d, "kopt.spec.107", {"$.cases[1].name", "duplicate case name '1x1x1'"});
  d = base();
  d["tuning"] = json::parse(R"({"params": {"BM": [1]}})");
  // The initial kernel may set a tuning parameter (the configuration it runs
  // with); the template, whose parameters the search sets, may not.
  d["initial"]["defines"] = {{"BM", 1}};
  EXPECT_NO_THROW(parse(d));
  d["template"] = {{"source", "naive.cu"}, {"entry", "sgemm_naive"}, {"defines", {{"BM", 1}}}};
  expect_error(d, "kopt.spec.107", {"$.template.defines.BM", "tuning parameter"});
}

TEST_F(SpecTest, Error108UnknownType) {
  json d = base();
  d["signature"][0]["type"] = "float33";
  expect_error(d, "kopt.spec.108", {"$.signature[0].type", "unknown type 'float33'", "bfloat16"});
}

TEST_F(SpecTest, Error109UnknownRole) {
  json d = base();
  d["signature"][2]["role"] = "outptu";
  expect_error(d, "kopt.spec.109", {"$.signature[2].role", "'outptu'", "input, output, inout"});
  d = base();
  d["cases"][0]["role"] = "perf";
  expect_error(d, "kopt.spec.109", {"$.cases[0].role", "correctness, performance"});
}

TEST_F(SpecTest, Error110UnknownKind) {
  json d = base();
  d["signature"][0]["init"] = {{"kind", "gaussian"}};
  expect_error(d, "kopt.spec.110", {"$.signature[0].init.kind", "'gaussian'", "uniform, normal"});
  d = base();
  d["reference"]["kind"] = "python";
  expect_error(d, "kopt.spec.110", {"$.reference.kind", "'python'", "kernel, npy, cublas"});
  d = base();
  d["tolerance"] = json::parse(R"({"C": {"kind": "ulp"}})");
  expect_error(d, "kopt.spec.110", {"$.tolerance.C.kind", "allclose, gemm"});
  d = base();
  d["reference"] = json::parse(R"({"kind": "cublas", "op": "dgemm"})");
  expect_error(d, "kopt.spec.110", {"$.reference.op", "'dgemm'", "sgemm"});
}

TEST_F(SpecTest, Error111ExpressionSyntax) {
  json d = base();
  d["signature"][0]["count"] = "M*";
  expect_error(d, "kopt.spec.111", {"$.signature[0].count", "cannot parse expression", "kopt.expr.002", "'M*'"});
  d = base();
  d["launch"]["grid"][1] = "ceil_dv(M, 16)";
  expect_error(d, "kopt.spec.111", {"$.launch.grid[1]", "unknown function 'ceil_dv'"});
  d = base();
  d["tuning"] = json::parse(R"({"params": {"BM": [1]}, "constraints": ["BM %% 2"]})");
  expect_error(d, "kopt.spec.111", {"$.tuning.constraints[0]"});
  d = base();
  d["signature"][3]["value"] = "0.5";
  expect_error(d, "kopt.spec.111", {"$.signature[3].value", "floating-point literal"});
}

TEST_F(SpecTest, Error112UnknownNames) {
  json d = base();
  d["signature"][0]["count"] = "M*Q";
  expect_error(d, "kopt.spec.112",
               {"$.signature[0].count", "'Q' in 'M*Q'", "neither a size of every case nor a tuning parameter",
                "no case has this size", "sizes of every case: K, M, N"});
  d = base();
  d["cases"][1]["sizes"]["P"] = 3;  // only one case has P
  d["launch"]["shared_bytes"] = "P";
  expect_error(d, "kopt.spec.112", {"$.launch.shared_bytes", "missing from the sizes of case(s) '1x1x1'"});
  d = base();
  d["tuning"] = json::parse(R"({"params": {"BM": [1]}, "constraints": ["BM <= BK"]})");
  expect_error(d, "kopt.spec.112", {"$.tuning.constraints[0]", "'BK'", "tuning parameters: BM"});
  d = base();
  d["initial"]["launch"] = json::parse(R"({"grid": ["X"], "block": [1]})");
  expect_error(d, "kopt.spec.112", {"$.initial.launch.grid[0]", "'X'"});
  d = base();
  d["signature"][3]["value"] = "Z + 1";
  expect_error(d, "kopt.spec.112", {"$.signature[3].value", "'Z'"});
  // Short-circuit does not hide a bad name.
  d = base();
  d["signature"][0]["count"] = "M*K + (0 && Q)";
  expect_error(d, "kopt.spec.112", {"'Q'"});
}

TEST_F(SpecTest, Error113EvaluationFailsForACase) {
  json d = base();
  d["signature"][0]["count"] = "M*K / (K - 1)";
  expect_error(d, "kopt.spec.113", {"$.signature[0].count", "case '1x1x1'", "kopt.expr.004", "division by zero"});
  d = base();
  d["tuning"] = json::parse(R"({"params": {"BM": [0, 16]}})");
  d["launch"]["grid"][0] = "ceil_div(N, BM)";
  expect_error(d, "kopt.spec.113", {"$.launch.grid[0]", "tuning parameters at their first value: BM=0"});
  d = base();
  d["signature"][0]["count"] = "M * 4611686018427387904 * 2";
  expect_error(d, "kopt.spec.113", {"kopt.expr.005", "overflow"});
}

TEST_F(SpecTest, Error114ZeroSizeBuffer) {
  json d = base();
  d["signature"][1]["count"] = "K*N - 1";
  expect_error(d, "kopt.spec.114", {"$.signature[1].count", "'K*N - 1'", "'B'", "is 0 for case '1x1x1'"});
  d = base();
  d["signature"][1]["count"] = 0;
  expect_error(d, "kopt.spec.114", {"is 0"});
  d = base();
  d["signature"][1]["count"] = "M - 5";
  expect_error(d, "kopt.spec.114", {"is -4 for case '1x1x1'"});
  d = base();
  d["signature"][1]["count"] = "pow2(62)";  // 2^62 floats overflow the byte size
  expect_error(d, "kopt.spec.114", {"too large"});
}

TEST_F(SpecTest, Error115SizesMustBePositiveIntegers) {
  for (const json& bad : {json(0), json(-3), json(1.5), json("4"), json(true), json(nullptr),
                          json(18446744073709551615ull)}) {
    json d = base();
    d["cases"][1]["sizes"]["M"] = bad;
    expect_error(d, "kopt.spec.115", {"$.cases[1].sizes.M: expected a positive integer"});
  }
}

TEST_F(SpecTest, Error116NoOutputBuffer) {
  json d = base();
  d["signature"][2]["role"] = "input";
  expect_error(d, "kopt.spec.116", {"$.signature", "at least one buffer with role 'output' or 'inout'"});
}

TEST_F(SpecTest, Error117NoCases) {
  json d = base();
  d["cases"] = json::array();
  expect_error(d, "kopt.spec.117", {"$.cases", "at least one case"});
}

TEST_F(SpecTest, Error118ToleranceForANonOutput) {
  json d = base();
  d["tolerance"] = json::parse(R"({"A": {"rtol": 1e-3}})");
  expect_error(d, "kopt.spec.118", {"$.tolerance.A", "'A' is not an output buffer", "outputs: C"});
  d["tolerance"] = json::parse(R"({"Z": {"rtol": 1e-3}})");
  expect_error(d, "kopt.spec.118", {"$.tolerance.Z"});
  d["tolerance"] = json::parse(R"({"M": {"rtol": 1e-3}})");  // a scalar
  expect_error(d, "kopt.spec.118", {"$.tolerance.M"});
}

TEST_F(SpecTest, Error119NumbersOutOfRange) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {R"({"timing": {"warmup": -1}})", "$.timing.warmup: expected warmup >= 0, got -1"},
      {R"({"timing": {"iterations": 0}})", "$.timing.iterations: expected iterations >= 1"},
      {R"({"timing": {"iterations": 3000000000}})", "$.timing.iterations"},
      {R"({"timing": {"launch_timeout_ms": 0}})", "$.timing.launch_timeout_ms"},
      {R"({"checks": {"trials": 4}})", "$.checks.trials: expected trials in 1..3, got 4"},
      {R"({"checks": {"trials": 0}})", "$.checks.trials"},
      {R"({"checks": {"repeats": 0}})", "$.checks.repeats: expected repeats >= 1"},
      {R"({"tolerance": {"C": {"rtol": -1}}})", "$.tolerance.C.rtol"},
      {R"({"tolerance": {"C": {"rel_l2": -1}}})", "$.tolerance.C.rel_l2"},
      {R"({"tolerance": {"C": {"kind": "gemm", "factor": 0}}})", "$.tolerance.C.factor"},
  };
  for (const auto& [patch, needle] : cases) {
    json d = base();
    d.update(json::parse(patch));
    expect_error(d, "kopt.spec.119", {needle});
  }
  json d = base();
  d["signature"][0]["init"] = json::parse(R"({"kind": "uniform", "low": 1, "high": 1})");
  expect_error(d, "kopt.spec.119", {"$.signature[0].init", "low < high"});
  d["signature"][0]["init"] = json::parse(R"({"kind": "normal", "stddev": -1})");
  expect_error(d, "kopt.spec.119", {"$.signature[0].init.stddev"});
  d["signature"][0]["init"] = json::parse(R"({"kind": "int_range", "low": 5, "high": 4})");
  expect_error(d, "kopt.spec.119", {"low <= high"});
  d = base();
  d["signature"].push_back(json::parse(R"({"name": "U", "type": "uint8", "role": "input", "count": 1,
                                           "init": {"kind": "int_range", "low": 0, "high": 256}})"));
  expect_error(d, "kopt.spec.119", {"$.signature[7].init", "does not fit in uint8"});
  d["signature"][7]["init"] = json::parse(R"({"kind": "constant", "value": 1.5})");
  expect_error(d, "kopt.spec.119", {"constant 1.5 is not a value of uint8"});
  d = base();
  d["signature"][1]["count"] = 9223372036854775808ull;
  expect_error(d, "kopt.spec.119", {"$.signature[1].count", "does not fit in 64 bits"});
}

TEST_F(SpecTest, Error120EmptyTuningValues) {
  json d = base();
  d["tuning"] = json::parse(R"({"params": {"BM": []}})");
  expect_error(d, "kopt.spec.120", {"$.tuning.params.BM", "'BM' has no values"});
}

TEST_F(SpecTest, Error121DuplicateTuningValue) {
  json d = base();
  d["tuning"] = json::parse(R"({"params": {"BM": [64, 128, 64]}})");
  expect_error(d, "kopt.spec.121", {"$.tuning.params.BM[2]", "duplicate value 64"});
}

TEST_F(SpecTest, Error122MissingFiles) {
  json d = base();
  d["initial"]["source"] = "nothere.cu";
  expect_error(d, "kopt.spec.122", {"$.initial.source", "file not found", (dir_ / "nothere.cu").string(),
                                    "(from 'nothere.cu')"});
  d = base();
  d["reference"]["source"] = "kernels";  // a folder is not a source file
  expect_error(d, "kopt.spec.122", {"$.reference.source"});
  d = base();
  d["signature"][0]["init"] = json::parse(R"({"kind": "npy", "path": "in/{case}_A.npy"})");
  expect_error(d, "kopt.spec.122", {"$.signature[0].init.path", "in/1x1x1_A.npy", "case '1x1x1'"});
  d = base();
  d["reference"] = json::parse(R"({"kind": "npy", "outputs": {"C": "golden/{case}.npy"}})");
  expect_error(d, "kopt.spec.122", {"$.reference.outputs.C", "golden/1x1x1.npy"});
}

TEST_F(SpecTest, Error123CublasNamesNotInTheSpec) {
  json d = base();
  d["reference"] = json::parse(R"({"kind": "cublas", "a": "X"})");
  expect_error(d, "kopt.spec.123", {"$.reference.a", "'X' is not a buffer of the signature"});
  d["reference"] = json::parse(R"({"kind": "cublas", "c": "M"})");  // a scalar
  expect_error(d, "kopt.spec.123", {"$.reference.c"});
  d["reference"] = json::parse(R"({"kind": "cublas", "k": "Q"})");
  expect_error(d, "kopt.spec.123", {"$.reference.k", "'Q' is not a size of every case"});
  d = base();
  d["tolerance"] = json::parse(R"({"C": {"kind": "gemm", "b": "Y"}})");
  expect_error(d, "kopt.spec.123", {"$.tolerance.C.b", "'Y'"});
  d["tolerance"] = json::parse(R"({"C": {"kind": "gemm", "m": "R"}})");
  expect_error(d, "kopt.spec.123", {"$.tolerance.C.m", "'R'"});
}

TEST_F(SpecTest, Error124CublasBufferMismatch) {
  json d = base();
  d["reference"] = json::parse(R"({"kind": "cublas"})");
  d["signature"][0]["type"] = "double";
  expect_error(d, "kopt.spec.124", {"$.reference.a", "float", "double"});
  d = base();
  d["reference"] = json::parse(R"({"kind": "cublas"})");
  d["signature"][1]["count"] = "K*N + 1";
  expect_error(d, "kopt.spec.124", {"$.reference.b", "holds 2 elements in case '1x1x1'", "K*N = 1"});
  d = base();
  d["reference"] = json::parse(R"({"kind": "cublas", "a": "B", "b": "A"})");  // swapped: counts differ
  expect_error(d, "kopt.spec.124", {"$.reference.a", "case '64x32x16'"});
  d = base();
  d["reference"] = json::parse(R"({"kind": "cublas", "c": "A", "a": "C"})");
  expect_error(d, "kopt.spec.124", {"must be an input buffer"});
}

TEST_F(SpecTest, Error125MissingLaunch) {
  json d = base();
  d.erase("launch");
  expect_error(d, "kopt.spec.125", {"$: missing required key 'launch'", "has no launch of its own"});
  d["initial"]["launch"] = json::parse(R"({"grid": [1], "block": [1]})");
  expect_error(d, "kopt.spec.125", {"the reference kernel has no launch of its own"});
  d["reference"] = json::parse(R"({"kind": "cublas"})");
  EXPECT_NO_THROW(parse(d));
  d.erase("initial");
  expect_error(d, "kopt.spec.125", {"no kernel has a launch of its own"});
}

TEST_F(SpecTest, Error126BadLaunchDimensions) {
  json d = base();
  d["launch"]["grid"][0] = "N / 16";  // 0 for N = 1
  expect_error(d, "kopt.spec.126", {"$.launch.grid[0]", "grid.x 'N / 16' is 0 for case '1x1x1'", ">= 1"});
  d = base();
  d["launch"]["block"] = {32, "M - 1"};
  expect_error(d, "kopt.spec.126", {"$.launch.block[1]", "block.y"});
  d = base();
  d["launch"]["shared_bytes"] = -4;
  expect_error(d, "kopt.spec.126", {"$.launch.shared_bytes", ">= 0"});
  d = base();
  d["reference"]["launch"] = json::parse(R"({"grid": [0], "block": [1]})");
  expect_error(d, "kopt.spec.126", {"$.reference.launch.grid[0]"});
}

TEST_F(SpecTest, Error127ScalarValues) {
  json d = base();
  d["signature"][3]["value"] = 1.5;
  expect_error(d, "kopt.spec.127", {"$.signature[3].value", "int32 scalar needs an integer or an expression"});
  d = base();
  d["signature"][3]["value"] = "M*M*M*M*M*2";  // 2 for M = 1, 2^31 for M = 64
  expect_error(d, "kopt.spec.127", {"$.signature[3].value", "does not fit in int32", "case '64x32x16'"});
  d = base();
  d["signature"][3]["type"] = "uint32";
  d["signature"][3]["value"] = "0 - M";
  expect_error(d, "kopt.spec.127", {"does not fit in uint32"});
}

TEST_F(SpecTest, Error128BufferOrScalar) {
  json d = base();
  d["signature"][3]["count"] = 4;
  expect_error(d, "kopt.spec.128", {"$.signature[3].count", "scalar", "cannot have 'count'"});
  d = base();
  d["signature"][2]["init"] = json::parse(R"({"kind": "constant", "value": 0})");
  expect_error(d, "kopt.spec.128", {"$.signature[2].init", "output buffer", "inout"});
}

TEST_F(SpecTest, Error129OverrideOfANonInput) {
  json d = base();
  d["cases"][0]["inputs"] = json::parse(R"({"C": {"kind": "constant", "value": 1}})");
  expect_error(d, "kopt.spec.129", {"$.cases[0].inputs.C", "'C' is not an input", "inputs: A, B"});
  d["cases"][0]["inputs"] = json::parse(R"({"Z": {"kind": "constant", "value": 1}})");
  expect_error(d, "kopt.spec.129", {"$.cases[0].inputs.Z"});
}

TEST_F(SpecTest, Error130TuningParameterShadowsASize) {
  json d = base();
  d["tuning"] = json::parse(R"({"params": {"M": [1, 2]}})");
  expect_error(d, "kopt.spec.130", {"$.tuning.params.M", "size of case '1x1x1'"});
}

TEST_F(SpecTest, Error131NpyReferenceOutputs) {
  json d = base();
  d["reference"] = json::parse(R"({"kind": "npy", "outputs": {}})");
  expect_error(d, "kopt.spec.131", {"$.reference.outputs", "output buffer 'C' has no golden .npy file"});
  d["reference"] = json::parse(R"({"kind": "npy", "outputs": {"C": "c.npy", "A": "a.npy"}})");
  expect_error(d, "kopt.spec.131", {"$.reference.outputs.A", "not an output buffer"});
}

TEST_F(SpecTest, Error132NpyFileOfTheWrongShapeOrType) {
  NpyArray a;
  a.dtype = DType::f64;  // the buffer is float
  a.shape = {1};
  a.data.assign(8, 0);
  write_npy(dir_ / "in" / "1x1x1_A.npy", a);
  json d = base();
  d["cases"][0]["inputs"] = json::parse(R"({"A": {"kind": "npy", "path": "in/{case}_A.npy"}})");
  expect_error(d, "kopt.spec.132", {"$.cases[0].inputs.A.path", "1x1x1_A.npy", "expected 1 elements of float",
                                    "found 1 elements of double"});
  a.dtype = DType::f32;
  a.shape = {2};
  a.data.assign(8, 0);
  write_npy(dir_ / "in" / "1x1x1_A.npy", a);
  expect_error(d, "kopt.spec.132", {"expected 1 elements of float", "found 2 elements of float"});
  // Golden outputs are checked the same way, for every case.
  a.shape = {1};
  a.data.assign(4, 0);
  write_npy(dir_ / "golden" / "1x1x1.npy", a);
  write_npy(dir_ / "golden" / "64x32x16.npy", a);
  d = base();
  d["reference"] = json::parse(R"({"kind": "npy", "outputs": {"C": "golden/{case}.npy"}})");
  expect_error(d, "kopt.spec.132", {"$.reference.outputs.C", "64x32x16.npy", "expected 2048 elements"});
  // A corrupt file keeps the npy id and gains the JSON path.
  write_text(dir_ / "golden" / "64x32x16.npy", "garbage");
  expect_error(d, "kopt.npy.302", {"$.reference.outputs.C", "case '64x32x16'"});
  // bfloat16 has no .npy dtype.
  d = base();
  d["signature"][0]["type"] = "bfloat16";
  d["signature"][0]["init"] = json::parse(R"({"kind": "npy", "path": "x.npy"})");
  expect_error(d, "kopt.spec.132", {"$.signature[0].init", "bfloat16"});
}

TEST_F(SpecTest, MessagesUseTheOriginAsGiven) {
  json d = base();
  d["cases"][0]["sizes"]["M"] = 0;
  try {
    parse_spec(d, "relative/dir/other.json");
    FAIL();
  } catch (const SpecError& e) {
    // Sizes are checked before anything that needs the origin's folder.
    EXPECT_NE(std::string(e.what()).find("relative/dir/other.json: $."), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace kopt::spec

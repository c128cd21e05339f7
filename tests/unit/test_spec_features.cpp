// What peer tuners' users write, in a spec (docs/spec-format.md): defines
// usable in every expression and per case, __constant__ symbols as signature
// entries, a launch given once in the kernel file's kopt: lines (its errors
// naming the file and line), static shared memory declared for the filter
// before compiling.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "eval/kernel_params.h"
#include "spec/launch.h"
#include "spec/spec.h"
#include "temp_dir.h"
#include "util/error.h"

namespace kopt::spec {
namespace {

namespace stdfs = std::filesystem;
using json = nlohmann::json;

class SpecFeatures : public ::testing::Test {
 protected:
  void SetUp() override {
    write("conv.cu",
          "// kopt:entry conv\n"
          "// kopt:grid ceil_div(width, bx * tx), ceil_div(height, by), 1\n"
          "// kopt:block bx, by, 1\n"
          "// kopt:static_shared (by + halo) * (bx * tx + halo) * 4\n"
          "__constant__ float d_filter[FW * FW];\n"
          "extern \"C\" __global__ void conv(float* out, const float* in, int n) {}\n");
    write("ref.cu", "extern \"C\" __global__ void ref(float* out, const float* in, int n) {}\n");
  }

  void write(const std::string& name, const std::string& text) const { std::ofstream(dir_ / name) << text; }

  /// A convolution-like workload: sizes W, H; defines for the filter and the
  /// image; a constant filter; the launch in conv.cu's lines only.
  static json base() {
    return json::parse(R"J({
      "name": "conv",
      "defines": {"FW": 5, "halo": "FW // 2 * 2", "width": "W", "height": "H"},
      "signature": [
        {"name": "out", "type": "float", "role": "output", "count": "width * height"},
        {"name": "in", "type": "float", "role": "input", "count": "(width + halo) * (height + halo)"},
        {"name": "d_filter", "type": "float", "role": "constant", "count": "FW * FW",
         "init": {"kind": "normal", "mean": 0, "stddev": 1}},
        {"name": "n", "type": "int32", "value": "width * height"}
      ],
      "reference": {"kind": "kernel", "source": "ref.cu", "entry": "ref",
                    "launch": {"grid": ["ceil_div(W, 16)", "ceil_div(H, 16)"], "block": [16, 16]}},
      "initial": {"source": "conv.cu", "entry": "conv", "defines": {"bx": 16, "by": 8, "tx": 1}},
      "template": {"source": "conv.cu", "entry": "conv"},
      "cases": [
        {"name": "small", "role": "correctness", "sizes": {"W": 64, "H": 32}},
        {"name": "big", "role": "performance", "sizes": {"W": 4096, "H": 2048}}
      ],
      "tuning": {"params": {"bx": [16, 32, 64], "by": [1, 2, 4, 8], "tx": [1, 2]},
                 "constraints": ["bx * by >= 32 and bx % FW != 0", "not bx & 31 == 16"]}
    })J");
  }

  Spec parse(const json& doc) const { return parse_spec(doc, dir_ / "conv.json"); }

  /// The SpecError of `doc`, or an empty one (and a failure) when it loads.
  SpecError error_of(const json& doc) const {
    try {
      parse(doc);
    } catch (const SpecError& e) {
      return e;
    }
    ADD_FAILURE() << "expected a SpecError for " << doc.dump();
    return SpecError("none", "");
  }

  test::TempDir tmp_{"kopt-specfeat"};
  stdfs::path dir_ = tmp_.path();
};

void expect_has(const std::string& text, const std::vector<std::string>& needles) {
  for (const std::string& n : needles) EXPECT_NE(text.find(n), std::string::npos) << "'" << n << "' not in: " << text;
}

TEST_F(SpecFeatures, DefinesResolvePerCaseAndServeEveryExpression) {
  const Spec s = parse(base());
  // Values per case, in dependency order (halo uses FW).
  EXPECT_EQ(s.cases[0].defines, (std::map<std::string, int64_t>{{"FW", 5}, {"halo", 4}, {"width", 64}, {"height", 32}}));
  EXPECT_EQ(s.cases[1].defines.at("width"), 4096);
  EXPECT_TRUE(s.has_case_defines());
  EXPECT_EQ(s.constant_defines(), (std::map<std::string, int64_t>{{"FW", 5}, {"halo", 4}}));
  const std::vector<std::string> order = define_order(s);
  ASSERT_EQ(order.size(), 4u);
  EXPECT_LT(std::find(order.begin(), order.end(), "FW"), std::find(order.begin(), order.end(), "halo"));
  // A buffer count and a scalar use the defines.
  const Bindings b = bindings_for(s.cases[0], {});
  EXPECT_EQ(s.signature[1].count.eval(b), (64 + 4) * (32 + 4));
  EXPECT_EQ(s.signature[3].value.eval(b), 64 * 32);
  // A parameter may not shadow a define.
  EXPECT_THROW(bindings_for(s.cases[0], {{"FW", 3}}), SpecError);
  // Round trip: the resolved spec loads to the same spec, defines included.
  const Spec again = parse_spec(to_json(s), s.path);
  EXPECT_TRUE(again == s);
  EXPECT_EQ(to_json(s)["defines"]["halo"], "FW // 2 * 2");
}

TEST_F(SpecFeatures, ASpecWithoutDefinesIsWrittenWithoutTheKey) {
  json doc = base();
  doc.erase("defines");
  doc["defines"] = json::object();
  doc["signature"] = json::parse(R"([{"name": "out", "type": "float", "role": "output", "count": "W * H"},
                                     {"name": "in", "type": "float", "role": "input", "count": "W * H"},
                                     {"name": "n", "type": "int32", "value": "W"}])");
  doc.erase("template");
  doc.erase("tuning");
  doc["initial"]["launch"] = {{"grid", {1}}, {"block", {32}}};
  const Spec s = parse(doc);
  EXPECT_FALSE(s.has_case_defines());
  EXPECT_FALSE(to_json(s).contains("defines"));  // fingerprints of specs without defines stay as they were
}

TEST_F(SpecFeatures, DefineErrorsNameTheJsonPath) {
  json doc = base();
  doc["defines"]["bx"] = 16;  // a tuning parameter
  SpecError e = error_of(doc);
  EXPECT_EQ(e.id(), "kopt.spec.107");
  expect_has(e.what(), {"conv.json: $.defines.bx", "also a tuning parameter"});

  doc = base();
  doc["defines"]["W"] = 17;  // a size with another value
  e = error_of(doc);
  EXPECT_EQ(e.id(), "kopt.spec.107");
  expect_has(e.what(), {"$.defines.W", "its value must be \"W\""});

  doc = base();
  doc["defines"]["W"] = "W";  // the size, passed as -D W=...: fine
  EXPECT_EQ(parse(doc).cases[1].defines.at("W"), 4096);

  doc = base();
  doc["defines"]["WARP_SIZE"] = 32;
  EXPECT_EQ(error_of(doc).id(), "kopt.spec.107");

  doc = base();
  doc["defines"]["a"] = "b + 1";
  doc["defines"]["b"] = "a * 2";
  e = error_of(doc);
  EXPECT_EQ(e.id(), "kopt.spec.136");
  expect_has(e.what(), {"$.defines.a", "a, b", "cycle"});

  doc = base();
  doc["defines"]["q"] = "bx * 2";  // defines are constants: no tuning parameter
  e = error_of(doc);
  EXPECT_EQ(e.id(), "kopt.spec.112");
  expect_has(e.what(), {"$.defines.q", "'bx'"});

  doc = base();
  doc["initial"]["defines"]["FW"] = 3;  // a kernel repeating a spec define
  e = error_of(doc);
  EXPECT_EQ(e.id(), "kopt.spec.107");
  expect_has(e.what(), {"$.initial.defines.FW", "one of the spec's defines"});

  doc = base();
  doc["template"]["defines"] = {{"bx", 16}};  // the search sets a template's parameters
  e = error_of(doc);
  EXPECT_EQ(e.id(), "kopt.spec.107");
  expect_has(e.what(), {"$.template.defines.bx", "also a tuning parameter"});
}

TEST_F(SpecFeatures, ConstraintsUseConstantDefinesButNoCaseDefine) {
  json doc = base();
  doc["tuning"]["constraints"].push_back("bx * tx <= width");
  const SpecError e = error_of(doc);
  EXPECT_EQ(e.id(), "kopt.spec.133");
  expect_has(e.what(), {"$.tuning.constraints[2]", "names the define 'width'", "depends on the case's sizes"});
  // FW (constant) is fine: base() uses it already.
  EXPECT_NO_THROW(parse(base()));
}

TEST_F(SpecFeatures, ConstantEntriesAreInputsButNotKernelParameters) {
  const Spec s = parse(base());
  const Param& c = s.signature[2];
  EXPECT_EQ(c.role, Role::constant);
  EXPECT_TRUE(c.is_buffer);
  EXPECT_EQ(c.generator.kind, Generator::Kind::normal);
  EXPECT_STREQ(role_name(Role::constant), "constant");
  // The kernel's parameters: every entry but the constant.
  const std::vector<eval::ExpectedParam> params = eval::expected_params(s.signature);
  ASSERT_EQ(params.size(), 3u);
  EXPECT_EQ(params[2].name, "n");
  // Not a buffer of the data the dispatch model counts.
  EXPECT_EQ(data_bytes_expr(s).text().find("FW * FW"), std::string::npos) << data_bytes_expr(s).text();
  // A case may override its generator, like an input's.
  json doc = base();
  doc["cases"][0]["inputs"] = {{"d_filter", {{"kind", "constant"}, {"value", 1}}}};
  EXPECT_EQ(parse(doc).cases[0].input_overrides.at("d_filter").kind, Generator::Kind::constant);
}

TEST_F(SpecFeatures, AConstantLargerThanTheConstantBankIsRefused) {
  json doc = base();
  doc["signature"][2]["count"] = "W * H";  // 4096*2048 floats
  const SpecError e = error_of(doc);
  EXPECT_EQ(e.id(), "kopt.spec.114");
  expect_has(e.what(), {"$.signature[2].count", "65536 bytes", "case 'big'"});
}

TEST_F(SpecFeatures, TheInitialKernelsAnnotationsAreItsLaunch) {
  // No top-level launch: the initial kernel's kopt: lines are its launch and the candidates'.
  const Spec s = parse(base());
  ASSERT_TRUE(s.initial->annotated_launch);
  EXPECT_FALSE(s.initial->launch);  // nothing is written into the spec
  EXPECT_EQ(s.launch.grid[0].text(), "ceil_div(width, bx * tx)");
  EXPECT_EQ(s.launch.static_shared_bytes.text(), "(by + halo) * (bx * tx + halo) * 4");
  EXPECT_EQ(&kernel_launch(s, *s.initial), &*s.initial->annotated_launch);
  // Evaluated with the initial kernel's defines: its configuration.
  const LaunchDims d = resolve_launch(kernel_launch(s, *s.initial), s.cases[1], s.initial->defines);
  EXPECT_EQ(d.grid[0], 4096 / 16);
  EXPECT_EQ(d.grid[1], 2048 / 8);
  EXPECT_EQ(d.block[0], 16);
  // The reference has its own launch in the spec, which wins.
  EXPECT_EQ(kernel_launch(s, s.reference.kernel).block[0].text(), "16");
}

TEST_F(SpecFeatures, WithoutAnyLaunchTheErrorSaysWhereOneGoes) {
  json doc = base();
  write("bare.cu", "extern \"C\" __global__ void conv(float* out, const float* in, int n) {}\n");
  doc["initial"]["source"] = "bare.cu";
  const SpecError e = error_of(doc);
  EXPECT_EQ(e.id(), "kopt.spec.125");
  expect_has(e.what(), {"the initial kernel has no launch of its own", "'// kopt:grid'"});
}

TEST_F(SpecFeatures, AnAnnotationErrorNamesTheFileAndLine) {
  write("conv.cu",
        "// kopt:entry conv\n"
        "// a comment\n"
        "// kopt:grid ceil_div(width, bx * tile_x), 1, 1\n"
        "// kopt:block bx, 1, 1\n");
  const SpecError e = error_of(base());
  EXPECT_EQ(e.id(), "kopt.spec.112");
  expect_has(e.what(), {"conv.json: $.initial: ", "conv.cu:3: kopt:grid: 'tile_x'", "defines: FW, halo, height, width"});
  // A line that does not parse names them too.
  write("conv.cu", "// kopt:entry conv\n// kopt:block bx +, 1, 1\n");
  try {
    parse(base());
    ADD_FAILURE() << "no error";
  } catch (const SpecError& err) {
    EXPECT_EQ(err.id(), "kopt.annot.402");
    expect_has(err.what(), {"conv.cu:2: kopt:block: "});
  }
}

TEST_F(SpecFeatures, ALaunchThatFailsLaterNamesTheFileAndLine) {
  // Loaded fine (tuning parameters at their first value), then evaluated
  // with a configuration that leaves a name unbound.
  const Spec s = parse(base());
  try {
    resolve_launch(*s.initial->annotated_launch, s.cases[0], {{"bx", 16}});
    ADD_FAILURE() << "no error";
  } catch (const SpecError& e) {
    EXPECT_EQ(e.id(), "kopt.launch.501");
    expect_has(e.what(), {"conv.cu:2: kopt:grid 'ceil_div(width, bx * tx)' for case small", "unknown name 'tx'"});
  }
}

TEST_F(SpecFeatures, StaticSharedBytesInTheJsonLaunch) {
  json doc = base();
  doc["launch"] = {{"grid", {"ceil_div(W, bx)"}}, {"block", {"bx"}}, {"static_shared_bytes", "bx * 4"}};
  const Spec s = parse(doc);
  EXPECT_EQ(s.launch.static_shared_bytes.text(), "bx * 4");
  EXPECT_EQ(to_json(s)["launch"]["static_shared_bytes"], "bx * 4");
  doc["launch"]["static_shared_bytes"] = "-bx";
  EXPECT_EQ(error_of(doc).id(), "kopt.spec.126");
}

TEST_F(SpecFeatures, ConstraintsInPythonSpelling) {
  const Spec s = parse(base());
  const Bindings ok{{"bx", 32}, {"by", 2}, {"tx", 1}, {"FW", 5}};
  EXPECT_EQ(s.tuning.constraints[0].eval(ok), 1);
  EXPECT_EQ(s.tuning.constraints[1].eval(ok), 1);           // not (32 & 31 == 16)
  EXPECT_EQ(s.tuning.constraints[1].eval({{"bx", 16}}), 0);  // 16 & 31 == 16
}

TEST_F(SpecFeatures, ASumToleranceOfPartialSums) {
  json doc = base();
  // One partial sum per block of bx threads: W * H / bx partials of W * H terms.
  doc["signature"][0]["count"] = "width * height // bx";
  doc["tolerance"] = {{"out", {{"kind", "sum"}, {"terms", "width * height"}, {"partials", "width * height // bx"}}}};
  const Spec s = parse(doc);
  const Tolerance& t = s.tolerance.at("out");
  EXPECT_EQ(t.kind, Tolerance::Kind::sum);
  EXPECT_EQ(t.factor, 8.0);
  EXPECT_EQ(t.atol, 0.0);
  EXPECT_EQ(t.rtol, 0.0);  // not allclose's 1e-5
  EXPECT_EQ(t.terms.eval(bindings_for(s.cases[0], {{"bx", 16}})), 64 * 32);
  EXPECT_EQ(sum_partials(t, 128, bindings_for(s.cases[0], {{"bx", 16}})), 128);
  EXPECT_TRUE(parse_spec(to_json(s), s.path) == s);
  // Without partials or totals: one total of all the output's elements.
  doc["tolerance"]["out"].erase("partials");
  const Spec one = parse(doc);
  EXPECT_TRUE(one.tolerance.at("out").partials.empty() && one.tolerance.at("out").totals.empty());
  EXPECT_EQ(sum_partials(one.tolerance.at("out"), 96, {}), 96);
  EXPECT_FALSE(to_json(one)["tolerance"]["out"].contains("partials"));
  EXPECT_TRUE(parse_spec(to_json(one), one.path) == one);
  // Or the totals: 2 totals of 64 partials each.
  doc["tolerance"]["out"]["totals"] = 2;
  const Spec two = parse(doc);
  EXPECT_EQ(sum_partials(two.tolerance.at("out"), 128, {}), 64);
  EXPECT_EQ(sum_partials(two.tolerance.at("out"), 127, {}), 0);
  EXPECT_TRUE(parse_spec(to_json(two), two.path) == two);
}

TEST_F(SpecFeatures, SumToleranceErrorsNameTheJsonPath) {
  json doc = base();
  doc["tolerance"] = {{"out", {{"kind", "sum"}}}};
  SpecError e = error_of(doc);
  expect_has(e.what(), {"$.tolerance.out", "terms"});
  doc["tolerance"]["out"] = {{"kind", "sum"}, {"terms", "width * Q"}};
  e = error_of(doc);
  EXPECT_EQ(e.id(), "kopt.spec.112");
  expect_has(e.what(), {"$.tolerance.out.terms", "'Q'"});
  // 64 * 32 outputs are no whole number of totals of 3 * bx = 48 partials.
  doc["tolerance"]["out"] = {{"kind", "sum"}, {"terms", "width * height"}, {"partials", "3 * bx"}};
  e = error_of(doc);
  EXPECT_EQ(e.id(), "kopt.spec.119");
  expect_has(e.what(), {"$.tolerance.out.partials", "2048 elements for case 'small'", "48 partial sums",
                        "tuning parameters at their first value"});
  doc["tolerance"]["out"] = {{"kind", "sum"}, {"terms", "width * height"}, {"totals", "3"}};
  e = error_of(doc);
  EXPECT_EQ(e.id(), "kopt.spec.119");
  expect_has(e.what(), {"$.tolerance.out.totals", "no whole number of 3 totals"});
  doc["tolerance"]["out"] = {{"kind", "sum"}, {"terms", "1"}, {"totals", 1}, {"partials", 1}};
  expect_has(error_of(doc).what(), {"$.tolerance.out", "not both"});
  doc["tolerance"]["out"] = {{"kind", "sum"}, {"terms", "0"}};
  EXPECT_EQ(error_of(doc).id(), "kopt.spec.119");
  doc["tolerance"]["out"] = {{"kind", "sum"}, {"terms", "1"}, {"rel_l2", 1e-5}};  // allclose's
  EXPECT_EQ(error_of(doc).id(), "kopt.spec.105");
}

TEST_F(SpecFeatures, AViewTakesAnotherBuffersElements) {
  json doc = base();
  // The filter's constant copy is a view of a global one; "in"'s columns of a
  // second layout as a view with a stride.
  doc["signature"][2]["init"] = {{"kind", "view"}, {"of", "filter"}};
  doc["signature"].push_back({{"name", "filter"}, {"type", "float"}, {"role", "input"}, {"count", "FW * FW"},
                              {"init", {{"kind", "normal"}, {"fixed", true}}}});
  doc["signature"].push_back({{"name", "col"}, {"type", "double"}, {"role", "input"}, {"count", "height + halo"},
                              {"init", {{"kind", "view"}, {"of", "in"}, {"start", 1}, {"stride", "width + halo"}}}});
  // A stride is an integer, not an expression.
  EXPECT_EQ(error_of(doc).id(), "kopt.spec.104");
  doc["signature"][5]["init"]["stride"] = 68;
  doc["cases"][1]["inputs"] = {{"col", {{"kind", "view"}, {"of", "in"}, {"start", 1}, {"stride", 4100}}}};
  const Spec s = parse(doc);
  EXPECT_EQ(s.signature[2].generator.kind, Generator::Kind::view);
  EXPECT_EQ(s.signature[2].generator.view_of, "filter");
  EXPECT_TRUE(s.signature[4].generator.fixed);
  EXPECT_EQ(s.signature[5].generator.view_stride, 68);
  EXPECT_TRUE(parse_spec(to_json(s), s.path) == s);
  EXPECT_EQ(to_json(s)["signature"][4]["init"]["fixed"], true);
  EXPECT_FALSE(to_json(s)["signature"][1]["init"].contains("fixed"));  // other fingerprints stay the same
}

TEST_F(SpecFeatures, ViewErrorsNameTheJsonPath) {
  json doc = base();
  auto with_view = [&](const json& init) {
    json d = doc;
    d["signature"][2]["init"] = init;
    return error_of(d);
  };
  SpecError e = with_view({{"kind", "view"}, {"of", "nothing"}});
  EXPECT_EQ(e.id(), "kopt.spec.119");
  expect_has(e.what(), {"$.signature[2].init.of", "'nothing' is not another input"});
  e = with_view({{"kind", "view"}, {"of", "out"}});  // an output has no contents to take
  expect_has(e.what(), {"$.signature[2].init.of", "'out'"});
  e = with_view({{"kind", "view"}, {"of", "d_filter"}});  // itself
  expect_has(e.what(), {"$.signature[2].init.of"});
  // 25 elements from element 10 in steps of 5 need 131 of 'in': case small has (64+4)*(32+4).
  e = with_view({{"kind", "view"}, {"of", "in"}, {"start", 10}, {"stride", 200}});
  EXPECT_EQ(e.id(), "kopt.spec.119");
  expect_has(e.what(), {"$.signature[2].init", "element 10 + (25 - 1) * 200 of 'in', which has 2448 elements",
                        "case 'small'"});
  e = with_view({{"kind", "view"}, {"of", "in"}, {"stride", 0}});
  expect_has(e.what(), {"$.signature[2].init.stride", "stride >= 1"});
  e = with_view({{"kind", "view"}, {"of", "in"}, {"fixed", true}});  // a view follows its buffer
  EXPECT_EQ(e.id(), "kopt.spec.105");
  // A view of a view.
  doc["signature"].push_back({{"name", "copy"}, {"type", "float"}, {"role", "input"}, {"count", 4},
                              {"init", {{"kind", "view"}, {"of", "d_filter"}}}});
  e = with_view({{"kind", "view"}, {"of", "in"}});
  expect_has(e.what(), {"$.signature[4].init.of", "'d_filter' is a view itself"});
}

}  // namespace
}  // namespace kopt::spec

// The kernel-file format (spec/kernel_file): what is written parses back to
// what was written, and the files are byte for byte those the code wrote
// before the format had one owner (golden files in tests/data/kernel_file/,
// written from kernel_file_cases.h by that code). A golden launch header
// holds a line "@@kopt-shipped NAME@@" where the header copies the shipped
// text gen/shipped.h names NAME (test_shipped_headers.cpp checks that text
// against its source), so the golden keeps no second copy of it.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "eval/evaluator.h"
#include "gen/generate.h"
#include "gen/shipped.h"
#include "kernel_file_cases.h"
#include "store/store.h"
#include "spec/annotations.h"
#include "spec/kernel_file.h"
#include "spec/spec.h"
#include "temp_dir.h"
#include "util/error.h"
#include "util/fs.h"

namespace {

namespace kc = kopt::test::kernel_file_cases;
namespace spec = kopt::spec;
namespace fsys = std::filesystem;
using kopt::test::TempDir;
using nlohmann::json;

const fsys::path kGolden = fsys::path(KOPT_TEST_DATA_DIR) / "kernel_file";

std::string golden(const std::string& name) { return kopt::fs::read_file(kGolden / name); }

/// A golden launch header with each "@@kopt-shipped NAME@@" line replaced by
/// the shipped text NAME (gen/shipped.h); an unknown NAME fails the test.
std::string golden_launch_header(const std::string& name) {
  namespace sh = kopt::gen::shipped;
  const std::map<std::string, const char*> shipped = {
      {"expression_functions", sh::expression_functions}, {"launch_config", sh::launch_config},
      {"python_operators", sh::python_operators},         {"dispatch_rule", sh::dispatch_rule},
      {"nearest_tuned", sh::nearest_tuned},               {"capture_includes", sh::capture_includes},
      {"capture_runtime", sh::capture_runtime}};
  const std::string open = "@@kopt-shipped ", close = "@@\n";
  std::string text = golden(name);
  for (size_t at = text.find(open); at != std::string::npos; at = text.find(open, at)) {
    const size_t end = text.find(close, at);
    const std::string key = text.substr(at + open.size(), end == std::string::npos ? 0 : end - at - open.size());
    const auto it = shipped.find(key);
    if (end == std::string::npos || it == shipped.end()) {
      ADD_FAILURE() << name << ": unknown shipped text at byte " << at << " (\"" << key << "\")";
      return text;
    }
    text.replace(at, end + close.size() - at, it->second);
    at += std::string(it->second).size();
  }
  return text;
}

spec::Spec vadd() { return spec::load_spec(std::string(KOPT_TEST_DATA_DIR) + "/agent/vadd.json"); }

spec::Launch launch(const std::vector<std::string>& grid, const std::vector<std::string>& block,
                    const std::string& shared) {
  spec::Launch l;
  for (int i = 0; i < 3; ++i) {
    l.grid[i] = spec::Expr::parse(i < static_cast<int>(grid.size()) ? grid[i] : "1");
    l.block[i] = spec::Expr::parse(i < static_cast<int>(block.size()) ? block[i] : "1");
  }
  l.shared_bytes = spec::Expr::parse(shared);
  return l;
}

/// The launch's expressions as text: grid x, y, z, block x, y, z, shared.
std::vector<std::string> texts(const spec::Launch& l) {
  std::vector<std::string> t;
  for (int i = 0; i < 3; ++i) t.push_back(l.grid[i].text());
  for (int i = 0; i < 3; ++i) t.push_back(l.block[i].text());
  t.push_back(l.shared_bytes.text());
  return t;
}

/// A candidate as the golden .candidate(s).json files hold it.
json candidate_json(const spec::Candidate& c, const std::string& whole) {
  json j = {{"label", c.label}, {"source_name", c.source_name}, {"entry", c.entry},
            {"options", c.options}, {"params", c.params}, {"source_is_the_file", c.source == whole}};
  j["launch"] = c.launch ? json(texts(*c.launch)) : json(nullptr);
  return j;
}

/// The SelfContainedKernel the run folder's write_best builds for run A's winner.
spec::SelfContainedKernel best_a() {
  spec::SelfContainedKernel k;
  k.header.title = std::string("best.cu: the fastest kernel of ") + kc::kRunDirToken +
                   ", written by KernelOptimizer " + kc::kVersionToken + ".";
  k.header.fields = {{"Workload", "sgemm big"},
                     {"GPU", "NVIDIA H200 (sm_90)"},
                     {"Geomean", "0.7071 ms over 2 performance cases; 8x the reference; 2.83x the initial kernel"},
                     {"Attempt", "#3 of 4 (candidate \"BM=128,BN=64 second line\")"},
                     {"Reproduce", "kopt evaluate --kernel best.cu (parameters are #defines below: override with "
                                   "-DNAME=VALUE)"}};
  k.entry = "sgemm_tiled";
  k.launch_lines = {"// kopt:grid ceil_div(N, BN), ceil_div(M, BM), 1", "   // kopt:block 256, 1, 1", "kopt:shared 0",
                    "", "   "};
  k.compile_options = {"-O3", "-DBM=128", "-DBN", "-DFOO=1", "-maxrregcount=128"};
  k.params = {{"BM", 128}, {"BN", 64}};
  k.source = kc::kWinnerSource;
  return k;
}

// ---------------------------------------------------------------------------
// Annotation lines

TEST(KernelFile, AnnotationLinesParseBack) {
  const spec::Launch l = launch({"ceil_div(N, BN)", "ceil_div(M, BM)"}, {"256", "1", "1"}, "BM * BK * 4");
  std::string src = spec::entry_annotation("sgemm") + "\n";
  for (const auto& x : spec::launch_annotation_lines(l)) src += x + "\n";
  src += spec::options_annotation({"-O3", "-maxrregcount=64"}) + "\n";
  src += spec::param_annotation("BM", 128) + "\n" + spec::param_annotation("BK", -8) + "\n";
  src += "extern \"C\" __global__ void sgemm() {}\n";
  const spec::Annotations a = spec::parse_annotations(src, "k.cu");
  EXPECT_EQ(a.entry.value_or(""), "sgemm");
  const auto back = spec::annotated_launch(a);
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(texts(*back), texts(l));
  EXPECT_EQ(a.options, (std::vector<std::string>{"-O3", "-maxrregcount=64"}));
  EXPECT_EQ(a.params, (std::map<std::string, int64_t>{{"BM", 128}, {"BK", -8}}));
  EXPECT_EQ(spec::options_annotation({}), "");
}

TEST(KernelFile, LaunchAnnotationLinesAreThoseOfTheAgentAndTheOptimizer) {
  // launch_lines.txt: agent.cpp's launch_lines and optimizer.cpp's for a
  // candidate's launch, optimizer.cpp's for the spec's launch, agent.cpp's for
  // the spec's launch (they agree wherever no expression is empty).
  const spec::Launch l = launch({"ceil_div(N, 256)", "1", "(1)"}, {"256", "1", "1"}, "BM * 4");
  std::string lines;
  for (int i = 0; i < 2; ++i)
    for (const auto& x : spec::launch_annotation_lines(l)) lines += x + "\n";
  for (int i = 0; i < 2; ++i)
    for (const auto& x : spec::launch_annotation_lines(vadd().launch)) lines += x + "\n";
  EXPECT_EQ(lines, golden("launch_lines.txt"));
  // Empty expressions (a Launch nobody filled in) are the defaults.
  EXPECT_EQ(spec::launch_annotation_lines(spec::Launch{}),
            (std::vector<std::string>{"// kopt:grid 1, 1, 1", "// kopt:block 1, 1, 1", "// kopt:shared 0"}));
}

TEST(KernelFile, CandidateFromAFile) {
  TempDir t;
  std::ofstream(t / "k.cu") << "// kopt:entry k\n// kopt:block 64\n// kopt:param TM=8\n// kopt:options -O3\n";
  const spec::Candidate c = spec::candidate_from_file(t / "k.cu");
  EXPECT_EQ(c.label, "k.cu");
  EXPECT_EQ(c.source_name, "k.cu");
  EXPECT_EQ(c.entry, "k");
  ASSERT_TRUE(c.launch.has_value());
  EXPECT_EQ(texts(*c.launch), (std::vector<std::string>{"1", "1", "1", "64", "1", "1", "0"}));
  EXPECT_EQ(c.params, (std::map<std::string, int64_t>{{"TM", 8}}));
  EXPECT_EQ(c.options, (std::vector<std::string>{"-O3"}));
  // eval's names for it still work.
  EXPECT_EQ(kopt::eval::candidate_from_file(t / "k.cu").entry, "k");
  ASSERT_EQ(kopt::eval::candidates_from_file(t / "k.cu").size(), 1u);
  // No launch annotations: no launch.
  std::ofstream(t / "plain.cu") << "__global__ void f() {}\n";
  EXPECT_FALSE(spec::candidate_from_file(t / "plain.cu").launch.has_value());
  EXPECT_THROW(spec::candidate_from_file(t / "missing.cu"), kopt::SpecError);
}

TEST(KernelFile, WithMissingAnnotationsAddsOnlyWhatIsMissing) {
  const spec::Spec s = vadd();
  const std::string out = spec::with_missing_annotations(kc::kPartlyAnnotated, "k.cu", "vadd", s.launch);
  EXPECT_EQ(out, golden("with_annotations.cu"));
  const spec::Annotations a = spec::parse_annotations(out, "k.cu");
  EXPECT_EQ(a.entry.value_or(""), "vadd");
  EXPECT_EQ((*a.block)[0].text(), "128");  // the source's own
  const std::string full = spec::with_missing_annotations(out, "k.cu", "other", s.launch);
  EXPECT_EQ(full, out);
}

// ---------------------------------------------------------------------------
// Self-contained kernel files (best.cu)

TEST(KernelFile, BestCuBytesAreThoseWrittenBefore) {
  EXPECT_EQ(spec::self_contained_kernel_file(best_a()), golden("best_full.cu"));
  // And through the run folder.
  TempDir t;
  const kopt::store::RunStore s = kc::run_a(t.path());
  kc::write_best_a(s);
  kc::write_variant_a(s);
  EXPECT_EQ(kc::tokenised(kopt::fs::read_file(s.dir() / "best.cu"), s.dir()), golden("best_full.cu"));
  EXPECT_EQ(kc::tokenised(kopt::fs::read_file(s.dir() / "variants" / "v1.cu"), s.dir()), golden("variant_v1.cu"));
  TempDir t2;
  const kopt::store::RunStore b = kc::run_b(t2.path());
  kc::write_best_b(b);
  EXPECT_EQ(kc::tokenised(kopt::fs::read_file(b.dir() / "best.cu"), b.dir()), golden("best_untimed.cu"));
}

TEST(KernelFile, BestCuParsesToTheHeadersValues) {
  // The source's own entry/grid/block/shared/options and BM lines are
  // superseded; its BK line (not tuned again) is kept.
  const std::string text = spec::self_contained_kernel_file(best_a());
  for (const char* want : {"// kopt-superseded:entry sgemm_tiled\n", "// kopt-superseded:grid ceil_div(N, 16)",
                           "  // kopt-superseded:block 16, 16, 1\n", "int x; // kopt-superseded:shared 64\n",
                           "// kopt-superseded:options -O2\n", "// kopt-superseded:param BM=64\n",
                           "\n// kopt:param BK=8\n", "#ifndef BM\n#define BM 128\n#endif\n"})
    EXPECT_NE(text.find(want), std::string::npos) << want << "\n" << text;
  const spec::Annotations a = spec::parse_annotations(text, "best.cu");
  EXPECT_EQ(a.entry.value_or(""), "sgemm_tiled");
  ASSERT_TRUE(a.grid && a.block && a.shared_bytes);
  EXPECT_EQ(texts(*spec::annotated_launch(a)),
            (std::vector<std::string>{"ceil_div(N, BN)", "ceil_div(M, BM)", "1", "256", "1", "1", "0"}));
  // -DBM=128 and -DBN are parameters (#defines of the file); -DFOO=1 is not.
  EXPECT_EQ(a.options, (std::vector<std::string>{"-O3", "-DFOO=1", "-maxrregcount=128"}));
  EXPECT_EQ(a.params, (std::map<std::string, int64_t>{{"BK", 8}, {"BM", 128}, {"BN", 64}}));

  // As a candidate (what kopt evaluate --kernel best.cu runs).
  const json want = json::parse(golden("best_full.candidate.json"));
  ASSERT_EQ(want.size(), 1u);
  EXPECT_EQ(candidate_json(spec::candidate_from_text(text, "best.cu", "best.cu"), text), want[0]);
}

TEST(KernelFile, WriteThenParseGivesBackEntryLaunchOptionsParams) {
  spec::SelfContainedKernel k;
  k.header.title = "k.cu: a test";
  k.header.fields = {{"Workload", "w"}, {"A very long name", "v"}};
  k.entry = "my_kernel";
  k.launch_lines = spec::launch_annotation_lines(launch({"ceil_div(M, TM)", "2", "3"}, {"TM * 4", "8"}, "TM * 16"));
  k.compile_options = {"-O3", "-DTM=4", "--use_fast_math"};
  k.params = {{"TM", 4}, {"UNROLL", 2}};
  k.source = "// kopt:entry old\n// kopt:options -G\n__global__ void my_kernel() {}\n";
  const std::string text = spec::self_contained_kernel_file(k);
  EXPECT_EQ(text.rfind("// k.cu: a test\n// Workload:  w\n// A very long name: v\n//\n", 0), 0u) << text;
  const spec::Annotations a = spec::parse_annotations(text, "k.cu");
  EXPECT_EQ(a.entry.value_or(""), "my_kernel");
  EXPECT_EQ(texts(*spec::annotated_launch(a)),
            (std::vector<std::string>{"ceil_div(M, TM)", "2", "3", "TM * 4", "8", "1", "TM * 16"}));
  EXPECT_EQ(a.options, (std::vector<std::string>{"-O3", "--use_fast_math"}));
  EXPECT_EQ(a.params, k.params);
  const std::string tail = "\n// kopt-superseded:entry old\n// kopt-superseded:options -G\n__global__ void my_kernel() {}\n";
  EXPECT_EQ(text.substr(text.size() - tail.size()), tail) << text;
}

TEST(KernelFile, SupersedeAnnotations) {
  const std::string src = "// kopt:grid 1\nx; // kopt:block 2\n// kopt:param A=1\n// kopt:param B = 2\n// kopt:shared 0";
  EXPECT_EQ(spec::supersede_annotations(src, {"block", "shared"}, {"B"}),
            "// kopt:grid 1\nx; // kopt-superseded:block 2\n// kopt:param A=1\n// kopt-superseded:param B = 2\n"
            "// kopt-superseded:shared 0");
  EXPECT_EQ(spec::supersede_annotations(src + "\n", {}, {}), src + "\n");
  std::string param;
  EXPECT_EQ(spec::annotation_key("  // kopt:param  BM =3", &param), "param");
  EXPECT_EQ(param, "BM");
  EXPECT_EQ(spec::annotation_key("int x;"), "");
}

// ---------------------------------------------------------------------------
// The agent's candidate trailer

TEST(KernelFile, EvaluatedWithTrailerIsTheAgentsBytes) {
  const spec::Launch l = launch({"ceil_div(N, 256)", "1", "(1)"}, {"256"}, "BM * 4");
  EXPECT_EQ(spec::with_evaluated_trailer(kc::kAgentSource, "k2", l, {"-O3", "--use_fast_math"}),
            golden("agent_candidate.cu"));
  EXPECT_EQ(spec::with_evaluated_trailer(std::string(kc::kAgentSource) + "\n", "k2", l, {}),
            golden("agent_candidate_no_options.cu"));
  // The trailer's lines win when the file is read back (the source without
  // its unknown kopt:bogus line, which the parser refuses).
  std::string src = kc::kAgentSource;
  src.erase(src.find("// kopt:bogus x\n"), 16);
  const std::string text = spec::with_evaluated_trailer(src, "k2", l, {"-O3"});
  const spec::Annotations a = spec::parse_annotations(text, "kernel.cu");
  EXPECT_EQ(a.entry.value_or(""), "k2");
  EXPECT_EQ((*a.block)[0].text(), "256");
  // The source's "int z; // kopt:shared 8" is after code, so the agent's rule keeps it (and it wins).
  EXPECT_EQ(a.shared_bytes->text(), "8");
  EXPECT_EQ(a.options, (std::vector<std::string>{"-O3"}));
  EXPECT_EQ(a.params, (std::map<std::string, int64_t>{{"BM", 4}}));
}

TEST(KernelFile, NeutraliseAnnotationsKeepsLinesAndParams) {
  EXPECT_EQ(spec::neutralise_annotations("// kopt:grid 1\n\t//  kopt:block 2\n// kopt:param A=1\n"),
            "// kopt-superseded:grid 1\n\t//  kopt-superseded:block 2\n// kopt:param A=1\n");
  EXPECT_EQ(spec::neutralise_annotations(""), "");
  EXPECT_EQ(spec::neutralise_annotations("// kopt:entryx y"), "// kopt:entryx y");
}

// ---------------------------------------------------------------------------
// Variants

TEST(KernelFile, JoinIsGensBytes) {
  std::vector<spec::VariantSource> vs;
  for (const auto& v : kc::variants()) vs.push_back({v.source, v.origin, v.label});
  EXPECT_EQ(spec::join_variants(vs), golden("combined.cu"));
  EXPECT_EQ(kopt::gen::combine_variants(kc::variants()), golden("combined.cu"));
  EXPECT_EQ(kopt::gen::launch_header("tr", kc::variants(), vadd()), golden_launch_header("combined_launch.h"));
  // One variant is its source unchanged.
  EXPECT_EQ(spec::join_variants({vs[1]}), vs[1].source);
}

TEST(KernelFile, JoinThenSplitGivesBackEachVariant) {
  std::vector<spec::VariantSource> vs;
  for (const auto& v : kc::variants()) vs.push_back({v.source, v.origin, v.label});
  const std::string joined = spec::join_variants(vs);
  const std::vector<spec::VariantBlock> blocks = spec::split_variants(joined, "tr.cu");
  ASSERT_EQ(blocks.size(), vs.size());
  for (size_t i = 0; i < vs.size(); ++i) {
    const spec::Annotations want = spec::parse_annotations(vs[i].source, vs[i].origin);
    const spec::Annotations& got = blocks[i].annotations;
    EXPECT_EQ(blocks[i].label, vs[i].label) << i;
    EXPECT_EQ(got.entry, want.entry) << i;
    EXPECT_EQ(texts(*spec::annotated_launch(got)), texts(*spec::annotated_launch(want))) << i;
    EXPECT_EQ(got.params, want.params) << i;
    EXPECT_EQ(got.options, want.options) << i;
    // The source comes back without its #include lines (hoisted to the top).
    std::string body;
    std::istringstream in(vs[i].source);
    for (std::string line; std::getline(in, line);)
      if (line.find("#include") == std::string::npos) body += line + "\n";
    EXPECT_EQ(blocks[i].body, body) << i;
  }

  // As candidates: the whole file, entry <entry>_v<i>, the variant's launch and parameters.
  const std::vector<spec::Candidate> cs = spec::candidates_from_text(joined, "tr.cu", "/x/tr.cu");
  ASSERT_EQ(cs.size(), vs.size());
  for (size_t i = 0; i < cs.size(); ++i) {
    EXPECT_EQ(cs[i].entry, "tr_v" + std::to_string(i));
    EXPECT_EQ(cs[i].params, blocks[i].annotations.params);
    EXPECT_EQ(cs[i].source, joined);
  }
  // Exactly what eval's candidates_from_file gave before.
  TempDir t;
  std::ofstream(t / "combined.cu", std::ios::binary) << golden("combined.cu");
  json got = json::array();
  for (const auto& c : kopt::eval::candidates_from_file(t / "combined.cu")) got.push_back(candidate_json(c, joined));
  EXPECT_EQ(got, json::parse(golden("combined.candidates.json")));
  // The file's own annotations are variant 0's (under its renamed entry).
  const spec::Annotations a = spec::parse_annotations(joined, "tr.cu");
  EXPECT_EQ(a.entry.value_or(""), "tr_v0");
  EXPECT_EQ(a.params, (std::map<std::string, int64_t>{{"BM", 64}}));
}

TEST(KernelFile, VariantErrors) {
  auto id_of = [](const std::function<void()>& f) -> std::string {
    try {
      f();
    } catch (const kopt::Error& e) {
      return e.id();
    }
    return "nothing thrown";
  };
  std::vector<spec::VariantSource> vs;
  for (const auto& v : kc::variants()) vs.push_back({v.source, v.origin, v.label});
  EXPECT_EQ(id_of([] { spec::join_variants({}); }), "kopt.gen.105");
  auto no_block = vs;
  no_block[1].source = "// kopt:entry tr\n// kopt:grid 1\n";
  EXPECT_EQ(id_of([&] { spec::join_variants(no_block); }), "kopt.gen.101");
  auto other_options = vs;
  other_options[2].source += "\n// kopt:options -G\n";
  EXPECT_EQ(id_of([&] { spec::join_variants(other_options); }), "kopt.gen.110");
  // A block that lost its kopt-variant: lines.
  std::string joined = spec::join_variants(vs);
  const auto p = joined.find("// kopt-variant:block 128");
  ASSERT_NE(p, std::string::npos);
  joined.replace(p, 16, "// lost:");
  EXPECT_EQ(id_of([&] { spec::split_variants(joined, "tr.cu"); }), "kopt.annot.405");
  // One marker is no variant file.
  EXPECT_TRUE(spec::split_variants("// ===== variant 0: x =====\n", "k.cu").empty());
  EXPECT_EQ(spec::variant_entry("k", 0, 1), "k");
  EXPECT_EQ(spec::variant_entry("k", 2, 3), "k_v2");
}

}  // namespace

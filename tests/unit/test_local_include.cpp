// Local includes of kernel sources (spec/local_include.h): what is expanded
// and what is left for NVRTC, the error for an include that cannot be read,
// and what follows the expanded text downstream: candidates, the depfile of
// `kopt generate`, the spec fingerprint, and the committed tuning cache of
// example_project (keyed on the fingerprint of templates/sgemm/sgemm.json,
// whose template includes headers beside it).
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "driver/driver.h"
#include "gen/depfile.h"
#include "spec/inputs.h"
#include "spec/kernel_file.h"
#include "spec/local_include.h"
#include "spec/spec.h"
#include "store/fingerprint.h"
#include "store/tuning_cache.h"
#include "util/fs.h"

#include "spec_error.h"
#include "temp_dir.h"

namespace {

namespace fsys = std::filesystem;
using kopt::spec::expand_local_includes;
using kopt::spec::read_kernel_source;

void write(const fsys::path& p, const std::string& text) {
  fsys::create_directories(p.parent_path());
  std::ofstream(p, std::ios::binary) << text;
}

TEST(LocalInclude, AQuotedFileBesideTheSourceIsReplacedByItsText) {
  kopt::test::TempDir t("kopt-inc");
  write(t / "h.cuh", "__device__ int one() { return 1; }\n");
  write(t / "k.cu", "// kopt:entry k\n#include \"h.cuh\"\nextern \"C\" __global__ void k() {}\n");
  const auto e = read_kernel_source(t / "k.cu");
  EXPECT_EQ(e.text, "// kopt:entry k\n__device__ int one() { return 1; }\nextern \"C\" __global__ void k() {}\n");
  EXPECT_EQ(e.includes, std::vector<fsys::path>{t / "h.cuh"});
  // Blanks around '#', before the name, and a comment after it: the line goes as a whole.
  write(t / "k2.cu", "  #  include   \"h.cuh\"  // helpers\nint x;");
  EXPECT_EQ(read_kernel_source(t / "k2.cu").text, "__device__ int one() { return 1; }\nint x;");
}

TEST(LocalInclude, NestedIncludesResolveFromTheIncludingFilesFolder) {
  kopt::test::TempDir t("kopt-inc");
  write(t / "inc" / "a.cuh", "// a\n#include \"sub/b.cuh\"\n// a end\n");
  write(t / "inc" / "sub" / "b.cuh", "// b\n#include \"../c.cuh\"\n");
  write(t / "inc" / "c.cuh", "// c");  // no final newline: the include line's own ends it
  write(t / "c.cuh", "// the wrong c\n");
  const auto e = expand_local_includes("#include \"inc/a.cuh\"\nint k;\n", t / "k.cu");
  EXPECT_EQ(e.text, "// a\n// b\n// c\n// a end\nint k;\n");
  EXPECT_EQ(e.includes, (std::vector<fsys::path>{t / "inc/a.cuh", t / "inc/sub/b.cuh", t / "inc/c.cuh"}));
}

TEST(LocalInclude, EachFileIsExpandedOnceAndPragmaOnceIsDropped) {
  kopt::test::TempDir t("kopt-inc");
  write(t / "h.cuh", "#pragma once\nint h;\n");
  write(t / "g.cuh", "#include \"h.cuh\"\n#include \"./g.cuh\"\nint g;\n");  // h again, and itself
  write(t / "k.cu", "#include \"h.cuh\"\n#include \"g.cuh\"\n#include \"h.cuh\"\n#include \"k.cu\"\nint k;\n");
  const auto e = read_kernel_source(t / "k.cu");
  EXPECT_EQ(e.text, "int h;\nint g;\nint k;\n");
  EXPECT_EQ(e.includes, (std::vector<fsys::path>{t / "h.cuh", t / "g.cuh"}));
  // The source's own #pragma once stays (it is the source, not an included file).
  EXPECT_EQ(expand_local_includes("#pragma once\n#include \"h.cuh\"\n", t / "x.cu").text, "#pragma once\nint h;\n");
}

TEST(LocalInclude, AngleBracketsAndNamesNotBesideTheFileAreLeftForNvrtc) {
  kopt::test::TempDir t("kopt-inc");
  write(t / "h.cuh", "int h;\n");
  fsys::create_directories(t / "folder.cuh");
  const std::string text =
      "#include <h.cuh>\n#include <cuda_fp16.h>\n#include \"cuda_fp16.h\"\n#include \"folder.cuh\"\n"
      "#include \"\"\n// #include \"h.cuh\"\n#include_next \"h.cuh\"\n";
  const auto e = expand_local_includes(text, t / "k.cu");
  EXPECT_EQ(e.text, text);
  EXPECT_TRUE(e.includes.empty());
  // No "include" at all: the text as it is, nothing looked up.
  EXPECT_EQ(expand_local_includes("int x;", "/nonexistent/k.cu").text, "int x;");
}

TEST(LocalInclude, AnIncludedFileThatCannotBeReadIsASpecErrorNamingTheLine) {
  kopt::test::TempDir t("kopt-inc");
  ASSERT_EQ(::mkfifo((t / "pipe.cuh").c_str(), 0600), 0);  // exists, but no regular file
  write(t / "k.cu", "// k\n\n#include \"pipe.cuh\"\n");
  const auto [id, msg] = kopt::test::spec_error([&] { read_kernel_source(t / "k.cu"); });
  EXPECT_EQ(id, "kopt.spec.137");
  EXPECT_NE(msg.find("k.cu:3: #include 'pipe.cuh'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("not a regular file"), std::string::npos) << msg;
  // The same through the spec: a kernel file named by a spec fails its load.
  write(t / "spec.json", R"({"format_version": 1, "name": "k",
    "signature": [{"name": "C", "type": "float", "role": "output", "count": 4}],
    "launch": {"grid": [1, 1, 1], "block": [4, 1, 1], "shared_bytes": 0},
    "reference": {"kind": "kernel", "source": "k.cu", "entry": "k"},
    "cases": [{"name": "c", "role": "correctness", "sizes": {}}]})");
  EXPECT_EQ(kopt::test::spec_error([&] { kopt::spec::load_spec(t / "spec.json"); }).first, "kopt.spec.137");
}

TEST(LocalInclude, CandidatesFromFilesSeeTheExpandedSourceAndItsAnnotations) {
  kopt::test::TempDir t("kopt-inc");
  write(t / "launch.cuh", "// kopt:grid 2, 1, 1\n// kopt:block 64, 1, 1\n");
  write(t / "k.cu", "// kopt:entry k\n#include \"launch.cuh\"\nextern \"C\" __global__ void k() {}\n");
  const kopt::spec::Candidate c = kopt::spec::candidate_from_file(t / "k.cu");
  EXPECT_EQ(c.source.find("#include"), std::string::npos) << c.source;
  ASSERT_TRUE(c.launch.has_value());
  EXPECT_EQ(c.launch->block[0].text(), "64");
}

/// A spec whose template includes "common.cuh" (written by the caller).
fsys::path spec_with_header(const fsys::path& d) {
  kopt::spec::NpyArray golden;
  golden.dtype = kopt::spec::DType::f32;
  golden.shape = {4};
  golden.data.assign(16, 0);
  kopt::spec::write_npy(d / "c.npy", golden);
  write(d / "tmpl.cu", "// kopt:entry k\n#include \"common.cuh\"\nextern \"C\" __global__ void k(float* C) {}\n");
  write(d / "spec.json", R"({"format_version": 1, "name": "k",
    "signature": [{"name": "C", "type": "float", "role": "output", "count": 4}],
    "launch": {"grid": [1, 1, 1], "block": [4, 1, 1], "shared_bytes": 0},
    "reference": {"kind": "npy", "outputs": {"C": "c.npy"}},
    "template": {"source": "tmpl.cu", "entry": "k"},
    "tuning": {"params": {"X": [1, 2]}},
    "cases": [{"name": "c", "role": "correctness", "sizes": {}}]})");
  return d / "spec.json";
}

TEST(LocalInclude, TheDepfileListsTheIncludedHeader) {
  kopt::test::TempDir t("kopt-inc");
  const fsys::path d = fsys::canonical(t.path());
  write(d / "common.cuh", "#include \"more.cuh\"\n");
  write(d / "more.cuh", "int more;\n");
  const fsys::path spec_file = spec_with_header(d);
  kopt::driver::OptimizeOptions o;
  o.spec = spec_file;
  const auto deps = kopt::gen::spec_dependencies(kopt::spec::load_spec(spec_file), o, d / "no-cache.json");
  EXPECT_EQ(deps, (std::vector<fsys::path>{spec_file, d / "tmpl.cu", d / "common.cuh", d / "more.cuh", d / "c.npy"}));
}

TEST(LocalInclude, TheFingerprintFollowsTheExpandedTextNotTheFiles) {
  kopt::test::TempDir t("kopt-inc");
  write(t / "common.cuh", "__device__ int one() { return 1; }\n");
  const fsys::path spec_file = spec_with_header(t.path());
  const std::string before = kopt::store::spec_fingerprint(kopt::spec::load_spec(spec_file));
  EXPECT_EQ(kopt::store::spec_fingerprint(kopt::spec::load_spec(spec_file)), before);
  // The header changes: the workload changes.
  write(t / "common.cuh", "__device__ int one() { return 2; }\n");
  const std::string changed = kopt::store::spec_fingerprint(kopt::spec::load_spec(spec_file));
  EXPECT_NE(changed, before);
  // The same text in one file: the same workload as the source with its header.
  write(t / "tmpl.cu", "// kopt:entry k\n__device__ int one() { return 2; }\n"
                       "extern \"C\" __global__ void k(float* C) {}\n");
  const kopt::spec::Spec flat = kopt::spec::load_spec(spec_file);
  EXPECT_EQ(kopt::store::spec_fingerprint(flat), changed);
  EXPECT_EQ(kopt::store::portable_spec_json(flat)["template"]["source"].get<std::string>().rfind("xxh3:", 0), 0u);
}

// templates/sgemm/sgemm_tiled.cu includes sgemm_cluster.cuh and sgemm_async.cuh, which hold its
// former lines: expanded, it is the text the committed example_project/sgemm.tuning.json was
// tuned on, so the spec's fingerprint is still the one its entry records and `kopt generate`
// without a GPU still builds the cached kernel.
TEST(LocalInclude, TheSgemmTemplateKeepsTheFingerprintOfTheCommittedTuningCache) {
  const fsys::path root(KOPT_SOURCE_DIR);
  const std::string raw = kopt::fs::read_file(root / "templates/sgemm/sgemm_tiled.cu");
  ASSERT_NE(raw.find("#include \"sgemm_cluster.cuh\""), std::string::npos) << "the template shares its helpers";
  const auto e = read_kernel_source(root / "templates/sgemm/sgemm_tiled.cu");
  EXPECT_EQ(e.includes.size(), 2u);
  EXPECT_EQ(e.text.find("#include \""), std::string::npos);

  const kopt::store::TuningCache cache = kopt::store::read_tuning_cache(root / "example_project/sgemm.tuning.json");
  ASSERT_FALSE(cache.entries.empty());
  kopt::driver::OptimizeOptions o;
  o.spec = root / "templates/sgemm/sgemm.json";
  o.quiet = true;
  EXPECT_EQ(kopt::store::spec_fingerprint(kopt::driver::load_spec_with_overrides(o)),
            cache.entries.back().base_spec_hash.value_or("(none)"))
      << "sgemm.json alone";
  o.input_cases = root / "templates/sgemm/application_shapes.json";  // as example_project's CASES_FROM
  EXPECT_EQ(kopt::store::spec_fingerprint(kopt::driver::load_spec_with_overrides(o)), cache.entries.back().spec_hash)
      << "sgemm.json with the application's shapes";
}

}  // namespace

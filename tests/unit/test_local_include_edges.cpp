// Local includes (spec/local_include.h) where the textual, once-per-source
// expansion and the C preprocessor disagree: a header reached from two
// exclusive #if branches, an #include line in a block comment, and the
// annotations of an included kernel file.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <string>

#include "cuda/nvrtc.h"
#include "spec/kernel_file.h"
#include "spec/local_include.h"

#include "temp_dir.h"

namespace {

namespace fsys = std::filesystem;
using kopt::spec::read_kernel_source;

void write(const fsys::path& p, const std::string& text) {
  fsys::create_directories(p.parent_path());
  std::ofstream(p, std::ios::binary) << text;
}

/// k.cu (`source`) beside h.cuh (`header`), expanded.
std::string expanded(const kopt::test::TempDir& t, const std::string& header, const std::string& source) {
  write(t / "h.cuh", header);
  write(t / "k.cu", source);
  return read_kernel_source(t / "k.cu").text;
}

/// The expanded source compiled by NVRTC in this process (no cache), with `defines`.
kopt::cuda::CompileResult compile(const std::string& source, const std::map<std::string, int64_t>& defines) {
  kopt::cuda::CompileRequest r;
  r.source = source;
  r.entry = "k";
  r.defines = defines;
  kopt::cuda::Compiler compiler{fsys::path()};
  return compiler.compile(r);
}

// A common autotuning layout: one header per variant, both sharing a third.
// nvcc (and NVRTC with -I) compiles every MODE; the expansion must too.
TEST(LocalIncludeEdges, AHeaderSharedByTwoExclusiveBranchesIsThereInEach) {
  kopt::test::TempDir t("kopt-inc");
  write(t / "common.cuh", "#pragma once\n__device__ int one() { return 1; }\n");
  write(t / "a.cuh", "#include \"common.cuh\"\n__device__ int pick() { return one(); }\n");
  write(t / "b.cuh", "#include \"common.cuh\"\n__device__ int pick() { return one() + 1; }\n");
  write(t / "k.cu",
        "#if MODE == 1\n#include \"a.cuh\"\n#else\n#include \"b.cuh\"\n#endif\n"
        "extern \"C\" __global__ void k(int* x) { x[0] = pick(); }\n");
  const std::string text = read_kernel_source(t / "k.cu").text;
  const kopt::cuda::CompileResult one = compile(text, {{"MODE", 1}});
  EXPECT_TRUE(one.ok) << one.log;
  const kopt::cuda::CompileResult two = compile(text, {{"MODE", 2}});
  EXPECT_TRUE(two.ok) << "MODE=2 loses common.cuh (expanded only in the MODE==1 branch):\n" << two.log << "\n" << text;
}

// An include commented out in a block comment, then included for real: the
// real one must define what the header defines.
TEST(LocalIncludeEdges, AnIncludeInABlockCommentDoesNotTakeTheRealOnesPlace) {
  kopt::test::TempDir t("kopt-inc");
  const std::string text = expanded(t, "/* helpers */\n__device__ int h() { return 1; }\n",
                                    "/* the old way:\n#include \"h.cuh\"\n*/\n#include \"h.cuh\"\n"
                                    "extern \"C\" __global__ void k(int* x) { x[0] = h(); }\n");
  const kopt::cuda::CompileResult r = compile(text, {});
  EXPECT_TRUE(r.ok) << r.log << "\n" << text;
}

// A kernel file that reuses another kernel file's device functions: its own
// kopt:entry (after the include) names its kernel, not the included one's.
TEST(LocalIncludeEdges, TheIncludingFilesOwnAnnotationsWinOverAnIncludedOnes) {
  kopt::test::TempDir t("kopt-inc");
  write(t / "naive.cu",
        "// kopt:entry naive\n// kopt:grid 1\n// kopt:block 32\n"
        "__device__ int twice(int v) { return 2 * v; }\n"
        "extern \"C\" __global__ void naive(int* x) { x[threadIdx.x] = twice(x[threadIdx.x]); }\n");
  write(t / "fast.cu",
        "#include \"naive.cu\"\n// kopt:entry fast\n// kopt:grid 4\n// kopt:block 128\n"
        "extern \"C\" __global__ void fast(int* x) { x[threadIdx.x] = twice(x[threadIdx.x]); }\n");
  const kopt::spec::Candidate c = kopt::spec::candidate_from_file(t / "fast.cu");
  EXPECT_EQ(c.entry, "fast") << "the included file's kopt:entry was taken: the wrong kernel is launched";
  ASSERT_TRUE(c.launch.has_value());
  EXPECT_EQ(c.launch->block[0].text(), "128");
}

// A header saved with a UTF-8 byte-order mark (and CRLF line ends), as some
// editors write them: the preprocessor skips a file's BOM; in the middle of
// the expanded text it must not be left.
TEST(LocalIncludeEdges, AnIncludedFilesByteOrderMarkIsNotLeftInTheText) {
  kopt::test::TempDir t("kopt-inc");
  const std::string text = expanded(t, "\xEF\xBB\xBF#pragma once\r\n__device__ int h() { return 1; }\r\n",
                                    "#include \"h.cuh\"\r\nextern \"C\" __global__ void k(int* x) { x[0] = h(); }\r\n");
  EXPECT_EQ(text.find("\xEF\xBB\xBF"), std::string::npos);
  EXPECT_EQ(text.find("#pragma once"), std::string::npos) << "the mark hid the header's #pragma once";
  const kopt::cuda::CompileResult r = compile(text, {});
  EXPECT_TRUE(r.ok) << r.log;
}

// What follows the name is dropped, except a block comment it opens: that
// comment's later lines must stay comment.
TEST(LocalIncludeEdges, ABlockCommentOpenedAfterTheNameStaysOpen) {
  kopt::test::TempDir t("kopt-inc");
  const std::string text =
      expanded(t, "__device__ int h() { return 1; }\n",
               "#include \"h.cuh\" /* helpers:\n   h() is one */\n#include \"h.cuh\" /* again\n*/\n"
               "extern \"C\" __global__ void k(int* x) { x[0] = h(); }\n");
  EXPECT_EQ(text, "__device__ int h() { return 1; }\n /* helpers:\n   h() is one */\n /* again\n*/\n"
                  "extern \"C\" __global__ void k(int* x) { x[0] = h(); }\n");
  const kopt::cuda::CompileResult r = compile(text, {});
  EXPECT_TRUE(r.ok) << r.log << "\n" << text;
  // A comment closed on the line, a // comment, and quotes and '/' in literals open nothing.
  write(t / "k2.cu", "#include \"h.cuh\" /* c */ // d /*\nchar s = '/'; const char* q = \"/*\"; int n = 1'000;\n");
  EXPECT_EQ(read_kernel_source(t / "k2.cu").text,
            "__device__ int h() { return 1; }\nchar s = '/'; const char* q = \"/*\"; int n = 1'000;\n");
}

}  // namespace

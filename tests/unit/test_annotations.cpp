#include <gtest/gtest.h>

#include "spec/annotations.h"
#include "util/error.h"

namespace {

using kopt::spec::parse_annotations;

TEST(Annotations, ParsesEntryLaunchAndOptions) {
  const std::string src =
      "// kopt:entry sgemm_tiled\n"
      "// kopt:grid ceil_div(N, 32), ceil_div(M, 32)\n"
      "  // kopt:block 32, 32, 1\n"
      "// kopt:shared 2 * 32 * 32 * 4\n"
      "// kopt:options -O3 -maxrregcount=64\n"
      "extern \"C\" __global__ void sgemm_tiled() {}\n";
  auto a = parse_annotations(src, "k.cu");
  ASSERT_TRUE(a.entry);
  EXPECT_EQ(*a.entry, "sgemm_tiled");
  ASSERT_TRUE(a.grid);
  kopt::spec::Bindings b{{"M", 100}, {"N", 64}};
  EXPECT_EQ((*a.grid)[0].eval(b), 2);
  EXPECT_EQ((*a.grid)[1].eval(b), 4);
  EXPECT_EQ((*a.grid)[2].eval(b), 1);  // defaulted
  EXPECT_EQ((*a.block)[1].eval(b), 32);
  EXPECT_EQ(a.shared_bytes->eval(b), 8192);
  EXPECT_EQ(a.options, (std::vector<std::string>{"-O3", "-maxrregcount=64"}));
}

TEST(Annotations, ParamsFromBestCu) {
  auto a = parse_annotations("// kopt:param BM=128\n// kopt:param TM = 8\n", "best.cu");
  EXPECT_EQ(a.params, (std::map<std::string, int64_t>{{"BM", 128}, {"TM", 8}}));
  EXPECT_THROW(parse_annotations("// kopt:param BM\n", "best.cu"), kopt::SpecError);
  EXPECT_THROW(parse_annotations("// kopt:param BM=12x\n", "best.cu"), kopt::SpecError);
}

TEST(Annotations, FirstLineOfAKeyWins) {
  auto a = parse_annotations("// kopt:entry first\n// kopt:block 64\n// kopt:entry second\n// kopt:block 32\n", "k.cu");
  EXPECT_EQ(*a.entry, "first");
  EXPECT_EQ((*a.block)[0].eval({}), 64);
}

TEST(Annotations, NoAnnotationsIsFine) {
  auto a = parse_annotations("__global__ void f() {}\n// a comment\n", "k.cu");
  EXPECT_FALSE(a.entry);
  EXPECT_FALSE(a.grid);
}

TEST(Annotations, ErrorsNameFileAndLine) {
  try {
    parse_annotations("\n\n// kopt:grid 1, 2, 3, 4\n", "dir/k.cu");
    FAIL() << "expected an error";
  } catch (const kopt::SpecError& e) {
    EXPECT_NE(std::string(e.what()).find("dir/k.cu:3"), std::string::npos) << e.what();
    EXPECT_EQ(e.id(), "kopt.annot.401");
  }
  try {
    parse_annotations("// kopt:blok 32\n", "k.cu");
    FAIL() << "expected an error";
  } catch (const kopt::SpecError& e) {
    EXPECT_NE(std::string(e.what()).find("kopt:blok"), std::string::npos) << e.what();
  }
  EXPECT_THROW(parse_annotations("// kopt:grid ceil_div(N,\n", "k.cu"), kopt::SpecError);
}

TEST(Annotations, SplitTopLevelRespectsParentheses) {
  auto parts = kopt::spec::split_top_level(" a , max(b, c) ,d");
  EXPECT_EQ(parts, (std::vector<std::string>{"a", "max(b, c)", "d"}));
}

}  // namespace

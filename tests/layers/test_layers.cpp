// The layer check (tests/layers/layers.h): the table parser, the include
// scanner and the tree check, on synthetic tables and source trees in temp
// folders. This is where a forbidden include is shown to fail; the real tree
// is checked by the CTest test layers.includes.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "layers.h"
#include "temp_dir.h"

namespace kopt::layers {
namespace {

namespace fs = std::filesystem;

void write(const fs::path& file, const std::string& text) {
  fs::create_directories(file.parent_path());
  std::ofstream(file, std::ios::binary) << text;
}

std::string joined(const std::vector<std::string>& lines) {
  std::string out;
  for (const auto& l : lines) out += l + "\n";
  return out;
}

const char* kTable =
    "# a test table\n"
    "util:\n"
    "spec: util\n"
    "run:  util spec   # comment after the deps\n"
    "\n"
    "cli: *\n";

Table table(const std::string& text = kTable) {
  TableResult r = parse_table(text, "layers.txt");
  EXPECT_TRUE(r.errors.empty()) << joined(r.errors);
  return r.table;
}

/// The errors of parsing `text` (expected to be exactly one).
std::string table_error(const std::string& text) {
  TableResult r = parse_table(text, "layers.txt");
  EXPECT_EQ(r.errors.size(), 1u) << joined(r.errors);
  return r.errors.empty() ? "" : r.errors[0];
}

std::vector<std::string> paths(const std::vector<Include>& incs) {
  std::vector<std::string> out;
  for (const auto& i : incs) out.push_back(std::to_string(i.line) + " " + i.path);
  return out;
}

// ------------------------------------------------------------------ table

TEST(LayerTable, ParsesPartsDepsCommentsAndStar) {
  Table t = table();
  ASSERT_EQ(t.parts.size(), 4u);
  EXPECT_EQ(t.parts[0].name, "util");
  EXPECT_TRUE(t.parts[0].deps.empty());
  EXPECT_EQ(t.parts[2].name, "run");
  EXPECT_EQ(t.parts[2].line, 4);
  EXPECT_EQ(t.parts[2].deps, (std::vector<std::string>{"util", "spec"}));
  EXPECT_TRUE(t.parts[3].star);
  EXPECT_EQ(t.parts[3].deps, (std::vector<std::string>{"util", "spec", "run"}));
  EXPECT_TRUE(t.allows("run", "spec"));
  EXPECT_TRUE(t.allows("run", "run"));
  EXPECT_FALSE(t.allows("spec", "run"));
  EXPECT_FALSE(t.allows("util", "spec"));
  EXPECT_TRUE(t.allows("cli", "run"));
  EXPECT_EQ(t.allowed_text("run"), "util spec");
  EXPECT_EQ(t.allowed_text("util"), "nothing");
  EXPECT_EQ(t.allowed_text("cli"), "*");
}

TEST(LayerTable, TheRealTableParses) {
  std::string text;
  {
    std::ifstream in(fs::path(KOPT_SOURCE_DIR) / "tool/layers.txt");
    ASSERT_TRUE(in) << "tool/layers.txt";
    std::ostringstream ss;
    ss << in.rdbuf();
    text = ss.str();
  }
  TableResult r = parse_table(text, "tool/layers.txt");
  EXPECT_TRUE(r.errors.empty()) << joined(r.errors);
  ASSERT_NE(r.table.find("cli"), nullptr);
  EXPECT_TRUE(r.table.find("cli")->star);
  EXPECT_TRUE(r.table.find("util")->deps.empty());
  EXPECT_TRUE(r.table.allows("agent", "propose"));
  EXPECT_FALSE(r.table.allows("agent", "eval"));
}

TEST(LayerTable, MalformedLineFailsNamingItsLine) {
  EXPECT_EQ(table_error("util:\n# comment\nspec util\n"),
            "layers.txt:3: expected 'part: dep dep ...', got 'spec util'");
}

TEST(LayerTable, BadNamesFailNamingTheLine) {
  EXPECT_EQ(table_error("util:\nspec: util, model\nmodel:\n"),
            "layers.txt:2: bad dependency 'util,' (names are letters, digits and _, separated by spaces)");
  EXPECT_EQ(table_error("util:\nmy-part: util\n"), "layers.txt:2: bad part name 'my-part' (letters, digits and _)");
  EXPECT_EQ(table_error(": util\nutil:\n"), "layers.txt:1: bad part name '' (letters, digits and _)");
}

TEST(LayerTable, RepeatsSelfUseAndUnknownDepsFail) {
  EXPECT_EQ(table_error("util:\nspec: util\nutil: spec\n"),
            "layers.txt:3: part 'util' listed twice (first at line 1)");
  EXPECT_EQ(table_error("util:\nspec: util spec\n"), "layers.txt:2: part 'spec' lists itself");
  EXPECT_EQ(table_error("util:\nspec: util util\n"), "layers.txt:2: part 'spec' lists 'util' twice");
  EXPECT_EQ(table_error("util:\nspec: util model\n"),
            "layers.txt:2: part 'spec' uses 'model', which has no line of its own");
  EXPECT_EQ(table_error("util:\ncli: * util\n"),
            "layers.txt:2: '*' (every other part) must be alone after the colon");
  EXPECT_EQ(table_error("# nothing\n\n"), "layers.txt: no parts");
}

TEST(LayerTable, CycleFails) {
  EXPECT_EQ(table_error("a: b\nb: c\nc: a\nd:\n"), "layers.txt: cycle: a -> b -> c -> a (lines 1, 2, 3)");
  // A part that uses everything may be used by nothing.
  EXPECT_EQ(table_error("util:\ncli: *\nspec: util cli\n"), "layers.txt: cycle: cli -> spec -> cli (lines 2, 3)");
  // Not a cycle: a diamond, and deps listed before their own line.
  EXPECT_TRUE(parse_table("top: left right base\nleft: base\nright: base\nbase:\n", "t").errors.empty());
}

// ------------------------------------------------------------ include scan

TEST(LayerIncludes, FindsQuotedIncludesWithTheirLines) {
  const std::string src =
      "#include \"util/fs.h\"\n"
      "#include <vector>\n"
      "  #  include   \"spec/spec.h\"  // trailing comment\n"
      "/* before */ #include \"run/store.h\"\n"
      "#include_next \"no/no.h\"\n"
      "#define X \"#include \\\"no/no.h\\\"\"\n"
      "#include\"eval/worker.h\"\n";
  EXPECT_EQ(paths(find_includes(src)),
            (std::vector<std::string>{"1 util/fs.h", "3 spec/spec.h", "4 run/store.h", "7 eval/worker.h"}));
}

TEST(LayerIncludes, IgnoresCommentsAndLiterals) {
  const std::string src =
      "// #include \"no/a.h\"\n"                  // 1
      "/* #include \"no/b.h\"\n"                  // 2
      "#include \"no/c.h\"\n"                     // 3: inside the block
      "*/\n"                                      // 4
      "// a comment that goes on \\\n"            // 5
      "#include \"no/d.h\"\n"                     // 6: still the comment
      "const char* s = \"\\\"/*\";\n"             // 7: no comment starts in a string
      "#include \"yes/e.h\"\n"                    // 8
      "const char* r = R\"x(\n"                   // 9: a raw string ...
      "#include \"no/f.h\"\n"                     // 10
      ")\" still inside )x\";\n"                  // 11: ... ends here
      "int big = 1'000'000; char q = '\"';\n"     // 12: no literal left open
      "#include \"yes/g.h\"\n"                    // 13
      "x = 1; /* c */ #include \"no/h.h\"\n"      // 14: not at the start of a line
      "/* a\n"                                    // 15
      "   b */ #include \"yes/i.h\"\n"            // 16: a directive (see below)
      "#include \"yes/j.h\" /* \" */\n"           // 17
      "// no /* in a line comment opens a block\n"  // 18
      "#include \"yes/k.h\"\n"                      // 19
      "int big = 1'000; /* a digit separator,\n"    // 20: not a character literal,
      "#include \"no/l.h\" */\n";                   // 21: so this is a comment
  // Line 16: a comment spanning lines is one space, so the '#' follows only
  // blanks and a comment since line 15's newline: a directive, as for cpp.
  EXPECT_EQ(paths(find_includes(src)),
            (std::vector<std::string>{"8 yes/e.h", "13 yes/g.h", "16 yes/i.h", "17 yes/j.h", "19 yes/k.h"}));
}

// -------------------------------------------------------------- the tree

class LayerCheck : public ::testing::Test {
 protected:
  test::TempDir dir_{"kopt-layers"};
  fs::path src() const { return dir_.path() / "src"; }
  void file(const std::string& rel, const std::string& text) { write(src() / rel, text); }
  CheckReport check(const std::string& table_text = kTable) { return check_tree(table(table_text), src(), "src"); }
  /// A small good tree: util <- spec <- run, and cli over all.
  void good_tree() {
    file("util/fs.h", "#pragma once\n#include <string>\n");
    file("util/fs.cpp", "#include \"util/fs.h\"\n");
    file("spec/spec.h", "#pragma once\n#include \"util/fs.h\"\n");
    file("run/store.cpp", "#include \"run/store.h\"\n#include \"spec/spec.h\"\n#include \"util/fs.h\"\n");
    file("run/store.h", "#pragma once\n");
    file("cli/main.cpp", "#include \"run/store.h\"\n#include \"spec/spec.h\"\n");
  }
};

TEST_F(LayerCheck, AllowedIncludesPass) {
  good_tree();
  CheckReport r = check();
  EXPECT_TRUE(r.ok()) << joined(r.errors);
  EXPECT_EQ(r.files, 6u);
  EXPECT_EQ(r.includes, 7u);
  EXPECT_TRUE(r.notes.empty()) << joined(r.notes);
}

TEST_F(LayerCheck, ForbiddenIncludeFailsNamingFileLineAndBothParts) {
  good_tree();
  file("spec/spec.cpp", "#include \"spec/spec.h\"\n\n#include \"run/store.h\"\n");
  CheckReport r = check();
  ASSERT_EQ(r.errors.size(), 1u) << joined(r.errors);
  EXPECT_EQ(r.errors[0], "src/spec/spec.cpp:3: part 'spec' may not include 'run/store.h' (layers.txt allows spec: util)");
  // Not transitive: run may use spec and spec util, but util may use nothing.
  file("util/fs.cpp", "#include \"util/fs.h\"\n#include \"spec/spec.h\"\n");
  r = check();
  ASSERT_EQ(r.errors.size(), 2u) << joined(r.errors);
  EXPECT_EQ(r.errors[1], "src/util/fs.cpp:2: part 'util' may not include 'spec/spec.h' (layers.txt allows util: nothing)");
}

TEST_F(LayerCheck, CommentedOutIncludeIsIgnored) {
  good_tree();
  file("spec/spec.cpp",
       "#include \"spec/spec.h\"\n"
       "// #include \"run/store.h\"\n"
       "/*\n#include \"run/store.h\"\n*/\n");
  CheckReport r = check();
  EXPECT_TRUE(r.ok()) << joined(r.errors);
}

TEST_F(LayerCheck, UnknownPartAndUnlistedFolderFail) {
  good_tree();
  file("run/extra.cpp", "#include \"run/store.h\"\n#include \"opt/optimizer.h\"\n");
  file("opt/optimizer.h", "#pragma once\n#include \"run/store.h\"\n");
  CheckReport r = check();
  ASSERT_EQ(r.errors.size(), 2u) << joined(r.errors);
  EXPECT_EQ(r.errors[0], "src/opt/: folder 'opt' is not a part in layers.txt");
  EXPECT_EQ(r.errors[1], "src/run/extra.cpp:2: 'opt/optimizer.h' names part 'opt', which layers.txt does not list");
}

TEST_F(LayerCheck, EmptyUnlistedFolderAndFileOutsideAPartFail) {
  good_tree();
  fs::create_directories(src() / "stray");
  file("loose.h", "#pragma once\n");
  CheckReport r = check();
  ASSERT_EQ(r.errors.size(), 2u) << joined(r.errors);
  EXPECT_EQ(r.errors[0], "src/loose.h: not inside a part's folder");
  EXPECT_EQ(r.errors[1], "src/stray/: folder 'stray' is not a part in layers.txt");
}

TEST_F(LayerCheck, IncludesResolveLikeTheCompiler) {
  good_tree();
  file("run/detail/impl.h", "#pragma once\n#include \"../store.h\"\n#include \"helper.h\"\n");
  file("run/detail/helper.h", "#pragma once\n");
  file("run/local.cpp",
       "#include \"store.h\"\n"           // beside it: run
       "#include \"detail/impl.h\"\n"     // a subfolder of run, not a part 'detail'
       "#include \"third_party.h\"\n"     // not beside it: the include path, no part
       "#include \"../spec/spec.h\"\n");  // relative: spec
  file("spec/bad.cpp", "#include \"../run/store.h\"\n#include \"../../outside.h\"\n");
  CheckReport r = check();
  ASSERT_EQ(r.errors.size(), 2u) << joined(r.errors);
  EXPECT_EQ(r.errors[0], "src/spec/bad.cpp:1: part 'spec' may not include '../run/store.h' (layers.txt allows spec: util)");
  EXPECT_EQ(r.errors[1], "src/spec/bad.cpp:2: '../../outside.h' reaches outside src");
}

TEST_F(LayerCheck, PartWithoutFolderIsANoteOnly) {
  good_tree();
  CheckReport r = check("util:\nmodel: util\nspec: util\nrun: util spec\ncli: *\n");
  EXPECT_TRUE(r.ok()) << joined(r.errors);
  EXPECT_EQ(r.notes, (std::vector<std::string>{"part 'model' has no folder under src"}));
}

TEST_F(LayerCheck, ALinkNoIncludeUsesFailsNamingTheTableLine) {
  good_tree();
  CheckReport r = check("util:\nspec: util\nrun: util spec\ngen: util\ncli: *\n");
  EXPECT_TRUE(r.ok()) << joined(r.errors);  // gen has no folder: its link is not judged
  r = check("util:\nspec: util\nrun: util spec\ncli: *\n");
  EXPECT_TRUE(r.ok()) << joined(r.errors);
  file("spec/spec.h", "#pragma once\n");  // spec no longer uses util
  r = check();
  ASSERT_EQ(r.errors.size(), 1u) << joined(r.errors);
  EXPECT_NE(r.errors[0].find(":3: part 'spec' lists 'util' but no file of it includes a header of 'util'"),
            std::string::npos)
      << r.errors[0];
}

// ------------------------------------------------------ the command line

TEST_F(LayerCheck, CommandLineExitCodesAndSummary) {
  good_tree();
  const std::string t = (dir_.path() / "layers.txt").string();
  write(t, kTable);
  std::ostringstream out, err;
  EXPECT_EQ(run({"--table", t, "--src", src().string()}, out, err), 0) << err.str();
  EXPECT_EQ(out.str(), "layers: 6 files, 7 includes, all allowed\n");

  file("spec/spec.cpp", "#include \"run/store.h\"\n");
  out.str("");
  err.str("");
  EXPECT_EQ(run({"--table", t, "--src", src().string()}, out, err), 1);
  EXPECT_NE(err.str().find(src().string() + "/spec/spec.cpp:1: part 'spec' may not include 'run/store.h' (" + t +
                           " allows spec: util)\n"),
            std::string::npos)
      << err.str();
  EXPECT_NE(err.str().find("layers: 7 files, 8 includes, 1 error(s)\n"), std::string::npos) << err.str();
  EXPECT_EQ(out.str(), "");

  write(t, "util:\nspec util\n");
  err.str("");
  EXPECT_EQ(run({"--table", t, "--src", src().string()}, out, err), 1);
  EXPECT_NE(err.str().find(t + ":2: expected 'part: dep dep ...'"), std::string::npos) << err.str();

  err.str("");
  EXPECT_EQ(run({"--table", t}, out, err), 2);
  EXPECT_EQ(run({"--table", t, "--src", src().string(), "--bogus"}, out, err), 2);
  EXPECT_EQ(run({"--table", (dir_.path() / "missing.txt").string(), "--src", src().string()}, out, err), 2);
  EXPECT_EQ(run({"--table", t, "--src", (dir_.path() / "missing").string()}, out, err), 2);
}

}  // namespace
}  // namespace kopt::layers

// util/fs.h (regular files only, size limits, errors naming the file) and
// util/json_read.h (strict JSON: duplicate keys, 1e999, depth; JsonAt).
#include <gtest/gtest.h>

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "temp_dir.h"
#include "util/error.h"
#include "util/fs.h"
#include "util/json_read.h"

namespace kopt {
namespace {

namespace stdfs = std::filesystem;
using nlohmann::json;
using test::TempDir;

void write_text(const stdfs::path& p, const std::string& text) { std::ofstream(p, std::ios::binary) << text; }

/// Expects SpecError `id` whose one-line message holds every needle.
void expect_spec_error(const std::function<void()>& f, const std::string& id,
                       const std::vector<std::string>& needles) {
  try {
    f();
    ADD_FAILURE() << "expected " << id << ", nothing thrown";
  } catch (const SpecError& e) {
    const std::string what = e.what();
    EXPECT_EQ(e.id(), id) << what;
    EXPECT_EQ(what.find('\n'), std::string::npos) << "not one line: " << what;
    for (const std::string& n : needles) EXPECT_NE(what.find(n), std::string::npos) << "'" << n << "' not in: " << what;
  } catch (const std::exception& e) {
    ADD_FAILURE() << "expected SpecError " << id << ", got: " << e.what();
  }
}

// ---------------------------------------------------------------------------
// fs::read_file

TEST(ReadFile, ReadsARegularFile) {
  TempDir t;
  write_text(t / "a.txt", std::string("hello\0world", 11));
  EXPECT_EQ(fs::read_file(t / "a.txt"), std::string("hello\0world", 11));
  write_text(t / "empty", "");
  EXPECT_EQ(fs::read_file(t / "empty"), "");
  EXPECT_EQ(fs::unreadable_reason(t / "a.txt"), "");
}

TEST(ReadFile, DeviceFilesAreNotRegularFiles) {
  // Before: read until std::bad_alloc.
  for (const char* dev : {"/dev/zero", "/dev/urandom", "/dev/null"}) {
    if (!stdfs::exists(dev)) continue;
    expect_spec_error([&] { fs::read_file(dev, "spec"); }, "kopt.io.006",
                      {std::string(dev) + ": cannot read the spec: not a regular file (a character device)"});
    EXPECT_NE(fs::unreadable_reason(dev).find("not a regular file"), std::string::npos);
  }
}

TEST(ReadFile, ADirectoryIsCalledADirectory) {
  TempDir t;
  expect_spec_error([&] { fs::read_file(t.path(), "kernel source"); }, "kopt.io.005",
                    {t.path().string(), "cannot read the kernel source", "a directory, not a file"});
}

TEST(ReadFile, AMissingFileIsNotFound) {
  TempDir t;
  expect_spec_error([&] { fs::read_file(t / "nope.json", "spec"); }, "kopt.io.003", {"nope.json", "not found"});
  write_text(t / "file", "x");
  expect_spec_error([&] { fs::read_file(t / "file" / "below", "spec"); }, "kopt.io.003",
                    {"not found", "not a folder"});
  expect_spec_error([&] { fs::read_file("", "spec"); }, "kopt.io.003", {"'': cannot read the spec: not found"});
}

TEST(ReadFile, AFifoIsRefusedWithoutBlocking) {
  TempDir t;
  ASSERT_EQ(::mkfifo((t / "pipe").c_str(), 0600), 0);
  // Opening a FIFO for reading blocks until a writer comes: the check must not open it.
  expect_spec_error([&] { fs::read_file(t / "pipe", "input cases file"); }, "kopt.io.006",
                    {"pipe", "not a regular file (a named pipe)"});
}

TEST(ReadFile, ASocketIsRefused) {
  TempDir t;
  const int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  const std::string path = (t / "sock").string();
  if (path.size() >= sizeof addr.sun_path) {
    ::close(fd);
    GTEST_SKIP() << "temp path too long for a socket";
  }
  std::snprintf(addr.sun_path, sizeof addr.sun_path, "%s", path.c_str());
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  expect_spec_error([&] { fs::read_file(path, "spec"); }, "kopt.io.006", {"a socket"});
  ::close(fd);
}

TEST(ReadFile, PermissionDeniedIsNotNotFound) {
  if (::geteuid() == 0) GTEST_SKIP() << "running as root, which ignores file permissions";
  TempDir t;
  write_text(t / "secret.json", "{}");
  ::chmod((t / "secret.json").c_str(), 0);
  expect_spec_error([&] { fs::read_file(t / "secret.json", "spec"); }, "kopt.io.004",
                    {"secret.json", "permission denied"});
  // A folder that cannot be searched: before, "not found".
  stdfs::create_directories(t / "closed");
  write_text(t / "closed" / "spec.json", "{}");
  ::chmod((t / "closed").c_str(), 0);
  expect_spec_error([&] { fs::read_file(t / "closed" / "spec.json", "spec"); }, "kopt.io.004",
                    {"permission denied"});
  ::chmod((t / "closed").c_str(), 0700);
}

TEST(ReadFile, TooBigIsRefusedWithTheLimit) {
  TempDir t;
  write_text(t / "big.json", std::string(3 * fs::kMiB + 5, ' '));
  expect_spec_error([&] { fs::read_file(t / "big.json", "spec", 2 * fs::kMiB); }, "kopt.io.007",
                    {"big.json", "larger than 2 MiB (the limit for the spec"});
  EXPECT_EQ(fs::read_file(t / "big.json", "spec", 4 * fs::kMiB).size(), 3 * fs::kMiB + 5);
  // Files whose size stat does not know are held to the limit as they are read.
  if (stdfs::exists("/proc/self/status")) {
    expect_spec_error([&] { fs::read_file("/proc/self/status", "spec", 16); }, "kopt.io.007",
                      {"larger than 16 bytes"});
  }
}

TEST(ReadFile, HugePathsAreShortenedInMessages) {
  const std::string huge(100000, 'x');
  try {
    fs::read_file(huge, "spec");
    FAIL();
  } catch (const SpecError& e) {
    EXPECT_LT(std::string(e.what()).size(), 400u) << e.what();
  }
}

TEST(InputFile, ReadsRanges) {
  TempDir t;
  write_text(t / "f", "0123456789");
  const fs::InputFile in(t / "f", "data");
  EXPECT_EQ(in.size(), 10u);
  EXPECT_EQ(in.read(3, 4), "3456");
  EXPECT_EQ(in.read(8, 100), "89");
  EXPECT_EQ(in.read(20, 5), "");
  expect_spec_error([&] { in.check_size(5); }, "kopt.io.007", {"larger than 5 bytes"});
}

TEST(WriteOutputFile, WritesThroughSymlinksAndIntoDevices) {
  // Before: evaluate --json LINK replaced the symlink by a regular file (as
  // root, --json /dev/null would have replaced the device's entry).
  TempDir t;
  write_text(t / "real.json", "old");
  stdfs::create_symlink("real.json", t / "out.json");
  fs::write_output_file(t / "out.json", "new");
  EXPECT_TRUE(stdfs::is_symlink(t / "out.json"));
  EXPECT_EQ(fs::read_file(t / "real.json"), "new");
  // A dangling link: its target is created.
  stdfs::create_symlink("made.json", t / "dangling.json");
  fs::write_output_file(t / "dangling.json", "x");
  EXPECT_TRUE(stdfs::is_symlink(t / "dangling.json"));
  EXPECT_EQ(fs::read_file(t / "made.json"), "x");
  // A device is written in place.
  if (stdfs::exists("/dev/null")) {
    fs::write_output_file("/dev/null", "discarded");
    EXPECT_TRUE(stdfs::is_character_file("/dev/null"));
  }
  // A FIFO nobody reads: an error, not a hang.
  ASSERT_EQ(::mkfifo((t / "pipe").c_str(), 0600), 0);
  EXPECT_THROW(fs::write_output_file(t / "pipe", "x"), EnvironmentError);
  // A directory: an error naming it.
  try {
    fs::write_output_file(t.path(), "x");
    FAIL();
  } catch (const EnvironmentError& e) {
    EXPECT_NE(std::string(e.what()).find("a directory"), std::string::npos) << e.what();
  }
  // The tool's own files keep write_file_atomic's semantics: the entry is replaced.
  stdfs::create_symlink("real.json", t / "own.json");
  fs::write_file_atomic(t / "own.json", "mine");
  EXPECT_FALSE(stdfs::is_symlink(t / "own.json"));
  EXPECT_EQ(fs::read_file(t / "real.json"), "new");
}

// ---------------------------------------------------------------------------
// parse_json

TEST(ParseJson, AcceptsOrdinaryJson) {
  const json j = parse_json(R"({"a": [1, 2.5, "x", null, true], "b": {"c": -3}, "u": 18446744073709551615})", "t.json");
  EXPECT_EQ(j["a"][1], 2.5);
  EXPECT_EQ(j["b"]["c"], -3);
  EXPECT_TRUE(j["u"].is_number_unsigned());
  EXPECT_EQ(parse_json("  7 ", "t.json"), 7);
  EXPECT_EQ(parse_json("[]", "t.json"), json::array());
}

TEST(ParseJson, DuplicateKeysAreRejectedWithTheirPath) {
  expect_spec_error([] { parse_json(R"({"a": 1, "a": 2})", "spec.json"); }, "kopt.json.002",
                    {"spec.json: $: duplicate key 'a'"});
  expect_spec_error(
      [] { parse_json(R"({"cases": [{}, {"sizes": {"M": 1, "N": 2, "M": 3}}]})", "spec.json"); },
      "kopt.json.002", {"spec.json: $.cases[1].sizes: duplicate key 'M'"});
  // Same key in different objects is fine.
  EXPECT_NO_THROW(parse_json(R"({"a": {"x": 1}, "b": {"x": 2}})", "spec.json"));
}

TEST(ParseJson, NumbersBeyondADoubleAreRejectedWithTheirPath) {
  // Before: nlohmann's raw [json.exception.out_of_range.406], no file, no path.
  expect_spec_error([] { parse_json(R"({"tolerance": {"C": {"rtol": 1e999}}})", "spec.json"); },
                    "kopt.json.003", {"spec.json: $.tolerance.C.rtol: the number 1e999 is out of range"});
  expect_spec_error([] { parse_json("[0, -1e400]", "x.json"); }, "kopt.json.003", {"x.json: $[1]"});
  try {
    parse_json("[1e999]", "x.json");
  } catch (const std::exception& e) {
    EXPECT_EQ(std::string(e.what()).find("json.exception"), std::string::npos) << e.what();
  }
}

TEST(ParseJson, SyntaxErrorsGiveLineColumnAndHints) {
  expect_spec_error([] { parse_json("{\"name\": \"x\",\n  \"cases\": [}\n", "b.json"); }, "kopt.json.001",
                    {"b.json: not valid JSON: line 2", "(in $.cases[0])"});
  expect_spec_error([] { parse_json("", "e.json"); }, "kopt.json.001", {"the file is empty"});
  expect_spec_error([] { parse_json(R"({"v": NaN})", "n.json"); }, "kopt.json.001",
                    {"NaN and Infinity are not JSON numbers"});
  expect_spec_error([] { parse_json("{\"v\": 1} // note", "c.json"); }, "kopt.json.001", {"no comments"});
  expect_spec_error([] { parse_json("{'v': 1}", "q.json"); }, "kopt.json.001", {"double quotes"});
  // Binary garbage: still one line.
  expect_spec_error([] { parse_json(std::string("\x93NUMPY\x01\x00\n", 9), "g.json"); }, "kopt.json.001", {});
  // nlohmann's prefix never reaches the user.
  try {
    parse_json("[1,", "x.json");
  } catch (const std::exception& e) {
    EXPECT_EQ(std::string(e.what()).find("json.exception"), std::string::npos) << e.what();
  }
}

TEST(ParseJson, DeepNestingIsRefused) {
  const std::string deep = std::string(100000, '[') + std::string(100000, ']');
  expect_spec_error([&] { parse_json(deep, "d.json"); }, "kopt.json.004", {"d.json", "nested more than 256"});
  const std::string ok = std::string(200, '[') + std::string(200, ']');
  EXPECT_NO_THROW(parse_json(ok, "d.json"));
}

TEST(ParseJson, HugeTokensAreCutInMessages) {
  const std::string text = "{\"" + std::string(1 << 20, 'k') + "\": 1, \"" + std::string(1 << 20, 'k') + "\": 2}";
  try {
    parse_json(text, "k.json");
    FAIL();
  } catch (const SpecError& e) {
    EXPECT_EQ(e.id(), "kopt.json.002");
    EXPECT_LT(std::string(e.what()).size(), 500u);
  }
  try {
    parse_json("\"" + std::string(1 << 20, 'x'), "s.json");  // unterminated string
    FAIL();
  } catch (const SpecError& e) {
    EXPECT_EQ(e.id(), "kopt.json.001");
    EXPECT_LT(std::string(e.what()).size(), 600u);
  }
}

TEST(ParseJsonFile, ReadsThroughReadFile) {
  TempDir t;
  write_text(t / "ok.json", R"({"a": 1})");
  EXPECT_EQ(parse_json_file(t / "ok.json", "spec")["a"], 1);
  expect_spec_error([&] { parse_json_file("/dev/zero", "spec"); }, "kopt.io.006", {"/dev/zero"});
  write_text(t / "dup.json", R"({"a": 1, "a": 1})");
  expect_spec_error([&] { parse_json_file(t / "dup.json", "spec"); }, "kopt.json.002",
                    {(t / "dup.json").string() + ": $: duplicate key 'a'"});
}

// ---------------------------------------------------------------------------
// JsonAt and the error mapping

TEST(JsonAt, TypedReadsNameFileAndPath) {
  const json j = parse_json(R"({"entries": [{"gpu": {"name": 5}, "n": "1e-5", "k": 3000000000, "x": null}]})", "c.json");
  const JsonAt root(j, "c.json");
  const JsonAt e = root.at("entries").at(0);
  EXPECT_EQ(e.path(), "$.entries[0]");
  expect_spec_error([&] { e.at("gpu").at("name").string(); }, "kopt.json.005",
                    {"c.json: $.entries[0].gpu.name: expected a string, got an integer (5)"});
  expect_spec_error([&] { e.at("n").number(); }, "kopt.json.005",
                    {"$.entries[0].n: expected a number, got a string \"1e-5\"",
                     "numbers are written without quotes (1e-5, not \"1e-5\")"});
  expect_spec_error([&] { e.at("k").integer(0, INT32_MAX); }, "kopt.json.005",
                    {"$.entries[0].k: the integer 3000000000 is out of range"});
  expect_spec_error([&] { e.at("missing"); }, "kopt.json.005", {"missing required key 'missing'"});
  expect_spec_error([&] { root.at("entries").at(3); }, "kopt.json.005", {"$.entries"});
  ASSERT_TRUE(e.find("x"));
  expect_spec_error([&] { e.find("x")->string(); }, "kopt.json.005", {"got null"});
  EXPECT_FALSE(e.find("absent"));
}

TEST(JsonAt, ErrorMappingDropsNlohmannsPrefix) {
  const json j = json::parse(R"({"a": "text"})");
  expect_spec_error([&] { json_errors_at("f.json", "$.a", [&] { return j["a"].get<int>(); }); },
                    "kopt.json.005", {"f.json: $.a: type must be number, but is string"});
  try {
    json_errors_at("f.json", "$", [&] { return j.at("b").get<int>(); });
  } catch (const std::exception& e) {
    EXPECT_EQ(std::string(e.what()).find("json.exception"), std::string::npos) << e.what();
  }
}

TEST(JsonPath, ChildrenAreQuotedWhenNotIdentifiers) {
  EXPECT_EQ(json_path_child("$", "cases"), "$.cases");
  EXPECT_EQ(json_path_child("$.cases", 3), "$.cases[3]");
  EXPECT_EQ(json_path_child("$.outputs", "my out"), "$.outputs[\"my out\"]");
  EXPECT_LT(json_path_child("$", std::string(10000, 'a')).size(), 80u);
}

TEST(QuotedNumberHint, OnlyForStringsHoldingNumbers) {
  EXPECT_NE(json_quoted_number_hint(json("1e-5")).find("without quotes"), std::string::npos);
  EXPECT_NE(json_quoted_number_hint(json("-0.5")).find("without quotes"), std::string::npos);
  EXPECT_EQ(json_quoted_number_hint(json("M*K")), "");
  EXPECT_EQ(json_quoted_number_hint(json("nan")), "");
  EXPECT_EQ(json_quoted_number_hint(json("")), "");
  EXPECT_EQ(json_quoted_number_hint(json(5)), "");
}

}  // namespace
}  // namespace kopt

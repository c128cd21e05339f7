// util/process.h: the child-process runner shared by the supervisor and the agent.
#include <gtest/gtest.h>

#include <dirent.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <set>
#include <string>
#include <thread>

#include "temp_dir.h"
#include "util/fs.h"
#include "util/process.h"

namespace {

using kopt::util::Child;
using kopt::util::ProcResult;
using kopt::util::SpawnError;
using kopt::util::SpawnOptions;
using kopt::util::Stdio;

std::set<std::string> open_fds() {
  std::set<std::string> fds;
  if (DIR* d = opendir("/proc/self/fd")) {
    const int own = dirfd(d);
    while (dirent* e = readdir(d))
      if (e->d_name[0] != '.' && std::to_string(own) != e->d_name) fds.insert(e->d_name);
    closedir(d);
  }
  return fds;
}

/// Running (a zombie waiting for its new parent to reap it counts as dead).
bool alive(pid_t pid) {
  std::string stat;
  try {
    stat = kopt::fs::read_file("/proc/" + std::to_string(pid) + "/stat");
  } catch (...) {
    return false;
  }
  const size_t close = stat.rfind(')');
  return close != std::string::npos && close + 2 < stat.size() && stat[close + 2] != 'Z';
}

TEST(ProcessRunner, CapturesStdoutAndStderrAndTheExitCode) {
  const auto before = open_fds();
  const ProcResult p = kopt::util::run_process({"sh", "-c", "echo out; echo err >&2; exit 3"}, 10);
  EXPECT_TRUE(p.started);
  EXPECT_FALSE(p.timed_out);
  EXPECT_EQ(p.exit_code, 3);
  EXPECT_NE(p.output.find("out"), std::string::npos);
  EXPECT_NE(p.output.find("err"), std::string::npos);
  EXPECT_EQ(open_fds(), before) << "file descriptors leaked";
}

TEST(ProcessRunner, StdinIsNullAndTheOutputIsCapped) {
  const ProcResult p = kopt::util::run_process({"sh", "-c", "cat; head -c 100000 /dev/zero"}, 10, 1000);
  EXPECT_EQ(p.exit_code, 0);
  EXPECT_GE(p.output.size(), 1000u);
  EXPECT_LT(p.output.size(), 100000u);
}

TEST(ProcessRunner, AMissingProgramIsNotStarted) {
  const ProcResult p = kopt::util::run_process({"kopt-no-such-program-5b9e"}, 10);
  EXPECT_FALSE(p.started);
  EXPECT_NE(p.output.find("cannot start kopt-no-such-program-5b9e"), std::string::npos) << p.output;
}

TEST(ProcessRunner, TimeoutKillsTheWholeGroup) {
  kopt::test::TempDir t;
  const std::string pidfile = (t.path() / "grandchild.pid").string();
  const auto t0 = std::chrono::steady_clock::now();
  const ProcResult p =
      kopt::util::run_process({"sh", "-c", "sleep 30 & echo $! > " + pidfile + "; wait"}, 0.5);
  EXPECT_TRUE(p.timed_out);
  EXPECT_EQ(p.exit_code, 128 + SIGKILL);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(10));
  const pid_t grandchild = std::stoi(kopt::fs::read_file(pidfile));
  for (int i = 0; i < 200 && alive(grandchild); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EXPECT_FALSE(alive(grandchild)) << "the background sleep was killed with its group";
}

TEST(ProcessRunner, LeftoversOfTheGroupDieWhenTheProgramExits) {
  kopt::test::TempDir t;
  const std::string pidfile = (t.path() / "leftover.pid").string();
  const ProcResult p =
      kopt::util::run_process({"sh", "-c", "sleep 30 >/dev/null 2>&1 & echo $! > " + pidfile}, 10);
  EXPECT_FALSE(p.timed_out);
  EXPECT_EQ(p.exit_code, 0);
  const pid_t leftover = std::stoi(kopt::fs::read_file(pidfile));
  for (int i = 0; i < 200 && alive(leftover); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EXPECT_FALSE(alive(leftover));
}

TEST(ProcessRunner, SpawnGivesPipesBothWaysAndReaps) {
  const auto before = open_fds();
  SpawnOptions so;
  so.stdin_mode = Stdio::pipe;
  so.stdout_mode = Stdio::pipe;
  so.search_path = true;
  Child c = kopt::util::spawn({"cat"}, so);
  ASSERT_TRUE(c.running());
  ASSERT_GE(c.stdin_fd(), 0);
  ASSERT_GE(c.stdout_fd(), 0);
  ASSERT_EQ(::write(c.stdin_fd(), "ping\n", 5), 5);
  c.close_stdin();
  char buf[16] = {0};
  ASSERT_EQ(::read(c.stdout_fd(), buf, sizeof buf), 5);
  EXPECT_STREQ(buf, "ping\n");
  const int status = c.wait();
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  EXPECT_FALSE(c.running());
  EXPECT_EQ(c.pid(), -1);
  EXPECT_EQ(open_fds(), before) << "file descriptors leaked";
}

TEST(ProcessRunner, SpawnAddsToTheEnvironmentAndKeepsTheRest) {
  ::setenv("KOPT_TEST_KEPT", "kept", 1);
  ::setenv("KOPT_TEST_REPLACED", "old", 1);
  SpawnOptions so;
  so.stdout_mode = Stdio::pipe;
  so.search_path = true;
  so.env_add = {"KOPT_TEST_REPLACED=new", "KOPT_TEST_ADDED=a=b"};
  Child c = kopt::util::spawn({"sh", "-c", "echo \"$KOPT_TEST_KEPT $KOPT_TEST_REPLACED $KOPT_TEST_ADDED\"; env | grep -c KOPT_TEST_REPLACED"}, so);
  std::string out;
  char buf[256];
  for (ssize_t n; (n = ::read(c.stdout_fd(), buf, sizeof buf)) > 0;) out.append(buf, static_cast<size_t>(n));
  c.wait();
  EXPECT_EQ(out, "kept new a=b\n1\n");
  ::unsetenv("KOPT_TEST_KEPT");
  ::unsetenv("KOPT_TEST_REPLACED");
}

TEST(ProcessRunner, ExecFailuresAreSpawnErrorsWithTheErrno) {
  const auto before = open_fds();
  try {
    kopt::util::spawn({"/nonexistent/kopt-worker"});
    FAIL() << "expected a SpawnError";
  } catch (const SpawnError& e) {
    EXPECT_EQ(e.stage(), SpawnError::Stage::exec);
    EXPECT_EQ(e.code(), ENOENT);
  }
  EXPECT_EQ(open_fds(), before) << "file descriptors leaked";
}

TEST(ProcessRunner, ReapKillsAChildThatDoesNotExit) {
  SpawnOptions so;
  so.stdout_mode = Stdio::null;
  so.search_path = true;
  Child c = kopt::util::spawn({"sleep", "30"}, so);
  const pid_t pid = c.pid();
  ASSERT_GT(pid, 0);
  const auto t0 = std::chrono::steady_clock::now();
  const int status = c.reap(std::chrono::milliseconds(50));
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(5));
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) << status;
  EXPECT_FALSE(alive(pid));
}

TEST(ProcessRunner, FindProgramSearchesPathThenTheExtraFolders) {
  EXPECT_FALSE(kopt::util::find_program("sh").empty());
  EXPECT_TRUE(kopt::util::find_program("kopt-no-such-program-5b9e").empty());
  kopt::test::TempDir t;
  const auto exe = t.path() / "kopt-test-tool";
  kopt::fs::write_file_atomic(exe, std::string("#!/bin/sh\n"));
  std::filesystem::permissions(exe, std::filesystem::perms::owner_all);
  EXPECT_EQ(kopt::util::find_program("kopt-test-tool", {t.path().string()}), exe.string());
}

}  // namespace

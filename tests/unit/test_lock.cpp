// Locks between kopt processes (util/lock.h) and SIGINT/SIGTERM as a request
// to stop (util/interrupt.h).
#include <gtest/gtest.h>

#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "temp_dir.h"
#include "util/error.h"
#include "util/fs.h"
#include "util/interrupt.h"
#include "util/lock.h"

namespace {

namespace stdfs = std::filesystem;
using kopt::test::TempDir;
using kopt::util::DeviceLock;
using kopt::util::FileLock;
using kopt::util::LockHolder;

/// Sets an environment variable for one scope (unset: nullptr).
class EnvVar {
 public:
  EnvVar(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    if (value)
      ::setenv(name, value, 1);
    else
      ::unsetenv(name);
  }
  ~EnvVar() {
    if (old_)
      ::setenv(name_, old_->c_str(), 1);
    else
      ::unsetenv(name_);
  }

 private:
  const char* name_;
  std::optional<std::string> old_;
};

/// A child process that takes `lock_file` (FileLock) and holds it until it is
/// killed or `hold` has passed; returns its pid once it holds the lock.
pid_t child_holding(const stdfs::path& lock_file, std::chrono::milliseconds hold) {
  int fds[2];
  if (::pipe(fds) != 0) return -1;
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::close(fds[0]);
    std::optional<FileLock> l = FileLock::try_lock(lock_file, "a test");
    const char c = l ? 'y' : 'n';
    if (::write(fds[1], &c, 1) != 1) ::_exit(2);
    std::this_thread::sleep_for(hold);
    l.reset();
    ::_exit(0);
  }
  ::close(fds[1]);
  char c = 0;
  const bool ok = ::read(fds[0], &c, 1) == 1 && c == 'y';
  ::close(fds[0]);
  return ok ? pid : -1;
}

int wait_exit_code(pid_t pid) {
  int status = 0;
  ::waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

TEST(Lock, FileLockIsExclusiveAndSaysWhoHoldsIt) {
  TempDir t;
  const stdfs::path file = t.path() / "x.lock";
  std::optional<FileLock> a = FileLock::try_lock(file, "the test folder");
  ASSERT_TRUE(a && a->held());
  EXPECT_TRUE(stdfs::exists(file));
  ASSERT_TRUE(stdfs::exists(FileLock::holder_file(file)));
  EXPECT_EQ(FileLock::holder_file(file), t.path() / "x.lock.json");

  // A second lock of the same file, even in this process, is refused and told who holds it.
  std::optional<LockHolder> holder;
  EXPECT_FALSE(FileLock::try_lock(file, "again", &holder));
  ASSERT_TRUE(holder);
  EXPECT_EQ(holder->pid, ::getpid());
  EXPECT_FALSE(holder->host.empty());
  EXPECT_FALSE(holder->command.empty());
  EXPECT_EQ(holder->what, "the test folder");
  EXPECT_EQ(holder->since.size(), 20u) << holder->since;  // 2025-01-01T10:00:00Z
  const std::string d = holder->describe();
  EXPECT_NE(d.find("pid " + std::to_string(::getpid()) + " on host "), std::string::npos) << d;
  EXPECT_NE(d.find(" since "), std::string::npos) << d;

  // Letting go removes both files; the lock can then be taken again.
  a->release();
  EXPECT_FALSE(stdfs::exists(file));
  EXPECT_FALSE(stdfs::exists(FileLock::holder_file(file)));
  EXPECT_TRUE(FileLock::try_lock(file, "again"));
}

TEST(Lock, AnotherProcessIsRefusedUntilItLetsGo) {
  TempDir t;
  const stdfs::path file = t.path() / "x.lock";
  const pid_t child = child_holding(file, std::chrono::milliseconds(60000));
  ASSERT_GT(child, 0);
  std::optional<LockHolder> holder;
  EXPECT_FALSE(FileLock::try_lock(file, "parent", &holder));
  ASSERT_TRUE(holder);
  EXPECT_EQ(holder->pid, child);

  // kill -9: the kernel lets go of the flock; the files left behind are taken over.
  ::kill(child, SIGKILL);
  wait_exit_code(child);
  EXPECT_TRUE(stdfs::exists(FileLock::holder_file(file))) << "a killed holder cannot clean up";
  std::optional<FileLock> l = FileLock::try_lock(file, "parent");
  ASSERT_TRUE(l);
  EXPECT_EQ(LockHolder::read(FileLock::holder_file(file))->pid, ::getpid());
}

TEST(Lock, AHolderThatEndedOrIsEndingIsSeenAsSuch) {
  LockHolder me = LockHolder::self("x");
  EXPECT_FALSE(me.ending());
  const pid_t child = ::fork();
  if (child == 0) ::_exit(0);
  ::waitpid(child, nullptr, 0);  // gone
  LockHolder gone = me;
  gone.pid = child;
  EXPECT_TRUE(gone.ending());
  LockHolder elsewhere = gone;
  elsewhere.host = "another-host";
  EXPECT_FALSE(elsewhere.ending()) << "another host's pid says nothing";

  const pid_t zombie = ::fork();
  if (zombie == 0) ::_exit(0);
  std::this_thread::sleep_for(std::chrono::milliseconds(200));  // not reaped yet: a zombie
  LockHolder z = me;
  z.pid = zombie;
  EXPECT_TRUE(z.ending());
  ::waitpid(zombie, nullptr, 0);
}

TEST(Lock, ALockFileInAReadOnlyFolderIsAnEnvironmentError) {
  if (::geteuid() == 0) GTEST_SKIP() << "root writes anywhere";
  TempDir t;
  stdfs::create_directory(t.path() / "ro");
  stdfs::permissions(t.path() / "ro", stdfs::perms::owner_read | stdfs::perms::owner_exec);
  try {
    FileLock::try_lock(t.path() / "ro" / "x.lock", "x");
    ADD_FAILURE() << "no error";
  } catch (const kopt::EnvironmentError& e) {
    EXPECT_EQ(e.id(), "kopt.lock.001");
    EXPECT_NE(std::string(e.what()).find((t.path() / "ro" / "x.lock").string()), std::string::npos) << e.what();
  }
  stdfs::permissions(t.path() / "ro", stdfs::perms::owner_all);
}

TEST(Lock, HolderCommandLineHasNoCredentials) {
  const std::string c = LockHolder::display_command(
      {"/home/u/build/tool/kopt", "optimize", "--llm-base-url", "http://user:SENTINEL_PW@host:8080/v1",
       "https://h/x?api_key=SENTINEL_KEY&mode=1&token=SENTINEL_TOKEN", "--spec", "a\nb.json"});
  EXPECT_EQ(c.rfind("kopt optimize --llm-base-url http://host:8080/v1 ", 0), 0u) << c;
  EXPECT_EQ(c.find("SENTINEL"), std::string::npos) << c;
  EXPECT_NE(c.find("mode=1"), std::string::npos) << c;
  EXPECT_EQ(c.find('\n'), std::string::npos) << c;
  EXPECT_LE(LockHolder::display_command({"kopt", std::string(5000, 'x')}).size(), 303u);
}

TEST(Lock, DeviceLockDirFollowsTheEnvironment) {
  TempDir t;
  {
    EnvVar dir("KOPT_LOCK_DIR", (t.path() / "locks" / "deep").c_str());
    EXPECT_EQ(kopt::util::device_lock_dir(), t.path() / "locks" / "deep");
    EXPECT_TRUE(stdfs::is_directory(t.path() / "locks" / "deep"));
  }
  {
    EnvVar dir("KOPT_LOCK_DIR", nullptr);
    EnvVar xdg("XDG_RUNTIME_DIR", t.path().c_str());
    EXPECT_EQ(kopt::util::device_lock_dir(), t.path() / "kopt");
  }
  {
    kopt::fs::write_file_atomic(t.path() / "afile", "x");
    EnvVar dir("KOPT_LOCK_DIR", (t.path() / "afile").c_str());
    try {
      kopt::util::device_lock_dir();
      ADD_FAILURE() << "a file is not a lock folder";
    } catch (const kopt::EnvironmentError& e) {
      EXPECT_EQ(e.id(), "kopt.lock.002");
      EXPECT_NE(std::string(e.what()).find("KOPT_LOCK_DIR"), std::string::npos) << e.what();
    }
  }
}

TEST(Lock, DeviceLockKeyPrefersTheUuidThenTheSystemsNumbering) {
  using kopt::util::device_lock_key;
  {
    EnvVar v("CUDA_VISIBLE_DEVICES", nullptr);
    EXPECT_EQ(device_lock_key("GPU-8f3c0a1e-1111", 0), "GPU-8f3c0a1e-1111");
    EXPECT_EQ(device_lock_key("", 0), "gpu0");
    EXPECT_EQ(device_lock_key("", 3), "gpu3");
    EXPECT_EQ(device_lock_key("../../etc/x y", 0), ".._.._etc_x_y");
    EXPECT_EQ(device_lock_key("..", 2), "gpu2");
  }
  {
    EnvVar v("CUDA_VISIBLE_DEVICES", "2, 3");
    EXPECT_EQ(device_lock_key("", 0), "gpu2");
    EXPECT_EQ(device_lock_key("", 1), "gpu3");
    EXPECT_EQ(device_lock_key("", 2), "gpu2") << "past the list: the ordinal itself";
  }
  {
    EnvVar v("CUDA_VISIBLE_DEVICES", "GPU-abc,MIG-def/1");
    EXPECT_EQ(device_lock_key("", 1), "MIG-def_1");
    EXPECT_EQ(device_lock_key("GPU-real", 1), "GPU-real");
  }
}

TEST(Lock, DeviceLockWaitsAndSaysForWhom) {
  TempDir t;
  EnvVar dir("KOPT_LOCK_DIR", t.path().c_str());
  const pid_t child = child_holding(t.path() / "gpu7.lock", std::chrono::milliseconds(700));
  ASSERT_GT(child, 0);
  std::vector<std::string> said;
  DeviceLock::Options o;
  o.say = [&](const std::string& line) { said.push_back(line); };
  o.first_progress = std::chrono::seconds(0);  // a progress line at the next poll
  o.poll = std::chrono::milliseconds(200);
  const auto t0 = std::chrono::steady_clock::now();
  DeviceLock d = DeviceLock::acquire("gpu7", "the GPU gpu7 (test)", o);
  const auto waited = std::chrono::steady_clock::now() - t0;
  EXPECT_TRUE(d.held());
  EXPECT_GE(waited, std::chrono::milliseconds(400));
  ASSERT_GE(said.size(), 3u);  // waiting, still waiting, free
  EXPECT_EQ(said[0].rfind("kopt: waiting for the GPU gpu7 (test): pid " + std::to_string(child) + " on host ", 0), 0u)
      << said[0];
  EXPECT_NE(said[0].find(" is measuring on it (lock " + (t.path() / "gpu7.lock").string() + ")"), std::string::npos)
      << said[0];
  EXPECT_EQ(said[1].rfind("kopt: still waiting for the GPU gpu7 (test) after ", 0), 0u) << said[1];
  EXPECT_EQ(said.back().rfind("kopt: the GPU gpu7 (test) is free after ", 0), 0u) << said.back();
  EXPECT_EQ(wait_exit_code(child), 0);

  // A second user in this process shares the lock: no wait, nothing said.
  said.clear();
  DeviceLock again = DeviceLock::acquire("gpu7", "the GPU gpu7 (test)", o);
  EXPECT_TRUE(again.held());
  EXPECT_TRUE(said.empty());
  EXPECT_EQ(LockHolder::read(FileLock::holder_file(t.path() / "gpu7.lock"))->pid, ::getpid());
}

TEST(Lock, AWaitForOneDeviceDoesNotHoldUpAnotherDevicesLock) {
  TempDir t;
  EnvVar dir("KOPT_LOCK_DIR", t.path().c_str());
  const pid_t child = child_holding(t.path() / "gpu0.lock", std::chrono::milliseconds(1500));
  ASSERT_GT(child, 0);
  DeviceLock::Options o;
  o.say = [](const std::string&) {};
  std::thread waiter([&] { DeviceLock::acquire("gpu0", "the GPU gpu0 (test)", o); });  // waits for the child
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  const auto t0 = std::chrono::steady_clock::now();
  DeviceLock other = DeviceLock::acquire("gpu1", "the GPU gpu1 (test)", o);
  EXPECT_TRUE(other.held());
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::milliseconds(500));
  waiter.join();
  EXPECT_EQ(wait_exit_code(child), 0);
}

TEST(Interrupt, FirstSignalAsksToStopASecondExitsAtOnce) {
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    kopt::util::InterruptScope scope("finishing up");
    if (kopt::util::interrupted()) ::_exit(10);
    ::raise(SIGTERM);
    if (kopt::util::interrupt_signal() != SIGTERM) ::_exit(11);
    try {
      kopt::util::throw_if_interrupted();
      ::_exit(12);
    } catch (const kopt::util::Interrupted& e) {
      if (e.signal() != SIGTERM) ::_exit(13);
    }
    ::raise(SIGINT);  // the second signal: _exit(128 + SIGINT)
    ::_exit(14);
  }
  EXPECT_EQ(wait_exit_code(pid), 130);
  EXPECT_EQ(kopt::util::interrupt_exit_code(SIGTERM), 143);
  EXPECT_EQ(kopt::util::signal_name(SIGINT), "SIGINT");
}

TEST(Interrupt, TheScopePutsTheOldHandlersBack) {
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    { kopt::util::InterruptScope scope("x"); }
    ::raise(SIGTERM);  // default action again: killed by the signal
    ::_exit(0);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFSIGNALED(status));
  EXPECT_EQ(WTERMSIG(status), SIGTERM);
}

}  // namespace

// The supervisor against kopt_fake_worker: every way a worker can misbehave
// must become a verdict, with no hang, zombie or leaked fd left behind.
#include <gtest/gtest.h>

#include <dirent.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>

#include "eval/supervisor.h"
#include "util/error.h"

using namespace kopt::eval;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

namespace {

EvalRequest request(const std::string& label, int64_t id = 1) {
  EvalRequest r;
  r.id = id;
  r.candidate.label = label;
  r.candidate.cubin_path = "/nonexistent/fake.cubin";
  r.candidate.entry = "kernel";
  r.reference.label = "reference";
  CaseSpec c;
  c.name = "c0";
  c.role = kopt::spec::CaseRole::performance;
  c.sizes = {{"N", 1024}};
  ArgSpec a;
  a.name = "x";
  a.count = 1024;
  c.args.push_back(a);
  r.cases.push_back(c);
  return r;
}

bool contains(const std::string& s, const std::string& what) {
  return s.find(what) != std::string::npos;
}

long ms_since(Clock::time_point t0) {
  return static_cast<long>(
      std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t0).count());
}

/// True once `pid` no longer exists (ESRCH).
bool process_gone(pid_t pid) { return ::kill(pid, 0) == -1 && errno == ESRCH; }

/// For a process that is not our child (a grandchild): gone, or a zombie
/// waiting for a reaper that is not us.
bool dead_or_zombie(pid_t pid, std::chrono::milliseconds within) {
  auto deadline = Clock::now() + within;
  for (;;) {
    if (process_gone(pid)) return true;
    std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
    std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
    auto rp = text.rfind(')');
    if (rp != std::string::npos && rp + 2 < text.size() && text[rp + 2] == 'Z') return true;
    if (Clock::now() > deadline) return false;
    std::this_thread::sleep_for(10ms);
  }
}

std::set<std::string> open_fds() {
  std::set<std::string> fds;
  if (DIR* d = opendir("/proc/self/fd")) {
    while (dirent* e = readdir(d))
      if (e->d_name[0] != '.') fds.insert(e->d_name);
    closedir(d);
  }
  return fds;
}

class SupervisorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    fds_before_ = open_fds();
    // Children left by tests of other files in this binary (not reaped here:
    // WNOWAIT) must not be blamed on the supervisor.
    siginfo_t info;
    had_children_ = !(waitid(P_ALL, 0, &info, WEXITED | WNOHANG | WNOWAIT) == -1 && errno == ECHILD);
  }
  void TearDown() override {
    // Every Supervisor of the test is destroyed by now: no child of ours may
    // remain, not even as a zombie, and no fd may have leaked.
    if (!had_children_) {
      int status = 0;
      errno = 0;
      pid_t left = ::waitpid(-1, &status, WNOHANG);
      EXPECT_EQ(left, -1) << "a child process remains (" << left << ")";
      EXPECT_EQ(errno, ECHILD);
    }
    // (opendir's own fd is closed again before the comparison.)
    EXPECT_EQ(open_fds(), fds_before_) << "file descriptors leaked";
  }

  SupervisorOptions options(std::vector<std::string> extra_args = {}) {
    SupervisorOptions o;
    o.worker_argv = {KOPT_FAKE_WORKER};
    for (auto& a : extra_args) o.worker_argv.push_back(a);
    o.silence_timeout = 3000ms;
    o.hello_timeout = 5000ms;
    return o;
  }

  std::string temp_log() {
    char tmpl[] = "/tmp/kopt_sup_log_XXXXXX";
    int fd = mkstemp(tmpl);
    EXPECT_GE(fd, 0);
    ::close(fd);
    logs_.push_back(tmpl);
    return tmpl;
  }
  ~SupervisorTest() override {
    for (auto& l : logs_) std::remove(l.c_str());
  }

  std::set<std::string> fds_before_;
  bool had_children_ = false;
  std::vector<std::string> logs_;
};

}  // namespace

TEST_F(SupervisorTest, HelloStartsOneWorkerAndIsCached) {
  Supervisor sup(options());
  EXPECT_EQ(sup.worker_pid(), -1);
  nlohmann::json h = sup.hello();
  EXPECT_EQ(h["reply"], "hello");
  EXPECT_EQ(h["ok"], true);
  EXPECT_EQ(h["device"]["name"], "fake device (kopt_fake_worker)");
  ASSERT_TRUE(h.contains("pid"));
  EXPECT_EQ(h["pid"].get<pid_t>(), sup.worker_pid());
  EXPECT_EQ(sup.hello(), h);
  EXPECT_EQ(sup.workers_started(), 1);
}

TEST_F(SupervisorTest, OkResultWithProgress) {
  auto o = options();
  std::vector<nlohmann::json> progress;
  o.on_progress = [&](const nlohmann::json& p) { progress.push_back(p); };
  Supervisor sup(o);
  Result r = sup.evaluate(request("ok:2.5", 7));
  EXPECT_EQ(r.verdict, Verdict::ok) << r.detail;
  ASSERT_TRUE(r.geomean_ms.has_value());
  EXPECT_EQ(*r.geomean_ms, 2.5);
  ASSERT_EQ(r.cases.size(), 1u);
  ASSERT_TRUE(r.cases[0].latency.has_value());
  EXPECT_EQ(r.cases[0].latency->median_ms, 2.5);
  ASSERT_GE(progress.size(), 1u);
  EXPECT_EQ(progress[0]["id"], 7);
  EXPECT_EQ(progress[0]["case"], "c0");
}

TEST_F(SupervisorTest, ReusesAHealthyWorker) {
  Supervisor sup(options());
  pid_t first = -1;
  for (int i = 0; i < 3; ++i) {
    Result r = sup.evaluate(request(i == 1 ? "wrong_result" : "ok", i + 1));
    EXPECT_EQ(r.verdict, i == 1 ? Verdict::wrong_result : Verdict::ok) << r.detail;
    if (i == 0) first = sup.worker_pid();
    EXPECT_EQ(sup.worker_pid(), first);
  }
  EXPECT_EQ(sup.workers_started(), 1);
}

TEST_F(SupervisorTest, HangIsKilledBySilenceWatchdog) {
  auto o = options();
  o.silence_timeout = 300ms;
  Supervisor sup(o);
  sup.hello();
  pid_t pid = sup.worker_pid();
  auto t0 = Clock::now();
  Result r = sup.evaluate(request("hang"));
  long ms = ms_since(t0);
  EXPECT_EQ(r.verdict, Verdict::timeout);
  EXPECT_TRUE(contains(r.detail, "no reply from the worker for 300 ms (launch watchdog)"))
      << r.detail;
  EXPECT_GE(ms, 300);
  EXPECT_LT(ms, 2000);
  EXPECT_TRUE(process_gone(pid)) << "the hung worker is still there";
  EXPECT_EQ(sup.worker_pid(), -1);
  // A fresh worker takes the next request.
  EXPECT_EQ(sup.evaluate(request("ok", 2)).verdict, Verdict::ok);
  EXPECT_EQ(sup.workers_started(), 2);
}

TEST_F(SupervisorTest, HangAfterProgressTimesOut) {
  auto o = options();
  o.silence_timeout = 300ms;
  Supervisor sup(o);
  auto t0 = Clock::now();
  Result r = sup.evaluate(request("hang_after_progress"));
  EXPECT_EQ(r.verdict, Verdict::timeout);
  EXPECT_LT(ms_since(t0), 2000);
  EXPECT_EQ(r.failed_case, "c0");
  EXPECT_TRUE(contains(r.detail, "last progress: case 'c0'")) << r.detail;
}

TEST_F(SupervisorTest, ProgressResetsTheSilenceWatchdog) {
  auto o = options();
  o.silence_timeout = 400ms;  // slow_ok takes 1 s, with progress every 100 ms
  int progress = 0;
  o.on_progress = [&](const nlohmann::json&) { ++progress; };
  Supervisor sup(o);
  Result r = sup.evaluate(request("slow_ok"));
  EXPECT_EQ(r.verdict, Verdict::ok) << r.detail;
  EXPECT_GE(progress, 10);
  EXPECT_EQ(sup.workers_started(), 1);
}

TEST_F(SupervisorTest, TotalTimeoutBoundsAChattyWorker) {
  auto o = options();
  o.silence_timeout = 400ms;
  o.total_timeout = 500ms;
  Supervisor sup(o);
  sup.hello();
  pid_t pid = sup.worker_pid();
  auto t0 = Clock::now();
  Result r = sup.evaluate(request("slow_ok"));
  long ms = ms_since(t0);
  EXPECT_EQ(r.verdict, Verdict::timeout);
  EXPECT_TRUE(contains(r.detail, "total timeout of 500 ms")) << r.detail;
  EXPECT_GE(ms, 500);
  EXPECT_LT(ms, 950);  // slow_ok would have answered at ~1000 ms
  EXPECT_TRUE(process_gone(pid));
}

TEST_F(SupervisorTest, CrashIsRecordedAndANewWorkerContinues) {
  auto o = options();
  o.worker_log = temp_log();
  Supervisor sup(o);
  Result r = sup.evaluate(request("crash"));
  EXPECT_EQ(r.verdict, Verdict::worker_crash);
  EXPECT_TRUE(contains(r.detail, "SIGSEGV")) << r.detail;
  EXPECT_TRUE(contains(r.detail, "fake worker: crashing on purpose")) << r.detail;
  EXPECT_EQ(r.failed_case, "");  // the crash came before any progress
  Result next = sup.evaluate(request("ok", 2));
  EXPECT_EQ(next.verdict, Verdict::ok) << next.detail;
  EXPECT_EQ(sup.workers_started(), 2);
  // The log tail quotes only the current worker's output.
  Result exit3 = sup.evaluate(request("exit3", 3));
  EXPECT_FALSE(contains(exit3.detail, "crashing on purpose")) << exit3.detail;
}

TEST_F(SupervisorTest, ExitCodeIsRecorded) {
  Supervisor sup(options());
  Result r = sup.evaluate(request("exit3"));
  EXPECT_EQ(r.verdict, Verdict::worker_crash);
  EXPECT_TRUE(contains(r.detail, "exited with code 3")) << r.detail;
  EXPECT_EQ(sup.evaluate(request("ok", 2)).verdict, Verdict::ok);
  EXPECT_EQ(sup.workers_started(), 2);
}

TEST_F(SupervisorTest, GarbageIsAProtocolError) {
  Supervisor sup(options());
  sup.hello();
  pid_t pid = sup.worker_pid();
  Result r = sup.evaluate(request("garbage"));
  EXPECT_EQ(r.verdict, Verdict::worker_crash);
  EXPECT_EQ(r.detail.rfind("protocol error: ", 0), 0u) << r.detail;
  EXPECT_TRUE(contains(r.detail, "'this is not JSON {\\x01\\xff'")) << r.detail;
  EXPECT_TRUE(process_gone(pid));
  // The detail must stay serialisable even though the garbage was not UTF-8.
  EXPECT_NO_THROW(r.to_json().dump());
  EXPECT_EQ(sup.evaluate(request("ok", 2)).verdict, Verdict::ok);
  EXPECT_EQ(sup.workers_started(), 2);
}

TEST_F(SupervisorTest, ReplyForAnotherIdIsAProtocolError) {
  Supervisor sup(options());
  Result r = sup.evaluate(request("wrong_id", 5));
  EXPECT_EQ(r.verdict, Verdict::worker_crash);
  EXPECT_TRUE(contains(r.detail, "protocol error: reply for another request")) << r.detail;
}

TEST_F(SupervisorTest, StickyErrorReplacesTheWorker) {
  Supervisor sup(options());
  sup.hello();
  pid_t pid = sup.worker_pid();
  Result r = sup.evaluate(request("sticky"));
  EXPECT_EQ(r.verdict, Verdict::runtime_error);
  EXPECT_EQ(r.error_name, "CUDA_ERROR_ILLEGAL_ADDRESS");
  EXPECT_EQ(r.failed_case, "c0");
  EXPECT_EQ(sup.worker_pid(), -1);
  EXPECT_TRUE(process_gone(pid));
  Result next = sup.evaluate(request("ok", 2));
  EXPECT_EQ(next.verdict, Verdict::ok) << next.detail;
  EXPECT_EQ(sup.workers_started(), 2);
  EXPECT_NE(sup.worker_pid(), pid);
}

TEST_F(SupervisorTest, NoDeviceThrowsNoDeviceError) {
  Supervisor sup(options({"--no-device"}));
  try {
    sup.hello();
    FAIL() << "no exception";
  } catch (const kopt::NoDeviceError& e) {
    EXPECT_EQ(e.id(), "kopt.worker.077");
    EXPECT_TRUE(contains(e.what(), "no CUDA device found")) << e.what();
  }
  EXPECT_EQ(sup.worker_pid(), -1);
  EXPECT_THROW(sup.evaluate(request("ok")), kopt::NoDeviceError);
}

TEST_F(SupervisorTest, MissingWorkerIsAnEnvironmentError) {
  auto o = options();
  o.worker_argv = {"/nonexistent/kopt-worker", "worker"};
  Supervisor sup(o);
  try {
    sup.hello();
    FAIL() << "no exception";
  } catch (const kopt::EnvironmentError& e) {
    EXPECT_EQ(e.id(), "kopt.worker.001");
    EXPECT_TRUE(contains(e.what(), "/nonexistent/kopt-worker")) << e.what();
    EXPECT_TRUE(contains(e.what(), "No such file or directory")) << e.what();
  }
  EXPECT_THROW(sup.evaluate(request("ok")), kopt::EnvironmentError);
  EXPECT_EQ(sup.workers_started(), 0);
}

TEST_F(SupervisorTest, NonExecutableWorkerIsAnEnvironmentError) {
  std::string file = temp_log();  // exists, mode 0600: not executable
  auto o = options();
  o.worker_argv = {file};
  Supervisor sup(o);
  try {
    sup.hello();
    FAIL() << "no exception";
  } catch (const kopt::EnvironmentError& e) {
    EXPECT_EQ(e.id(), "kopt.worker.001");
    EXPECT_TRUE(contains(e.what(), "Permission denied")) << e.what();
  }
}

TEST_F(SupervisorTest, WorkerExiting127BeforeHelloIsAnEnvironmentError) {
  // What a worker whose shared libraries are missing does (ld.so exits 127).
  auto o = options();
  o.worker_argv = {"/bin/sh", "-c", "echo 'libcuda.so.1: cannot open shared object file' >&2; "
                                    "exit 127"};
  o.worker_log = temp_log();
  Supervisor sup(o);
  try {
    sup.hello();
    FAIL() << "no exception";
  } catch (const kopt::EnvironmentError& e) {
    EXPECT_EQ(e.id(), "kopt.worker.001");
    EXPECT_TRUE(contains(e.what(), "/bin/sh")) << e.what();
    EXPECT_TRUE(contains(e.what(), "libcuda.so.1")) << e.what();
  }
}

TEST_F(SupervisorTest, LargeLinesBothWays) {
  Supervisor sup(options());
  EvalRequest rq = request("echo");
  rq.candidate.cubin_path = std::string(8 << 20, 'p') + "/end";  // an 8 MB request and reply
  Result r = sup.evaluate(rq);
  ASSERT_EQ(r.verdict, Verdict::ok) << r.detail.substr(0, 300);
  EXPECT_EQ(r.compile_log, rq.candidate.cubin_path);
  EXPECT_GT(std::stoll(r.detail), 8 << 20);
  EXPECT_EQ(sup.evaluate(request("ok", 2)).verdict, Verdict::ok);
  EXPECT_EQ(sup.workers_started(), 1);
}

TEST_F(SupervisorTest, UnsolicitedOutputBetweenRequestsReplacesTheWorker) {
  Supervisor sup(options());
  Result r = sup.evaluate(request("junk_after_result", 1));
  EXPECT_EQ(r.verdict, Verdict::ok) << r.detail;
  std::this_thread::sleep_for(50ms);  // let the late line arrive
  // The next candidate is not blamed for the previous worker's chatter.
  Result next = sup.evaluate(request("ok", 2));
  EXPECT_EQ(next.verdict, Verdict::ok) << next.detail;
  EXPECT_EQ(sup.workers_started(), 2);
}

TEST_F(SupervisorTest, WorkerKilledWhileIdleIsReplaced) {
  Supervisor sup(options());
  sup.hello();
  pid_t pid = sup.worker_pid();
  ASSERT_EQ(::kill(pid, SIGKILL), 0);
  std::this_thread::sleep_for(50ms);
  Result r = sup.evaluate(request("ok"));
  EXPECT_EQ(r.verdict, Verdict::ok) << r.detail;
  EXPECT_EQ(sup.workers_started(), 2);
}

TEST_F(SupervisorTest, WritingToAWorkerThatClosedStdinDoesNotKillUs) {
  // The second request hits EPIPE (SIGPIPE must not reach this process); the
  // request is then sent to a fresh worker.
  Supervisor sup(options());
  EXPECT_EQ(sup.evaluate(request("close_stdin", 1)).verdict, Verdict::ok);
  std::this_thread::sleep_for(20ms);
  Result r = sup.evaluate(request("ok", 2));
  EXPECT_EQ(r.verdict, Verdict::ok) << r.detail;
  EXPECT_EQ(sup.workers_started(), 2);
  sigset_t pending;
  sigemptyset(&pending);
  sigpending(&pending);
  EXPECT_EQ(sigismember(&pending, SIGPIPE), 0);
}

TEST_F(SupervisorTest, RejectedRequestIsRecorded) {
  Supervisor sup(options());
  Result failure;
  auto reply = sup.roundtrip(nlohmann::json{{"op", "evaluate"}, {"id", 9}}, &failure);
  EXPECT_FALSE(reply.has_value());
  EXPECT_EQ(failure.verdict, Verdict::worker_crash);
  EXPECT_TRUE(contains(failure.detail, "worker rejected the request")) << failure.detail;
  EXPECT_TRUE(contains(failure.detail, "kopt.protocol.001")) << failure.detail;
  EXPECT_EQ(sup.evaluate(request("ok", 10)).verdict, Verdict::ok);
}

TEST_F(SupervisorTest, TheWholeProcessGroupIsKilled) {
  auto o = options();
  o.silence_timeout = 300ms;
  pid_t grandchild = -1;
  o.on_progress = [&](const nlohmann::json& p) {
    if (p.contains("child_pid")) grandchild = p["child_pid"].get<pid_t>();
  };
  Supervisor sup(o);
  Result r = sup.evaluate(request("hang_with_child"));
  EXPECT_EQ(r.verdict, Verdict::timeout);
  ASSERT_GT(grandchild, 0);
  EXPECT_TRUE(dead_or_zombie(grandchild, 2000ms)) << "the worker's child survived";
}

TEST_F(SupervisorTest, ProgressCallbackExceptionPropagatesAndWorkerIsReplaced) {
  auto o = options();
  bool throw_now = true;
  o.on_progress = [&](const nlohmann::json&) {
    if (throw_now) throw std::runtime_error("stop");
  };
  Supervisor sup(o);
  EXPECT_THROW(sup.evaluate(request("ok", 1)), std::runtime_error);
  EXPECT_EQ(sup.worker_pid(), -1);
  throw_now = false;
  EXPECT_EQ(sup.evaluate(request("ok", 2)).verdict, Verdict::ok);
  EXPECT_EQ(sup.workers_started(), 2);
}

TEST_F(SupervisorTest, DestructorStopsAnIdleWorker) {
  pid_t pid;
  auto t0 = Clock::now();
  {
    Supervisor sup(options());
    sup.hello();
    pid = sup.worker_pid();
  }
  EXPECT_LT(ms_since(t0), 900);  // a polite worker exits at once on shutdown
  EXPECT_TRUE(process_gone(pid));
}

TEST_F(SupervisorTest, DestructorKillsAWorkerIgnoringShutdown) {
  pid_t pid;
  auto t0 = Clock::now();
  {
    Supervisor sup(options({"--ignore-shutdown"}));
    sup.hello();
    pid = sup.worker_pid();
  }
  long ms = ms_since(t0);
  EXPECT_GE(ms, 1000);  // the grace period
  EXPECT_LT(ms, 2500);
  EXPECT_TRUE(process_gone(pid));
}

// --- The split API: submit() / await_reply(), begin_evaluate() / finish_evaluate().

namespace {

nlohmann::json evaluate_message(const std::string& label, int64_t id) {
  nlohmann::json msg = request(label, id).to_json();
  msg["op"] = "evaluate";
  return msg;
}

}  // namespace

TEST_F(SupervisorTest, SubmitThenAwaitGivesWhatRoundtripGives) {
  Supervisor sup(options());
  Result failure;
  auto whole = sup.roundtrip(evaluate_message("ok:2.5", 3), &failure);
  ASSERT_TRUE(whole.has_value()) << failure.detail;
  EXPECT_FALSE(sup.pending());
  ASSERT_TRUE(sup.submit(evaluate_message("ok:2.5", 3), &failure)) << failure.detail;
  EXPECT_TRUE(sup.pending());
  auto split = sup.await_reply(&failure);
  ASSERT_TRUE(split.has_value()) << failure.detail;
  EXPECT_FALSE(sup.pending());
  EXPECT_EQ(*split, *whole);
  EXPECT_EQ((*split)["reply"], "result");

  // Likewise evaluate() and its halves.
  const Result r1 = sup.evaluate(request("ok:2.5", 4));
  sup.begin_evaluate(request("ok:2.5", 4));
  EXPECT_TRUE(sup.pending());
  const Result r2 = sup.finish_evaluate();
  EXPECT_FALSE(sup.pending());
  EXPECT_EQ(r2.verdict, Verdict::ok) << r2.detail;
  EXPECT_EQ(r2.to_json(), r1.to_json());
  EXPECT_EQ(sup.workers_started(), 1);
}

TEST_F(SupervisorTest, SplitFailuresAreTheSameVerdicts) {
  auto o = options();
  o.silence_timeout = 300ms;
  Supervisor sup(o);
  sup.begin_evaluate(request("crash", 1));
  Result crash = sup.finish_evaluate();
  EXPECT_EQ(crash.verdict, Verdict::worker_crash);
  EXPECT_TRUE(contains(crash.detail, "SIGSEGV")) << crash.detail;
  sup.begin_evaluate(request("wrong_id", 2));
  Result wrong = sup.finish_evaluate();
  EXPECT_TRUE(contains(wrong.detail, "protocol error: reply for another request")) << wrong.detail;
  sup.begin_evaluate(request("hang", 3));
  EXPECT_EQ(sup.finish_evaluate().verdict, Verdict::timeout);
  EXPECT_FALSE(sup.pending());
  EXPECT_EQ(sup.evaluate(request("ok", 4)).verdict, Verdict::ok);
}

TEST_F(SupervisorTest, OnlyOneRequestCanBePending) {
  Supervisor sup(options());
  Result failure;
  ASSERT_TRUE(sup.submit(evaluate_message("ok", 1), &failure)) << failure.detail;
  EXPECT_THROW(sup.submit(evaluate_message("ok", 2), &failure), std::logic_error);
  EXPECT_THROW(sup.roundtrip(evaluate_message("ok", 2), &failure), std::logic_error);
  EXPECT_THROW(sup.begin_evaluate(request("ok", 2)), std::logic_error);
  EXPECT_THROW(sup.evaluate(request("ok", 2)), std::logic_error);
  // The request sent first is untouched: its reply is still collected.
  auto reply = sup.await_reply(&failure);
  ASSERT_TRUE(reply.has_value()) << failure.detail;
  EXPECT_EQ((*reply)["id"], 1);

  sup.begin_evaluate(request("ok", 3));
  EXPECT_THROW(sup.begin_evaluate(request("ok", 4)), std::logic_error);
  EXPECT_THROW(sup.submit(evaluate_message("ok", 4), &failure), std::logic_error);
  // A request of begin_evaluate() is collected by finish_evaluate() only.
  EXPECT_THROW(sup.await_reply(&failure), std::logic_error);
  Result r = sup.finish_evaluate();
  EXPECT_EQ(r.verdict, Verdict::ok) << r.detail;
  EXPECT_EQ(sup.workers_started(), 1);
}

TEST_F(SupervisorTest, AwaitWithoutSubmitIsALogicError) {
  Supervisor sup(options());
  Result failure;
  EXPECT_THROW(sup.await_reply(&failure), std::logic_error);
  EXPECT_THROW(sup.finish_evaluate(), std::logic_error);
  ASSERT_TRUE(sup.submit(evaluate_message("ok", 1), &failure)) << failure.detail;
  EXPECT_TRUE(sup.await_reply(&failure).has_value()) << failure.detail;
  EXPECT_THROW(sup.await_reply(&failure), std::logic_error);  // collected already
  EXPECT_THROW(sup.finish_evaluate(), std::logic_error);
  EXPECT_EQ(sup.workers_started(), 1);  // a logic error costs no worker
}

TEST_F(SupervisorTest, WatchdogClocksStartAtTheSend) {
  auto o = options();
  o.silence_timeout = 300ms;
  Supervisor sup(o);
  sup.hello();
  // A reply that arrived while the caller was busy past the deadline is read,
  // not taken for silence.
  sup.begin_evaluate(request("ok", 1));
  std::this_thread::sleep_for(500ms);
  Result late = sup.finish_evaluate();
  EXPECT_EQ(late.verdict, Verdict::ok) << late.detail;
  EXPECT_EQ(sup.workers_started(), 1);
  // A hang is counted from the send: awaiting late does not restart the clock.
  sup.begin_evaluate(request("hang", 2));
  std::this_thread::sleep_for(500ms);
  auto t0 = Clock::now();
  Result hang = sup.finish_evaluate();
  EXPECT_EQ(hang.verdict, Verdict::timeout);
  EXPECT_TRUE(contains(hang.detail, "no reply from the worker for 300 ms")) << hang.detail;
  EXPECT_LT(ms_since(t0), 200);
}

TEST_F(SupervisorTest, ProgressExceptionInAwaitLeavesNothingPending) {
  auto o = options();
  bool throw_now = true;
  o.on_progress = [&](const nlohmann::json&) {
    if (throw_now) throw std::runtime_error("stop");
  };
  Supervisor sup(o);
  sup.begin_evaluate(request("ok", 1));
  EXPECT_THROW(sup.finish_evaluate(), std::runtime_error);
  EXPECT_FALSE(sup.pending());
  EXPECT_EQ(sup.worker_pid(), -1);
  throw_now = false;
  Result failure;
  ASSERT_TRUE(sup.submit(evaluate_message("ok", 2), &failure)) << failure.detail;
  EXPECT_TRUE(sup.await_reply(&failure).has_value()) << failure.detail;
  EXPECT_EQ(sup.workers_started(), 2);
}

TEST_F(SupervisorTest, DestroyedWithARequestPending) {
  pid_t pid;
  auto t0 = Clock::now();
  {
    Supervisor sup(options());
    sup.begin_evaluate(request("hang", 1));
    pid = sup.worker_pid();
  }
  EXPECT_LT(ms_since(t0), 2500);
  EXPECT_TRUE(process_gone(pid));
}

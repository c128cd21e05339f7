// kopt_fake_worker: speaks the worker protocol (eval/protocol.h) without a
// GPU, so that the supervisor and everything above it can be tested anywhere.
//
// What it does with an evaluate request is chosen by the request's
// candidate.label, so one worker can be told different things per request:
//   "ok"                   progress, then a result with verdict ok, latency 1 ms
//   "ok:<ms>"              same, with latency <ms> (e.g. "ok:2.5")
//   (a case with screen_ms below its latency is reported screened, one sample;
//   else one with screen_median_ms below it, kScreenLaunches samples)
//   anything not below     same as "ok" (handy for tests of higher layers)
//   "wrong_result"         a result with verdict wrong_result (worker stays healthy)
//   "hang"                 sleeps forever without a word
//   "hang_after_progress"  one progress line, then sleeps forever
//   "hang_with_child"      forks a child (same process group) that sleeps too; its
//                          pid is in the progress line ("child_pid"); then sleeps
//   "crash"                writes a line on stderr, then raise(SIGSEGV)
//   "exit3"                _exit(3) without a reply
//   "garbage"              writes a line that is not JSON, then carries on
//   "sticky"               result runtime_error / CUDA_ERROR_ILLEGAL_ADDRESS,
//                          healthy:false, then exits (like a broken CUDA context)
//   "slow_ok"              progress every 100 ms for 1 s, then ok
//   "echo"                 ok, with compile_log = candidate.cubin_path and detail
//                          = size of the request line (large-line tests)
//   "junk_after_result"    ok, then an unsolicited line after the result
//   "wrong_id"             a result carrying another request's id
//   "close_stdin"          closes stdin, answers ok, then sleeps forever (the next
//                          request gets EPIPE)
// The device it reports is marked "simulated": true (kopt then says that the
// timings are made up wherever it shows one); its UUID is $KOPT_FAKE_UUID,
// else "fake-<pid>" (a device of its own, so that test runs do not wait for
// each other's device lock; tests of that lock give two workers one
// KOPT_FAKE_UUID).
// KOPT_FAKE_EVAL_LOG=FILE: each evaluation appends "<begin_ns> <end_ns>\n"
// (CLOCK_REALTIME) to FILE, so that tests can check measuring windows.
// KOPT_FAKE_REQUEST_LOG=FILE: each evaluate request is appended to FILE as one
// JSON line, so that tests can check what the driver asked for.
// KOPT_FAKE_BASELINE_MS=MS: the cuBLAS baseline's latency on every case (else 1 ms).
// KOPT_FAKE_DEVICE_COUNT=N: the hello says the machine has N devices (else it
// says nothing of the count, as a worker that cannot count them).
// KOPT_FAKE_DIE_AFTER=N: the worker exits (code 1, no reply) on receiving its
// (N+1)-th evaluate request, as when the link to a remote worker drops.
// Options:
//   --device N         accepted and ignored (`kopt worker --device N`'s shape)
//   --no-device        hello answers ok:false, "no CUDA device found ..."
//   --ignore-shutdown  ignores {"op":"shutdown"} and EOF on stdin: sleeps forever
//
// Replies are written with write(2) straight to fd 1 (no stdio buffering that a
// crash could lose or a fork could duplicate).
#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <iostream>
#include <string>
#include <thread>

#include <nlohmann/json.hpp>

#include "cuda/device.h"
#include "eval/protocol.h"
#include "model/result.h"
#include "util/error.h"
#include "util/json.h"

using nlohmann::json;
using kopt::eval::EvalRequest;
using kopt::model::Result;
using kopt::model::Verdict;

namespace {

void send(const json& j) {
  std::string s = kopt::dump_json(j) + "\n";
  const char* p = s.data();
  size_t n = s.size();
  while (n > 0) {
    ssize_t w = ::write(1, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) _exit(1);  // the supervisor is gone
    p += w;
    n -= static_cast<size_t>(w);
  }
}

[[noreturn]] void sleep_forever() {
  for (;;) pause();
}

void progress(const EvalRequest& r, const std::string& phase, json extra = json::object()) {
  json j{{"reply", "progress"},
         {"id", r.id},
         {"case", r.cases.empty() ? std::string("case0") : r.cases[0].name},
         {"phase", phase}};
  for (auto& [k, v] : extra.items()) j[k] = v;
  send(j);
}

/// `ms` for every performance case, or, when `per_case` is set, a fixed
/// pseudo-random latency per (configuration, case) in [0.5, 1.5) ms, so that
/// different configurations win different cases (shape specialisation).
Result ok_result(const EvalRequest& r, double ms, bool per_case = false) {
  Result res;
  res.verdict = Verdict::ok;
  res.detail = "fake worker";
  std::vector<double> medians, weights;
  for (const auto& c : r.cases) {
    kopt::model::CaseResult cr;
    cr.name = c.name;
    cr.role = kopt::spec::case_role_name(c.role);
    cr.passed = true;
    if (c.role == kopt::spec::CaseRole::performance && r.time) {
      const double t =
          per_case ? 0.5 + static_cast<double>(std::hash<std::string>{}(r.candidate.label + "#" + c.name) % 1000) / 1000.0
                   : ms;
      // Screening (CaseSpec::screen_ms): the probe alone when it is over the limit;
      // the second stage (screen_median_ms): the first kScreenLaunches launches.
      const bool probe_over = c.screen_ms && t > *c.screen_ms;
      const bool median_over = !probe_over && c.screen_median_ms && r.timing.iterations > kopt::eval::kScreenLaunches &&
                               t > *c.screen_median_ms;
      cr.screened = probe_over || median_over;
      cr.screen_ms = c.screen_ms;
      cr.screen_median_ms = c.screen_median_ms;
      cr.latency = kopt::model::latency_stats(
          probe_over    ? std::vector<double>{t}
          : median_over ? std::vector<double>(static_cast<size_t>(kopt::eval::kScreenLaunches), t)
                        : std::vector<double>{t, t, t});
      cr.blocks_per_sm = 2;  // as cuOccupancyMaxActiveBlocksPerMultiprocessor would say
      medians.push_back(t);
      weights.push_back(c.weight);
    }
    // Accuracy (CaseResult::rel_error_max / rel_error_rms) where an output has
    // a GEMM tolerance: made up like the latencies, about an FP32 sum's error
    // (2^-24 sqrt(K)); cuBLAS 0.3 of it, a candidate 0.25 to 0.45.
    for (const auto& [output, tol] : c.tolerance) {
      if (tol.kind != kopt::spec::Tolerance::Kind::gemm) continue;
      const auto k = c.sizes.find(tol.k);
      const double scale = std::ldexp(1.0, -24) * std::sqrt(static_cast<double>(k == c.sizes.end() ? 1 : std::max<int64_t>(k->second, 1)));
      const double f = r.candidate.kind == kopt::eval::KernelRef::Kind::cublas_sgemm
                           ? 0.3
                           : 0.25 + static_cast<double>(std::hash<std::string>{}(r.candidate.label + "@" + c.name) % 200) / 1000.0;
      cr.rel_error_max = f * scale;
      cr.rel_error_rms = f * scale / 4;
      break;
    }
    res.cases.push_back(cr);
  }
  res.geomean_ms = medians.empty() ? ms : kopt::model::geomean(medians, weights);  // weighted as the real worker
  res.compile_ms = 0.5;
  return res;
}

void send_result(const EvalRequest& r, const Result& res, bool healthy, int64_t id) {
  send(json{{"reply", "result"}, {"id", id}, {"healthy", healthy}, {"result", res.to_json()}});
}

long long now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

void evaluate(const json& req, size_t line_size) {
  static long evaluations = 0;
  if (const char* n = std::getenv("KOPT_FAKE_DIE_AFTER"); n && *n && evaluations++ >= std::atol(n)) {
    std::cerr << "fake worker: KOPT_FAKE_DIE_AFTER=" << n << ": exiting" << std::endl;
    _exit(1);
  }
  const long long begin = now_ns();
  // KOPT_FAKE_EVAL_MS: pretend each evaluation keeps the GPU busy this long.
  if (const char* d = std::getenv("KOPT_FAKE_EVAL_MS"))
    std::this_thread::sleep_for(std::chrono::milliseconds(std::atoi(d)));
  if (const char* log = std::getenv("KOPT_FAKE_EVAL_LOG")) {
    const std::string line = std::to_string(begin) + " " + std::to_string(now_ns()) + "\n";
    if (FILE* f = std::fopen(log, "a")) {
      std::fputs(line.c_str(), f);
      std::fclose(f);
    }
  }
  if (const char* log = std::getenv("KOPT_FAKE_REQUEST_LOG")) {
    const std::string line = req.dump() + "\n";
    if (FILE* f = std::fopen(log, "a")) {
      std::fputs(line.c_str(), f);
      std::fclose(f);
    }
  }
  EvalRequest r;
  try {
    r = EvalRequest::from_json(req);
  } catch (const std::exception& e) {
    json err{{"reply", "error"}, {"error", e.what()}};
    if (req.contains("id")) err["id"] = req["id"];
    send(err);
    return;
  }
  const std::string& label = r.candidate.label;
  if (label == "hang") sleep_forever();
  if (label == "hang_after_progress") {
    progress(r, "check");
    sleep_forever();
  }
  if (label == "hang_with_child") {
    pid_t child = fork();
    if (child == 0) {
      alarm(20);  // safety net should the supervisor fail to kill the group
      sleep_forever();
    }
    progress(r, "check", json{{"child_pid", child}});
    sleep_forever();
  }
  if (label == "crash") {
    std::cerr << "fake worker: crashing on purpose" << std::endl;
    signal(SIGSEGV, SIG_DFL);
    raise(SIGSEGV);
    _exit(99);  // not reached
  }
  if (label == "exit3") _exit(3);
  if (label == "garbage") {
    static const char junk[] = "this is not JSON {\x01\xff\n";
    ssize_t w = ::write(1, junk, sizeof junk - 1);
    (void)w;
    return;
  }
  if (label == "sticky") {
    progress(r, "check");
    Result res;
    res.verdict = Verdict::runtime_error;
    res.error_name = "CUDA_ERROR_ILLEGAL_ADDRESS";
    res.detail = "an illegal memory access was encountered";
    res.failed_case = r.cases.empty() ? "" : r.cases[0].name;
    send_result(r, res, /*healthy=*/false, r.id);
    _exit(0);
  }
  if (label == "wrong_result") {
    Result res;
    res.verdict = Verdict::wrong_result;
    res.detail = "fake mismatch";
    send_result(r, res, true, r.id);
    return;
  }
  if (label == "slow_ok") {
    for (int i = 0; i < 10; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      progress(r, "time");
    }
    send_result(r, ok_result(r, 1.0), true, r.id);
    return;
  }
  if (label == "echo") {
    Result res = ok_result(r, 1.0);
    res.compile_log = r.candidate.cubin_path;
    res.detail = std::to_string(line_size);
    send_result(r, res, true, r.id);
    return;
  }
  if (label == "junk_after_result") {
    send_result(r, ok_result(r, 1.0), true, r.id);
    send(json{{"reply", "progress"}, {"id", r.id}, {"case", "late"}, {"phase", "check"}});
    return;
  }
  if (label == "wrong_id") {
    send_result(r, ok_result(r, 1.0), true, r.id + 1000);
    return;
  }
  if (label == "close_stdin") {
    send_result(r, ok_result(r, 1.0), true, r.id);
    ::close(0);
    sleep_forever();
  }
  // "ok", "ok:<ms>" and anything else
  double ms = 1.0;
  if (label.rfind("ok:", 0) == 0) ms = std::atof(label.c_str() + 3);
  // The cuBLAS baseline: $KOPT_FAKE_BASELINE_MS on every case when set.
  const char* baseline_ms = std::getenv("KOPT_FAKE_BASELINE_MS");
  if (baseline_ms && r.candidate.kind == kopt::eval::KernelRef::Kind::cublas_sgemm) ms = std::atof(baseline_ms);
  // A tuning-parameter label ("BM=64,BN=128"): a fixed pseudo-random latency
  // per configuration and case, so an optimizer run has a well-defined best.
  const bool tuned = label.find('=') != std::string::npos && label.rfind("ok:", 0) != 0;
  progress(r, "check");
  if (r.time) progress(r, "time");
  send_result(r, ok_result(r, ms, tuned), true, r.id);
}

}  // namespace

// An H200-like device (so that constraints on device limits behave as on the
// real one), marked as simulated (model::DeviceInfo::simulated): kopt then says
// on every line with a latency or a ratio that the timings are made up.
json fake_device() {
  kopt::model::DeviceInfo d;
  d.name = "fake device (kopt_fake_worker)";
  d.cc_major = 9;
  d.cc_minor = 0;
  d.sm_count = 132;
  d.total_memory_bytes = 141LL << 30;
  d.l2_bytes = 60LL << 20;
  d.shared_per_block_bytes = 49152;
  d.shared_per_block_optin_bytes = 232448;
  d.shared_per_sm_bytes = 233472;
  d.regs_per_block = d.regs_per_sm = 65536;
  d.max_threads_per_block = 1024;
  d.max_threads_per_sm = 2048;
  d.warp_size = 32;
  d.max_grid[0] = 2147483647;
  d.max_grid[1] = d.max_grid[2] = 65535;
  d.max_block[0] = d.max_block[1] = 1024;
  d.max_block[2] = 64;
  d.simulated = true;
  json j = d.to_json();
  const char* uuid = std::getenv("KOPT_FAKE_UUID");
  j["uuid"] = uuid && *uuid ? std::string(uuid) : "fake-" + std::to_string(getpid());
  return j;
}

int main(int argc, char** argv) {
  bool no_device = false, ignore_shutdown = false;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--no-device") == 0) no_device = true;
    else if (std::strcmp(argv[i], "--ignore-shutdown") == 0) ignore_shutdown = true;
    else if (std::strcmp(argv[i], "worker") == 0) continue;  // accepts `kopt worker`'s argv shape
    else if (std::strcmp(argv[i], "--device") == 0 && i + 1 < argc) ++i;  // and its --device N (ignored)
    else {
      std::cerr << "kopt_fake_worker: unknown option " << argv[i] << "\n";
      return 2;
    }
  }
  // "crash" must not leave core files behind.
  struct rlimit no_core {0, 0};
  setrlimit(RLIMIT_CORE, &no_core);

  std::string line;
  while (std::getline(std::cin, line)) {
    json req = json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (req.is_discarded() || !req.is_object() || !req.contains("op") || !req["op"].is_string()) {
      send(json{{"reply", "error"}, {"error", "request is not a JSON object with an \"op\""}});
      continue;
    }
    const std::string op = req["op"].get<std::string>();
    if (op == "hello") {
      if (no_device)
        send(json{{"reply", "hello"},
                  {"ok", false},
                  {"pid", getpid()},
                  {"error", "no CUDA device found: fake worker started with --no-device"}});
      else {
        json hello{{"reply", "hello"}, {"ok", true}, {"pid", getpid()}, {"device", fake_device()}};
        if (const char* n = std::getenv("KOPT_FAKE_DEVICE_COUNT"); n && *n) hello["device_count"] = std::atoi(n);
        send(hello);
      }
    } else if (op == "evaluate") {
      evaluate(req, line.size());
    } else if (op == "shutdown") {
      if (ignore_shutdown) sleep_forever();
      return 0;
    } else {
      json err{{"reply", "error"}, {"error", "unknown op '" + op + "'"}};
      if (req.contains("id")) err["id"] = req["id"];
      send(err);
    }
  }
  if (ignore_shutdown) sleep_forever();
  return 0;
}

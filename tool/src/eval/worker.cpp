// `kopt worker`'s request loop and entry point: reading EvalRequests from
// stdin and replying on stdout, the CUDA context and built-in kernels set up
// on first use, and the top level of an evaluation (handle_evaluate), which
// turns a CandidateFailure into the verdict. The worker's other parts:
// worker_impl.h lists them.
#include "eval/worker.h"

#include <sys/prctl.h>
#include <unistd.h>

#include <iostream>

#include "cuda/nvrtc.h"
#include "eval/worker_impl.h"
#include "util/fs.h"
#include "util/json_read.h"

namespace kopt::eval {
namespace detail {

/// The longest request line the worker reads (a spec's cases, arguments and
/// tolerances; far below this in practice).
constexpr size_t kMaxRequestBytes = fs::kJsonMaxBytes;

Worker::~Worker() {
  const cuda::Driver* drv = driver_;
  if (!drv) return;
  for (auto& e : events_) KOPT_CU_CHECK_NOTHROW(drv->cuEventDestroy(e));
  if (check_host_) KOPT_CU_CHECK_NOTHROW(drv->cuMemFreeHost(check_host_));
  for (auto& [path, mod] : modules_loaded_) KOPT_CU_CHECK_NOTHROW(drv->cuModuleUnload(mod));
  if (builtin_module_) KOPT_CU_CHECK_NOTHROW(drv->cuModuleUnload(builtin_module_));
  if (stream_) KOPT_CU_CHECK_NOTHROW(drv->cuStreamDestroy(stream_));
  if (ctx_) KOPT_CU_CHECK_NOTHROW(drv->cuDevicePrimaryCtxRelease(device_));
}

namespace {

/// Reads one '\n'-terminated line of at most `max` bytes. False at the end
/// of input; `too_long` when the line is longer (reading stops there).
bool read_request_line(std::istream& in, std::string& line, size_t max, bool& too_long) {
  line.clear();
  too_long = false;
  std::streambuf* sb = in.rdbuf();
  for (;;) {
    const int c = sb->sbumpc();
    if (c == std::char_traits<char>::eof()) return !line.empty();
    if (c == '\n') return true;
    if (line.size() >= max) {
      too_long = true;
      return true;
    }
    line.push_back(static_cast<char>(c));
  }
}

}  // namespace

int Worker::loop() {
  std::string line;
  bool too_long = false;
  while (read_request_line(std::cin, line, kMaxRequestBytes, too_long)) {
    if (too_long) {
      // The rest of the line cannot be skipped safely (it may never end).
      send({{"reply", "error"},
            {"error", "[kopt.protocol.001] worker request: longer than " +
                          std::to_string(kMaxRequestBytes >> 20) + " MiB; the worker exits"}});
      return 3;
    }
    if (line.empty()) continue;
    nlohmann::json req;
    try {
      req = parse_json(line, "worker request");
    } catch (const std::exception& e) {
      send({{"reply", "error"}, {"error", std::string("bad request: ") + e.what()}});
      continue;
    }
    // Error replies carry the request's id when it has an integer one.
    auto error_reply = [&req](const std::string& what) {
      nlohmann::json r = {{"reply", "error"}, {"error", what}};
      if (req.is_object()) {
        const auto id = req.find("id");
        if (id != req.end() && id->is_number_integer()) r["id"] = *id;
      }
      return r;
    };
    const auto op_it = req.is_object() ? req.find("op") : req.end();
    if (!req.is_object() || op_it == req.end() || !op_it->is_string()) {
      send(error_reply("[kopt.protocol.001] worker request: $.op: expected an object with a string \"op\""));
      continue;
    }
    const std::string op = op_it->get<std::string>();
    if (op == "shutdown") return 0;
    if (op == "hello") {
      handle_hello();
    } else if (op == "evaluate") {
      if (!handle_evaluate(req)) return 0;  // context unusable: exit, a fresh worker follows
    } else {
      send(error_reply("[kopt.protocol.001] worker request: $.op: unknown op '" + json_shown(op) + "'"));
    }
  }
  return 0;
}

// ---- protocol ----
// ---- protocol ----
void Worker::send(const nlohmann::json& j) {
  std::string s = dump_json(j) + "\n";
  const char* p = s.data();
  size_t left = s.size();
  while (left) {
    ssize_t n = ::write(out_fd_, p, left);
    if (n < 0) {
      if (errno == EINTR) continue;
      ::_exit(3);  // the supervisor is gone
    }
    p += n;
    left -= static_cast<size_t>(n);
  }
}
void Worker::progress(int64_t id, const std::string& c, const std::string& phase) {
  send({{"reply", "progress"}, {"id", id}, {"case", c}, {"phase", phase}});
}

// ---- set-up ----
// ---- set-up ----
void Worker::ensure_context() {
  if (ctx_) return;
  driver_ = &cuda::driver();
  const cuda::Driver& drv = *driver_;
  info_ = cuda::query_device(device_ordinal_);
  KOPT_CU_CHECK(drv.cuDeviceGet(&device_, device_ordinal_), "device");
  KOPT_CU_CHECK(drv.cuDevicePrimaryCtxRetain(&ctx_, device_), "retaining the primary context");
  KOPT_CU_CHECK(drv.cuCtxSetCurrent(ctx_), "making the primary context current");
  KOPT_CU_CHECK(drv.cuStreamCreate(&stream_, CU_STREAM_NON_BLOCKING), "creating a stream");
  CUmemAllocationProp prop{};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = device_ordinal_;
  KOPT_CU_CHECK(drv.cuMemGetAllocationGranularity(&granularity_, &prop,
                                                   CU_MEM_ALLOC_GRANULARITY_MINIMUM),
                "allocation granularity");
  // Built-in kernels.
  cuda::Compiler compiler;
  cuda::CompileRequest creq;
  creq.source = kBuiltinSource;
  creq.source_name = "kopt_builtin.cu";
  creq.arch = info_.arch();
  auto res = compiler.compile(creq);
  if (!res.ok)
    throw EnvironmentError("kopt.worker.010", "built-in kernels failed to compile for " +
                                                  creq.arch + ": " + res.log);
  KOPT_CU_CHECK(drv.cuModuleLoadData(&builtin_module_, res.cubin.data()), "built-in module");
  KOPT_CU_CHECK(drv.cuModuleGetFunction(&poison_fn_, builtin_module_, "kopt_poison_shared"),
                "kopt_poison_shared");
  KOPT_CU_CHECK(drv.cuModuleGetFunction(&sumsq_fn_, builtin_module_, "kopt_gemm_sumsq"),
                "kopt_gemm_sumsq");
  for (const auto& [dtype, name] : std::vector<std::pair<spec::DType, const char*>>{
           {spec::DType::f32, "kopt_screen_f32"}, {spec::DType::f64, "kopt_screen_f64"},
           {spec::DType::i8, "kopt_screen_i8"},   {spec::DType::u8, "kopt_screen_u8"},
           {spec::DType::i32, "kopt_screen_i32"}, {spec::DType::u32, "kopt_screen_u32"},
           {spec::DType::i64, "kopt_screen_i64"}, {spec::DType::u64, "kopt_screen_u64"}})
    KOPT_CU_CHECK(drv.cuModuleGetFunction(&screen_fns_[dtype], builtin_module_, name), name);
  KOPT_CU_CHECK(drv.cuModuleGetFunction(&error_stats_fn_, builtin_module_, "kopt_gemm_error_stats"),
                "kopt_gemm_error_stats");
  KOPT_CU_CHECK(drv.cuModuleGetFunction(&diff32_fn_, builtin_module_, "kopt_first_diff_u32"),
                "kopt_first_diff_u32");
  KOPT_CU_CHECK(drv.cuModuleGetFunction(&diff8_fn_, builtin_module_, "kopt_first_diff_u8"),
                "kopt_first_diff_u8");
  // Poison to compare canaries with (enqueue_difference).
  poison_ref_ = std::make_unique<DeviceMemory>(GuardedBuffer::kHeadCheck);
  KOPT_CU_CHECK(drv.cuMemsetD8Async(poison_ref_->get(), kPoisonByte, poison_ref_->bytes(), stream_), "poison");
  size_t free_bytes = 0, total_bytes = 0;
  KOPT_CU_CHECK(drv.cuMemGetInfo(&free_bytes, &total_bytes), "device memory");
  pool_limit_bytes_ = total_bytes / 8;
  poison_smem_bytes_ = static_cast<int>(info_.shared_per_block_optin_bytes);
  KOPT_CU_CHECK(drv.cuFuncSetAttribute(poison_fn_, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                       poison_smem_bytes_),
                "shared memory opt-in of kopt_poison_shared");
}

void Worker::handle_hello() {
  try {
    ensure_context();
    nlohmann::json dev = info_.to_json();
    // How many devices this machine has: the parent leaves out --devices
    // entries past it before starting their workers (eval/evaluator_pool.h).
    int count = 0;
    if (driver_->cuDeviceGetCount(&count) != CUDA_SUCCESS) count = 0;
    nlohmann::json reply = {{"reply", "hello"}, {"ok", true}, {"device", dev}, {"pid", ::getpid()}};
    if (count > 0) reply["device_count"] = count;
    send(reply);
  } catch (const std::exception& e) {
    send({{"reply", "hello"}, {"ok", false}, {"error", e.what()}, {"pid", ::getpid()}});
  }
}

/// Runs the whole evaluation. Returns false when the worker must exit.
bool Worker::handle_evaluate(const nlohmann::json& j) {
  const auto id_it = j.find("id");
  int64_t id = id_it != j.end() && id_it->is_number_integer() ? id_it->get<int64_t>() : 0;
  // A request that does not decode is answered with an error before the GPU
  // is touched (protocol.h).
  EvalRequest rq;
  try {
    rq = EvalRequest::from_json(j);
  } catch (const std::exception& e) {
    nlohmann::json reply = {{"reply", "error"}, {"error", e.what()}};
    if (id_it != j.end() && id_it->is_number_integer()) reply["id"] = id;
    send(reply);
    return true;
  }
  id = rq.id;
  bool healthy = true;
  result_ = Result{};
  try {
    ensure_context();
    evaluate(rq);
  } catch (const CandidateFailure& f) {
    result_.verdict = f.verdict;
    result_.detail = f.detail;
    result_.error_name = f.error_name;
    healthy = !f.sticky;
  } catch (const std::exception& e) {
    // A harness failure (out of memory, a broken reference...) is not the
    // candidate's verdict; report it and start afresh.
    result_.verdict = Verdict::worker_crash;
    result_.detail = std::string("harness error: ") + e.what();
    healthy = false;
  }
  if (result_.verdict != Verdict::ok) result_.geomean_ms.reset();
  send({{"reply", "result"}, {"id", id}, {"healthy", healthy}, {"result", result_.to_json()}});
  if (!healthy) {
    // Drop everything tied to the broken context without touching it.
    std::fflush(nullptr);
    ::_exit(0);
  }
  return true;
}

}  // namespace detail

int run_worker(const WorkerOptions& options) {
  // The protocol owns the original stdout; anything else written to fd 1
  // (device printf, library chatter) goes to stderr instead.
  int protocol_fd = ::dup(1);
  if (protocol_fd < 0) return 3;
  ::dup2(2, 1);
  // Sleeps of the stream polls (Worker::poll) end within a microsecond of
  // their time rather than the default 50 us timer slack later.
  ::prctl(PR_SET_TIMERSLACK, 1000UL, 0, 0, 0);
  try {
    detail::Worker w(options.device, protocol_fd);
    return w.loop();
  } catch (const std::exception& e) {
    std::cerr << "kopt worker: " << e.what() << "\n";
    return 3;
  }
}

}  // namespace kopt::eval

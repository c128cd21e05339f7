#include "cuda/nvrtc.h"

#include <nvrtc.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <memory>

#include <nlohmann/json.hpp>

#include "cuda/ptx.h"
#include "util/error.h"
#include "util/fs.h"
#include "util/json_read.h"
#include "util/json.h"
#include "util/process.h"

namespace kopt::cuda {
namespace {

struct ProgramDeleter {
  void operator()(nvrtcProgram p) const noexcept { nvrtcDestroyProgram(&p); }
};
using ProgramPtr = std::unique_ptr<std::remove_pointer_t<nvrtcProgram>, ProgramDeleter>;

bool forbidden_option(const std::string& o) {
  return o == "-rdc=true" || o == "--relocatable-device-code=true" || o == "-dc" ||
         o == "-rdc" || o == "--device-c" || o == "-dlto" || o == "--dlink-time-opt";
}

/// The last lines of a child's output, for a one-line message.
std::string text_tail(const std::string& s) {
  std::string t = s.size() > 600 ? "..." + s.substr(s.size() - 600) : s;
  while (!t.empty() && (t.back() == '\n' || t.back() == '\r' || t.back() == ' ')) t.pop_back();
  for (char& c : t)
    if (c == '\n' || c == '\r') c = ' ';
  return t.empty() ? "no output" : t;
}

std::string json_number(double v) { return nlohmann::json(v).dump(); }

/// The request file of a compiler process (run_compile_worker reads it).
nlohmann::json request_to_json(const CompileRequest& r) {
  return {{"source", r.source}, {"source_name", r.source_name}, {"entry", r.entry}, {"arch", r.arch},
          {"options", r.options}, {"defines", r.defines}, {"symbols", r.symbols}};
}

CompileRequest request_from_json(const nlohmann::json& j) {
  CompileRequest r;
  r.source = j.at("source").get<std::string>();
  r.source_name = j.at("source_name").get<std::string>();
  r.entry = j.at("entry").get<std::string>();
  r.arch = j.at("arch").get<std::string>();
  r.options = j.at("options").get<std::vector<std::string>>();
  r.defines = j.at("defines").get<std::map<std::string, int64_t>>();
  r.symbols = j.at("symbols").get<std::vector<std::string>>();
  return r;
}


std::string hex128(const XXH128_hash_t& h) {
  char buf[33];
  std::snprintf(buf, sizeof buf, "%016llx%016llx", static_cast<unsigned long long>(h.high64),
                static_cast<unsigned long long>(h.low64));
  return buf;
}

}  // namespace

std::string first_error_line(const std::string& log, size_t max_chars) {
  std::string first, found;
  size_t start = 0;
  while (start < log.size() && found.empty()) {
    const size_t end = std::min(log.find('\n', start), log.size());
    const std::string line = log.substr(start, end - start);
    start = end + 1;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    if (first.empty()) first = line;
    if (line.find("error") != std::string::npos) found = line;
  }
  std::string out = found.empty() ? first : found;
  const size_t b = out.find_first_not_of(" \t\r");
  out = b == std::string::npos ? "" : out.substr(b, out.find_last_not_of(" \t\r") - b + 1);
  if (out.empty()) return "no log";
  return out.size() > max_chars ? out.substr(0, max_chars - 3) + "..." : out;
}

std::string nvrtc_version() {
  int major = 0, minor = 0;
  nvrtcVersion(&major, &minor);
  return std::to_string(major) + "." + std::to_string(minor);
}

std::vector<int> supported_archs() {
  int n = 0;
  if (nvrtcGetNumSupportedArchs(&n) != NVRTC_SUCCESS || n <= 0) return {};
  std::vector<int> archs(static_cast<size_t>(n));
  if (nvrtcGetSupportedArchs(archs.data()) != NVRTC_SUCCESS) return {};
  std::sort(archs.begin(), archs.end());
  return archs;
}

namespace {

/// CUDA 13 moved CCCL's headers (<cub/...>, <thrust/...>, <cuda/std/...>)
/// from the include folder to its cccl/ subfolder, which nvcc searches by
/// itself and NVRTC does not: kopt adds it when the toolkit has it, so that
/// a kernel that includes CUB compiles as it does with nvcc.
const std::string& cccl_include_option() {
  static const std::string opt = [] {
    std::error_code ec;
    const std::filesystem::path dir = std::filesystem::path(KOPT_CUDA_INCLUDE_DIR) / "cccl";
    return std::filesystem::is_directory(dir, ec) ? "-I" + dir.string() : std::string();
  }();
  return opt;
}

}  // namespace

std::vector<std::string> effective_options(const CompileRequest& r) {
  std::vector<std::string> opts = {"--std=c++17", "-arch=" + r.arch,
                                   std::string("-I") + KOPT_CUDA_INCLUDE_DIR};
  if (!cccl_include_option().empty()) opts.push_back(cccl_include_option());
  for (const auto& [name, value] : r.defines) opts.push_back("-D" + name + "=" + std::to_string(value));
  for (const auto& o : r.options) opts.push_back(o);
  return opts;
}

std::string Compiler::cache_key(const CompileRequest& r) {
  // Everything that can change the cubin: source, entry, options (in order),
  // architecture and NVRTC version. Fields are separated by a byte that cannot
  // appear in options, and each is length-prefixed, so no two requests collide
  // by concatenation.
  std::string blob;
  auto add = [&](const std::string& s) {
    blob += std::to_string(s.size());
    blob += '\x1f';
    blob += s;
  };
  add("kopt-nvrtc-v1");
  add(nvrtc_version());
  add(r.source);
  add(r.entry);
  for (const auto& o : effective_options(r)) add(o);
  // Symbols change what the entry records, not the cubin; a request without
  // any keeps the key it always had.
  for (const auto& sym : r.symbols) add("symbol:" + sym);
  return hex128(XXH3_128bits(blob.data(), blob.size()));
}

namespace {

/// The pid in a compiler process's request file name
/// ("<key>.request.<pid>.<n>.json", Compiler::compile_in_child), or nullopt:
/// the "<pid>.<n>" is read as in a temporary's name (fs::atomic_temp_pid).
std::optional<long long> request_file_pid(const std::string& name) {
  const std::string tag = ".request.", ext = ".json";
  const auto p = name.rfind(tag);
  if (p == std::string::npos || name.size() < p + tag.size() + ext.size() ||
      name.compare(name.size() - ext.size(), ext.size(), ext) != 0)
    return std::nullopt;
  return fs::atomic_temp_pid(name.substr(0, p) + ".tmp." +
                             name.substr(p + tag.size(), name.size() - ext.size() - p - tag.size()));
}

/// True when no process `pid` runs on this host (one of another user's runs: EPERM).
bool process_gone(long long pid) {
  return pid <= 0 || static_cast<long long>(static_cast<pid_t>(pid)) != pid ||
         (::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH);
}

}  // namespace

int remove_stale_cache_files(const std::filesystem::path& dir) {
  namespace stdfs = std::filesystem;
  int removed = 0;
  std::error_code ec;
  const auto now = stdfs::file_time_type::clock::now();
  for (stdfs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    std::optional<long long> pid = fs::atomic_temp_pid(name);
    if (!pid) pid = request_file_pid(name);
    std::error_code e;
    if (!pid || !it->is_regular_file(e)) continue;
    const auto written = stdfs::last_write_time(it->path(), e);
    if (e) continue;
    const double age_s = std::chrono::duration<double>(now - written).count();
    const bool stale = age_s >= kStaleAgeSeconds || (age_s >= kStaleGraceSeconds && process_gone(*pid));
    if (stale && stdfs::remove(it->path(), e)) ++removed;
  }
  return removed;
}

Compiler::Compiler(std::filesystem::path cache_dir, CompilerOptions options)
    : dir_(std::move(cache_dir)), opt_(std::move(options)) {
  if (!dir_.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(dir_, ec);
    if (ec)
      throw EnvironmentError("kopt.nvrtc.002",
                             "cannot create the compile cache '" + dir_.string() + "': " + ec.message());
    if (opt_.remove_stale) remove_stale_cache_files(dir_);
  }
}

int Compiler::hits() const {
  std::lock_guard<std::mutex> lock(mu_);
  return hits_;
}
int Compiler::misses() const {
  std::lock_guard<std::mutex> lock(mu_);
  return misses_;
}

std::optional<CompileResult> Compiler::cached(const CompileRequest& r, const std::string& key) const {
  const auto meta_path = dir_ / (key + ".json");
  if (dir_.empty() || !std::filesystem::exists(meta_path)) return std::nullopt;
  try {
    CompileResult out;
    out.key = key;
    auto meta = parse_json_file(meta_path, "compile cache entry");
    out.ok = meta.at("ok").get<bool>();
    out.error_name = meta.value("error_name", "");
    out.log = meta.value("log", "");
    out.lowered_entry = meta.value("lowered_entry", "");
    if (!out.ok) return out;
    // Entries written before parameter sizes (or the symbols asked for) were
    // recorded are compiled again.
    if (!meta.contains("param_sizes")) return std::nullopt;
    if (!meta["param_sizes"].is_null()) out.param_sizes = meta["param_sizes"].get<std::vector<size_t>>();
    if (!r.symbols.empty() && !meta.contains("symbols")) return std::nullopt;
    if (meta.contains("symbols"))
      for (const auto& [name, sym] : meta["symbols"].items()) {
        CompiledSymbol cs;
        cs.lowered = sym.at("lowered").get<std::string>();
        if (!sym.at("bytes").is_null()) cs.bytes = sym.at("bytes").get<size_t>();
        out.symbols[name] = cs;
      }
    std::string bin = fs::read_file(dir_ / (key + ".cubin"), "compiled kernel", fs::kBlobMaxBytes);
    out.cubin.assign(bin.begin(), bin.end());
    if (out.cubin.empty()) return std::nullopt;
    return out;
  } catch (const std::exception&) {
    return std::nullopt;  // a torn or foreign cache entry is compiled again and overwritten
  }
}

CompileResult Compiler::compile(const CompileRequest& r) {
  CompileResult out;
  out.key = cache_key(r);
  for (const auto& o : r.options) {
    if (forbidden_option(o)) {
      out.error_name = "KOPT_FORBIDDEN_OPTION";
      out.log = "option '" + o +
                "' is refused: relocatable device code would allow device-side launches that the "
                "timer cannot see";
      return out;
    }
  }
  if (std::optional<CompileResult> hit = cached(r, out.key)) {
    hit->cache_hit = true;
    std::lock_guard<std::mutex> lock(mu_);
    ++hits_;
    return *hit;
  }
  if (stopped_.load()) {
    out.error_name = kCompileStopped;
    out.log = "the compile was not started: its result is no longer wanted";
    return out;
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    ++misses_;
  }
  if (!opt_.helper_argv.empty() && !dir_.empty()) return compile_in_child(r, out.key);
  return compile_here(r, out.key);
}

CompileResult Compiler::compile_in_child(const CompileRequest& r, const std::string& key) {
  // The request goes in a file beside the entry the child writes; its name is
  // unique to this call (two threads may compile the same request).
  static std::atomic<uint64_t> serial{0};
  const std::filesystem::path request =
      dir_ / (key + ".request." + std::to_string(::getpid()) + "." + std::to_string(serial++) + ".json");
  fs::write_file_atomic(request, dump_json(request_to_json(r), -1));
  std::vector<std::string> argv = opt_.helper_argv;
  argv.insert(argv.end(), {"--request", request.string(), "--cache-dir", dir_.string()});
  const auto t0 = std::chrono::steady_clock::now();
  const util::ProcResult pr =
      util::run_process(argv, opt_.timeout_s > 0 ? opt_.timeout_s : 1e9, size_t{1} << 20, &stopped_);
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  std::error_code ec;
  std::filesystem::remove(request, ec);
  if (!pr.started) throw EnvironmentError("kopt.nvrtc.003", "cannot start the compiler process: " + pr.output);
  CompileResult out;
  out.key = key;
  out.compile_ms = ms;
  if (pr.stopped) {
    out.error_name = kCompileStopped;
    out.log = "the compile was stopped: its result is no longer wanted";
    out.detail = out.log;
    return out;
  }
  if (pr.timed_out) {
    out.error_name = "KOPT_COMPILE_TIMEOUT";
    out.log = "the compilation took longer than " + json_number(opt_.timeout_s) +
              " s and was stopped (--compile-timeout)";
    out.detail = out.log;
    return out;
  }
  if (pr.exit_code == 3 && pr.output.find("kopt.nvrtc.001") != std::string::npos)
    throw EnvironmentError("kopt.nvrtc.001", text_tail(pr.output));
  if (std::optional<CompileResult> done = cached(r, key)) {
    done->compile_ms = ms;
    return *done;
  }
  out.error_name = "KOPT_COMPILER_CRASHED";
  out.log = "the compiler process ended (exit status " + std::to_string(pr.exit_code) +
            ") without a result: " + text_tail(pr.output);
  out.detail = out.log;
  return out;
}

CompileResult Compiler::compile_here(const CompileRequest& r, const std::string& key) {
  CompileResult out;
  out.key = key;
  nvrtcProgram raw = nullptr;
  nvrtcResult res = nvrtcCreateProgram(&raw, r.source.c_str(), r.source_name.c_str(), 0, nullptr, nullptr);
  if (res != NVRTC_SUCCESS)
    throw EnvironmentError("kopt.nvrtc.001",
                           std::string("nvrtcCreateProgram failed: ") + nvrtcGetErrorString(res));
  ProgramPtr prog(raw);
  const std::string name_expr = r.entry.empty() ? "" : "&" + r.entry;
  if (!name_expr.empty()) nvrtcAddNameExpression(prog.get(), name_expr.c_str());
  for (const auto& sym : r.symbols) nvrtcAddNameExpression(prog.get(), ("&" + sym).c_str());

  const auto opts = effective_options(r);
  std::vector<const char*> argv;
  for (const auto& o : opts) argv.push_back(o.c_str());

  const auto t0 = std::chrono::steady_clock::now();
  res = nvrtcCompileProgram(prog.get(), static_cast<int>(argv.size()), argv.data());
  out.compile_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();

  size_t log_size = 0;
  nvrtcGetProgramLogSize(prog.get(), &log_size);
  if (log_size > 1) {
    out.log.resize(log_size);
    nvrtcGetProgramLog(prog.get(), out.log.data());
    out.log.resize(log_size - 1);  // drop the terminating NUL
    // and any other: a log is text (JSON records, terminals).
    out.log.erase(std::remove(out.log.begin(), out.log.end(), '\0'), out.log.end());
  }
  if (res == NVRTC_ERROR_OUT_OF_MEMORY || res == NVRTC_ERROR_INTERNAL_ERROR ||
      res == NVRTC_ERROR_BUILTIN_OPERATION_FAILURE) {
    throw EnvironmentError("kopt.nvrtc.001",
                           std::string("nvrtcCompileProgram failed: ") + nvrtcGetErrorString(res));
  }
  if (res != NVRTC_SUCCESS) {
    out.error_name = nvrtcGetErrorString(res);
  } else {
    if (!name_expr.empty()) {
      const char* lowered = nullptr;
      if (nvrtcGetLoweredName(prog.get(), name_expr.c_str(), &lowered) == NVRTC_SUCCESS && lowered)
        out.lowered_entry = lowered;
    }
    size_t cubin_size = 0;
    res = nvrtcGetCUBINSize(prog.get(), &cubin_size);
    if (res != NVRTC_SUCCESS || cubin_size == 0) {
      out.error_name = res != NVRTC_SUCCESS ? nvrtcGetErrorString(res) : "NVRTC_ERROR_NO_CUBIN";
      out.log += "\nno cubin was produced: the architecture must be a real one (sm_XY), not compute_XY";
    } else {
      out.cubin.resize(cubin_size);
      nvrtcGetCUBIN(prog.get(), out.cubin.data());
      out.ok = true;
      std::string ptx;
      size_t ptx_size = 0;
      if ((!out.lowered_entry.empty() || !r.symbols.empty()) &&
          nvrtcGetPTXSize(prog.get(), &ptx_size) == NVRTC_SUCCESS && ptx_size > 1) {
        ptx.assign(ptx_size, '\0');
        if (nvrtcGetPTX(prog.get(), ptx.data()) != NVRTC_SUCCESS) ptx.clear();
      }
      if (!ptx.empty() && !out.lowered_entry.empty()) out.param_sizes = ptx_param_sizes(ptx, out.lowered_entry);
      for (const auto& sym : r.symbols) {
        CompiledSymbol cs;
        const char* lowered = nullptr;
        const std::string expr = "&" + sym;
        cs.lowered = nvrtcGetLoweredName(prog.get(), expr.c_str(), &lowered) == NVRTC_SUCCESS && lowered
                         ? std::string(lowered)
                         : sym;
        if (!ptx.empty()) cs.bytes = ptx_variable_bytes(ptx, cs.lowered);
        out.symbols[sym] = cs;
      }
    }
  }

  if (!dir_.empty()) {
    if (out.ok) fs::write_file_atomic(dir_ / (out.key + ".cubin"), out.cubin);
    nlohmann::json meta = {{"ok", out.ok},           {"error_name", out.error_name},
                           {"log", out.log},         {"lowered_entry", out.lowered_entry},
                           {"arch", r.arch},         {"nvrtc", nvrtc_version()},
                           {"options", opts},        {"compile_ms", out.compile_ms},
                           {"param_sizes", out.param_sizes ? nlohmann::json(*out.param_sizes) : nlohmann::json()}};
    if (!r.symbols.empty()) {
      meta["symbols"] = nlohmann::json::object();
      for (const auto& [name, sym] : out.symbols)
        meta["symbols"][name] = {{"lowered", sym.lowered},
                                 {"bytes", sym.bytes ? nlohmann::json(*sym.bytes) : nlohmann::json()}};
    }
    // Written last: its presence marks a complete entry.
    fs::write_file_atomic(dir_ / (out.key + ".json"), dump_json(meta, 1));
  }
  return out;
}

int run_compile_worker(const std::filesystem::path& request, const std::filesystem::path& cache_dir) {
  try {
    const CompileRequest r = request_from_json(parse_json_file(request, "compile request"));
    CompilerOptions here;
    here.remove_stale = false;  // the parent's Compiler did, once; this one compiles once
    Compiler(cache_dir, here).compile(r);  // the entry lands in the cache, where the parent reads it
    return 0;
  } catch (const EnvironmentError& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 3;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "kopt compile-worker: %s\n", e.what());
    return 2;
  }
}

std::filesystem::path store_cubin(const std::filesystem::path& dir, const CompileResult& result) {
  const auto path = dir / (result.key + ".cubin");
  if (!std::filesystem::exists(path)) fs::write_file_atomic(path, result.cubin);
  return path;
}

}  // namespace kopt::cuda

#include "cuda/nvrtc.h"

#include <nvrtc.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>

#include <nlohmann/json.hpp>

#include "cuda/ptx.h"
#include "util/error.h"
#include "util/fs.h"
#include "util/json_read.h"
#include "util/json.h"

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

std::string hex128(const XXH128_hash_t& h) {
  char buf[33];
  std::snprintf(buf, sizeof buf, "%016llx%016llx", static_cast<unsigned long long>(h.high64),
                static_cast<unsigned long long>(h.low64));
  return buf;
}

}  // namespace

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

std::vector<std::string> effective_options(const CompileRequest& r) {
  std::vector<std::string> opts = {"--std=c++17", "-arch=" + r.arch,
                                   std::string("-I") + KOPT_CUDA_INCLUDE_DIR};
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
  return hex128(XXH3_128bits(blob.data(), blob.size()));
}

Compiler::Compiler(std::filesystem::path cache_dir) : dir_(std::move(cache_dir)) {
  if (!dir_.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(dir_, ec);
    if (ec)
      throw EnvironmentError("kopt.nvrtc.002",
                             "cannot create the compile cache '" + dir_.string() + "': " + ec.message());
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

  const auto meta_path = dir_ / (out.key + ".json");
  if (!dir_.empty() && std::filesystem::exists(meta_path)) {
    try {
      auto meta = parse_json_file(meta_path, "compile cache entry");
      out.ok = meta.at("ok").get<bool>();
      out.error_name = meta.value("error_name", "");
      out.log = meta.value("log", "");
      out.lowered_entry = meta.value("lowered_entry", "");
      bool complete = true;
      if (out.ok) {
        // Entries written before parameter sizes were recorded are compiled again.
        if (!meta.contains("param_sizes")) complete = false;
        else if (!meta["param_sizes"].is_null()) out.param_sizes = meta["param_sizes"].get<std::vector<size_t>>();
        std::string bin = fs::read_file(dir_ / (out.key + ".cubin"), "compiled kernel", fs::kBlobMaxBytes);
        out.cubin.assign(bin.begin(), bin.end());
        complete = complete && !out.cubin.empty();
      }
      if (complete) {
        out.cache_hit = true;
        std::lock_guard<std::mutex> lock(mu_);
        ++hits_;
        return out;
      }
    } catch (const std::exception&) {
      // A torn or foreign cache entry is recompiled and overwritten.
    }
    out = CompileResult{};
    out.key = cache_key(r);
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    ++misses_;
  }

  nvrtcProgram raw = nullptr;
  nvrtcResult res = nvrtcCreateProgram(&raw, r.source.c_str(), r.source_name.c_str(), 0, nullptr, nullptr);
  if (res != NVRTC_SUCCESS)
    throw EnvironmentError("kopt.nvrtc.001",
                           std::string("nvrtcCreateProgram failed: ") + nvrtcGetErrorString(res));
  ProgramPtr prog(raw);
  const std::string name_expr = r.entry.empty() ? "" : "&" + r.entry;
  if (!name_expr.empty()) nvrtcAddNameExpression(prog.get(), name_expr.c_str());

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
    out.log.resize(log_size - 1);  // drop the NUL
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
      size_t ptx_size = 0;
      if (!out.lowered_entry.empty() && nvrtcGetPTXSize(prog.get(), &ptx_size) == NVRTC_SUCCESS && ptx_size > 1) {
        std::string ptx(ptx_size, '\0');
        if (nvrtcGetPTX(prog.get(), ptx.data()) == NVRTC_SUCCESS)
          out.param_sizes = ptx_param_sizes(ptx, out.lowered_entry);
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
    // Written last: its presence marks a complete entry.
    fs::write_file_atomic(meta_path, dump_json(meta, 1));
  }
  return out;
}

std::filesystem::path store_cubin(const std::filesystem::path& dir, const CompileResult& result) {
  const auto path = dir / (result.key + ".cubin");
  if (!std::filesystem::exists(path)) fs::write_file_atomic(path, result.cubin);
  return path;
}

}  // namespace kopt::cuda

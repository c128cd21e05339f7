#include "gen/nvcc_options.h"

#include <set>

namespace kopt::gen {
namespace {

enum class NvccFate {
  pass,          // nvcc has the option, under NVRTC's long name
  leave,         // changes nothing the nvcc build needs, or the build decides it: a note
  untranslated,  // kopt cannot give it to nvcc: a warning
};

/// One NVRTC option: nvrtc.h's "Supported Compile Options" (CUDA 13.0), and
/// nvcc's option of the same effect (`nvcc --help`, CUDA 13.0).
struct NvrtcOptionRow {
  const char* name;        // NVRTC's long name, without dashes
  const char* short_name;  // NVRTC's short name ("" when none)
  bool takes_value;        // "=<value>", or the next element
  NvccFate fate;
  /// pass: "" (nvcc's long name is NVRTC's) or the prefix -D/-U/-I takes;
  /// else why the build does not get it.
  const char* nvcc_or_why;
};

constexpr const char* kRdc = "relocatable device code, which kopt refuses for its candidates (a device-side launch "
                             "would escape the timer)";
constexpr const char* kNoCode = "NVRTC makes no GPU code with it, so no tuned kernel was compiled with it";
constexpr const char* kCompileOnly = "changes how long NVRTC compiles, not the code";

// Data table: one row per NVRTC option.
const NvrtcOptionRow kNvrtcOptionTable[] = {
    {"gpu-architecture", "arch", true, NvccFate::leave, "the build's CUDA_ARCHITECTURES chooses the GPU code"},
    {"device-c", "dc", false, NvccFate::untranslated, kRdc},
    {"device-w", "dw", false, NvccFate::leave, "nvcc's default; the target's CUDA_SEPARABLE_COMPILATION decides"},
    {"relocatable-device-code", "rdc", true, NvccFate::leave, ""},  // by its value: see nvcc_options()
    {"extensible-whole-program", "ewp", false, NvccFate::pass, ""},
    {"device-debug", "G", false, NvccFate::pass, ""},
    {"generate-line-info", "lineinfo", false, NvccFate::pass, ""},
    {"dopt", "dopt", true, NvccFate::pass, ""},
    {"Ofast-compile", "Ofc", true, NvccFate::pass, ""},
    {"ptxas-options", "Xptxas", true, NvccFate::pass, ""},
    {"maxrregcount", "maxrregcount", true, NvccFate::pass, ""},
    {"ftz", "ftz", true, NvccFate::pass, ""},
    {"prec-sqrt", "prec-sqrt", true, NvccFate::pass, ""},
    {"prec-div", "prec-div", true, NvccFate::pass, ""},
    {"fmad", "fmad", true, NvccFate::pass, ""},
    {"use_fast_math", "use_fast_math", false, NvccFate::pass, ""},
    {"extra-device-vectorization", "extra-device-vectorization", false, NvccFate::pass, ""},
    {"modify-stack-limit", "modify-stack-limit", true, NvccFate::leave,
     "sets the stack limit of kopt's process while NVRTC compiles, nothing in the code"},
    {"dlink-time-opt", "dlto", false, NvccFate::untranslated, kRdc},
    {"gen-opt-lto", "gen-opt-lto", false, NvccFate::untranslated,
     "it applies to -dlto's output, relocatable device code, which kopt refuses for its candidates"},
    {"optix-ir", "optix-ir", false, NvccFate::untranslated, kNoCode},
    {"jump-table-density", "jtd", true, NvccFate::pass, ""},
    {"device-stack-protector", "device-stack-protector", true, NvccFate::pass, ""},
    {"no-cache", "no-cache", false, NvccFate::leave, "NVRTC's own compile cache"},
    {"frandom-seed", "frandom-seed", true, NvccFate::pass, ""},
    {"define-macro", "D", true, NvccFate::pass, "-D"},
    {"undefine-macro", "U", true, NvccFate::pass, "-U"},
    {"include-path", "I", true, NvccFate::pass, "-I"},
    {"pre-include", "include", true, NvccFate::pass, ""},
    {"no-source-include", "no-source-include", false, NvccFate::leave,
     "NVRTC's search of the source's folder; kopt expands a kernel's local #include files before compiling"},
    {"std", "std", true, NvccFate::pass, ""},
    {"builtin-move-forward", "builtin-move-forward", true, NvccFate::leave,
     "NVRTC's built-in std::move and std::forward; nvcc has the host's <utility>"},
    {"builtin-initializer-list", "builtin-initializer-list", true, NvccFate::leave,
     "NVRTC's built-in std::initializer_list; nvcc has the host's <initializer_list>"},
    {"pch", "pch", false, NvccFate::leave, kCompileOnly},
    {"create-pch", "create-pch", true, NvccFate::leave, kCompileOnly},
    {"use-pch", "use-pch", true, NvccFate::leave, kCompileOnly},
    {"pch-dir", "pch-dir", true, NvccFate::leave, kCompileOnly},
    {"pch-verbose", "pch-verbose", true, NvccFate::leave, kCompileOnly},
    {"pch-messages", "pch-messages", true, NvccFate::leave, kCompileOnly},
    {"instantiate-templates-in-pch", "instantiate-templates-in-pch", true, NvccFate::leave, kCompileOnly},
    {"disable-warnings", "w", false, NvccFate::pass, ""},
    {"restrict", "restrict", false, NvccFate::pass, ""},
    {"device-as-default-execution-space", "default-device", false, NvccFate::untranslated,
     "nvcc has no such option: a function without __device__ would be host code"},
    {"device-int128", "device-int128", false, NvccFate::leave,
     "nvcc allows __int128 in device code where the host compiler has it"},
    {"device-float128", "device-float128", false, NvccFate::untranslated, "nvcc has no such option"},
    {"optimization-info", "opt-info", true, NvccFate::leave, "compiler remarks, not code"},
    {"display-error-number", "err-no", false, NvccFate::pass, ""},
    {"no-display-error-number", "no-err-no", false, NvccFate::pass, ""},
    {"diag-error", "diag-error", true, NvccFate::pass, ""},
    {"diag-suppress", "diag-suppress", true, NvccFate::pass, ""},
    {"diag-warn", "diag-warn", true, NvccFate::pass, ""},
    {"brief-diagnostics", "brief-diag", true, NvccFate::pass, ""},
    {"time", "time", true, NvccFate::leave, "NVRTC's timing report"},
    {"split-compile", "split-compile", true, NvccFate::leave, kCompileOnly},
    {"fdevice-syntax-only", "fdevice-syntax-only", false, NvccFate::untranslated, kNoCode},
    {"minimal", "minimal", false, NvccFate::leave,
     "leaves features out of NVRTC's built-in headers to compile faster; a kernel that compiles so compiles with "
     "nvcc's full headers"},
    {"fdevice-time-trace", "fdevice-time-trace", true, NvccFate::leave, "a profile of NVRTC's compile"},
};

const NvrtcOptionRow* find_nvrtc_option(const std::string& name) {
  for (const NvrtcOptionRow& r : kNvrtcOptionTable)
    if (name == r.name || name == r.short_name) return &r;
  return nullptr;
}

/// What nvcc's options file can hold: its quotes group blanks, and it has no
/// escapes (a backslash or a quote inside an option is lost).
bool fits_options_file(const std::string& option) {
  for (char c : option) {
    const auto u = static_cast<unsigned char>(c);
    if (c == '"' || c == '\'' || c == '\\' || u < 0x20 || u == 0x7f) return false;
  }
  return true;
}

/// Why -arch is left out, and what a kernel compiled for an
/// architecture-specific target (sm_90a, sm_100f) needs from the build.
std::string arch_note(const std::string& arch) {
  std::string why = "the build's CUDA_ARCHITECTURES chooses the GPU code; kopt compiled for " + arch;
  const size_t digits = arch.find_first_of("0123456789");
  if (digits == std::string::npos) return why;
  const std::string number = arch.substr(digits);
  if (!number.empty() && (number.back() == 'a' || number.back() == 'f'))
    why += ", and the kernel may use its own instructions: build it with CUDA_ARCHITECTURES " + number;
  return why;
}

/// An option as the caller wrote it and its value, when one was read.
struct ReadOption {
  const NvrtcOptionRow* row = nullptr;
  std::string given;  // for messages: the element (and its value's element)
  std::string value;
  bool has_value = false;
};

/// Reads the option at `in[*i]` (and its value from the next element, when
/// it takes one and has none: *i then moves on). Sets `*why` and returns a
/// row-less option when it cannot be read.
ReadOption read_nvrtc_option(const std::vector<std::string>& in, size_t* i, std::string* why) {
  ReadOption o;
  const std::string& t = in[*i];
  o.given = t;
  if (t.size() < 2 || t[0] != '-') {
    *why = "not an option (a value without its option?)";
    return o;
  }
  const bool two_dashes = t[1] == '-';
  const std::string body = t.substr(two_dashes ? 2 : 1);
  if (!two_dashes && !body.empty() && (body[0] == 'D' || body[0] == 'U' || body[0] == 'I')) {
    // -DNAME, -D=NAME, -D NAME: the value attached, after '=' or blanks.
    o.row = find_nvrtc_option(body.substr(0, 1));
    std::string v = body.substr(1);
    if (!v.empty() && v[0] == '=') v.erase(0, 1);
    const size_t start = v.find_first_not_of(" \t");
    if (start != std::string::npos) {
      o.value = v.substr(start);
      o.has_value = true;
    }
  } else {
    const size_t eq = body.find('=');
    o.row = find_nvrtc_option(body.substr(0, eq));
    if (eq != std::string::npos) {
      o.value = body.substr(eq + 1);
      o.has_value = true;
    }
  }
  if (!o.row) {
    *why = "not an NVRTC option kopt knows (nvrtc.h, CUDA 13.0)";
  } else if (o.row->takes_value && !o.has_value) {
    if (*i + 1 < in.size()) {
      o.value = in[++*i];
      o.has_value = true;
      o.given += " " + o.value;
    } else {
      *why = "it needs a value";
      o.row = nullptr;
    }
  } else if (!o.row->takes_value && o.has_value) {
    *why = "it takes no value";
    o.row = nullptr;
  }
  return o;
}

}  // namespace

NvccOptions nvcc_options(const std::vector<std::string>& nvrtc_options, const std::filesystem::path& cwd) {
  NvccOptions out;
  std::set<std::string> seen;
  for (size_t i = 0; i < nvrtc_options.size(); ++i) {
    std::string why;
    const ReadOption o = read_nvrtc_option(nvrtc_options, &i, &why);
    if (!o.row) {
      out.not_translated.push_back({o.given, why});
      continue;
    }
    NvccFate fate = o.row->fate;
    why = o.row->nvcc_or_why;
    const std::string name = o.row->name;
    if (name == "gpu-architecture") why = arch_note(o.value);
    if (name == "relocatable-device-code") {
      const bool on = o.value == "true";
      fate = on ? NvccFate::untranslated : NvccFate::leave;
      why = on ? kRdc : "nvcc's default; the target's CUDA_SEPARABLE_COMPILATION decides";
    }
    if (fate != NvccFate::pass) {
      (fate == NvccFate::leave ? out.left_out : out.not_translated).push_back({o.given, why});
      continue;
    }
    std::string nvcc;
    if (name == "define-macro" || name == "undefine-macro" || name == "include-path") {
      std::string value = o.value;
      // NVRTC looked a relative folder up from kopt's working folder; nvcc
      // runs in the build's.
      if (name == "include-path" && std::filesystem::path(value).is_relative())
        value = (cwd / value).lexically_normal().string();
      nvcc = std::string(o.row->nvcc_or_why) + value;
    } else {
      nvcc = "--" + name + (o.row->takes_value ? "=" + o.value : "");
    }
    if (!fits_options_file(nvcc)) {
      out.not_translated.push_back(
          {o.given, "nvcc's --options-file cannot hold a quote, a backslash or a control character"});
      continue;
    }
    if (seen.insert(nvcc).second) out.options.push_back(nvcc);
  }
  return out;
}

std::string options_file_text(const std::vector<std::string>& nvcc_options) {
  std::string text;
  for (const std::string& o : nvcc_options)
    text += (o.find(' ') == std::string::npos ? o : "\"" + o + "\"") + "\n";
  return text;
}

}  // namespace kopt::gen

// NVRTC options as an nvcc build takes them. kopt tunes a kernel with NVRTC
// and the options of its spec and kernel file (`tuning.compile_options`, a
// kernel's `compile_options`, `// kopt:options` lines); the application
// compiles the generated file with nvcc. `kopt generate` writes the
// translated options beside the file (<name>.nvcc_options, the text of an
// nvcc --options-file), and optimize_kernel() passes that file to the
// generated source's compile, so that the user's build compiles the kernel
// that was tuned and validated: -use_fast_math stays fast math.
//
// Plain text in, plain text out: no file is read or written here.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace kopt::gen {

/// An NVRTC option that the nvcc build does not get, and why.
struct DroppedOption {
  std::string option;  // as given; an option and its value in two elements joined by one space
  std::string why;     // e.g. "the build's CUDA_ARCHITECTURES chooses the GPU code"
};

/// The translation of a list of NVRTC options.
struct NvccOptions {
  /// nvcc's spelling, in the order given, each once: the long name with its
  /// value after '=' (`--use_fast_math`, `--ftz=true`, `--maxrregcount=64`,
  /// `--std=c++20`), -D/-U/-I with the value attached (`-DNAME=1`, `-I/abs`).
  std::vector<std::string> options;
  /// Options that change nothing the nvcc build needs (NVRTC's own cache,
  /// precompiled headers, timing), or that the build decides itself (-arch:
  /// CUDA_ARCHITECTURES): a note.
  std::vector<DroppedOption> left_out;
  /// Options kopt cannot give nvcc (nvcc has no such option, unknown to
  /// kopt, a text nvcc's options file cannot quote): the build compiles the
  /// kernel without them, unlike the tuning. `kopt generate` warns.
  std::vector<DroppedOption> not_translated;
};

/// Translates NVRTC options (the table of nvrtc.h's "Supported Compile
/// Options", CUDA 13.0) to nvcc's. NVRTC's forms are all read: the long or
/// the short name, after one dash or two; a value after '=' or in the next
/// element (`"-Xptxas", "-v"`); -D, -U and -I with the value attached, after
/// '=' or after blanks. A relative -I folder is made absolute against `cwd`,
/// the folder kopt (and so NVRTC) looked it up from. Never throws: what it
/// cannot translate is in `not_translated`.
NvccOptions nvcc_options(const std::vector<std::string>& nvrtc_options, const std::filesystem::path& cwd);

/// The text of an nvcc `--options-file`: one option a line, an option that
/// holds a blank in double quotes; "" for none (nvcc accepts an empty file).
/// nvcc's options file has no escapes: nvcc_options() never returns an
/// option with a quote, a backslash or a control character.
std::string options_file_text(const std::vector<std::string>& nvcc_options);

}  // namespace kopt::gen

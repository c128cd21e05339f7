// Local includes of kernel sources: the one place that reads a kernel source
// file named by a spec or on the command line, and makes it self-contained.
//
// A line of a kernel source of the form
//
//   #include "NAME"          (blanks allowed around '#' and before the name;
//                             whatever follows the closing quote is dropped)
//
// whose NAME names a file relative to the including file's folder (an
// absolute NAME names itself) is replaced by that file's text, itself
// expanded the same way relative to its own folder. Each file is expanded
// once per source, as if every header had `#pragma once`: a later #include of
// a file already expanded (the source itself included, so a cycle ends) is
// removed. Except where one of a file's include sites is inside an #if block
// and it has several (two #if branches, or two headers chosen by a define,
// sharing a third): then it is expanded at each site inside
// `#ifndef KOPT_LOCAL_INCLUDE_<k>` / `#define` / `#endif` (k: 0, 1, ... in
// order; `#undef`s at the end of the source), so that the branch the
// preprocessor takes has it. A `#pragma once` line of an included file is dropped (it would be
// "#pragma once in main file" in the result). Left as they are: `#include
// <...>`, and a quoted NAME that names no file (or a folder) beside the
// including file, for NVRTC to find on its include path (the CUDA headers).
//
// The expansion is textual and line by line: a line inside a block comment
// is left as it is (no directive), but an #include line in an inactive #if
// branch is expanded too (guarded as above where it must be), and the result has the included text where the
// line was, so line numbers of compile errors count in the expanded source
// (which is what the run folder records). A block comment that an #include
// line opens after the name is kept, on its own line after the included
// text. A file's leading UTF-8 byte-order mark is dropped (NVRTC refuses it).
//
// Everything downstream sees the expanded text: NVRTC, the compile cache
// keys, the spec fingerprint (store/fingerprint.h hashes the expanded text of
// each kernel source), best.cu, `kopt generate`'s .cu and the agent. The
// depfile of `kopt generate` lists the included files (gen/depfile.h).
// Format: docs/spec-format.md "Local includes".
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "spec/annotations.h"

namespace kopt::spec {

/// A kernel source with its local includes expanded.
struct ExpandedSource {
  std::string text;  ///< the self-contained source
  /// The files expanded into it, absolute and normalised, in the order they
  /// were first included (the including file itself not among them).
  std::vector<std::filesystem::path> includes;
};

/// At most this many files are expanded into one source; a later local
/// #include is an error (kopt.spec.137).
constexpr size_t kMaxLocalIncludes = 256;

/// `text`, the content of `file` (which need not exist: `file` gives the
/// folder names resolve against, and the name in messages), with its local
/// includes expanded as the header comment says. Throws SpecError
/// kopt.spec.137 "<file>:<line>: #include "NAME": <reason>" when NAME names
/// a file that cannot be read (permission denied, not a regular file, over
/// fs::kSourceMaxBytes), when more than kMaxLocalIncludes files would be
/// expanded, or when the expanded source exceeds fs::kSourceMaxBytes.
ExpandedSource expand_local_includes(const std::string& text, const std::filesystem::path& file);

/// Reads a kernel source file (fs::read_file, kind "kernel source", at most
/// fs::kSourceMaxBytes: kopt.io.00x) and expands its local includes.
ExpandedSource read_kernel_source(const std::filesystem::path& file);

/// read_kernel_source(file).text.
std::string read_kernel_text(const std::filesystem::path& file);

/// The kopt: annotations of a kernel file read with its local includes: the
/// file's own lines first, then, for each key the file does not give, the
/// first line of the expanded text (so a header may supply a launch, but a
/// kernel file that includes another kernel file keeps its own entry, launch,
/// options and parameters). Line numbers in later messages refer to the file
/// itself for its own keys. Throws as read_kernel_source and parse_annotations do.
Annotations read_kernel_annotations(const std::filesystem::path& file);

/// read_kernel_annotations of a file already read: `own_text` as read,
/// `expanded` its expand_local_includes, `origin` its name in errors.
Annotations kernel_annotations(const std::string& own_text, const ExpandedSource& expanded, const std::string& origin);

}  // namespace kopt::spec

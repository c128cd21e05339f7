// The depfile `kopt generate --depfile FILE` writes for the CMake module's
// custom command (add_custom_command(DEPFILE)): every file the tuning reads,
// so that editing any of them re-runs `kopt generate` and nothing else does.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "spec/spec.h"
#include "driver/driver.h"

namespace kopt::gen {

/// The files a tuning run of this spec reads, absolute, each once, in a
/// stable order: the spec file, the --input-cases file, the tuning cache
/// (when it exists), the template, initial and reference kernel sources and
/// the files expanded into them as local includes (spec/local_include.h),
/// every .npy input (signature generators and the cases' input overrides)
/// and every golden output (.npy reference), with
/// "{case}" expanded for each case. Files that do not exist are listed too
/// (a missing input fails the run anyway; the build then waits for it).
std::vector<std::filesystem::path> spec_dependencies(const spec::Spec& spec, const driver::OptimizeOptions& options,
                                                     const std::filesystem::path& cache_file);

/// "<target>: <dep> <dep> ...\n" in Make's syntax, which Ninja and CMake's
/// Makefile generators read: spaces, '#' and '\' before them escaped with
/// '\', '$' as "$$". Throws UsageError(kopt.gen.111) for a path with a
/// newline, which no depfile can hold.
std::string depfile_text(const std::filesystem::path& target, const std::vector<std::filesystem::path>& deps);

}  // namespace kopt::gen

// Small file helpers shared by every stage.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace kopt::fs {

/// Reads a whole file. Throws kopt::SpecError("kopt.io.001") naming the path
/// and the OS reason when it cannot be opened.
std::string read_file(const std::filesystem::path& path);

/// Writes `data` to `path` atomically: it is written to a temporary file in the
/// same folder, flushed, then renamed over `path`, so a reader (or a run killed
/// with SIGKILL) sees either the old or the new content, never a torn file.
/// Creates missing parent folders. Throws kopt::EnvironmentError("kopt.io.002").
void write_file_atomic(const std::filesystem::path& path, const std::string& data);

/// Same, for binary blobs.
void write_file_atomic(const std::filesystem::path& path, const std::vector<char>& data);

}  // namespace kopt::fs

#include "gen/capture_code.h"

#include <sstream>

#include "gen/shipped.h"

namespace kopt::gen {

std::string capture_includes() { return std::string(kCaptureIf) + "\n" + shipped::capture_includes + "#endif\n"; }

std::string capture_code(const std::string& name, const std::vector<std::string>& sizes) {
  std::ostringstream h;
  h << "/// Shape capture (docs/capture.md): with KOPT_CAPTURE=<file> (or KOPT_CAPTURE_" << name
    << "=<file>) in the\n/// environment, launch_config() counts the sizes it is called with, and the counts are\n"
    << "/// added to <file> at exit (a lock beside it, then an atomic rename): the input of\n"
    << "/// `kopt optimize --input-cases <file>` and of optimize_kernel(... CASES_FROM <file>).\n"
    << "/// Off, it costs one load and a branch per call. -DKOPT_NO_CAPTURE leaves it out.\n"
    << kCaptureIf << "\nnamespace capture {\n\n"
    << "constexpr const char* kKernel = \"" << name << "\";\n"
    << "constexpr std::size_t kSizes = " << sizes.size() << ";\n"
    << "constexpr const char* kSizeNames[kSizes] = {";
  for (size_t i = 0; i < sizes.size(); ++i) h << (i ? ", " : "") << "\"" << sizes[i] << "\"";
  h << "};\n\n" << shipped::capture_runtime << "\n}  // namespace capture\n#else\nnamespace capture {\n"
    << "inline bool enabled() noexcept { return false; }\ninline void flush() noexcept {}\n}  // namespace capture\n"
    << "#endif\n\n";
  return h.str();
}

}  // namespace kopt::gen

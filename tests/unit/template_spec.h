// Helpers of the unit tests of the SGEMM template specs (test_sgemm_tf32.cpp,
// test_sgemm_tf32_wgmma.cpp): a spec's valid tuning space with its seeds checked against it, and an
// NVRTC compile of a template file at a configuration.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "cuda/nvrtc.h"
#include "search/device_constants.h"
#include "search/space.h"
#include "spec/local_include.h"
#include "spec/spec.h"

namespace kopt::test {

/// templates/sgemm/ of the source tree.
inline std::string sgemm_template_dir() { return std::string(KOPT_SOURCE_DIR) + "/templates/sgemm/"; }

/// The valid configurations of `spec`'s tuning space with the H200's constants (device_constants of
/// no device); adds a failure for each seed that is not one of them, or when there is no seed.
inline std::vector<search::Config> valid_space_with_seeds(const spec::Spec& spec) {
  const search::Space space(spec.tuning.params, spec.tuning.constraints, search::device_constants(nullptr));
  std::vector<search::Config> valid = space.enumerate_valid();
  std::set<std::string> keys;
  for (const auto& c : valid) keys.insert(search::config_key(c));
  EXPECT_FALSE(spec.tuning.seeds.empty());
  for (const auto& s : spec.tuning.seeds) {
    const search::Config c(s.begin(), s.end());
    EXPECT_TRUE(keys.count(search::config_key(c))) << "seed not in the space: " << search::config_key(c);
  }
  return valid;
}

/// NVRTC: templates/sgemm/<file> with entry `entry`, -DNAME=VALUE `defines`, for `arch`, with `options`.
inline cuda::CompileResult compile_sgemm_template(const std::string& file, const std::string& entry,
                                                  const std::map<std::string, int64_t>& defines,
                                                  const std::string& arch,
                                                  const std::vector<std::string>& options = {}) {
  cuda::Compiler c;
  cuda::CompileRequest r;
  r.source = spec::read_kernel_text(sgemm_template_dir() + file);  // its local includes expanded, as kopt reads it
  r.source_name = file;
  r.entry = entry;
  r.arch = arch;
  r.defines = defines;
  r.options = options;
  return c.compile(r);
}

/// "NAME=V NAME=V ..." of a configuration, for messages.
inline std::string config_text(const std::map<std::string, int64_t>& d) {
  std::string key;
  for (const auto& [k, v] : d) key += k + "=" + std::to_string(v) + " ";
  return key;
}

}  // namespace kopt::test

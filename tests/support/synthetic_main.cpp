// kopt_synthetic_spaces: writes the synthetic spaces (synthetic_spaces.h,
// synthetic_sgemm.h) as Kernel Tuner cache files, which `kopt replay` replays
// and Kernel Tuner's simulation mode too (scripts/compare_kernel_tuner.py).
// A development tool, built with the unit tests.
//
//   kopt_synthetic_spaces DIR SPACE...
//
// SPACE: synthetic:FAMILY-SEED (conv, pnpoly, dedisp, random, gemm); "development"
// or "holdout" (the synthetic sets); sparse:FAMILY-SEED, "sparse-development" or
// "sparse-holdout" (their sparse samples, synthetic_spaces.h); "sgemm-synthetic"
// (the unit tests' synthetic SGEMM space). Writes DIR/<label>.json. Exit codes: 0; 2 bad usage.
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "store/recorded.h"
#include "spec/spec.h"
#include "util/error.h"
#include "util/fs.h"

#include "support/synthetic_sgemm.h"
#include "support/synthetic_spaces.h"

namespace {

namespace stdfs = std::filesystem;
using namespace kopt;

/// The spaces one SPACE argument names.
std::vector<store::RecordedSpace> load(const std::string& arg) {
  std::vector<store::RecordedSpace> out;
  if (arg == "development" || arg == "holdout") {
    for (const auto& [family, seed] : arg == "development" ? test::development_spaces() : test::holdout_spaces())
      out.push_back(test::synthetic_space(family, seed));
  } else if (arg == "sparse-development" || arg == "sparse-holdout") {
    for (const auto& [family, seed] :
         arg == "sparse-development" ? test::sparse_development_spaces() : test::sparse_holdout_spaces())
      out.push_back(test::sparse_space(family, seed));
  } else if (arg.rfind("synthetic:", 0) == 0 || arg.rfind("sparse:", 0) == 0) {
    const bool sparse = arg[1] == 'p';
    const std::string name = arg.substr(sparse ? 7 : 10);
    const size_t dash = name.rfind('-');
    if (dash == std::string::npos || dash + 1 == name.size() ||
        name.find_first_not_of("0123456789", dash + 1) != std::string::npos)
      throw UsageError("kopt.replay.121", "expected synthetic:FAMILY-SEED or sparse:FAMILY-SEED, got " + arg);
    const std::string family = name.substr(0, dash);
    const uint64_t seed = std::stoull(name.substr(dash + 1));
    out.push_back(sparse ? test::sparse_space(family, seed) : test::synthetic_space(family, seed));
  } else if (arg == "sgemm-synthetic") {
    const spec::Spec s = spec::load_spec(stdfs::path(KOPT_SOURCE_DIR) / "templates" / "sgemm" / "sgemm.json");
    out.push_back(test::synthetic_sgemm_space(test::sgemm_part_space(s), test::performance_cases(s), 2026));
  } else {
    throw UsageError("kopt.replay.121", "unknown space " + arg +
                                            " (synthetic:FAMILY-SEED, sparse:FAMILY-SEED, development, holdout, sparse-development, "
                                            "sparse-holdout, sgemm-synthetic)");
  }
  return out;
}

int write_spaces(int argc, char** argv) {
  if (argc < 3 || std::string(argv[1]) == "-h" || std::string(argv[1]) == "--help") {
    std::printf("usage: kopt_synthetic_spaces DIR SPACE...  (synthetic:FAMILY-SEED, sparse:FAMILY-SEED, development, "
                "holdout, sparse-development, sparse-holdout, sgemm-synthetic)\n");
    return argc < 3 ? 2 : 0;
  }
  const stdfs::path dir = argv[1];
  for (int i = 2; i < argc; ++i)
    for (const store::RecordedSpace& s : load(argv[i])) {
      const stdfs::path f = dir / (s.label + ".json");
      fs::write_file_atomic(f, store::kernel_tuner_cache(s).dump(0) + "\n");
      std::fprintf(stderr, "kopt_synthetic_spaces: wrote %s (%zu configurations)\n", f.string().c_str(),
                   s.entries.size());
    }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return write_spaces(argc, argv);
  } catch (const kopt::Error& e) {
    std::fprintf(stderr, "kopt_synthetic_spaces: %s\n", e.what());
    return 2;
  }
}

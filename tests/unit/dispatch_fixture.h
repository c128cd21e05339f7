// What the launch-header tests of test_generate.cpp and test_shipped_headers.cpp
// give kopt::gen::launch_header: empty SGEMM variants and a dispatch tree with
// a cost model.
#pragma once

#include <string>
#include <vector>

#include "model/dispatch.h"

namespace kopt::test {

/// An empty SGEMM kernel file: entry sgemm, a "// kopt:param P" line for each
/// of `params` ("BM=64"), the grid `grid` and blocks of 256 threads.
inline std::string empty_sgemm(const std::vector<std::string>& params, const std::string& grid) {
  std::string src = "// kopt:entry sgemm\n";
  for (const std::string& p : params) src += "// kopt:param " + p + "\n";
  return src + "// kopt:grid " + grid + "\n// kopt:block 256, 1, 1\nextern \"C\" __global__ void sgemm() {}\n";
}

/// The tree model::derive_dispatch gives for two variants timed on `samples`
/// (sizes named `sizes`, noise 0.03), with a cost model fitted by hand: a GPU
/// of 132 SMs (an H100), `blocks_per_sm` and `ms_per_work` per variant,
/// `margin`, the samples' sizes as the tuned shapes, and `block_work`.
inline model::DispatchTree modelled_dispatch(const std::vector<std::string>& sizes,
                                             const std::vector<model::DispatchSample>& samples,
                                             std::vector<int> blocks_per_sm, std::vector<double> ms_per_work,
                                             double margin, const std::string& block_work) {
  model::DispatchTree t = model::derive_dispatch(sizes, samples, 2, 0.03);
  model::DispatchModel m;
  m.sm_count = 132;
  m.blocks_per_sm = std::move(blocks_per_sm);
  m.ms_per_work = std::move(ms_per_work);
  m.margin = margin;
  for (const model::DispatchSample& s : samples) m.tuned.push_back(s.sizes);
  m.block_work = block_work;
  t.model = m;
  return t;
}

}  // namespace kopt::test

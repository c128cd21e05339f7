// Dispatch by measurement: which variant of a shape-specialised result runs
// for given sizes, derived from what was measured on the tuned shapes.
//
// The input is a table of median latencies, one row per tuned shape (its
// sizes in the launch header's order, e.g. M, N, K) and one column per
// variant. The output is a small binary decision tree over the sizes: each
// inner node asks "size[d] <= threshold", each leaf names a variant. It is
// grown greedily the way a CART tree is (Breiman et al., "Classification and
// Regression Trees", 1984), with the cost of a leaf being the regret of its
// variant: the sum over its shapes of log(latency of that variant / the
// fastest latency on the shape). Questions are asked while one lowers the
// regret, until every tuned shape runs a variant within `noise` of its
// fastest, or at the depth cap.
//
// The no-regression rule: a leaf picks variant 0 (the best single
// configuration) unless another variant is faster by more than the noise on
// the leaf's shapes taken together, and never a variant that was measured
// slower than variant 0 by more than the noise on any one of them. Shapes
// between tuned ones therefore get the general kernel unless every
// measurement around them says otherwise. Thresholds lie at the geometric
// mean of the two neighbouring tuned values (sizes scale multiplicatively),
// rounded down.
//
// The model, off the tuned shapes. A tree grown on a few tuned shapes has no
// evidence about the shapes between them: a question such as "K <= 1752" may
// have been asked where every tuned shape was large, and a variant with
// large tiles then runs on a small output with a grid of a few dozen blocks.
// So the tree decides on the tuned shapes only; elsewhere a cost model,
// calibrated on the same measurements, picks (DispatchModel). It predicts a
// variant's time on a shape as
//
//   ms_fixed[v] + ms_per_work[v] * ceil(w) * block_work + ms_per_work_spread[v] * w * block_work
//     + ms_per_byte[v] * traffic_bytes + ms_per_data_byte[v] * data_bytes,
//   w = blocks / (blocks_per_sm[v] * sm_count)
//
// with the launch's grid size, one block's work and the launch's traffic
// from the template's expressions (spec::Launch::block_work, traffic_bytes)
// and the bytes of the case's buffers (spec::data_bytes_expr): a fixed cost
// per launch, the compute as whole waves and as the work spread evenly over
// the SMs (a last wave that is partly full costs between the two), the
// traffic, and the data a cold L2 must bring from DRAM, as a roofline counts
// them, summed. The five coefficients of each variant are a non-negative
// least-squares fit of the relative error on the tuned shapes, each shape's
// square weighted by the square root of fastest / the variant's latency
// there, so that a variant is fitted mostly where it competes (on the
// example's recorded run this moved 512x1x500000 off a 32-block row kernel
// 1.47x slower than the fastest). The fixed term: without it, the shapes that
// take a few microseconds pulled the others up and mispredicted the long ones
// (2 more of the 75 DeepBench shapes within 5% of the fastest with it). The
// spread and data terms: without them, a 64x64 split-K tile at 6 blocks per
// SM was predicted 14-20% fast at one or two waves, and a 3-stage 128x64 tile
// ran 3072x1500x1024 12% slower than variant 0 on two recorded runs; with
// them, no recorded run has a DeepBench shape more than 5% slower than
// variant 0, and three of four put more within 5% of the fastest
// (docs/dispatch.md). The variant predicted fastest among those supported
// at the shape (within 2x, in every size, of the tuned shapes where it ran
// within 2x of the fastest variant: the fit is not trusted far from its data)
// runs where it is predicted faster than variant 0 by a margin, else variant
// 0. The margin is the smallest on a grid of 0.05, 0.1, 0.2, ..., 3 with which
// leave-one-out over the tuned shapes (the model refitted without the shape
// left out, the support not applied) never runs a variant slower than
// variant 0 by more than the noise on it; 0.05 at least, the bar's 5%, so
// that a predicted gain within the model's error is not taken.
//
// The rule that applies the fitted model (the prediction, the support, the
// margin) is model/dispatch_rule.h: DispatchModel::predicted_ms and choose
// call it, and every generated launch header embeds the same text.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/dispatch_rule.h"

namespace kopt {
class JsonAt;
}

namespace kopt::model {

/// The support of a variant (DispatchModel::support): the tuned shapes where
/// it ran within kSupportCut of the fastest variant (2, the default
/// --screen-factor: slower ones are screened there); off the tuned shapes it
/// is chosen only within kSupportFactor of their range in every size (the
/// rule's constant, model/dispatch_rule.h, which the generated header embeds).
/// On the recorded H200 runs, a row kernel fitted on N <= 4 alone predicted
/// 35x1500x2560 at less than half of its measured time (1.46x variant 0 there)
/// when half of the DeepBench suite was the tuned shapes.
constexpr double kSupportCut = 2.0;
constexpr double kSupportFactor = dispatch_rule::kSupportFactor;

/// One tuned shape: its sizes (launch-header order) and the median latency of
/// each variant on it, in ms (INFINITY or NaN: the variant failed or was not
/// timed there; never chosen for it).
struct DispatchSample {
  std::string name;             // the performance case, for messages and reports
  std::vector<int64_t> sizes;   // size values, in the order of DispatchTree::sizes
  std::vector<double> ms;       // ms[v]: variant v's median latency
  /// For the model (may be empty: no model): per variant, the blocks of its
  /// launch on this shape (grid x * y * z), one block's work
  /// (spec::Launch::block_work, any unit) and the launch's traffic in bytes
  /// (spec::Launch::traffic_bytes; empty: the template has none).
  std::vector<int64_t> blocks;
  std::vector<double> block_work;
  std::vector<double> traffic;
  /// For the model (may be empty: none): per variant, the bytes of every
  /// buffer of the case at its sizes (spec::data_bytes_expr): what the launch
  /// reads and writes at the least, from DRAM when the L2 starts cold.
  std::vector<double> data_bytes;
};

/// The cost model that dispatches off the tuned shapes (see the top of this
/// file). Indexed by variant. JSON: {"rule": "fastest_predicted", ...}; a
/// model without "rule" is from an older kopt (a guard that only vetoed the
/// tree's pick) and reads as none.
struct DispatchModel {
  int sm_count = 0;                  // SMs of the GPU it was measured on
  std::vector<int> blocks_per_sm;    // occupancy of each variant's launch (blocks on one SM at once)
  std::vector<double> ms_per_work;   // fitted, >= 0: ms per unit of waves * block_work (INFINITY: never timed)
  std::vector<double> ms_per_byte;   // fitted, >= 0: ms per byte of traffic (0 without traffic_bytes)
  std::vector<double> ms_fixed;      // fitted, >= 0: ms per launch (models from before it: 0)
  /// fitted, >= 0: ms per unit of blocks / (blocks_per_sm * sm_count) * block_work, the waves not
  /// rounded up (models from before it: 0)
  std::vector<double> ms_per_work_spread;
  std::vector<double> ms_per_data_byte;  // fitted, >= 0: ms per byte of the case's data (0 without data_bytes)
  /// Off the tuned shapes the variant v predicted fastest runs where
  /// predicted_ms(v) * (1 + margin) <= predicted_ms(0), margin >= 0.05. Unset: no margin up to 3
  /// passed the leave-one-out check, and variant 0 runs off the tuned shapes.
  std::optional<double> margin;
  std::vector<std::vector<int64_t>> tuned;  // the tuned shapes' sizes (the tree alone decides there)
  /// The block_work and traffic_bytes expressions the samples were computed
  /// with (traffic empty: none): the header evaluates these, so that their
  /// units are the coefficients'.
  std::string block_work;
  std::string traffic;
  std::string data_bytes;  // the data-bytes expression (spec::data_bytes_expr; empty: none)
  /// Per variant, per size (the tree's order): [least, greatest] value of
  /// that size over the tuned shapes where the variant ran within 2x of the
  /// fastest variant. Off the tuned shapes a variant other than 0 is chosen
  /// only where every size is within 2x of its range (x >= least / 2 and
  /// x <= greatest * 2): the model is not trusted far from where the variant
  /// was measured. An empty entry: no such shape (never chosen). Empty
  /// (models from before it): no limit.
  std::vector<std::vector<std::array<int64_t, 2>>> support;

  /// Predicted latency (ms) of variant v with `blocks` blocks of `block_work`
  /// each, `traffic` bytes moved and `data` bytes of data; INFINITY where
  /// block_work is not positive or ms_per_work unknown.
  double predicted_ms(int v, int64_t blocks, double block_work, double traffic, double data = 0) const;
  /// The variant for a shape with these sizes and, per variant, these
  /// launches' blocks, block work, traffic and data bytes (traffic and data
  /// may be empty): -1 on a tuned shape (the tree decides there), else the
  /// fastest predicted where it passes the margin, else 0.
  int choose(const std::vector<int64_t>& sizes, const std::vector<int64_t>& blocks,
             const std::vector<double>& block_work, const std::vector<double>& traffic,
             const std::vector<double>& data_bytes = {}) const;
  nlohmann::json to_json() const;
  /// Nullopt for a model from an older kopt (no "rule"); throws
  /// kopt::SpecError naming the JSON path for a malformed one.
  static std::optional<DispatchModel> from_json(const JsonAt& at, int variant_count, size_t size_count);
};

/// A node of the tree. Leaf: dim == -1, `variant` is the answer. Inner node:
/// sizes[dim] <= threshold goes to `left`, else to `right` (indices into
/// DispatchTree::nodes).
struct DispatchNode {
  int dim = -1;
  int64_t threshold = 0;
  int left = -1, right = -1;
  int variant = 0;
};

struct DispatchTree {
  std::vector<std::string> sizes;   // size names, e.g. {"M", "N", "K"}
  std::vector<DispatchNode> nodes;  // nodes[0] is the root; a single leaf when one variant serves all
  double noise = 0.03;              // the fraction within which two latencies count as equal
  std::optional<DispatchModel> model;  // the dispatch off the tuned shapes, when it could be derived

  /// The variant for a sample: the tree's on a tuned shape, the model's
  /// elsewhere (DispatchModel::choose) when the sample carries its launches;
  /// the tree alone without a model or launches.
  int select_guarded(const DispatchSample& s) const;

  /// The variant for `sizes` (in the order of this->sizes). 0 for an empty tree.
  int select(const std::vector<int64_t>& sizes) const;
  /// The tree as C++ statements for the body of
  /// `int select_variant(long long M, ...)`: nested if/else and returns, with
  /// `indent` spaces before each line.
  std::string to_cpp(int indent) const;
  /// {"sizes": [...], "noise": x, "nodes": [{"dim":..,"threshold":..,"left":..,"right":..} | {"variant": v}]}.
  nlohmann::json to_json() const;
  /// Throws kopt::SpecError(kopt.json.005) naming `where` for a malformed tree
  /// (unknown dimension, a child index out of range or not below its parent,
  /// a variant outside [0, variant_count)).
  static DispatchTree from_json(const nlohmann::json& j, const std::string& where, int variant_count);
  /// The same, for a value inside a larger document (its errors name the whole JSON path).
  static DispatchTree from_json(const JsonAt& at, int variant_count);
};

/// Grows the tree for `samples` (each with `sizes.size()` sizes and
/// `variant_count` latencies). `noise` is a fraction (0.03: 3%); `max_depth`
/// caps the questions asked for one shape. Samples without a finite latency
/// for any variant are ignored. Throws std::invalid_argument for rows of the
/// wrong length.
DispatchTree derive_dispatch(const std::vector<std::string>& sizes, const std::vector<DispatchSample>& samples,
                             int variant_count, double noise, int max_depth = 8);

/// The model for `tree`, fitted on `samples` (which must all carry blocks and
/// block_work for every variant, and traffic when `traffic` is not empty)
/// with `blocks_per_sm` per variant on a GPU of `sm_count` SMs; the margin by
/// leave-one-out, with the tree's noise. Nullopt when a sample lacks them, a
/// variant has no occupancy, or there are fewer than 3 samples. `block_work`
/// and `traffic` are the expressions the samples' values came from (recorded
/// in the model for the header).
std::optional<DispatchModel> derive_dispatch_model(const DispatchTree& tree, const std::vector<DispatchSample>& samples,
                                                   const std::vector<int>& blocks_per_sm, int sm_count,
                                                   const std::string& block_work, const std::string& traffic = "",
                                                   const std::string& data_bytes = "");

/// For a report or a test: per sample, the variant the tree picks and its
/// latency over the fastest one's (1.0 = the fastest).
struct DispatchCheck {
  std::string name;
  int chosen = 0, fastest = 0;
  double slowdown = 1.0;
};
/// Uses select_guarded (the model where the tree has one and the sample
/// carries launches).
std::vector<DispatchCheck> check_dispatch(const DispatchTree& tree, const std::vector<DispatchSample>& samples);

}  // namespace kopt::model

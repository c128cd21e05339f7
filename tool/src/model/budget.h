// The budget of a run: one value from the command line (`--budget`,
// `--max-iterations`, `--token-budget`; the CMake module's BUDGET through the
// same parser) to the run driver, whose stop conditions alone enforce it
// (driver/driver_impl.h). A proposer reads what is left of it through
// propose::EvaluationService::budget_left(), never a copy of the limits.
//
// The text grammar (docs/cli.md, "kopt optimize"):
//   ITEM[,ITEM...]  with ITEM one of
//     evals=N      (also evaluations=N)   N from 1 to kMaxCount
//     minutes=M    (also min=M)           M finite, > 0 and <= kMaxMinutes
//     patience=P                          P from 1 to kMaxCount
//     turns=T      (also model_turns=T)   T from 1 to kMaxCount
//     tokens=T                            T from 1 to kMaxTokens
//     N                                   the same as evals=N
//     Mm                                  the same as minutes=M
// Each key at most once; a key left out has no limit.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace kopt::model {

struct Budget {
  /// Candidates the run driver evaluated (compiled, checked and timed; with
  /// no GPU, compiled), failed ones included, over every session of a
  /// resumed run. The initial kernel, the baseline and the finalists'
  /// re-timing are not counted. 0: no limit.
  int64_t evaluations = 0;
  /// Wall-clock minutes of one session, counted from its start (a run from a
  /// description: from the start of the drafting): no candidate starts once
  /// they are spent, and the finalists' re-timing runs its first round in any
  /// case, a later round only while the time left holds one. 0: no limit.
  double minutes = 0;
  /// Evaluations in a row that do not improve the best geometric-mean latency
  /// (a failed one never improves) after which the run stops; with shape
  /// classes, counted within each class, which then ends. 0: off.
  int64_t patience = 0;
  /// The agent proposer only: model turns, that is LLM requests (a request
  /// retried after trimming the context is one turn). 0: as many as
  /// `evaluations` (turn_limit()), so `--max-iterations N` allows N turns and
  /// N evaluations; no limit when both are 0.
  int64_t model_turns = 0;
  /// The agent proposer only: tokens the LLM server reported, summed over
  /// every model turn. 0: no limit.
  int64_t tokens = 0;

  /// Evaluations when the command line gives no budget (docs/cli.md).
  static constexpr int64_t kDefaultEvaluations = 100;
  /// Largest values the grammar accepts: a typo is an error, not a run that never ends.
  static constexpr int64_t kMaxCount = 1000000000;
  static constexpr double kMaxMinutes = 1000000;  // about 2 years
  static constexpr int64_t kMaxTokens = 1000000000000;

  /// The agent's limit on model turns (see model_turns; 0: none).
  int64_t turn_limit() const { return model_turns > 0 ? model_turns : evaluations; }
  /// No limit at all.
  bool unlimited() const { return evaluations == 0 && minutes == 0 && patience == 0 && model_turns == 0 && tokens == 0; }

  /// The budget in the grammar parse_budget() reads: "evals=40,minutes=4"
  /// (only the items that are set; "" when none is).
  std::string text() const;

  /// As run.json and summary.json record it: {"evaluations", "minutes",
  /// "patience"} always (0: no limit), "model_turns" and "tokens" when set.
  nlohmann::json to_json() const;
  /// A recorded budget (to_json's form), leniently: an item that is missing
  /// or not a positive number (minutes: below 1e9) is 0, no limit.
  static Budget from_json(const nlohmann::json& j);
};

/// Parses the budget grammar above. `option` names where the text came from
/// in messages ("--budget", "BUDGET"). Throws UsageError kopt.cli.004 for an
/// unknown key, kopt.cli.005 for a value that is not a number, not finite or
/// out of range, kopt.cli.008 for an empty text, an empty item or a key given
/// twice; each message names `option` and the item.
Budget parse_budget(std::string_view text, std::string_view option = "--budget");

/// What is left of the driver-enforced items of a budget while a run goes on
/// (propose::EvaluationService::budget_left()). nullopt: that item has no
/// limit (or, for patience, the proposer applies it itself).
struct BudgetLeft {
  std::optional<int64_t> evaluations;  // evaluations that may still start
  std::optional<double> minutes;       // of the session's wall clock (<= 0: spent)
  std::optional<int64_t> patience;     // evaluations without improvement before the run stops

  /// The first item that is spent, in the order evaluations, minutes,
  /// patience: "evaluations", "minutes" or "patience"; "" when none is.
  std::string spent() const;
  /// Each item the smaller of this one's and `other`'s (a limit beats none).
  void narrow(const BudgetLeft& other);
};

}  // namespace kopt::model

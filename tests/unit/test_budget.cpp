// The budget as one value (model/budget.h): its grammar and errors, its
// record, and what the run's stop conditions say is left of it.
#include <gtest/gtest.h>

#include <chrono>
#include <string>

#include <nlohmann/json.hpp>

#include "model/budget.h"
#include "search/strategy.h"
#include "util/error.h"

namespace {

using kopt::model::Budget;
using kopt::model::BudgetLeft;
using kopt::model::parse_budget;

std::string error_of(const std::string& text, const std::string& option = "--budget") {
  try {
    parse_budget(text, option);
  } catch (const kopt::UsageError& e) {
    return e.what();
  }
  return "no error";
}

TEST(Budget, ParsesEveryItemAndTheShortForms) {
  const Budget b = parse_budget("evals=40,minutes=2.5,patience=7,turns=12,tokens=90000");
  EXPECT_EQ(b.evaluations, 40);
  EXPECT_DOUBLE_EQ(b.minutes, 2.5);
  EXPECT_EQ(b.patience, 7);
  EXPECT_EQ(b.model_turns, 12);
  EXPECT_EQ(b.tokens, 90000);
  EXPECT_EQ(parse_budget("200").evaluations, 200);
  EXPECT_DOUBLE_EQ(parse_budget("10m").minutes, 10);
  const Budget bare = parse_budget("40,10m");  // docs/cli.md's example
  EXPECT_EQ(bare.evaluations, 40);
  EXPECT_DOUBLE_EQ(bare.minutes, 10);
  EXPECT_NE(error_of("40,evals=50").find("[kopt.cli.008] --budget: evals is given twice"), std::string::npos)
      << error_of("40,evals=50");
  const Budget aliases = parse_budget("evaluations=3,min=.5,model_turns=4");
  EXPECT_EQ(aliases.evaluations, 3);
  EXPECT_DOUBLE_EQ(aliases.minutes, 0.5);
  EXPECT_EQ(aliases.model_turns, 4);
  EXPECT_EQ(parse_budget("patience=5").evaluations, 0) << "a key left out has no limit";
}

TEST(Budget, ErrorsKeepTheirIdsAndNameTheOptionAndTheItem) {
  EXPECT_NE(error_of("bogus=3").find("[kopt.cli.004] --budget: unknown key 'bogus' in 'bogus=3' (known: evals, minutes, "
                                     "patience) or, for the agent, turns or tokens"),
            std::string::npos);
  for (const char* bad : {"evals=0", "evals=-1", "evals=1.5", "evals=abc", "minutes=nan", "minutes=inf", "minutes=0",
                          "minutes=1e999", "patience=0", "turns=0", "tokens=0", "tokens=1000000000001", "nanm", "-3"})
    EXPECT_NE(error_of(bad).find("[kopt.cli.005] --budget: "), std::string::npos) << bad << ": " << error_of(bad);
  for (const char* bad : {"", " ", "evals=5,", "evals=5,,minutes=1", "evals=5,evals=6", "5,evals=6", "evals:20",
                          "evals=5,minutes:2"})
    EXPECT_NE(error_of(bad).find("[kopt.cli.008] --budget"), std::string::npos) << bad << ": " << error_of(bad);
  EXPECT_NE(error_of("minutes:2").find("--budget: 'minutes:2': an item is key=value (did you mean 'minutes=2'?)"),
            std::string::npos)
      << error_of("minutes:2");
  EXPECT_NE(error_of("evals=x", "BUDGET").find("[kopt.cli.005] BUDGET: evals=x: evals must be a whole number"),
            std::string::npos)
      << "the caller names the option (the CMake module's keyword)";
}

TEST(Budget, TextAndRecordRoundTrip) {
  const Budget b = parse_budget("evals=40,minutes=4,patience=3,turns=9,tokens=5000");
  EXPECT_EQ(b.text(), "evals=40,minutes=4,patience=3,turns=9,tokens=5000");
  EXPECT_EQ(parse_budget(b.text()).text(), b.text());
  const nlohmann::json j = b.to_json();
  EXPECT_EQ(j, nlohmann::json({{"evaluations", 40}, {"minutes", 4.0}, {"patience", 3}, {"model_turns", 9},
                               {"tokens", 5000}}));
  EXPECT_EQ(Budget::from_json(j).text(), b.text());
  EXPECT_EQ(Budget{}.to_json(), nlohmann::json({{"evaluations", 0}, {"minutes", 0.0}, {"patience", 0}}))
      << "the search's record as before: the three items, 0 for no limit";
  // A damaged record reads as no limit, item by item.
  const Budget damaged = Budget::from_json({{"evaluations", "many"}, {"minutes", -1}, {"patience", 2}});
  EXPECT_EQ(damaged.text(), "patience=2");
  EXPECT_TRUE(Budget::from_json(nullptr).unlimited());
}

TEST(Budget, ModelTurnsDefaultToTheEvaluations) {
  EXPECT_EQ(parse_budget("evals=20").turn_limit(), 20) << "--max-iterations 20: 20 turns and 20 evaluations";
  EXPECT_EQ(parse_budget("evals=20,turns=50").turn_limit(), 50);
  EXPECT_EQ(parse_budget("minutes=5").turn_limit(), 0);
}

TEST(Budget, StopConditionsSayWhatIsLeft) {
  using namespace std::chrono;
  auto now = steady_clock::time_point{} + hours(1);
  std::vector<std::unique_ptr<kopt::search::StopCondition>> members;
  members.push_back(kopt::search::max_evaluations(10));
  members.push_back(kopt::search::time_budget(minutes(5), [&] { return now; }, now - minutes(2)));
  members.push_back(kopt::search::no_improvement(3));
  auto stop = kopt::search::any_of(std::move(members));
  BudgetLeft left;
  stop->left(left);
  EXPECT_EQ(left.evaluations, 10);
  ASSERT_TRUE(left.minutes.has_value());
  EXPECT_NEAR(*left.minutes, 3.0, 1e-9) << "counted from `since`, not from the condition's making";
  EXPECT_EQ(left.patience, 3);
  EXPECT_EQ(left.spent(), "");
  stop->update({{}, true, 1.0});
  stop->update({{}, true, 2.0});  // no better
  stop->update({{}, false, 0});
  BudgetLeft after;
  stop->left(after);
  EXPECT_EQ(after.evaluations, 7);
  EXPECT_EQ(after.patience, 1);
  now += minutes(4);
  BudgetLeft late;
  stop->left(late);
  EXPECT_LT(*late.minutes, 0);
  EXPECT_EQ(late.spent(), "minutes");
  EXPECT_TRUE(stop->fulfilled());
}

TEST(Budget, NarrowKeepsTheSmallerLimit) {
  BudgetLeft a{5, std::nullopt, 4};
  a.narrow({7, 2.5, std::nullopt});
  EXPECT_EQ(a.evaluations, 5);
  EXPECT_EQ(a.minutes, 2.5);
  EXPECT_EQ(a.patience, 4);
  a.narrow({0, std::nullopt, std::nullopt});
  EXPECT_EQ(a.spent(), "evaluations");
}

}  // namespace

#include "model/budget.h"

#include <algorithm>
#include <set>
#include <sstream>

#include "util/error.h"
#include "util/numbers.h"
#include "util/text.h"

namespace kopt::model {
namespace {

constexpr const char* kForm =
    "evals=N,minutes=M,patience=P (turns=T,tokens=T for the agent), any subset; or N (evals) or Mm (minutes)";

std::string number_text(double v) {
  std::ostringstream s;
  s << v;
  return s.str();
}

/// Sets one item ("evals=200", "200", "10m") on `b`; `seen` holds the keys set so far.
void apply_item(const std::string& item, const std::string& option, Budget& b, std::set<std::string>& seen) {
  const auto eq = item.find('=');
  const auto colon = item.find(':');
  if (eq == std::string::npos && colon != std::string::npos) {  // "evals:20": the form of another tool
    std::string fixed = item;
    fixed[colon] = '=';
    throw UsageError("kopt.cli.008", option + ": " + quote(item) + ": an item is key=value (did you mean " +
                                         quote(fixed) + "?)");
  }
  std::string key = eq == std::string::npos ? "" : item.substr(0, eq);
  std::string value = eq == std::string::npos ? item : item.substr(eq + 1);
  if (eq == std::string::npos && !value.empty() && value.back() == 'm') {
    key = "minutes";
    value.pop_back();
  } else if (eq == std::string::npos) {
    key = "evals";
  }
  if (key == "evaluations") key = "evals";
  if (key == "min") key = "minutes";
  if (key == "model_turns") key = "turns";
  if (key != "evals" && key != "minutes" && key != "patience" && key != "turns" && key != "tokens")
    throw UsageError("kopt.cli.004", option + ": unknown key " + quote(key) + " in " + quote(item) +
                                         " (known: evals, minutes, patience) or, for the agent, turns or tokens");
  if (!seen.insert(key).second) throw UsageError("kopt.cli.008", option + ": " + key + " is given twice");
  const std::string why = " (leave " + key + " out for no limit)";
  if (key == "minutes") {
    const std::optional<double> v = parse_finite(value);
    if (!v || *v <= 0 || *v > Budget::kMaxMinutes)
      throw UsageError("kopt.cli.005", option + ": " + clip(item) + ": minutes must be a finite number > 0 and <= " +
                                           number_text(Budget::kMaxMinutes) + why);
    b.minutes = *v;
    return;
  }
  const int64_t max = key == "tokens" ? Budget::kMaxTokens : Budget::kMaxCount;
  const std::optional<int64_t> v = parse_whole(value);
  if (!v || *v < 1 || *v > max)
    throw UsageError("kopt.cli.005", option + ": " + clip(item) + ": " + key + " must be a whole number from 1 to " +
                                         std::to_string(max) + why);
  if (key == "evals") b.evaluations = *v;
  if (key == "patience") b.patience = *v;
  if (key == "turns") b.model_turns = *v;
  if (key == "tokens") b.tokens = *v;
}

}  // namespace

Budget parse_budget(std::string_view text_view, std::string_view option_view) {
  const std::string text(text_view), option(option_view);
  if (text.find_first_not_of(" \t") == std::string::npos)
    throw UsageError("kopt.cli.008", option + ": expected " + kForm + ", got an empty string");
  Budget b;
  std::set<std::string> seen;
  for (size_t start = 0;;) {
    const size_t comma = text.find(',', start);
    const std::string item = text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    if (item.empty())
      throw UsageError("kopt.cli.008", option + " " + quote(text) + ": empty item (expected " + kForm + ")");
    apply_item(item, option, b, seen);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return b;
}

std::string Budget::text() const {
  std::string t;
  auto add = [&](const std::string& item) { t += (t.empty() ? "" : ",") + item; };
  if (evaluations > 0) add("evals=" + std::to_string(evaluations));
  if (minutes > 0) add("minutes=" + number_text(minutes));
  if (patience > 0) add("patience=" + std::to_string(patience));
  if (model_turns > 0) add("turns=" + std::to_string(model_turns));
  if (tokens > 0) add("tokens=" + std::to_string(tokens));
  return t;
}

nlohmann::json Budget::to_json() const {
  nlohmann::json j = {{"evaluations", evaluations}, {"minutes", minutes}, {"patience", patience}};
  if (model_turns > 0) j["model_turns"] = model_turns;
  if (tokens > 0) j["tokens"] = tokens;
  return j;
}

Budget Budget::from_json(const nlohmann::json& j) {
  Budget b;
  if (!j.is_object()) return b;
  auto count = [&](const char* k) -> int64_t {
    const auto it = j.find(k);
    return it != j.end() && it->is_number_integer() && it->get<int64_t>() > 0 ? it->get<int64_t>() : 0;
  };
  b.evaluations = count("evaluations");
  b.patience = count("patience");
  b.model_turns = count("model_turns");
  b.tokens = count("tokens");
  if (const auto it = j.find("minutes"); it != j.end() && it->is_number()) {
    const double m = it->get<double>();
    if (m > 0 && m < 1e9) b.minutes = m;
  }
  return b;
}

std::string BudgetLeft::spent() const {
  if (evaluations && *evaluations <= 0) return "evaluations";
  if (minutes && *minutes <= 0) return "minutes";
  if (patience && *patience <= 0) return "patience";
  return "";
}

void BudgetLeft::narrow(const BudgetLeft& o) {
  auto min_of = [](auto& mine, const auto& theirs) {
    if (theirs) mine = mine ? std::min(*mine, *theirs) : *theirs;
  };
  min_of(evaluations, o.evaluations);
  min_of(minutes, o.minutes);
  min_of(patience, o.patience);
}

}  // namespace kopt::model

#include "util/suggest.h"

#include <algorithm>

namespace kopt::util {

size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diag = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diag = up;
    }
  }
  return row[b.size()];
}

std::string closest_match(const std::string& word, const std::vector<std::string>& candidates) {
  for (const std::string& c : candidates) {
    const bool prefix = word.size() >= 3 && (c.rfind(word, 0) == 0 || word.rfind(c, 0) == 0);
    if (edit_distance(word, c) <= 2 || prefix) return c;
  }
  return {};
}

std::string did_you_mean(const std::string& word, const std::vector<std::string>& candidates) {
  const std::string m = closest_match(word, candidates);
  return m.empty() ? std::string() : " (did you mean '" + m + "'?)";
}

}  // namespace kopt::util

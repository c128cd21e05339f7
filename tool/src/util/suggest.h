// "Did you mean ...?" for names people mistype: spec keys, subcommands,
// options.
#pragma once

#include <string>
#include <vector>

namespace kopt::util {

/// The Levenshtein distance between `a` and `b`: the fewest single-character
/// insertions, deletions and substitutions that turn one into the other
/// (bytes, not UTF-8 characters).
size_t edit_distance(const std::string& a, const std::string& b);

/// The first of `candidates` that `word` is probably a typo of: within an
/// edit distance of 2, or (for words of 3 or more characters) a prefix of it
/// or it a prefix of `word`. Empty when none is.
std::string closest_match(const std::string& word, const std::vector<std::string>& candidates);

/// " (did you mean 'X'?)" for closest_match(word, candidates), or "" when
/// nothing is close.
std::string did_you_mean(const std::string& word, const std::vector<std::string>& candidates);

}  // namespace kopt::util

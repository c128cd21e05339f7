// Typed reads shared by the readers of the run folder's records (run.json,
// summary.json, the tuning cache): on top of JsonAt (util/json_read.h), whose
// errors (SpecError kopt.json.005) name the file, the JSON path and what was
// expected. Internal to store/.
#pragma once

#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "model/attempt.h"
#include "util/json_read.h"

namespace kopt::store::record_json {

constexpr double kLowest = std::numeric_limits<double>::lowest();

/// A finite number >= lo, or nullopt for null.
std::optional<double> number_or_null(const JsonAt& v, double lo = kLowest);
/// Member `key` of object `obj` as number_or_null; nullopt when absent.
std::optional<double> opt_number(const JsonAt& obj, const char* key, double lo = kLowest);
/// A number as model::json_io::from_double writes it: a number, or the
/// strings "NaN", "Infinity", "-Infinity"; nullopt for null.
std::optional<double> special_or_null(const JsonAt& v);
/// Member `key` as special_or_null; nullopt when absent.
std::optional<double> opt_special(const JsonAt& obj, const char* key);
/// The writer's side of special_or_null: from_double(v), or null.
nlohmann::json special_json(const std::optional<double>& v);
/// An object of integers >= lo (tuning parameters, sizes).
std::map<std::string, int64_t> int_map(const JsonAt& obj, int64_t lo = std::numeric_limits<int64_t>::min());
/// An attempt kind's name (model::attempt_kind_name).
model::AttemptKind attempt_kind(const JsonAt& v);
/// An integer from 0 to 2^64 - 1.
uint64_t unsigned_integer(const JsonAt& v);

}  // namespace kopt::store::record_json

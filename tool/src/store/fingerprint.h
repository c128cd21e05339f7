// A spec's identity for run folders and the tuning cache: the resolved spec
// with every file it names replaced by a hash of the file's content, so the
// same workload hashes the same on every machine and in every checkout, and a
// changed kernel or input file changes the hash.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "spec/spec.h"

namespace kopt::store {

/// spec::to_json(s) with absolute file paths replaced by "xxh3:<hex>" of their
/// content (paths with "{case}" become their file name). The content of a
/// kernel source (template, initial, reference kernel) is its text with its
/// local includes expanded (spec::read_kernel_text): editing an included
/// header changes the hash, moving text into a header that expands back to
/// the same bytes does not. Throws SpecError as read_kernel_text does.
nlohmann::json portable_spec_json(const spec::Spec& s);

/// RunStore::hash_spec(portable_spec_json(s)) without the template launch's
/// block_work and traffic_bytes (they change no measurement, only the dispatch
/// model's reading) and without $.tuning.seeds (they change only the order in
/// which the search tries configurations).
std::string spec_fingerprint(const spec::Spec& s);

}  // namespace kopt::store

#include "store/summary.h"

#include <cmath>
#include <functional>
#include <limits>
#include <utility>
#include <vector>

#include "store/record_json.h"
#include "util/error.h"
#include "util/fs.h"
#include "util/json.h"
#include "util/json_read.h"

namespace kopt::store {

using nlohmann::json;
using namespace record_json;

namespace {

// ---------------------------------------------------------------------------
// Members of summary.json's documents

json params_to_json(const std::map<std::string, int64_t>& p) { return model::params_json(p); }

/// One of a record's optional members (a number or an integer, >= 0; absent
/// when unset) beside its key. A reader and a writer that take the same list
/// of them name the same keys.
template <typename T>
struct OptionalField {
  OptionalField(const char* k, std::optional<double> T::*n) : key(k), number(n) {}
  OptionalField(const char* k, std::optional<int64_t> T::*i) : key(k), integer(i) {}
  const char* key;
  std::optional<double> T::*number = nullptr;
  std::optional<int64_t> T::*integer = nullptr;
};

template <typename T>
using OptionalFields = std::vector<OptionalField<T>>;

template <typename T>
void read_fields(const JsonAt& at, T& record, const OptionalFields<T>& fields) {
  for (const OptionalField<T>& f : fields) {
    if (f.number) {
      record.*f.number = opt_number(at, f.key, 0);
    } else if (auto v = at.find(f.key)) {
      record.*f.integer = v->integer(0);
    }
  }
}

template <typename T>
void write_fields(json& j, const T& record, const OptionalFields<T>& fields) {
  for (const OptionalField<T>& f : fields) {
    if (f.number && record.*f.number) j[f.key] = *(record.*f.number);
    if (f.integer && record.*f.integer) j[f.key] = *(record.*f.integer);
  }
}

const OptionalFields<FinalBest> kFinalBestFields = {{"geomean_ms", &FinalBest::geomean_ms},
                                                      {"search_geomean_ms", &FinalBest::search_geomean_ms},
                                                      {"speedup_vs_reference", &FinalBest::speedup_vs_reference},
                                                      {"speedup_vs_initial", &FinalBest::speedup_vs_initial},
                                                      {"ratio_to_cublas", &FinalBest::ratio_to_cublas}};

const OptionalFields<Specialization> kSpecializationFields = {
    {"single_geomean_ms", &Specialization::single_geomean_ms},
    {"geomean_ms", &Specialization::geomean_ms},
    {"ratio_to_cublas", &Specialization::ratio_to_cublas},
    {"single_ratio_to_cublas", &Specialization::single_ratio_to_cublas}};

SummaryCase summary_case(const JsonAt& c) {
  c.expect_object();
  SummaryCase out;
  out.name = c.at("name").string();
  out.median_ms = opt_special(c, "median_ms");
  out.mean_ms = opt_special(c, "mean_ms");
  out.min_ms = opt_special(c, "min_ms");
  out.max_ms = opt_special(c, "max_ms");
  out.stddev_ms = opt_special(c, "stddev_ms");
  if (auto v = c.find("samples")) out.samples = v->integer(0);
  out.reference_median_ms = opt_special(c, "reference_median_ms");
  out.speedup = opt_special(c, "speedup");
  return out;
}

json summary_case_json(const SummaryCase& c) {
  json j = json::object();
  for (const auto& [k, v] : {std::pair<const char*, const std::optional<double>*>{"median_ms", &c.median_ms},
                             {"mean_ms", &c.mean_ms},
                             {"min_ms", &c.min_ms},
                             {"max_ms", &c.max_ms},
                             {"stddev_ms", &c.stddev_ms}})
    if (*v) j[k] = model::json_io::from_double(**v);
  if (c.samples) j["samples"] = *c.samples;
  j["name"] = c.name;
  if (c.reference_median_ms) j["reference_median_ms"] = model::json_io::from_double(*c.reference_median_ms);
  if (c.speedup) j["speedup"] = model::json_io::from_double(*c.speedup);
  return j;
}

std::optional<SummaryBest> summary_best(const JsonAt& b) {
  if (b.value().is_null()) return std::nullopt;
  b.expect_object();
  SummaryBest out;
  if (auto v = b.find("index")) out.index = static_cast<int>(v->integer(1, INT32_MAX));
  if (auto v = b.find("kind")) out.kind = attempt_kind(*v);
  if (auto v = b.find("label")) out.label = v->string();
  if (auto v = b.find("params")) out.params = int_map(*v);
  out.geomean_ms = opt_special(b, "geomean_ms");
  if (auto cs = b.find("cases"))
    for (size_t i = 0; i < cs->size(); ++i) out.cases.push_back(summary_case(cs->at(i)));
  out.speedup_vs_reference = opt_special(b, "speedup_vs_reference");
  out.speedup_vs_initial = opt_special(b, "speedup_vs_initial");
  if (auto v = b.find("note")) out.note = v->string();
  return out;
}

json summary_best_json(const std::optional<SummaryBest>& b) {
  if (!b) return nullptr;
  json j = json::object();
  if (b->index) j["index"] = *b->index;
  if (b->kind) j["kind"] = model::attempt_kind_name(*b->kind);
  j["label"] = b->label;
  j["params"] = params_to_json(b->params);
  if (b->geomean_ms) j["geomean_ms"] = model::json_io::from_double(*b->geomean_ms);
  json cases = json::array();
  for (const SummaryCase& c : b->cases) cases.push_back(summary_case_json(c));
  j["cases"] = std::move(cases);
  j["speedup_vs_reference"] = special_json(b->speedup_vs_reference);
  j["speedup_vs_initial"] = special_json(b->speedup_vs_initial);
  if (!b->note.empty()) j["note"] = b->note;
  return j;
}

RetimeEntry retime_entry(const JsonAt& r) {
  r.expect_object();
  RetimeEntry e;
  if (auto v = r.find("index")) e.index = static_cast<int>(v->integer(1, INT32_MAX));
  if (auto v = r.find("label")) e.label = v->string();
  if (auto g = r.find("geomeans_ms"))
    for (size_t i = 0; i < g->size(); ++i) e.geomeans_ms.push_back(g->at(i).number(0));
  e.median_ms = opt_number(r, "median_ms", 0);
  if (auto c = r.find("cases_median_ms")) {
    c->expect_object();
    for (const auto& [name, v] : c->value().items()) e.cases_median_ms[name] = number_or_null(c->at(name), 0);
  }
  if (auto v = r.find("failed_recheck")) e.failed_recheck = v->boolean();
  if (auto v = r.find("device")) e.device = static_cast<int>(v->integer(0, INT32_MAX));
  return e;
}

json retime_entry_json(const RetimeEntry& e) {
  json cases = json::object();
  for (const auto& [name, v] : e.cases_median_ms) cases[name] = v ? json(*v) : json(nullptr);
  json j = {{"label", e.label},
            {"geomeans_ms", e.geomeans_ms},
            {"median_ms", e.median_ms ? json(*e.median_ms) : json(nullptr)},
            {"cases_median_ms", std::move(cases)},
            {"failed_recheck", e.failed_recheck}};
  if (e.index) j["index"] = *e.index;
  if (e.device) j["device"] = *e.device;
  return j;
}

const OptionalFields<BudgetUsed> kBudgetUsedFields = {{"evaluations", &BudgetUsed::evaluations},
                                                      {"search_minutes", &BudgetUsed::search_minutes},
                                                      {"model_turns", &BudgetUsed::model_turns},
                                                      {"minutes", &BudgetUsed::minutes},
                                                      {"tokens", &BudgetUsed::tokens}};

BudgetUsed budget_used(const JsonAt& b) {
  b.expect_object();
  BudgetUsed u;
  read_fields(b, u, kBudgetUsedFields);
  return u;
}

json budget_used_json(const BudgetUsed& u) {
  json j = json::object();
  write_fields(j, u, kBudgetUsedFields);
  return j;
}

TunerStats tuner_stats(const JsonAt& t) {
  t.expect_object();
  TunerStats s;
  auto num = [&](const char* k, double* out) {
    if (auto v = t.find(k)) *out = v->number();
  };
  auto integer = [&](const char* k, int64_t* out) {
    if (auto v = t.find(k)) *out = v->integer(0);
  };
  num("candidates_per_minute", &s.candidates_per_minute);
  num("gpu_measured_fraction", &s.gpu_measured_fraction);
  num("compile_ms_median", &s.compile_ms_median);
  num("compile_cache_hit_rate", &s.compile_cache_hit_rate);
  integer("compile_threads", &s.compile_threads);
  integer("compiles_ready_when_needed", &s.compiles_ready_when_needed);
  integer("withdrawn_before_evaluation", &s.withdrawn_before_evaluation);
  num("compile_wait_ms", &s.compile_wait_ms);
  num("worker_check_ms", &s.worker_check_ms);
  num("worker_timing_ms", &s.worker_timing_ms);
  num("host_gap_ms", &s.host_gap_ms);
  num("worker_other_ms", &s.worker_other_ms);
  if (auto ds = t.find("devices"))
    for (size_t i = 0; i < ds->size(); ++i) {
      const JsonAt d = ds->at(i);
      d.expect_object();
      TunerStats::Device dev;
      dev.device = static_cast<int>(d.at("device").integer(0, INT32_MAX));
      if (auto v = d.find("name")) dev.name = v->string();
      if (auto v = d.find("evaluated")) dev.evaluated = v->integer(0);
      if (auto v = d.find("measured_fraction")) dev.measured_fraction = v->number();
      if (auto v = d.find("busy_fraction")) dev.busy_fraction = v->number();
      if (auto v = d.find("uuid")) dev.uuid = v->string();
      if (auto v = d.find("dropped")) dev.dropped = v->string();
      s.devices.push_back(std::move(dev));
    }
  if (auto a = t.find("compile_ahead")) {
    a->expect_object();
    TunerStats::Ahead x;
    x.median = a->at("median").number();
    x.max = a->at("max").number();
    x.automatic = a->at("auto").boolean();
    s.compile_ahead = x;
  }
  if (auto f = t.find("filtered_before_compile")) {
    f->expect_object();
    TunerStats::Filtered x;
    x.configurations = f->at("configurations").integer(0);
    x.space = f->at("space").integer(0);
    const JsonAt limits = f->at("limits");
    for (size_t i = 0; i < limits.size(); ++i) x.limits.push_back(limits.at(i).string());
    s.filtered_before_compile = std::move(x);
  }
  return s;
}

json tuner_stats_json(const TunerStats& s) {
  json devices = json::array();
  for (const TunerStats::Device& d : s.devices) {
    json j = {{"device", d.device},
              {"name", d.name},
              {"evaluated", d.evaluated},
              {"measured_fraction", d.measured_fraction},
              {"busy_fraction", d.busy_fraction}};
    if (!d.uuid.empty()) j["uuid"] = d.uuid;
    if (!d.dropped.empty()) j["dropped"] = d.dropped;
    devices.push_back(std::move(j));
  }
  json j = {{"candidates_per_minute", s.candidates_per_minute},
          {"gpu_measured_fraction", s.gpu_measured_fraction},
          {"compile_ms_median", s.compile_ms_median},
          {"compile_cache_hit_rate", s.compile_cache_hit_rate},
          {"compile_threads", s.compile_threads},
          {"compiles_ready_when_needed", s.compiles_ready_when_needed},
          {"withdrawn_before_evaluation", s.withdrawn_before_evaluation},
          {"compile_wait_ms", s.compile_wait_ms},
          {"worker_check_ms", s.worker_check_ms},
          {"worker_timing_ms", s.worker_timing_ms},
          {"host_gap_ms", s.host_gap_ms},
          {"worker_other_ms", s.worker_other_ms},
          {"devices", std::move(devices)}};
  if (const auto& a = s.compile_ahead) j["compile_ahead"] = {{"median", a->median}, {"max", a->max}, {"auto", a->automatic}};
  if (const auto& f = s.filtered_before_compile)
    j["filtered_before_compile"] = {{"configurations", f->configurations}, {"space", f->space}, {"limits", f->limits}};
  return j;
}

ShapeClassSummary shape_class_summary(const JsonAt& c) {
  c.expect_object();
  ShapeClassSummary s;
  s.class_number = c.at("class").integer(1);
  if (auto v = c.find("name")) s.name = v->string();
  if (auto cs = c.find("cases"))
    for (size_t i = 0; i < cs->size(); ++i) s.cases.push_back(cs->at(i).string());
  if (auto v = c.find("evaluations")) s.evaluations = v->integer(0);
  if (auto v = c.find("evaluations_share")) s.evaluations_share = v->integer(0);
  if (auto v = c.find("minutes")) s.minutes = v->number(0);
  if (auto v = c.find("screened_cases")) s.screened_cases = v->integer(0);
  if (auto v = c.find("withdrawn")) s.withdrawn = v->integer(0);
  if (auto b = c.find("best")) {
    b->expect_object();
    if (auto v = b->find("label")) s.best_label = v->string();
    s.best_geomean_ms = opt_number(*b, "geomean_ms", 0);
  }
  return s;
}

json shape_class_json(const ShapeClassSummary& s) {
  json j = {{"class", s.class_number},
            {"name", s.name},
            {"cases", s.cases},
            {"evaluations", s.evaluations},
            {"evaluations_share", s.evaluations_share},
            {"minutes", s.minutes},
            {"screened_cases", s.screened_cases},
            {"withdrawn", s.withdrawn}};
  if (s.best_label || s.best_geomean_ms) {
    j["best"] = json::object();
    if (s.best_label) j["best"]["label"] = *s.best_label;
    if (s.best_geomean_ms) j["best"]["geomean_ms"] = *s.best_geomean_ms;
  }
  return j;
}

Accuracy accuracy(const JsonAt& a) {
  a.expect_object();
  Accuracy out;
  if (auto v = a.find("cublas_index")) out.cublas_index = static_cast<int>(v->integer(1, INT32_MAX));
  if (auto ks = a.find("kernels"))
    for (size_t i = 0; i < ks->size(); ++i) {
      const JsonAt k = ks->at(i);
      k.expect_object();
      AccuracyKernel ak;
      ak.variant = static_cast<int>(k.at("variant").integer(0, INT32_MAX));
      if (auto v = k.find("index")) ak.index = static_cast<int>(v->integer(1, INT32_MAX));
      if (auto v = k.find("label")) ak.label = v->string();
      if (auto cs = k.find("cases"))
        for (size_t j = 0; j < cs->size(); ++j) {
          const JsonAt c = cs->at(j);
          c.expect_object();
          AccuracyCase ac;
          ac.name = c.at("name").string();
          if (auto v = c.find("role")) ac.role = v->string();
          ac.rel_error_max = opt_number(c, "rel_error_max", 0);
          ac.rel_error_rms = opt_number(c, "rel_error_rms", 0);
          ac.cublas_rel_error_max = opt_number(c, "cublas_rel_error_max", 0);
          ac.cublas_rel_error_rms = opt_number(c, "cublas_rel_error_rms", 0);
          ak.cases.push_back(std::move(ac));
        }
      out.kernels.push_back(std::move(ak));
    }
  return out;
}

json accuracy_json(const Accuracy& a) {
  json kernels = json::array();
  for (const AccuracyKernel& k : a.kernels) {
    json cases = json::array();
    for (const AccuracyCase& c : k.cases) {
      json j = {{"name", c.name}};
      if (!c.role.empty()) j["role"] = c.role;
      for (const auto& [key, v] : {std::pair<const char*, const std::optional<double>*>{"rel_error_max", &c.rel_error_max},
                                   {"rel_error_rms", &c.rel_error_rms},
                                   {"cublas_rel_error_max", &c.cublas_rel_error_max},
                                   {"cublas_rel_error_rms", &c.cublas_rel_error_rms}})
        if (*v) j[key] = **v;
      cases.push_back(std::move(j));
    }
    json j = {{"variant", k.variant}, {"label", k.label}, {"cases", std::move(cases)}};
    if (k.index) j["index"] = *k.index;
    kernels.push_back(std::move(j));
  }
  json j = {{"kernels", std::move(kernels)}};
  if (a.cublas_index) j["cublas_index"] = *a.cublas_index;
  return j;
}

// ---------------------------------------------------------------------------
// Top-level keys: one reader per key, so that a tolerant read can leave out
// exactly the member that is damaged.

using KeyReader = std::function<void(Summary&, const JsonAt&, ReadMode)>;

const std::map<std::string, KeyReader>& key_readers() {
  static const std::map<std::string, KeyReader> readers = {
      // RunStore::summary
      {"format_version", [](Summary& s, const JsonAt& v, ReadMode) { s.format_version = static_cast<int>(v.integer(1, 1)); }},
      {"tool_version", [](Summary& s, const JsonAt& v, ReadMode) { s.tool_version = v.string(); }},
      {"run", [](Summary& s, const JsonAt& v, ReadMode) { s.run = v.string(); }},
      {"workload", [](Summary& s, const JsonAt& v, ReadMode) { s.workload = v.string(); }},
      {"gpu", [](Summary& s, const JsonAt& v, ReadMode) { s.gpu = v.expect_object().value(); }},
      {"spec_hash", [](Summary& s, const JsonAt& v, ReadMode) { s.spec_hash = v.string(); }},
      {"strategy", [](Summary& s, const JsonAt& v, ReadMode) { s.strategy = v.string(); }},
      {"seed", [](Summary& s, const JsonAt& v, ReadMode) { s.seed = unsigned_integer(v); }},
      {"created", [](Summary& s, const JsonAt& v, ReadMode) { s.created = v.string(); }},
      {"best", [](Summary& s, const JsonAt& v, ReadMode) { s.best = summary_best(v); }},
      {"reference_geomean_ms", [](Summary& s, const JsonAt& v, ReadMode) { s.reference_geomean_ms = special_or_null(v); }},
      {"initial_geomean_ms", [](Summary& s, const JsonAt& v, ReadMode) { s.initial_geomean_ms = special_or_null(v); }},
      {"counts",
       [](Summary& s, const JsonAt& v, ReadMode) {
         v.expect_object();
         std::map<std::string, int64_t> counts;
         for (const auto& [k, n] : v.value().items()) counts[k] = v.at(k).integer(0);
         s.counts = std::move(counts);
       }},
      {"attempts", [](Summary& s, const JsonAt& v, ReadMode) { s.attempts = v.integer(0); }},
      {"accuracy", [](Summary& s, const JsonAt& v, ReadMode) { s.accuracy = accuracy(v); }},
      // The run driver
      {"budget", [](Summary& s, const JsonAt& v, ReadMode) { s.budget = v.expect_object().value(); }},
      {"budget_used", [](Summary& s, const JsonAt& v, ReadMode) { s.budget_used = budget_used(v); }},
      {"stop", [](Summary& s, const JsonAt& v, ReadMode) { s.stop = v.string(); }},
      {"tuner", [](Summary& s, const JsonAt& v, ReadMode) { s.tuner = tuner_stats(v); }},
      {"retime",
       [](Summary& s, const JsonAt& v, ReadMode) {
         std::vector<RetimeEntry> r;
         for (size_t i = 0; i < v.size(); ++i) r.push_back(retime_entry(v.at(i)));
         s.retime = std::move(r);
       }},
      {"time_split",
       [](Summary& s, const JsonAt& v, ReadMode) {
         v.expect_object();
         TimeSplit t;
         t.setup_minutes = v.at("setup_minutes").number(0);
         t.search_minutes = v.at("search_minutes").number(0);
         t.retime_minutes = v.at("retime_minutes").number(0);
         t.total_minutes = v.at("total_minutes").number(0);
         s.time_split = t;
       }},
      {"cublas_geomean_ms", [](Summary& s, const JsonAt& v, ReadMode) { s.cublas_geomean_ms = number_or_null(v); }},
      {"compile_only",
       [](Summary& s, const JsonAt& v, ReadMode) {
         v.expect_object();
         s.compile_only = Summary::CompileOnly{v.at("arch").string(), v.at("reason").string()};
       }},
      {"interrupted",
       [](Summary& s, const JsonAt& v, ReadMode) {
         v.expect_object();
         s.interrupted = Summary::Interrupted{v.at("signal").string(), v.at("resume").string()};
       }},
      {"final_best",
       [](Summary& s, const JsonAt& v, ReadMode) {
         if (v.value().is_null()) s.final_best.reset();
         else s.final_best = FinalBest::from_json(v);
       }},
      {"specialization",
       [](Summary& s, const JsonAt& v, ReadMode mode) {
         if (v.value().is_null()) s.specialization.reset();
         else s.specialization = Specialization::from_json(v, mode);
       }},
      // The class search's keys
      {"shape_classes",
       [](Summary& s, const JsonAt& v, ReadMode) {
         std::vector<ShapeClassSummary> c;
         for (size_t i = 0; i < v.size(); ++i) c.push_back(shape_class_summary(v.at(i)));
         s.shape_classes = std::move(c);
       }},
      {"screen_factor", [](Summary& s, const JsonAt& v, ReadMode) { s.screen_factor = v.number(0); }},
  };
  return readers;
}

}  // namespace

// ---------------------------------------------------------------------------
// FinalBest

FinalBest FinalBest::from_json(const JsonAt& at) {
  at.expect_object();
  FinalBest b;
  if (auto v = at.find("index")) b.index = static_cast<int>(v->integer(1, INT32_MAX));
  if (auto v = at.find("label")) b.label = v->string();
  if (auto v = at.find("params")) b.params = int_map(*v);
  read_fields(at, b, kFinalBestFields);
  return b;
}

json FinalBest::to_json() const {
  json j = json::object();
  if (index) j["index"] = *index;
  if (label) j["label"] = *label;
  if (params) j["params"] = params_to_json(*params);
  write_fields(j, *this, kFinalBestFields);
  return j;
}

// ---------------------------------------------------------------------------
// Specialization

std::optional<model::DispatchTree> Specialization::dispatch_tree(const std::string& where) const {
  if (dispatch.is_null()) return std::nullopt;
  return model::DispatchTree::from_json(dispatch, where, static_cast<int>(variants.size()));
}

Specialization Specialization::from_json(const JsonAt& at, ReadMode mode) {
  at.expect_object();
  Specialization sp;
  if (auto v = at.find("threshold")) sp.threshold = v->number(0, 1);
  if (auto vs = at.find("variants")) {
    for (size_t i = 0; i < vs->size(); ++i) {
      const JsonAt v = vs->at(i);
      v.expect_object();
      SpecializationVariant sv;
      sv.variant = static_cast<int>(i);
      if (auto n = v.find("variant")) sv.variant = static_cast<int>(n->integer(0, INT32_MAX));
      if (auto n = v.find("index")) sv.index = static_cast<int>(n->integer(1, INT32_MAX));
      if (auto l = v.find("label")) sv.label = l->string();
      if (auto p = v.find("params")) sv.params = int_map(*p);
      if (auto file = v.find("file")) {
        sv.file = file->string();
        const std::filesystem::path f = sv.file;
        bool inside = !f.empty() && f.is_relative();
        for (const auto& part : f) inside = inside && part != "..";
        if (!inside) file->fail("expected a file name inside the run folder, got '" + json_shown(sv.file) + "'");
      }
      sp.variants.push_back(std::move(sv));
    }
  }
  const int n = static_cast<int>(sp.variants.size());
  if (auto cs = at.find("cases")) {
    cs->expect_object();
    for (const auto& [name, c] : cs->value().items()) {
      const JsonAt jc = cs->at(name);
      jc.expect_object();
      SpecializationCase sc;
      if (auto v = jc.find("variant")) sc.variant = static_cast<int>(v->integer(0, n > 0 ? n - 1 : INT32_MAX));
      if (auto v = jc.find("median_ms")) sc.median_ms = number_or_null(*v, 0);
      if (auto v = jc.find("single_median_ms")) sc.single_median_ms = number_or_null(*v, 0);
      if (auto sz = jc.find("sizes")) sc.sizes = int_map(*sz, 1);
      if (auto v = jc.find("class")) sc.shape_class = v->string();
      sp.cases[name] = std::move(sc);
    }
  }
  if (auto l = at.find("latency_ms")) {
    l->expect_object();
    for (const auto& [name, row] : l->value().items()) {
      const JsonAt r = l->at(name);
      std::vector<std::optional<double>>& out = sp.latency_ms[name];
      for (size_t i = 0; i < r.size(); ++i) out.push_back(number_or_null(r.at(i), 0));
    }
  }
  if (auto d = at.find("dispatch"); d && !d->value().is_null()) {
    sp.dispatch = d->value();
    if (n > 1) {
      try {
        model::DispatchTree::from_json(*d, n);
      } catch (const Error&) {
        if (mode == ReadMode::strict) throw;
        // Tolerant: the tree without a damaged cost model, else no tree.
        sp.dispatch.erase("model");
        try {
          model::DispatchTree::from_json(JsonAt(sp.dispatch, d->where(), d->path()), n);
        } catch (const Error&) {
          sp.dispatch = nullptr;
        }
      }
    }
  }
  read_fields(at, sp, kSpecializationFields);
  return sp;
}

json Specialization::to_json() const {
  json vs = json::array();
  for (const SpecializationVariant& v : variants) {
    json j = {{"variant", v.variant}, {"label", v.label}, {"params", params_to_json(v.params)}};
    if (v.index) j["index"] = *v.index;
    if (!v.file.empty()) j["file"] = v.file;
    vs.push_back(std::move(j));
  }
  json cs = json::object();
  for (const auto& [name, c] : cases) {
    json j = {{"variant", c.variant},
              {"median_ms", c.median_ms ? json(*c.median_ms) : json(nullptr)},
              {"single_median_ms", c.single_median_ms ? json(*c.single_median_ms) : json(nullptr)}};
    if (c.sizes) j["sizes"] = json(*c.sizes);
    if (c.shape_class) j["class"] = *c.shape_class;
    cs[name] = std::move(j);
  }
  json j = {{"variants", std::move(vs)}, {"cases", std::move(cs)}};
  if (threshold) j["threshold"] = *threshold;
  if (!latency_ms.empty()) {
    json l = json::object();
    for (const auto& [name, row] : latency_ms) {
      json r = json::array();
      for (const auto& x : row) r.push_back(x ? json(*x) : json(nullptr));
      l[name] = std::move(r);
    }
    j["latency_ms"] = std::move(l);
  }
  if (!dispatch.is_null()) j["dispatch"] = dispatch;
  write_fields(j, *this, kSpecializationFields);
  return j;
}

// ---------------------------------------------------------------------------
// Summary

const std::vector<std::string>& Summary::store_keys() {
  static const std::vector<std::string> keys = {
      "format_version", "tool_version", "run", "workload", "gpu", "spec_hash", "strategy", "seed",
      "created", "best", "reference_geomean_ms", "initial_geomean_ms", "counts", "attempts", "accuracy"};
  return keys;
}

void Summary::assign_store_keys(const Summary& fresh) {
  format_version = fresh.format_version;
  tool_version = fresh.tool_version;
  run = fresh.run;
  workload = fresh.workload;
  gpu = fresh.gpu;
  spec_hash = fresh.spec_hash;
  strategy = fresh.strategy;
  seed = fresh.seed;
  created = fresh.created;
  best = fresh.best;
  reference_geomean_ms = fresh.reference_geomean_ms;
  initial_geomean_ms = fresh.initial_geomean_ms;
  counts = fresh.counts;
  attempts = fresh.attempts;
  accuracy = fresh.accuracy;
}

void Summary::merge(const json& keys, const std::string& where, ReadMode mode) {
  const JsonAt root(keys, where);
  if (!keys.is_object()) {
    if (mode == ReadMode::tolerant) return;
    root.expect_object();
  }
  const auto& readers = key_readers();
  for (const auto& [key, value] : keys.items()) {
    const JsonAt v = root.at(key);
    const auto r = readers.find(key);
    if (r == readers.end()) {
      others[key] = value;
      continue;
    }
    try {
      r->second(*this, v, mode);
    } catch (const Error&) {
      if (mode == ReadMode::strict) throw;  // tolerant: the member stays as it was
    }
  }
}

json Summary::to_json() const {
  json s = others.is_object() ? others : json::object();
  s["format_version"] = format_version;
  s["tool_version"] = tool_version;
  s["run"] = run;
  s["workload"] = workload;
  s["gpu"] = gpu;
  s["spec_hash"] = spec_hash;
  s["strategy"] = strategy;
  s["seed"] = seed;
  s["created"] = created;
  s["best"] = summary_best_json(best);
  s["reference_geomean_ms"] = special_json(reference_geomean_ms);
  s["initial_geomean_ms"] = special_json(initial_geomean_ms);
  s["counts"] = json(counts);
  if (attempts) s["attempts"] = *attempts;
  if (accuracy) s["accuracy"] = accuracy_json(*accuracy);
  if (!budget.is_null()) s["budget"] = budget;
  if (budget_used) s["budget_used"] = budget_used_json(*budget_used);
  if (stop) s["stop"] = *stop;
  if (tuner) s["tuner"] = tuner_stats_json(*tuner);
  if (retime) {
    json r = json::array();
    for (const RetimeEntry& e : *retime) r.push_back(retime_entry_json(e));
    s["retime"] = std::move(r);
  }
  if (time_split)
    s["time_split"] = {{"setup_minutes", time_split->setup_minutes},
                       {"search_minutes", time_split->search_minutes},
                       {"retime_minutes", time_split->retime_minutes},
                       {"total_minutes", time_split->total_minutes}};
  if (cublas_geomean_ms) s["cublas_geomean_ms"] = *cublas_geomean_ms;
  if (compile_only) s["compile_only"] = {{"arch", compile_only->arch}, {"reason", compile_only->reason}};
  if (interrupted) s["interrupted"] = {{"signal", interrupted->signal}, {"resume", interrupted->resume}};
  if (final_best) s["final_best"] = final_best->to_json();
  if (specialization) s["specialization"] = specialization->to_json();
  if (shape_classes) {
    json c = json::array();
    for (const ShapeClassSummary& e : *shape_classes) c.push_back(shape_class_json(e));
    s["shape_classes"] = std::move(c);
  }
  if (screen_factor) s["screen_factor"] = *screen_factor;
  return s;
}

Summary Summary::from_json(const json& j, const std::string& where, ReadMode mode) {
  Summary s;
  s.merge(j, where, mode);
  return s;
}

std::optional<Accuracy> accuracy_of(const Summary& s, const std::vector<model::Attempt>& history) {
  auto by_index = [&](const std::optional<int>& index) -> const model::Attempt* {
    if (!index) return nullptr;
    for (const model::Attempt& a : history)
      if (a.index == *index) return &a;
    return nullptr;
  };
  // The kernels the run ships: the variants, else the winner.
  std::vector<std::pair<int, const model::Attempt*>> shipped;
  if (s.specialization && s.specialization->variants.size() > 1) {
    for (const SpecializationVariant& v : s.specialization->variants)
      if (const model::Attempt* a = by_index(v.index)) shipped.emplace_back(v.variant, a);
  } else if (const model::Attempt* a = by_index(s.final_best ? s.final_best->index : std::nullopt)) {
    shipped.emplace_back(0, a);
  } else if (const model::Attempt* b = by_index(s.best ? s.best->index : std::nullopt)) {
    shipped.emplace_back(0, b);
  }
  const model::Attempt* cublas = nullptr;
  for (const model::Attempt& a : history)
    if (a.kind == model::AttemptKind::baseline && a.result.verdict == model::Verdict::ok) {
      cublas = &a;
      break;
    }
  auto finite = [](const std::optional<double>& v) { return v && std::isfinite(*v) ? v : std::nullopt; };
  Accuracy out;
  if (cublas) out.cublas_index = cublas->index;
  for (const auto& [variant, a] : shipped) {
    AccuracyKernel k;
    k.variant = variant;
    k.index = a->index;
    k.label = a->label;
    for (const model::CaseResult& c : a->result.cases) {
      AccuracyCase ac;
      ac.name = c.name;
      ac.role = c.role;
      ac.rel_error_max = finite(c.rel_error_max);
      ac.rel_error_rms = finite(c.rel_error_rms);
      if (!ac.rel_error_max && !ac.rel_error_rms) continue;
      if (cublas)
        for (const model::CaseResult& b : cublas->result.cases)
          if (b.name == c.name) {
            ac.cublas_rel_error_max = finite(b.rel_error_max);
            ac.cublas_rel_error_rms = finite(b.rel_error_rms);
          }
      k.cases.push_back(std::move(ac));
    }
    if (!k.cases.empty()) out.kernels.push_back(std::move(k));
  }
  if (out.kernels.empty()) return std::nullopt;
  return out;
}

Summary read_summary(const std::filesystem::path& file, ReadMode mode) {
  return Summary::from_json(parse_json_file(file, "run summary"), fs::display(file), mode);
}

void write_summary(const std::filesystem::path& file, const Summary& s) {
  fs::write_file_atomic(file, dump_json(s.to_json(), 2) + "\n");
}

}  // namespace kopt::store

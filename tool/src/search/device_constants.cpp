#include "search/device_constants.h"

#include <algorithm>
#include <cstdint>

#include "search/space.h"
#include "util/error.h"

namespace kopt::search {
namespace {

/// One row of the CUDA C++ Programming Guide's table "Technical
/// Specifications per Compute Capability" (the rows NVRTC of CUDA 12 and 13
/// compiles for), and a GPU of that architecture for SM_COUNT.
struct ArchRow {
  int cc;                       // 10 * major + minor
  int64_t shared_per_block;     // with the opt-in, bytes
  int64_t shared_per_sm;        // bytes
  int64_t threads_per_sm;
  int64_t sm_count;             // of the GPU named
  const char* gpu;
};

const ArchRow kRows[] = {
    {70, 96 * 1024, 96 * 1024, 2048, 80, "V100"},
    {72, 96 * 1024, 96 * 1024, 2048, 8, "Jetson AGX Xavier"},
    {75, 64 * 1024, 64 * 1024, 1024, 40, "T4"},
    {80, 163 * 1024, 164 * 1024, 2048, 108, "A100"},
    {86, 99 * 1024, 100 * 1024, 1536, 82, "RTX 3090"},
    {87, 163 * 1024, 164 * 1024, 2048, 16, "Jetson AGX Orin"},
    {89, 99 * 1024, 100 * 1024, 1536, 128, "RTX 4090"},
    {90, 227 * 1024, 228 * 1024, 2048, 132, "H100/H200 SXM"},
    {100, 227 * 1024, 228 * 1024, 2048, 148, "B200"},
    {120, 99 * 1024, 100 * 1024, 1536, 170, "RTX 5090"},
};

/// 90 for "sm_90" or "sm_90a"; 0 when `arch` does not name one.
int cc_of(const std::string& arch) {
  if (arch.rfind("sm_", 0) != 0) return 0;
  int cc = 0;
  for (size_t i = 3; i < arch.size() && arch[i] >= '0' && arch[i] <= '9' && cc < 10000; ++i) cc = cc * 10 + (arch[i] - '0');
  return cc;
}

const ArchRow& row_for(const std::string& arch) {
  const int cc = cc_of(arch);
  const ArchRow* best = nullptr;
  for (const ArchRow& r : kRows)
    if (r.cc <= cc) best = &r;
  if (best) return *best;
  for (const ArchRow& r : kRows)
    if (r.cc == 90) return r;  // no architecture named (or one older than the table): sm_90
  return kRows[0];
}

constexpr int64_t kStaticSharedPerBlock = 48 * 1024;  // every compute capability
constexpr int64_t kRegsPerThread = 255;               // compute capability 3.2 and later

}  // namespace

spec::Bindings device_constants(const model::DeviceInfo* d, const std::string& arch) {
  if (!d) {
    const ArchRow& r = row_for(arch);
    return {{"WARP_SIZE", 32},
            {"MAX_THREADS_PER_BLOCK", 1024},
            {"MAX_THREADS_PER_SM", r.threads_per_sm},
            {"MAX_STATIC_SHARED_PER_BLOCK", kStaticSharedPerBlock},
            {"MAX_SHARED_PER_BLOCK", r.shared_per_block},
            {"MAX_SHARED_PER_SM", r.shared_per_sm},
            {"MAX_REGS_PER_BLOCK", 65536},
            {"REGS_PER_SM", 65536},
            {"MAX_REGS_PER_THREAD", kRegsPerThread},
            {"SM_COUNT", r.sm_count}};
  }
  const int64_t static_limit = d->shared_per_block_bytes > 0 ? d->shared_per_block_bytes : kStaticSharedPerBlock;
  return {{"WARP_SIZE", d->warp_size},
          {"MAX_THREADS_PER_BLOCK", d->max_threads_per_block},
          {"MAX_THREADS_PER_SM", d->max_threads_per_sm},
          {"MAX_STATIC_SHARED_PER_BLOCK", static_limit},
          {"MAX_SHARED_PER_BLOCK", d->shared_per_block_optin_bytes},
          {"MAX_SHARED_PER_SM", d->shared_per_sm_bytes},
          {"MAX_REGS_PER_BLOCK", d->regs_per_block},
          {"REGS_PER_SM", d->regs_per_sm},
          {"MAX_REGS_PER_THREAD", kRegsPerThread},
          {"SM_COUNT", d->sm_count}};
}

spec::Bindings constraint_constants(const spec::Spec& s, const model::DeviceInfo* d, const std::string& arch) {
  spec::Bindings b = device_constants(d, arch);
  for (const auto& [name, v] : s.constant_defines()) b.emplace(name, v);
  return b;
}

bool names_device_limit(const spec::Expr& e) {
  const spec::Bindings limits = device_constants(nullptr);
  for (const std::string& n : e.names())
    if (limits.count(n)) return true;
  return false;
}

std::vector<spec::Expr> launch_limit_constraints(const spec::Launch& l, const std::set<std::string>& names) {
  auto decidable = [&](std::initializer_list<const spec::Expr*> es) {
    bool any_name = false;
    for (const spec::Expr* e : es) {
      if (e->empty()) continue;
      for (const std::string& n : e->names()) {
        if (!names.count(n)) return false;
        any_name = true;
      }
    }
    return any_name;
  };
  auto paren = [](const spec::Expr& e, const char* dflt) { return "(" + (e.empty() ? std::string(dflt) : e.text()) + ")"; };
  std::vector<spec::Expr> out;
  if (decidable({&l.block[0], &l.block[1], &l.block[2]}))
    out.push_back(spec::Expr::parse(paren(l.block[0], "1") + " * " + paren(l.block[1], "1") + " * " +
                                    paren(l.block[2], "1") + " <= MAX_THREADS_PER_BLOCK"));
  if (!l.static_shared_bytes.empty() && decidable({&l.static_shared_bytes}))
    out.push_back(spec::Expr::parse(paren(l.static_shared_bytes, "0") + " <= MAX_STATIC_SHARED_PER_BLOCK"));
  // With constant dynamic shared memory the static limit decides alone.
  if (decidable({&l.shared_bytes}) && (l.static_shared_bytes.empty() || decidable({&l.static_shared_bytes}))) {
    const std::string total = l.static_shared_bytes.empty()
                                  ? paren(l.shared_bytes, "0")
                                  : paren(l.static_shared_bytes, "0") + " + " + paren(l.shared_bytes, "0");
    out.push_back(spec::Expr::parse(total + " <= MAX_SHARED_PER_BLOCK"));
  }
  return out;
}

std::optional<LimitFilter> count_limit_filtered(const std::vector<spec::TuningParam>& params,
                                                const std::vector<spec::Expr>& constraints,
                                                const spec::Bindings& constants, uint64_t max_work) {
  std::vector<spec::Expr> restrictions;
  LimitFilter f;
  for (const spec::Expr& e : constraints) {
    if (names_device_limit(e)) f.limits.push_back(e.text());
    else restrictions.push_back(e);
  }
  if (f.limits.empty()) return f;
  try {
    const std::optional<uint64_t> all = Space(params, constraints, constants).count_valid(max_work);
    const std::optional<uint64_t> some = Space(params, restrictions, constants).count_valid(max_work);
    if (!all || !some) return std::nullopt;
    f.space = *all;
    f.filtered = *some - std::min(*some, *all);
  } catch (const Error&) {
    return std::nullopt;  // the space itself is refused elsewhere, with its own message
  }
  return f;
}

}  // namespace kopt::search

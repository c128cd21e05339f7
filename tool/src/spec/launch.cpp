#include "spec/launch.h"

#include "util/error.h"

namespace kopt::spec {

LaunchDims resolve_launch(const Launch& l, const Case& c,
                          const std::map<std::string, int64_t>& params) {
  const Bindings b = bindings_for(c, params);
  LaunchDims d;
  auto ev = [&](const Expr& e, const char* what) -> int64_t {
    if (e.empty()) return std::string(what) == "shared_bytes" ? 0 : 1;
    try {
      return e.eval(b);
    } catch (const Error& err) {
      // A launch from a kernel file's kopt: lines names that file and line.
      const std::string key = std::string(what) == "shared_bytes" ? "shared" : what;
      const std::string where = launch_origin(l, key);
      throw SpecError("kopt.launch.501", (where.empty() ? std::string("launch ") + what : where + " '" + e.text() + "'") +
                                             " for case " + c.name + ": " + err.what());
    }
  };
  for (int i = 0; i < 3; ++i) {
    d.grid[i] = ev(l.grid[i], "grid");
    d.block[i] = ev(l.block[i], "block");
  }
  d.shared_bytes = ev(l.shared_bytes, "shared_bytes");
  if (!l.block_work.empty()) d.block_work = ev(l.block_work, "block_work");
  if (!l.traffic_bytes.empty()) d.traffic_bytes = ev(l.traffic_bytes, "traffic_bytes");
  return d;
}

}  // namespace kopt::spec

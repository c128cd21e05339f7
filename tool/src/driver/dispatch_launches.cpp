#include "driver/dispatch_launches.h"

#include "spec/launch.h"
#include "util/error.h"

namespace kopt::driver {

std::string fill_dispatch_launches(std::vector<model::DispatchSample>& samples, const spec::Launch& launch,
                                   const spec::Expr& data_bytes, const std::vector<std::map<std::string, int64_t>>& params,
                                   const std::function<const spec::Case*(const std::string&)>& case_of) {
  auto clear = [&](std::string why) {
    for (auto& s : samples) s.blocks.clear(), s.block_work.clear(), s.traffic.clear(), s.data_bytes.clear();
    return why;
  };
  try {
    for (auto& s : samples) {
      const spec::Case* c = case_of(s.name);
      if (!c) return clear("no case '" + s.name + "'");
      s.blocks.clear(), s.block_work.clear(), s.traffic.clear(), s.data_bytes.clear();
      for (const auto& p : params) {
        const spec::LaunchDims d = spec::resolve_launch(launch, *c, p);
        s.blocks.push_back(d.grid[0] * d.grid[1] * d.grid[2]);
        s.block_work.push_back(static_cast<double>(d.block_work.value_or(0)));
        if (d.traffic_bytes) s.traffic.push_back(static_cast<double>(*d.traffic_bytes));
        if (!data_bytes.empty()) s.data_bytes.push_back(static_cast<double>(data_bytes.eval(spec::bindings_for(*c, p))));
      }
    }
  } catch (const Error& e) {
    return clear(e.what());
  }
  return "";
}

}  // namespace kopt::driver

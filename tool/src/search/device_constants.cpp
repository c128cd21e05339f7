#include "search/device_constants.h"

namespace kopt::search {

spec::Bindings device_constants(const model::DeviceInfo* d) {
  if (!d)
    return {{"MAX_SHARED_PER_BLOCK", 232448}, {"MAX_THREADS_PER_BLOCK", 1024}, {"REGS_PER_SM", 65536},
            {"SM_COUNT", 132}, {"WARP_SIZE", 32}};
  return {{"MAX_SHARED_PER_BLOCK", d->shared_per_block_optin_bytes},
          {"MAX_THREADS_PER_BLOCK", d->max_threads_per_block},
          {"REGS_PER_SM", d->regs_per_sm},
          {"SM_COUNT", d->sm_count},
          {"WARP_SIZE", d->warp_size}};
}

}  // namespace kopt::search

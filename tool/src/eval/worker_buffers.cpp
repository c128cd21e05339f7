// The candidate's device buffers: guarded buffers that end against an
// unmapped page with poison canaries around them, the pool of buffer sets
// kept between candidates, uploading a trial's inputs, poisoning outputs and
// shared memory before a launch, and the scratch copies of run 1's outputs.
#include <algorithm>

#include "eval/worker_impl.h"

namespace kopt::eval::detail {

GuardedBuffer::GuardedBuffer(size_t bytes, int device, size_t granularity) : bytes_(bytes) {
  const cuda::Driver& drv = cuda::driver();
  const size_t body = (std::max<size_t>(bytes, 1) + kAlign - 1) / kAlign * kAlign;
  mapped_ = (body + granularity - 1) / granularity * granularity;
  reserved_ = mapped_ + 2 * granularity;
  KOPT_CU_CHECK(drv.cuMemAddressReserve(&va_, reserved_, granularity, 0, 0),
                "reserving " + std::to_string(reserved_) + " bytes of address space");
  CUmemAllocationProp prop{};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = device;
  CUresult r = drv.cuMemCreate(&handle_, mapped_, &prop, 0);
  if (r != CUDA_SUCCESS) {
    drv.cuMemAddressFree(va_, reserved_);
    cuda::throw_error(r, "cuMemCreate", std::to_string(mapped_) + " bytes");
  }
  map_start_ = va_ + granularity;
  r = drv.cuMemMap(map_start_, mapped_, 0, handle_, 0);
  if (r == CUDA_SUCCESS) {
    CUmemAccessDesc access{};
    access.location = prop.location;
    access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    r = drv.cuMemSetAccess(map_start_, mapped_, &access, 1);
    if (r != CUDA_SUCCESS) drv.cuMemUnmap(map_start_, mapped_);
  }
  if (r != CUDA_SUCCESS) {
    drv.cuMemRelease(handle_);
    drv.cuMemAddressFree(va_, reserved_);
    cuda::throw_error(r, "cuMemMap/cuMemSetAccess", std::to_string(mapped_) + " bytes");
  }
  ptr_ = map_start_ + mapped_ - body;
  tail_ = body - bytes_;
  head_ = ptr_ - map_start_;
}
GuardedBuffer::~GuardedBuffer() {
  const cuda::Driver& drv = cuda::driver();
  KOPT_CU_CHECK_NOTHROW(drv.cuMemUnmap(map_start_, mapped_));
  KOPT_CU_CHECK_NOTHROW(drv.cuMemRelease(handle_));
  KOPT_CU_CHECK_NOTHROW(drv.cuMemAddressFree(va_, reserved_));
}

/// Writes poison over both canaries (before each launch).
void GuardedBuffer::reset_canaries(CUstream s) const {
  const cuda::Driver& drv = cuda::driver();
  if (tail_) KOPT_CU_CHECK(drv.cuMemsetD8Async(ptr_ + bytes_, kPoisonByte, tail_, s), "canary");
  const size_t h = std::min(head_, kHeadCheck);
  if (h) KOPT_CU_CHECK(drv.cuMemsetD8Async(ptr_ - h, kPoisonByte, h, s), "canary");
}
/// The canary regions, tail first: {address, bytes}; empty ones omitted.
/// Checked on the GPU against poison (Worker::collect).
std::vector<std::pair<CUdeviceptr, size_t>> GuardedBuffer::canaries() const {
  std::vector<std::pair<CUdeviceptr, size_t>> r;
  if (tail_) r.emplace_back(ptr_ + bytes_, tail_);
  const size_t h = std::min(head_, kHeadCheck);
  if (h) r.emplace_back(ptr_ - h, h);
  return r;
}

void Worker::poison_shared() {
  unsigned words = static_cast<unsigned>(poison_smem_bytes_ / 4);
  void* args[] = {&words};
  KOPT_CU_CHECK(driver_->cuLaunchKernel(poison_fn_, static_cast<unsigned>(info_.sm_count * 2), 1, 1, 1024, 1, 1,
                                        static_cast<unsigned>(poison_smem_bytes_), stream_, args, nullptr),
                "poisoning shared memory");
}

/// The candidate's guarded buffers for a case: slot 0 serves trials 1-2,
/// slot 1 trial 3 and the timing, so trial 3 runs at other addresses. Sets
/// are kept for the next candidates while they fit in an eighth of the
/// device's memory (fresh mappings otherwise); either way every byte,
/// canaries included, is poisoned again before use, as a fresh set is.
/// When a candidate's buffer sizes differ from the kept set's (a count that
/// depends on a tuning parameter, such as the reduction's partial sums),
/// only the buffers whose size changed are mapped anew: the others (the
/// reduction's 3.2 GB input) keep their mappings, poisoned again like the
/// new ones.
BufferSet* Worker::acquire(const CaseSpec& c, int slot, std::unique_ptr<BufferSet>& owner) {
  const std::string k = c.name + "#slot" + std::to_string(slot);
  auto it = pool_.find(k);
  if (it != pool_.end() && it->second->args_signature == signature_of(c)) {
    BufferSet& set = *it->second;
    for (const auto& b : set.buffers)
      if (b) {
        KOPT_CU_CHECK(driver_->cuMemsetD8Async(b->ptr(), kPoisonByte, b->bytes(), stream_), "poison");
        b->reset_canaries(stream_);
      }
    return &set;
  }
  std::map<size_t, std::unique_ptr<GuardedBuffer>> reuse;
  if (it != pool_.end()) {
    sync_harness("releasing buffers");
    pool_bytes_ -= it->second->bytes;
    BufferSet& old = *it->second;
    for (size_t i = 0; i < c.args.size() && i < old.buffers.size(); ++i) {
      const ArgSpec& a = c.args[i];
      if (a.is_buffer && old.buffers[i] && i < old.arg_names.size() && old.arg_names[i] == a.name &&
          old.buffers[i]->bytes() == static_cast<size_t>(a.count) * spec::dtype_size(a.dtype))
        reuse[i] = std::move(old.buffers[i]);
    }
    pool_.erase(it);  // the rest is unmapped before the new mappings are made
  }
  auto set = allocate(c, std::move(reuse));
  if (pool_bytes_ + set->bytes <= pool_limit_bytes_) {
    pool_bytes_ += set->bytes;
    BufferSet* p = set.get();
    pool_[k] = std::move(set);
    return p;
  }
  owner = std::move(set);
  return owner.get();
}
std::string Worker::signature_of(const CaseSpec& c) {
  std::string sig;
  for (const auto& a : c.args)
    if (a.is_buffer)
      sig += a.name + ":" + spec::role_name(a.role) + ":" +
             std::to_string(a.count * static_cast<int64_t>(spec::dtype_size(a.dtype))) + ";";
  return sig;
}

/// Allocates the candidate's guarded buffers for a case.
std::unique_ptr<BufferSet> Worker::allocate(const CaseSpec& c,
                                            std::map<size_t, std::unique_ptr<GuardedBuffer>> reuse) {
  auto set = std::make_unique<BufferSet>();
  set->args_signature = signature_of(c);
  for (size_t i = 0; i < c.args.size(); ++i) {
    const ArgSpec& a = c.args[i];
    set->arg_names.push_back(a.name);
    if (!a.is_buffer) {
      set->buffers.emplace_back();
      continue;
    }
    const size_t bytes = static_cast<size_t>(a.count) * spec::dtype_size(a.dtype);
    auto kept = reuse.find(i);
    if (kept != reuse.end() && kept->second && kept->second->bytes() == bytes)
      set->buffers.push_back(std::move(kept->second));
    else
      set->buffers.push_back(std::make_unique<GuardedBuffer>(bytes, device_ordinal_, granularity_));
    set->bytes += bytes;
    if (a.role == spec::Role::inout) {
      set->pristine.emplace_back(bytes);
      set->bytes += bytes;
    }
  }
  // Fresh mappings: fill everything (canaries included) with poison once.
  for (const auto& b : set->buffers)
    if (b) {
      KOPT_CU_CHECK(driver_->cuMemsetD8Async(b->ptr(), kPoisonByte, b->bytes(), stream_), "poison");
      b->reset_canaries(stream_);
    }
  return set;
}

std::vector<CUdeviceptr> Worker::pointers(const BufferSet& s) {
  std::vector<CUdeviceptr> p;
  for (const auto& b : s.buffers) p.push_back(b ? b->ptr() : 0);
  return p;
}

/// Writes a trial's inputs into the buffers (and the inout pristine copies):
/// device-to-device copies from the trial's device-resident inputs, ordered
/// on the worker's stream.
void Worker::upload(const CaseSpec& c, BufferSet& s, const HostInputs& in) {
  size_t pristine = 0;
  for (size_t i = 0; i < c.args.size(); ++i) {
    const ArgSpec& a = c.args[i];
    if (!a.is_buffer || a.role == spec::Role::output) continue;
    const DeviceMemory& data = in.device.at(a.name);
    KOPT_CU_CHECK(driver_->cuMemcpyDtoDAsync(s.buffers[i]->ptr(), data.get(), data.bytes(), stream_),
                  "uploading " + a.name);
    if (a.role == spec::Role::inout)
      KOPT_CU_CHECK(driver_->cuMemcpyDtoDAsync(s.pristine[pristine++].get(), data.get(), data.bytes(), stream_),
                    "uploading " + a.name);
  }
}

/// Before each candidate launch: poison outputs, restore inouts, reset canaries.
/// `reset_canaries` false: leave the canaries as they are, so that an
/// overrun in any of a series of launches (the timed ones) still shows at
/// the end.
void Worker::prepare(const CaseSpec& c, BufferSet& s, bool reset_canaries) {
  size_t pristine = 0;
  for (size_t i = 0; i < c.args.size(); ++i) {
    const ArgSpec& a = c.args[i];
    if (!a.is_buffer) continue;
    GuardedBuffer& b = *s.buffers[i];
    if (a.role == spec::Role::output)
      KOPT_CU_CHECK(driver_->cuMemsetD8Async(b.ptr(), kPoisonByte, b.bytes(), stream_), "poisoning " + a.name);
    else if (a.role == spec::Role::inout)
      KOPT_CU_CHECK(driver_->cuMemcpyDtoDAsync(b.ptr(), s.pristine[pristine++].get(), b.bytes(), stream_),
                    "restoring " + a.name);
    if (reset_canaries) b.reset_canaries(stream_);
  }
}

/// A device scratch buffer of at least `bytes`, kept between candidates.
DeviceMemory& Worker::scratch(const std::string& key, size_t bytes) {
  auto it = scratch_.find(key);
  if (it != scratch_.end() && it->second.bytes() >= bytes) return it->second;
  if (it != scratch_.end()) {
    sync_harness("releasing scratch memory");
    scratch_.erase(it);
  }
  return scratch_.emplace(key, DeviceMemory(bytes)).first->second;
}

}  // namespace kopt::eval::detail

// Warp specialization of sgemm_tf32_wgmma.cu (WS = 1), the device part: the mbarriers, the
// producer's and the consumers' k loops (the protocol is described in sgemm_tf32_wgmma_ws.cuh).
// Included inside the template's namespace tf32wg after its own main loop, whose pieces it uses
// (load_raw, split_items, tile_chains, fold). kopt expands it into the template (docs/
// spec-format.md, "Local includes"); no include guard, so that a file may include the template once
// per variant.

using P = WsPipe<L>;

__device__ __forceinline__ void mbar_init(unsigned bar, unsigned count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(bar), "r"(count) : "memory");
}
// Arrival (release at CTA scope: this thread's earlier reads and writes, and what it has observed,
// happen before the phase completes for a waiter).
__device__ __forceinline__ void mbar_arrive(unsigned bar) {
  asm volatile("{\n.reg .b64 st;\nmbarrier.arrive.shared::cta.b64 st, [%0];\n}\n" ::"r"(bar) : "memory");
}
// Returns once the phase of the given parity has completed (acquire at CTA scope). A diagnostic
// build (-DTF32WG_WAIT_TRAP=<tries>, e.g. 100000000) prints the waiting block, thread, barrier and
// parity after that many failed tries and traps, so that a hang shows which wait it is (for
// diagnosis only: the printf call makes ptxas serialize the wgmma and spill).
#ifndef TF32WG_WAIT_TRAP
__device__ __forceinline__ void mbar_wait(unsigned bar, unsigned parity) {
  asm volatile(
      "{\n.reg .pred done;\nTF32WG_WAIT:\n"
      "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n"
      "@!done bra TF32WG_WAIT;\n}\n" ::"r"(bar),
      "r"(parity)
      : "memory");
}
#else
__device__ __forceinline__ void mbar_wait(unsigned bar, unsigned parity) {
  for (long long tries = 0;; ++tries) {
    unsigned done;
    asm volatile(
        "{\n.reg .pred p;\nmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\nselp.u32 %0, 1, 0, p;\n}\n"
        : "=r"(done)
        : "r"(bar), "r"(parity)
        : "memory");
    if (done) return;
    if (tries == static_cast<long long>(TF32WG_WAIT_TRAP)) {
      // The base is 1024-aligned: the barrier's number from its address alone.
      const int id = static_cast<int>(((bar - static_cast<unsigned>(P::kBarBase)) & 1023u) / 8u);
      printf("tf32wg: block (%d, %d) thread %d: no phase of parity %u on mbarrier %d (full 0..%d, op_empty, raw_empty)\n",
             static_cast<int>(blockIdx.x), static_cast<int>(blockIdx.y), static_cast<int>(threadIdx.x), parity, id,
             P::kBufs - 1);
      __trap();
    }
  }
}
#endif
// The producer warpgroup's own barrier (named barrier 1, its 128 threads).
__device__ __forceinline__ void producer_sync() { asm volatile("bar.sync 1, 128;\n" ::: "memory"); }
template <int kRegs>
__device__ __forceinline__ void regs_dec() {
  asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(kRegs));
}
template <int kRegs>
__device__ __forceinline__ void regs_inc() {
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(kRegs));
}

// Thread 0 initializes every mbarrier; the block barrier after it makes them visible to all.
__device__ __forceinline__ void ws_init(const Ctx& c) {
  if (c.tid == 0) {
    for (int b = 0; b < P::kBufs; ++b) {
      mbar_init(c.sbase + P::full(b), P::kFullCount);
      mbar_init(c.sbase + P::op_empty(b), P::kEmptyCount);
    }
    for (int s = 0; s < STAGES; ++s) mbar_init(c.sbase + P::raw_empty(s), P::kEmptyCount);
  }
  __syncthreads();
}

// The producer warpgroup over k-tiles [t0, t1); c.tid is its thread 0..127.
__device__ __forceinline__ void ws_producer(const Ctx& c, int t0, int t1) {
  const int n = t1 - t0;
  const bool lane0 = (c.tid & 31) == 0;
#pragma unroll
  for (int s = 0; s < L::kAhead; ++s) {
    if (s < n) load_raw(c, t0 + s, s);
    cp_async_commit();
  }
  int stage = 0, buf = 0;         // of tile t
  int jstage = L::kAhead % STAGES;  // of raw tile t + kAhead: the stage of tile t - 1
  for (int t = 0; t < n; ++t) {
    cp_async_wait<L::kAhead - 1>();  // this thread's copies of tile t (groups ..t+kAhead-1; newest kAhead-1 may pend)
    producer_sync();
    mbar_wait(c.sbase + P::op_empty(buf), P::op_empty_parity(t));
    split_items<0, kItems>(c, stage, buf);
    fence_proxy_async();
    __syncwarp();
    if (lane0) mbar_arrive(c.sbase + P::full(buf));
    const int j = t + L::kAhead;
    if (j < n) {
      mbar_wait(c.sbase + P::raw_empty(jstage), P::raw_empty_parity(j));
      load_raw(c, t0 + j, jstage);
    }
    cp_async_commit();
    stage = stage + 1 == STAGES ? 0 : stage + 1;
    buf = buf + 1 == P::kBufs ? 0 : buf + 1;
    jstage = jstage + 1 == STAGES ? 0 : jstage + 1;
  }
  cp_async_wait<0>();  // only empty groups can be left
}

// A consumer warpgroup (wm, wn) over k-tiles [t0, t1) into acc: the same chains, sums and folds as
// mainloop().
__device__ __forceinline__ void ws_consumer(const Ctx& c, int t0, int t1, int wm, int wn, float (&acc)[kAcc]) {
  const int n = t1 - t0;
  const bool lane0 = (c.tid & 31) == 0;
  float part[kAcc], d[kAcc];
  unsigned ahi[KSTEP][4], alo[KSTEP][4];  // AREG: the A fragments of the chain in flight
  zero(part);
  zero(d);
  const int inner = L::inner_tiles(n, kChains);
  int left = inner;
  int stage = 0, buf = 0;
  for (int t = 0; t < n; ++t) {
    mbar_wait(c.sbase + P::full(buf), P::full_parity(t));
    tile_chains<0>(c, buf, buf, stage, stage, false, wm, wn, d, part, ahi, alo);  // every chain waited for
    __syncwarp();
    if (lane0) {
      mbar_arrive(c.sbase + P::op_empty(buf));
      mbar_arrive(c.sbase + P::raw_empty(stage));
    }
    if (--left == 0) {
      fold(acc, part);
      left = inner;
    }
    stage = stage + 1 == STAGES ? 0 : stage + 1;
    buf = buf + 1 == P::kBufs ? 0 : buf + 1;
  }
  fold(acc, part);
}

// The producer warpgroup's whole part (the kernel's threads kThreads ..): it gives up registers,
// copies and splits the block's k-tiles (with SPLITK, its rank's) and, with SPLITK, takes its
// share of the cluster's sum of the partial tiles that the consumers write (the same barriers in
// the same order as they: the branch is warpgroup-uniform).
__device__ __forceinline__ void ws_producer_role(const Ctx& c, float* __restrict__ C, int KT) {
  if constexpr (P::kSetMaxNReg) regs_dec<P::kProducerRegs>();
  Ctx p = c;
  p.tid = c.tid - L::kThreads;
#if SPLITK > 1
  const unsigned rank = sgemm_cluster::rank();
  int t0, t1;
  L::k_range(KT, static_cast<int>(rank), t0, t1);
  ws_producer(p, t0, t1);
  __syncthreads();        // the main loop is over in the block: the consumers write their partial tiles
  sgemm_cluster::sync();  // every rank's partial tile is written and visible cluster-wide
  splitk_store<L::kBM / SPLITK, L::kBN / 4, L::kLdc, L::kBlockThreads>(C, c.M, c.N, c.row0, c.col0, c.nvec, c.tid,
                                                                     rank, c.sbase);
  sgemm_cluster::sync();  // no block leaves while others still read its shared memory
#else
  (void)C;
  ws_producer(p, 0, KT);
#endif
}

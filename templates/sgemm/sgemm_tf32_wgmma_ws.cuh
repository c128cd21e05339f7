// Warp specialization of sgemm_tf32_wgmma.cu (WS = 1), the host-visible part: where the pipeline's
// mbarriers lie, the phase parity each wait names, how many arrivals complete a phase, and the
// register counts of the two roles. Included inside the template's namespace tf32wg after its
// Layout; the CPU tests (tests/unit/test_sgemm_tf32_wgmma.cpp) run the protocol below on these
// functions under random schedules. kopt expands it into the template (docs/spec-format.md, "Local
// includes"); it has no include guard, so that a file may include the template once per variant.
//
// ==== The roles (CUTLASS's sm90 "warp-specialized" kernels, with cp.async instead of TMA) ============
//
// The block is the WGM x WGN consumer warpgroups of the plain kernel (threads 0 .. 128 WGM WGN - 1,
// the same output tiles, chains and sums) and one producer warpgroup after them. The producer's 128
// threads issue every copy (cp.async, predicated and zero-filled as before: any M, N, K, no tensor
// map to pass through the launch) and split B (and A with AREG 0) into the operand buffers; the
// consumers only read their A fragments (AREG 1), issue the wgmma chains, wait, and add. No block
// barrier in the k loop: each consumer warpgroup runs at its own pace, so one adds while the
// other's chain is on the tensor cores. setmaxnreg moves registers from the producer (kProducerRegs)
// to the consumers (kConsumerRegs), who hold the three FP32 sets of sums.
//
// Why the block tile stays 128 x 128: every output holds three FP32 registers (the chain's tensor-
// core accumulator, the partial sum, the accumulator: the two-level sums that the 2x error contract
// needs), so the block tile is capped by the 65536 registers of an SM at 65536 / 3 outputs less
// what else the threads hold: 128 x 128 (49152 registers of sums) fits, 128 x 256 (98304) does not
// even without any other register. What warp specialization buys here is the copy and split work
// and the per-k-tile block barrier taken off the warpgroups that feed the tensor cores.
//
// ==== The pipeline (KT k-tiles; t counts the block's own k-tiles, 0 .. n - 1, as with SPLITK) ==========
//
// Raw tile t in raw stage t % STAGES, its split operands in operand buffer t % 2. AHEAD = STAGES - 1.
// Three arrays of mbarriers (mbarrier.try_wait.parity P returns once the phase of parity P has
// completed: at first phase 0 is under way, so a wait for parity 1 passes at once):
//   full[b]       B (and A) of tile t split into buffer b = t % 2 and raw A of tile t landed; one
//                 arrival per producer warp; the consumers wait for completion t / 2 (parity
//                 (t / 2) & 1).
//   op_empty[b]   the consumers' wgmma on buffer b are complete; one arrival per consumer warp; the
//                 producer's split of tile t waits for completion t / 2 - 1 (tile t - 2; parity
//                 ((t / 2) & 1) ^ 1: for t < 2 it passes at once).
//   raw_empty[s]  the consumers have read their A fragments from stage s; one arrival per consumer
//                 warp; the copy of raw tile j into stage j % STAGES waits for completion j / STAGES
//                 - 1 (tile j - STAGES; parity ((j / STAGES) & 1) ^ 1).
// Producer: raw tiles 0 .. AHEAD - 1 issued (one cp.async group each); per tile t: wait for its own
//   copies of tile t (cp.async.wait_group AHEAD - 1), a barrier of the 128 producer threads (bar.sync
//   1, 128: every producer thread's copies of tile t are visible to all of them, and every producer
//   thread has finished splitting tile t - 1, whose raw stage the next copy overwrites), wait
//   op_empty[t % 2], split tile t, fence.proxy.async (generic writes that wgmma reads), __syncwarp,
//   lane 0 arrives on full[t % 2]; then raw tile j = t + AHEAD: wait raw_empty[j % STAGES] (it held
//   tile t - 1), issue its copies; commit a group (also when j >= n, so the wait count holds).
// Consumer warpgroup: per tile t: wait full[t % 2]; its chains (A fragments from raw stage t %
//   STAGES, B from buffer t % 2), each waited for (wgmma.wait_group 0) and added; __syncwarp; lane 0
//   of each warp arrives on op_empty[t % 2] and raw_empty[t % STAGES]; the fold every P tiles.
// No wait sees a barrier two phases on: full[b] cannot complete again before every consumer warp
// has arrived on op_empty[b] for the tile it waits for, and each empty barrier cannot complete
// again before the producer has filled what it frees.

template <class L>
struct WsPipe {
  static constexpr int kBufs = L::kOpBufs, kStages = L::kStageCount;
  // The mbarriers (8 bytes each) after the main loop's shared memory and the split-K tile:
  // full[kBufs], op_empty[kBufs], raw_empty[kStages]; kBarBytes more bytes in the launch.
  static constexpr int kBarBytes = 128;
  static constexpr int kBarBase = L::kSmemBytes;
  static SGEMM_TF32_HD int full(int buf) { return kBarBase + 8 * buf; }
  static SGEMM_TF32_HD int op_empty(int buf) { return kBarBase + 8 * (kBufs + buf); }
  static SGEMM_TF32_HD int raw_empty(int stage) { return kBarBase + 8 * (2 * kBufs + stage); }
  static constexpr int kBarriers = 2 * kBufs + kStages;
  // Arrivals that complete a phase: one per producer warp (full), one per consumer warp (empties).
  static constexpr int kFullCount = 4, kEmptyCount = L::kThreads / 32;
  // The parity each wait names (see The pipeline): tile t's full, the op_empty before splitting
  // tile t, the raw_empty before copying raw tile j.
  static SGEMM_TF32_HD unsigned full_parity(int t) { return static_cast<unsigned>(t / kBufs) & 1u; }
  static SGEMM_TF32_HD unsigned op_empty_parity(int t) { return (static_cast<unsigned>(t / kBufs) & 1u) ^ 1u; }
  static SGEMM_TF32_HD unsigned raw_empty_parity(int j) { return (static_cast<unsigned>(j / kStages) & 1u) ^ 1u; }
  // Registers per thread. ptxas gives a kernel with setmaxnreg the most its launch bounds allow
  // (65536 / threads, a multiple of 8: 168 for 384 threads); setmaxnreg.dec takes the producer down
  // to kProducerRegs and setmaxnreg.inc the consumers up to what that frees (232 for two consumer
  // warpgroups, CUTLASS's 40 / 232 split). One consumer warpgroup (256 threads) has 255 without it.
  static constexpr int kLaunchRegs = 65536 / L::kBlockThreads / 8 * 8 > 255 ? 255 : 65536 / L::kBlockThreads / 8 * 8;
  static constexpr bool kSetMaxNReg = L::kWarpSpecialized != 0 && L::kThreads >= 256;
  static constexpr int kProducerRegs = 40;
  static constexpr int kConsumerFree = (kLaunchRegs * L::kBlockThreads - 128 * kProducerRegs) / L::kThreads / 8 * 8;
  static constexpr int kConsumerRegs = kConsumerFree > 256 ? 256 : kConsumerFree;
};

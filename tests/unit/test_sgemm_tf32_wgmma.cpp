// The wgmma split-TF32 SGEMM template (templates/sgemm/sgemm_tf32_wgmma.cu) on the CPU, no GPU:
//   - its matrix descriptors, packed as the PTX ISA's "Matrix Descriptor Format" says;
//   - where the tensor core reads each element of a K-major operand, from a model of the canonical
//     layouts (PTX ISA "Shared Memory Matrix Layout"; CUTLASS's GMMA K-major layouts: no swizzle,
//     64- and 128-byte swizzle) that decodes the descriptor bits alone, against where the splitting
//     threads wrote that element;
//   - the copies and the split covering every tile once, and the shared-memory banks of each access;
//   - the whole kernel emulated (blocks, predicated copies, raw stages, the split into two operand
//     buffers, every wgmma read through the descriptor model, the accumulator fragment, the
//     two-level sums, guarded stores) on odd shapes, against FP64 with the spec's tolerance;
//   - the error of its chains in the truncating-adder model of tests/unit/tf32_model.h, per KSTEP;
//   - the warp-specialized pipeline (WS, sgemm_tf32_wgmma_ws.cuh): its producer/consumer protocol
//     on a model of the mbarriers under random schedules (no deadlock, no stage or buffer
//     overwritten while a warp reads it, every warp reads the tile it expects), its register split;
//   - the spec (templates/sgemm/sgemm_tf32_wgmma.json) and NVRTC: the seeds compile for sm_90a with
//     the file's own options line, and for any other target the file refuses to compile.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli_run.h"
#include "spec/kernel_file.h"
#include "spec/launch.h"
#include "temp_dir.h"
#include "template_spec.h"
#include "tf32_model.h"

// The template's host-visible part: struct tf32wg::Layout. Its parameter macros are dropped after.
#include "../../templates/sgemm/sgemm_tf32_wgmma.cu"
#undef WGM
#undef WGN
#undef WN
#undef BK
#undef STAGES
#undef KSTEP
#undef LAYOUT
#undef SWZ
#undef MINB
#undef DBUF
#undef AREG
#undef SPLITK
#undef DEFER
#undef WS

namespace {

using namespace kopt::test::tf32;  // tf32_rn, split, tc_mma, ErrStats, draw, ...

// ---- the descriptors and the tensor core's reads -------------------------------------------------

struct Desc {
  uint32_t start, lbo, sbo, base_offset, mode;
  uint64_t rest;  // every bit outside the fields: must be 0
};
Desc decode(uint64_t d) {
  return {static_cast<uint32_t>(d & 0x3FFF) << 4, static_cast<uint32_t>((d >> 16) & 0x3FFF) << 4,
          static_cast<uint32_t>((d >> 32) & 0x3FFF) << 4, static_cast<uint32_t>((d >> 49) & 7),
          static_cast<uint32_t>(d >> 62), d & ~((0x3FFFull) | (0x3FFFull << 16) | (0x3FFFull << 32) | (7ull << 49) | (3ull << 62))};
}

// The shared-memory byte address the tensor core reads for element (row i, k j), j < 8, of a K-major
// TF32 operand with descriptor d. In 16-byte units CUTLASS writes the canonical K-major layouts as
//   no swizzle:  ((8, m), 2) : ((1, SBO), LBO)   rows of one core matrix 16 bytes apart
//   32/64/128-byte swizzle: ((8, m), 2) : ((W/16, SBO), 1) o Swizzle<b, 4, 3>, row pitch W
// with Swizzle<b, 4, 3> applied to the address: bits [4, 4 + b) ^= bits [7, 7 + b), b = 1, 2, 3.
uint32_t hw_addr(uint64_t d, int i, int j) {
  const Desc x = decode(d);
  if (x.mode == 0) return x.start + (i / 8) * x.sbo + (i % 8) * 16 + (j / 4) * x.lbo + (j % 4) * 4;
  const uint32_t width = x.mode == 1 ? 128 : x.mode == 2 ? 64 : 32;
  const uint32_t linear = x.start + (i / 8) * x.sbo + (i % 8) * width + (j / 4) * 16 + (j % 4) * 4;
  const uint32_t b = x.mode == 1 ? 7 : x.mode == 2 ? 3 : 1;
  return linear ^ (((linear >> 7) & b) << 4);
}

// Every element of every wgmma operand (the warpgroups' A rows 64 wm .. 64 wm + 63 and B rows
// WN wn .. WN wn + WN - 1, each k step, both buffers, hi and lo) is read from where the split wrote
// it, and the descriptors carry nothing but their fields.
template <class L>
void check_operand_reads() {
  const uint32_t base = 5 * 1024;  // a 1024-aligned shared-memory base other than 0
  for (int buf = 0; buf < L::kOpBufs; ++buf)
    for (int op = L::kARegs ? 2 : 0; op < 4; ++op) {  // A hi, A lo (not with AREG), B hi, B lo
      const bool is_a = op < 2;
      const int rows = is_a ? L::kBM : L::kBN, width = is_a ? 64 : L::kOpN;
      const int tile = op == 0 ? L::op_ahi(buf) : op == 1 ? L::op_alo(buf) : op == 2 ? L::op_bhi(buf) : L::op_blo(buf);
      ASSERT_EQ((base + static_cast<uint32_t>(tile)) % 1024, 0u) << "an operand tile starts on a swizzle atom";
      for (int r0 = 0; r0 < rows; r0 += width)
        for (int s = 0; s < L::kSteps; ++s) {
          const uint64_t d = L::desc(base + static_cast<uint32_t>(tile), rows, r0, s);
          const Desc x = decode(d);
          ASSERT_EQ(x.rest, 0u);
          ASSERT_EQ(x.base_offset, 0u);
          ASSERT_LT(base + static_cast<uint32_t>(L::kSmemBytes), 1u << 18) << "addresses fit the 14 bits of a descriptor (>> 4)";
          for (int i = 0; i < width; ++i)
            for (int j = 0; j < 8; ++j) {
              const int k = 8 * s + j;
              const uint32_t want = base + static_cast<uint32_t>(tile + L::op_chunk(rows, r0 + i, k / 4) + 4 * (k % 4));
              ASSERT_EQ(hw_addr(d, i, j), want) << "operand " << op << " rows " << rows << " r0 " << r0 << " step " << s
                                                << " element (" << i << ", " << j << ")";
            }
        }
    }
}

// 16-byte accesses are served a quarter warp (8 lanes) at a time: conflict-free when the 8
// addresses fall in 8 different 16-byte bank groups. 4-byte ones a warp at a time: 32 banks.
bool conflict_free16(const std::vector<uint32_t>& addr8) {
  std::set<uint32_t> g;
  for (uint32_t a : addr8) g.insert((a >> 4) & 7);
  return g.size() == addr8.size();
}
bool conflict_free4(const std::vector<uint32_t>& addr32) {
  std::set<uint32_t> b;
  for (uint32_t a : addr32) b.insert((a >> 2) & 31);
  return b.size() == addr32.size();
}

// The copies and the split cover every element of a tile exactly once, and every shared-memory
// access of both is free of bank conflicts.
template <class L>
void check_coverage_and_banks() {
  using Counts = std::map<std::pair<int, int>, int>;
  Counts raw_a, raw_b, split_a, split_b;
  // Each thread's `items` items of an operand: the element (row, chunk) its copy and its split
  // each reach, counted.
  auto count = [](int items, void (*copy)(int, int, int&, int&), void (*split)(int, int, int&, int&), Counts& raw,
                  Counts& split_counts) {
    for (int tid = 0; tid < L::kCopyThreads; ++tid)
      for (int l = 0; l < items; ++l) {
        int x, y;
        copy(tid, l, x, y);
        ++raw[{x, y}];
        split(tid, l, x, y);
        ++split_counts[{x, y}];
      }
  };
  count(L::kItemsA, L::copy_a, L::split_a, raw_a, split_a);  // (r, c) both
  count(L::kItemsB, L::copy_b, L::split_b, raw_b, split_b);  // copy (k, n), split (n, k)
  ASSERT_EQ(raw_a.size(), static_cast<size_t>(L::kBM * L::kChunks));
  ASSERT_EQ(split_a.size(), static_cast<size_t>(L::kBM * L::kChunks));
  ASSERT_EQ(raw_b.size(), static_cast<size_t>(L::kTileK * L::kBN / 4));
  ASSERT_EQ(split_b.size(), static_cast<size_t>(L::kBN * L::kChunks));
  for (const auto* m : {&raw_a, &raw_b, &split_a, &split_b})
    for (const auto& [key, count] : *m) {
      ASSERT_EQ(count, 1);
      (void)key;
    }
  for (const auto& [key, count] : raw_a) ASSERT_TRUE(key.first < L::kBM && key.second < L::kChunks);
  for (const auto& [key, count] : raw_b) ASSERT_TRUE(key.first < L::kTileK && key.second < L::kBN && key.second % 4 == 0);
  for (const auto& [key, count] : split_b) ASSERT_TRUE(key.first < L::kBN && key.second < L::kChunks);
  // Banks, per quarter warp (16-byte accesses) and per warp (the 4-byte reads of raw B).
  for (int l = 0; l < std::max(L::kItemsA, L::kItemsB); ++l)
    for (int q = 0; q < L::kCopyThreads; q += 8) {
      std::vector<uint32_t> ca, cb, ra, wa, wb;
      for (int tid = q; tid < q + 8; ++tid) {
        int r, c, k, n;
        if (l < L::kItemsA) {
          L::copy_a(tid, l, r, c);
          ca.push_back(static_cast<uint32_t>(L::raw_a(1) + L::raw_a_chunk(r, c)));
          L::split_a(tid, l, r, c);
          ra.push_back(static_cast<uint32_t>(L::raw_a(1) + L::raw_a_chunk(r, c)));
          wa.push_back(static_cast<uint32_t>(L::op_alo(1) + L::op_chunk(L::kBM, r, c)));
        }
        if (l < L::kItemsB) {
          L::copy_b(tid, l, k, n);
          cb.push_back(static_cast<uint32_t>(L::raw_b(1) + L::raw_b_at(k, n)));
          L::split_b(tid, l, n, c);
          wb.push_back(static_cast<uint32_t>(L::op_bhi(1) + L::op_chunk(L::kBN, n, c)));
        }
      }
      const std::string where = "item " + std::to_string(l) + ", threads " + std::to_string(q) + "..";
      if (l < L::kItemsA) {
        EXPECT_TRUE(conflict_free16(ca)) << "cp.async A " << where;
        EXPECT_TRUE(conflict_free16(ra)) << "split read A " << where;
        EXPECT_TRUE(conflict_free16(wa)) << "split write A " << where;
      }
      if (l < L::kItemsB) {
        EXPECT_TRUE(conflict_free16(cb)) << "cp.async B " << where;
        EXPECT_TRUE(conflict_free16(wb)) << "split write B " << where;
      }
    }
  for (int l = 0; l < L::kItemsB; ++l)
    for (int w = 0; w < L::kCopyThreads; w += 32)
      for (int e = 0; e < 4; ++e) {
        std::vector<uint32_t> rb;
        for (int tid = w; tid < w + 32; ++tid) {
          int n, c;
          L::split_b(tid, l, n, c);
          rb.push_back(static_cast<uint32_t>(L::raw_b(0) + L::raw_b_at(4 * c + e, n)));
        }
        EXPECT_TRUE(conflict_free4(rb)) << "split read B, item " << l << ", warp " << w / 32;
      }
}

// The accumulator fragment covers each warpgroup's 64 x WN tile once.
template <class L>
void check_fragment() {
  std::set<std::pair<int, int>> seen;
  for (int w = 0; w < 4; ++w)
    for (int lane = 0; lane < 32; ++lane)
      for (int v = 0; v < L::kOpN / 2; ++v) {
        const int r = L::d_row(w, lane, v), c = L::d_col(lane, v);
        ASSERT_TRUE(r >= 0 && r < 64 && c >= 0 && c < L::kOpN);
        ASSERT_TRUE(seen.insert({r, c}).second) << r << ", " << c;
      }
  ASSERT_EQ(seen.size(), static_cast<size_t>(64 * L::kOpN));
}

// AREG: the A fragment of each k step covers the warpgroup's 64 x 8 operand once, every register
// is read from the raw stage where the copy put that element, and each warp-wide 4-byte read is
// free of bank conflicts (8 rows x 4 k of the swizzled rows).
template <class L>
void check_a_fragment() {
  for (int r0 = 0; r0 < L::kBM; r0 += 64)
    for (int s = 0; s < L::kSteps; ++s) {
      std::set<std::pair<int, int>> seen;
      for (int w = 0; w < 4; ++w)
        for (int v = 0; v < 4; ++v) {
          std::vector<uint32_t> addr;
          for (int lane = 0; lane < 32; ++lane) {
            const int r = L::a_frag_row(w, lane, v), k = L::a_frag_k(lane, v, s);
            ASSERT_TRUE(r >= 0 && r < 64 && k >= 8 * s && k < 8 * s + 8) << r << ", " << k;
            ASSERT_TRUE(seen.insert({r, k}).second) << r << ", " << k;
            const int at = L::a_frag_at(r0, w, lane, v, s);
            ASSERT_EQ(at, L::raw_a_chunk(r0 + r, k / 4) + 4 * (k % 4));
            addr.push_back(static_cast<uint32_t>(L::raw_a(1) + at));
          }
          EXPECT_TRUE(conflict_free4(addr)) << "A fragment read, step " << s << ", warp " << w << ", register " << v;
        }
      ASSERT_EQ(seen.size(), 64u * 8u);
    }
}

// Configurations: (WGM, WGN, WN, BK, STAGES, LAYOUT, SWZ[, AREG, SPLITK]).
using Big = tf32wg::Layout<2, 1, 128, 32, 3, 1, 8>;       // the 128x128 seed, 128-byte swizzle
using Wide = tf32wg::Layout<1, 2, 128, 16, 4, 1, 8>;      // 64x256, 64-byte swizzle
using Inter = tf32wg::Layout<2, 1, 64, 32, 2, 0, 1>;      // no swizzle (interleaved core matrices)
using Four = tf32wg::Layout<2, 2, 32, 32, 2, 1, 1>;       // four warpgroups, WN 32
using Odd = tf32wg::Layout<1, 1, 96, 16, 3, 0, 8>;        // WN 96, BK 16, interleaved
using BigR = tf32wg::Layout<2, 1, 128, 32, 3, 1, 8, 1>;   // 128x128, A from registers
using WideR = tf32wg::Layout<1, 2, 128, 16, 4, 1, 8, 1>;  // 64x256, BK 16, A from registers
using BigR2 = tf32wg::Layout<2, 1, 128, 32, 3, 1, 8, 1, 2>;  // A from registers, split-K 2
using FourK4 = tf32wg::Layout<2, 2, 32, 32, 2, 1, 1, 0, 4>;  // four warpgroups, split-K 4
using OddR8 = tf32wg::Layout<1, 1, 96, 16, 3, 0, 8, 1, 8>;   // interleaved, A from registers, split-K 8
using BigRD = tf32wg::Layout<2, 1, 128, 32, 3, 1, 8, 1, 1, 1>;  // A from registers, last chain deferred
using BigRD2 = tf32wg::Layout<2, 1, 128, 32, 3, 1, 8, 1, 2, 1>;  // the same with split-K 2
using InterD = tf32wg::Layout<2, 1, 64, 32, 2, 0, 1, 0, 1, 1>;  // A from shared memory, deferred, 2 stages
// Warp-specialized (WS 1): a producer warpgroup copies and splits, 128 copying threads.
using BigWs = tf32wg::Layout<2, 1, 128, 32, 4, 1, 8, 1, 1, 0, 1>;   // A from registers, 4 stages
using BigWs5 = tf32wg::Layout<2, 1, 128, 32, 5, 1, 8, 1, 1, 0, 1>;  // 5 stages
using BigWsS = tf32wg::Layout<2, 1, 128, 32, 3, 1, 8, 0, 1, 0, 1>;  // A from shared memory (the producer splits it)
using BigWs2 = tf32wg::Layout<2, 1, 128, 32, 4, 1, 8, 1, 2, 0, 1>;  // split-K 2
using OneWs = tf32wg::Layout<1, 1, 64, 16, 3, 0, 1, 1, 1, 0, 1>;    // one consumer warpgroup, interleaved
using InterWs = tf32wg::Layout<2, 1, 64, 32, 2, 0, 1, 0, 1, 0, 1>;  // A from shared memory, 2 stages

TEST(Tf32WgmmaLayout, DescriptorsPackTheirFields) {
  const uint64_t d = Big::desc(0x12340, Big::kBM, 64, 2);
  const Desc x = decode(d);
  EXPECT_EQ(x.start, 0x12340u + 64u * 128u + 64u);
  EXPECT_EQ(x.sbo, 1024u);
  EXPECT_EQ(x.lbo, 16u);
  EXPECT_EQ(x.mode, 1u);  // 128-byte swizzle
  EXPECT_EQ(decode(Wide::desc(0x8000, Wide::kBN, 128, 1)).mode, 2u);  // 64-byte swizzle
  EXPECT_EQ(decode(Wide::desc(0x8000, Wide::kBN, 128, 1)).sbo, 512u);
  const Desc i = decode(Inter::desc(0x4000, Inter::kBM, 64, 3));
  EXPECT_EQ(i.mode, 0u);
  EXPECT_EQ(i.lbo, 16u * Inter::kBM);
  EXPECT_EQ(i.sbo, 128u);
  EXPECT_EQ(i.start, 0x4000u + 16u * 64u + 6u * 16u * Inter::kBM);
  EXPECT_EQ(x.rest, 0u);
}

TEST(Tf32WgmmaLayout, TheTensorCoreReadsEveryOperandElementWhereTheSplitWroteIt) {
  check_operand_reads<Big>();
  check_operand_reads<Wide>();
  check_operand_reads<Inter>();
  check_operand_reads<Four>();
  check_operand_reads<Odd>();
  check_operand_reads<BigR>();
  check_operand_reads<WideR>();
  check_operand_reads<OddR8>();
  check_operand_reads<BigRD>();
  check_operand_reads<InterD>();
}

TEST(Tf32WgmmaLayout, RegisterAFragmentsCoverTheOperandFromTheRawStageWithoutBankConflicts) {
  check_a_fragment<BigR>();
  check_a_fragment<WideR>();
  check_a_fragment<OddR8>();
  EXPECT_EQ(BigR::kAhead, 2);
  EXPECT_EQ(Big::kAhead, 3);
  // Without A's operand buffers: 64 KB less for the 128x128x32 block; the split-K partial tile fits
  // in what the main loop uses.
  EXPECT_EQ(Big::kSmemBytes - BigR::kSmemBytes, 2 * 2 * 128 * 32 * 4);
  EXPECT_EQ(BigR2::kSmemBytes, BigR::kSmemBytes);
  EXPECT_GE(OddR8::kSmemBytes, 64 * (96 + 8) * 4);
}

TEST(Tf32WgmmaLayout, SplitKRangesPartitionTheKTilesInOrder) {
  for (const int kt : {1, 2, 3, 7, 8, 9, 63, 64, 15626}) {
    int next = 0;
    for (int r = 0; r < 8; ++r) {
      int first, last;
      OddR8::k_range(kt, r, first, last);
      ASSERT_EQ(first, next) << kt << " rank " << r;
      ASSERT_LE(first, last) << kt << " rank " << r;
      ASSERT_LE(last - first, (kt + 7) / 8) << kt << " rank " << r;
      next = last;
    }
    EXPECT_EQ(next, kt);
  }
}

TEST(Tf32WgmmaLayout, CopiesAndSplitCoverEachTileOnceWithoutBankConflicts) {
  check_coverage_and_banks<Big>();
  check_coverage_and_banks<Wide>();
  check_coverage_and_banks<Inter>();
  check_coverage_and_banks<Four>();
  check_coverage_and_banks<Odd>();
}

TEST(Tf32WgmmaLayout, AccumulatorFragmentCoversTheWarpgroupTile) {
  check_fragment<Big>();
  check_fragment<Four>();
  check_fragment<Odd>();
}

TEST(Tf32WgmmaLayout, RasterizationIsOneToOneAndInnerLevelIsTheRoundedSquareRoot) {
  for (const auto& [gx, gy] : std::vector<std::pair<int, int>>{{1, 1}, {7, 3}, {16, 32}, {5, 17}, {64, 9}})
    ASSERT_TRUE(rasterization_one_to_one(gx, gy, &Big::tile_of)) << gx << "x" << gy;
  for (const int ch : {1, 2, 4})
    for (int kt = 1; kt <= 100000; kt += (kt < 1000 ? 1 : 997))
      EXPECT_EQ(Big::inner_tiles(kt, ch), std::max(1, static_cast<int>(std::lround(std::sqrt(static_cast<double>(kt) / ch)))))
          << kt << " " << ch;
}

// ---- the whole kernel, emulated ---------------------------------------------------------------------

// Shared memory as bytes at absolute addresses (the base 1024-aligned, not 0), filled with NaN so
// that a read of anything the kernel did not write spoils the result.
struct Smem {
  uint32_t base = 3 * 1024;
  std::vector<uint8_t> bytes;
  explicit Smem(int size) : bytes(static_cast<size_t>(3 * 1024 + size), 0xFF) {}
  float ld(uint32_t a) const {
    float x;
    std::memcpy(&x, &bytes.at(a), 4);
    return x;
  }
  void st(uint32_t a, float x) { std::memcpy(&bytes.at(a), &x, 4); }
};

// The A operands of one chain: per k step j of it, lo and hi (64 x 8 each).
struct ChainA {
  std::vector<float> v;
  float& at(int j, bool hi, int i, int k) { return v[static_cast<size_t>(((2 * j + hi) * 64 + i) * 8 + k)]; }
  float at(int j, bool hi, int i, int k) const { return v[static_cast<size_t>(((2 * j + hi) * 64 + i) * 8 + k)]; }
};
// Chain q's A operands for warpgroup row wm: with AREG the fragment registers (read from raw stage
// `stage` and split as the kernel splits them), else the tensor core's reads of operand buffer buf.
template <class L, int kKstep>
ChainA chain_a(const Smem& sm, int wm, int buf, int stage, int q) {
  ChainA a;
  a.v.assign(static_cast<size_t>(kKstep) * 2 * 64 * 8, NAN);
  const uint32_t sb = sm.base;
  for (int j = 0; j < kKstep; ++j) {
    const int s = q * kKstep + j;
    if (L::kARegs) {
      for (int w = 0; w < 4; ++w)
        for (int lane = 0; lane < 32; ++lane)
          for (int v = 0; v < 4; ++v) {
            const Split x = split(sm.ld(sb + L::raw_a(stage) + L::a_frag_at(64 * wm, w, lane, v, s)), 2);
            const int i = L::a_frag_row(w, lane, v), k = L::a_frag_k(lane, v, s) - 8 * s;
            a.at(j, true, i, k) = x.hi;
            a.at(j, false, i, k) = x.lo;
          }
    } else {
      for (const bool hi : {false, true}) {
        const uint64_t da = L::desc(sb + (hi ? L::op_ahi(buf) : L::op_alo(buf)), L::kBM, 64 * wm, s);
        for (int i = 0; i < 64; ++i)
          for (int k = 0; k < 8; ++k) a.at(j, hi, i, k) = sm.ld(hw_addr(da, i, k));
      }
    }
  }
  return a;
}
// Chain q of warpgroup wg on operand buffer buf: lo_a*hi_b and hi_a*lo_b of every step, then
// hi_a*hi_b, B read through the descriptors now, summed exactly and rounded once, added to part
// through the accumulator fragment.
template <class L, int kKstep>
void run_chain(const Smem& sm, int wg, int buf, int q, const ChainA& a, std::vector<float>& part) {
  constexpr int kAcc = L::kOpN / 2, kWGN = L::kBN / L::kOpN;
  const int wn = wg % kWGN;
  const uint32_t sb = sm.base;
  std::vector<double> d(static_cast<size_t>(64 * L::kOpN), 0.0);
  auto wgmma = [&](int j, bool a_hi, int b_tile) {
    const uint64_t db = L::desc(sb + b_tile, L::kBN, L::kOpN * wn, q * kKstep + j);
    for (int i = 0; i < 64; ++i)
      for (int nn = 0; nn < L::kOpN; ++nn)
        for (int k = 0; k < 8; ++k)
          d[static_cast<size_t>(i * L::kOpN + nn)] += static_cast<double>(a.at(j, a_hi, i, k)) * sm.ld(hw_addr(db, nn, k));
  };
  for (int j = 0; j < kKstep; ++j) {
    wgmma(j, false, L::op_bhi(buf));
    wgmma(j, true, L::op_blo(buf));
  }
  for (int j = 0; j < kKstep; ++j) wgmma(j, true, L::op_bhi(buf));
  for (int w = 0; w < 4; ++w)
    for (int lane = 0; lane < 32; ++lane)
      for (int v = 0; v < kAcc; ++v)
        part[static_cast<size_t>((wg * 128 + w * 32 + lane) * kAcc + v)] +=
            static_cast<float>(d[static_cast<size_t>(L::d_row(w, lane, v) * L::kOpN + L::d_col(lane, v))]);
}

// The kernel of Layout L with chains of kKstep k steps, on the CPU, block by block: the copies
// (zero-filled outside the matrices), the split (cvt.rn), each wgmma reading its operands through
// hw_addr() from the descriptors the kernel builds (with AREG, A through the register fragment from
// the raw stage), the chain summed exactly and rounded once (the tensor core's rounding is the
// error model's business, below), the accumulator fragment, the two-level sums, split-K's ranks
// summed in rank order, and the guarded stores. The raw stage of tile t + kAhead is written, and
// tile t + 1 split, before tile t is read (with DEFER, the last chain of tile t after the split of
// tile t + 2): a stage or buffer shared by mistake shows up as a wrong result.
template <class L, int kKstep>
void emulate(int M, int N, int K, const std::vector<float>& A, const std::vector<float>& B, std::vector<float>& C,
             std::vector<int>& writes) {
  constexpr int kStages = L::kStageCount, kAhead = L::kAhead, kSplitK = L::kSplits;
  constexpr int kChains = L::kTileK / (8 * kKstep), kAcc = L::kOpN / 2, kWGN = L::kBN / L::kOpN;
  constexpr int kWG = L::kThreads / 128;
  const int gx = (N + L::kBN - 1) / L::kBN, gy = (M + L::kBM - 1) / L::kBM, KT = (K + L::kTileK - 1) / L::kTileK;
  for (int by = 0; by < gy; ++by)
    for (int bx = 0; bx < gx; ++bx) {
      int tm, tn;
      L::tile_of(bx, by, gx, gy, tm, tn);
      const int row0 = tm * L::kBM, col0 = tn * L::kBN;
      // Each rank's acc per thread (kThreads x kAcc), as the kernel holds them.
      std::vector<std::vector<float>> rank_acc;
      for (int rank = 0; rank < kSplitK; ++rank) {
      int t0, t1;
      L::k_range(KT, rank, t0, t1);
      Smem sm(L::kSmemBytes);
      const uint32_t sb = sm.base;
      auto load = [&](int t, int stage) {
        for (int tid = 0; tid < L::kCopyThreads; ++tid) {
          for (int l = 0; l < L::kItemsA; ++l) {
            int r, c;
            L::copy_a(tid, l, r, c);
            for (int e = 0; e < 4; ++e) {
              const int gr = row0 + r, gk = t * L::kTileK + 4 * c + e;
              sm.st(sb + L::raw_a(stage) + L::raw_a_chunk(r, c) + 4 * e,
                    gr < M && gk < K ? A[static_cast<size_t>(gr) * K + gk] : 0.0f);
            }
          }
          for (int l = 0; l < L::kItemsB; ++l) {
            int k, n;
            L::copy_b(tid, l, k, n);
            for (int e = 0; e < 4; ++e) {
              const int gk = t * L::kTileK + k, gc = col0 + n + e;
              sm.st(sb + L::raw_b(stage) + L::raw_b_at(k, n + e), gk < K && gc < N ? B[static_cast<size_t>(gk) * N + gc] : 0.0f);
            }
          }
        }
      };
      auto split_tile = [&](int stage, int buf) {
        for (int tid = 0; tid < L::kCopyThreads; ++tid)
          for (int i = 0; i < L::kSplitItemsA + L::kItemsB; ++i)
            for (int e = 0; e < 4; ++e) {
              int row, c;
              float x;
              uint32_t hi, lo;
              if (i < L::kSplitItemsA) {
                L::split_a(tid, i, row, c);
                x = sm.ld(sb + L::raw_a(stage) + L::raw_a_chunk(row, c) + 4 * e);
                hi = sb + L::op_ahi(buf) + L::op_chunk(L::kBM, row, c) + 4 * e;
                lo = sb + L::op_alo(buf) + L::op_chunk(L::kBM, row, c) + 4 * e;
              } else {
                L::split_b(tid, i - L::kSplitItemsA, row, c);
                x = sm.ld(sb + L::raw_b(stage) + L::raw_b_at(4 * c + e, row));
                hi = sb + L::op_bhi(buf) + L::op_chunk(L::kBN, row, c) + 4 * e;
                lo = sb + L::op_blo(buf) + L::op_chunk(L::kBN, row, c) + 4 * e;
              }
              const Split s = split(x, 2);
              sm.st(hi, s.hi);
              sm.st(lo, s.lo);
            }
      };
      std::vector<float> part(static_cast<size_t>(L::kThreads) * kAcc, 0.0f), acc(part);
      const int n = t1 - t0;
      for (int s = 0; s < kAhead; ++s)
        if (s < n) load(t0 + s, s);
      split_tile(0, 0);
      const int inner = L::inner_tiles(n, kChains);
      int left = inner;
      auto fold_check = [&] {
        if (--left == 0) {
          for (size_t i = 0; i < acc.size(); ++i) acc[i] += part[i], part[i] = 0.0f;
          left = inner;
        }
      };
      // DEFER: each warpgroup's last chain of the previous tile (its A operand as read at the issue
      // with AREG), run after the next split: the latest its reads can happen in the kernel.
      std::vector<ChainA> pending(static_cast<size_t>(kWG));
      bool deferred = false;
      int pending_buf = 0, pending_stage = 0;
      for (int t = 0; t < n; ++t) {
        if (t + kAhead < n) load(t0 + t + kAhead, (t + kAhead) % kStages);
        if (t + 1 < n) split_tile((t + 1) % kStages, (t + 1) % L::kOpBufs);
        if (deferred) {
          for (int wg = 0; wg < kWG; ++wg) {
            ChainA& a = pending[static_cast<size_t>(wg)];
            if (!L::kARegs) a = chain_a<L, kKstep>(sm, wg / kWGN, pending_buf, pending_stage, kChains - 1);
            run_chain<L, kKstep>(sm, wg, pending_buf, kChains - 1, a, part);
          }
          deferred = false;
          fold_check();
        }
        const int buf = t % L::kOpBufs, stage = t % kStages;
        for (int wg = 0; wg < kWG; ++wg)
          for (int q = 0; q < kChains; ++q) {
            const ChainA a = chain_a<L, kKstep>(sm, wg / kWGN, buf, stage, q);
            if (L::kDeferLast && q == kChains - 1) {
              pending[static_cast<size_t>(wg)] = a;
              deferred = true;
              pending_buf = buf;
              pending_stage = stage;
            } else {
              run_chain<L, kKstep>(sm, wg, buf, q, a, part);
            }
          }
        if (!L::kDeferLast) fold_check();
      }
      if (deferred)
        for (int wg = 0; wg < kWG; ++wg) {
          ChainA& a = pending[static_cast<size_t>(wg)];
          if (!L::kARegs) a = chain_a<L, kKstep>(sm, wg / kWGN, pending_buf, pending_stage, kChains - 1);
          run_chain<L, kKstep>(sm, wg, pending_buf, kChains - 1, a, part);
        }
      for (size_t i = 0; i < acc.size(); ++i) acc[i] += part[i];
      rank_acc.push_back(acc);
      }
      for (int tid = 0; tid < L::kThreads; ++tid) {
        const int wg = tid / 128, wm = wg / kWGN, wn = wg % kWGN, w = (tid % 128) / 32, lane = tid % 32;
        for (int v = 0; v < kAcc; ++v) {
          const int row = row0 + 64 * wm + L::d_row(w, lane, v), col = col0 + L::kOpN * wn + L::d_col(lane, v);
          if (row < M && col < N) {
            float sum = rank_acc[0][static_cast<size_t>(tid * kAcc + v)];
            for (int r = 1; r < kSplitK; ++r) sum += rank_acc[static_cast<size_t>(r)][static_cast<size_t>(tid * kAcc + v)];
            C[static_cast<size_t>(row) * N + col] = sum;
            ++writes[static_cast<size_t>(row) * N + col];
          }
        }
      }
    }
}

template <class L, int kKstep>
void check_emulated(int M, int N, int K) {
  std::mt19937_64 g(0x3a5ull + static_cast<unsigned>(M * 131 + N * 7 + K));
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> A(static_cast<size_t>(M) * K), B(static_cast<size_t>(K) * N), C(static_cast<size_t>(M) * N, NAN);
  for (float& x : A) x = u(g);
  for (float& x : B) x = u(g);
  std::vector<int> writes(C.size(), 0);
  emulate<L, kKstep>(M, N, K, A, B, C, writes);
  const std::string what = std::to_string(M) + "x" + std::to_string(N) + "x" + std::to_string(K) + " BM " +
                           std::to_string(L::kBM) + " BN " + std::to_string(L::kBN) + " BK " +
                           std::to_string(L::kTileK) + " KSTEP " + std::to_string(kKstep) + " AREG " +
                           std::to_string(L::kARegs) + " SPLITK " + std::to_string(L::kSplits);
  for (size_t o = 0; o < writes.size(); ++o)
    ASSERT_EQ(writes[o], 1) << what << ": C[" << o / N << ", " << o % N << "] written " << writes[o] << " times";
  double worst = 0;
  ASSERT_NO_FATAL_FAILURE(expect_gemm_within_bound(A, B, C, M, N, K, what + ": ", 0, &worst));
  EXPECT_LT(worst, 0.5) << what;
}

TEST(Tf32WgmmaKernel, EmulatedOnOddShapesPassesTheSpecTolerance) {
  check_emulated<Big, 1>(1, 1, 1);
  check_emulated<Big, 1>(127, 129, 65);
  check_emulated<Big, 2>(257, 129, 65);
  check_emulated<Big, 1>(3, 2, 2000);      // 63 k-tiles: the two-level sums fold 8 times
  check_emulated<Wide, 2>(1000, 1, 17);
  check_emulated<Wide, 1>(33, 300, 33);
  check_emulated<Inter, 4>(64, 64, 63);
  check_emulated<Inter, 1>(7, 3, 5);
  check_emulated<Four, 1>(130, 70, 130);
  check_emulated<Odd, 2>(100, 200, 50);
}

TEST(Tf32WgmmaKernel, EmulatedWithRegisterAAndSplitKPassesTheSpecTolerance) {
  check_emulated<BigR, 1>(1, 1, 1);
  check_emulated<BigR, 2>(127, 129, 65);
  check_emulated<BigR, 2>(3, 2, 2000);
  check_emulated<WideR, 2>(33, 300, 70);
  check_emulated<BigR2, 2>(1, 1, 1);  // one k-tile: rank 0 has none
  check_emulated<BigR2, 2>(130, 129, 200);
  check_emulated<FourK4, 1>(130, 70, 130);
  check_emulated<OddR8, 2>(100, 97, 300);
  check_emulated<OddR8, 1>(7, 3, 5000);
}

TEST(Tf32WgmmaKernel, EmulatedWithTheLastChainDeferredPassesTheSpecTolerance) {
  EXPECT_EQ(BigRD::kOpBufs, 3);
  EXPECT_EQ(BigRD::kSmemBytes - BigR::kSmemBytes, 2 * 128 * 32 * 4);  // a third B hi/lo buffer
  check_emulated<BigRD, 1>(1, 1, 1);
  check_emulated<BigRD, 2>(127, 129, 65);
  check_emulated<BigRD, 2>(3, 2, 2000);  // the fold after the deferred chain, 63 k-tiles
  check_emulated<BigRD2, 2>(130, 129, 200);
  check_emulated<InterD, 1>(64, 64, 63);
  check_emulated<InterD, 2>(7, 3, 300);
}

// ---- warp specialization (WS 1) --------------------------------------------------------------------

TEST(Tf32WgmmaWarpSpecialized, ProducerCopiesAndSplitsEachTileOnceWithoutBankConflicts) {
  EXPECT_EQ(BigWs::kCopyThreads, 128);
  EXPECT_EQ(BigWs::kThreads, 256);
  EXPECT_EQ(BigWs::kBlockThreads, 384);
  EXPECT_EQ(BigWs::kItemsB, 8);  // 128 x 32 of B per k-tile over 128 producer threads
  EXPECT_EQ(BigWs::kAhead, 3);
  EXPECT_EQ(BigWsS::kAhead, 2);
  EXPECT_EQ(Big::kCopyThreads, Big::kThreads);  // WS 0: unchanged
  EXPECT_EQ(Big::kBlockThreads, Big::kThreads);
  check_coverage_and_banks<BigWs>();
  check_coverage_and_banks<BigWsS>();
  check_coverage_and_banks<OneWs>();
  check_coverage_and_banks<InterWs>();
  check_operand_reads<BigWs>();
  check_operand_reads<BigWsS>();
  check_operand_reads<OneWs>();
  check_a_fragment<BigWs>();
}

// The mbarriers lie after everything else in shared memory, 8-byte aligned, one each, within the
// launch's 128 extra bytes; the registers that setmaxnreg moves add up to what the launch holds.
template <class L>
void check_barriers_and_registers() {
  using P = tf32wg::WsPipe<L>;
  std::set<int> at;
  for (int b = 0; b < P::kBufs; ++b) at.insert({P::full(b), P::op_empty(b)});
  for (int s = 0; s < P::kStages; ++s) at.insert(P::raw_empty(s));
  ASSERT_EQ(at.size(), static_cast<size_t>(P::kBarriers));
  for (const int a : at) {
    EXPECT_EQ(a % 8, 0);
    EXPECT_GE(a, L::kSmemBytes);  // past the stages, buffers and split-K tile
    EXPECT_LE(a + 8, L::kSmemBytes + P::kBarBytes);
  }
  EXPECT_LE(L::kSmemBytes + 1024 + P::kBarBytes, 232448);
  EXPECT_EQ(P::kLaunchRegs % 8 == 0 || P::kLaunchRegs == 255, true);
  EXPECT_LE(P::kLaunchRegs * L::kBlockThreads, 65536);
  if (P::kSetMaxNReg) {
    EXPECT_EQ(P::kConsumerRegs % 8, 0);
    EXPECT_GE(P::kConsumerRegs, P::kLaunchRegs) << "setmaxnreg.inc raises";
    EXPECT_LE(P::kProducerRegs, P::kLaunchRegs) << "setmaxnreg.dec lowers";
    EXPECT_LE(128 * P::kProducerRegs + L::kThreads * P::kConsumerRegs, P::kLaunchRegs * L::kBlockThreads)
        << "an inc that the pool cannot serve would wait forever";
  }
}

TEST(Tf32WgmmaWarpSpecialized, BarriersFitAndTheRegisterSplitAddsUp) {
  check_barriers_and_registers<BigWs>();
  check_barriers_and_registers<BigWs5>();
  check_barriers_and_registers<BigWsS>();
  check_barriers_and_registers<BigWs2>();
  check_barriers_and_registers<OneWs>();
  check_barriers_and_registers<InterWs>();
  using P = tf32wg::WsPipe<BigWs>;
  EXPECT_EQ(P::kLaunchRegs, 168);  // what ptxas gives 384 threads (nvcc 13.0, sm_90a)
  EXPECT_EQ(P::kProducerRegs, 40);
  EXPECT_EQ(P::kConsumerRegs, 232);  // CUTLASS's split for one producer and two consumer warpgroups
  EXPECT_TRUE(P::kSetMaxNReg);
  EXPECT_FALSE(tf32wg::WsPipe<OneWs>::kSetMaxNReg);  // 256 threads have 255 registers without it
  EXPECT_EQ(P::kFullCount, 4);
  EXPECT_EQ(P::kEmptyCount, 8);
  // The big WS blocks fit with 5 stages of 128x128x32 (the WS 0 kernel: 3 with AREG 0, 4 with AREG 1).
  EXPECT_EQ(BigWs5::kSmemBytes + 1024 + P::kBarBytes, 230528);
}

// An mbarrier as the pipeline uses it (PTX ISA, "mbarrier"): a phase completes when `count`
// arrivals have come; try_wait.parity(P) passes once the phase of parity P has completed, that is
// while the current phase's parity is not P (at first phase 0 is under way).
struct MBar {
  int count = 1, pending = 0, phase = 0;
  void arrive() {
    if (++pending == count) {
      pending = 0;
      ++phase;
    }
  }
  bool passes(unsigned parity) const { return static_cast<unsigned>(phase & 1) != parity; }
};

// How the protocol model may be broken on purpose, to show that the model catches it.
enum class Break { none, skip_raw_empty, skip_op_empty, full_parity };

// The protocol of sgemm_tf32_wgmma_ws.cuh over n k-tiles, one random schedule: the producer
// warpgroup (its steps in program order: the prologue's copies, then per tile t the split of t
// after op_empty, and the copy of raw tile t + AHEAD after raw_empty) and every consumer warp (per
// tile: wait full, read, arrive on both empties) step one at a time in a random order. Raw stage
// and operand buffer contents are tile numbers; a copy or split into a slot that a consumer warp is
// reading, or a read that finds another tile, is a failure; so is a state where nobody can step.
// Returns "" or what went wrong.
template <class L>
std::string run_protocol(int n, std::mt19937_64& g, Break brk = Break::none) {
  using P = tf32wg::WsPipe<L>;
  const int warps = L::kThreads / 32;
  std::vector<MBar> full(P::kBufs), op_empty(P::kBufs), raw_empty(P::kStages);
  for (MBar& b : full) b.count = P::kFullCount;
  for (MBar& b : op_empty) b.count = P::kEmptyCount;
  for (MBar& b : raw_empty) b.count = P::kEmptyCount;
  std::vector<int> raw(P::kStages, -1), op(P::kBufs, -1), raw_readers(P::kStages, 0), op_readers(P::kBufs, 0);
  int prologue = 0;       // copies of the prologue issued
  int split_next = 0;     // the producer's next tile to split
  bool copy_due = false;  // after the split of tile split_next - 1: the copy of raw tile split_next - 1 + AHEAD
  std::vector<int> tile(static_cast<size_t>(warps), 0);
  std::vector<bool> reading(static_cast<size_t>(warps), false);
  const int ahead_n = std::min(L::kAhead, n);
  for (;;) {
    std::vector<int> ready;  // -1: the producer; w >= 0: consumer warp w
    if (prologue < ahead_n) {
      ready.push_back(-1);
    } else if (copy_due) {
      const int j = split_next - 1 + L::kAhead;
      if (brk == Break::skip_raw_empty || raw_empty[static_cast<size_t>(j % P::kStages)].passes(P::raw_empty_parity(j)))
        ready.push_back(-1);
    } else if (split_next < n) {
      const int t = split_next;
      if (brk == Break::skip_op_empty || op_empty[static_cast<size_t>(t % P::kBufs)].passes(P::op_empty_parity(t)))
        ready.push_back(-1);
    }
    for (int w = 0; w < warps; ++w) {
      const int t = tile[static_cast<size_t>(w)];
      if (t >= n) continue;
      const unsigned parity = brk == Break::full_parity ? P::full_parity(t) ^ 1u : P::full_parity(t);
      if (reading[static_cast<size_t>(w)] || full[static_cast<size_t>(t % P::kBufs)].passes(parity)) ready.push_back(w);
    }
    if (ready.empty()) {
      bool done = split_next == n && !copy_due && prologue == ahead_n;
      for (int w = 0; w < warps; ++w) done = done && tile[static_cast<size_t>(w)] == n;
      return done ? "" : "deadlock at producer tile " + std::to_string(split_next);
    }
    const int who = ready[std::uniform_int_distribution<size_t>(0, ready.size() - 1)(g)];
    if (who < 0) {
      if (prologue < ahead_n) {
        raw[static_cast<size_t>(prologue)] = prologue;  // the stages are free at first
        ++prologue;
      } else if (copy_due) {
        const int j = split_next - 1 + L::kAhead;
        const size_t s = static_cast<size_t>(j % P::kStages);
        if (raw_readers[s] > 0) return "raw tile " + std::to_string(j) + " copied over a stage being read";
        raw[s] = j;
        copy_due = false;
      } else {
        const int t = split_next;
        const size_t b = static_cast<size_t>(t % P::kBufs);
        if (raw[static_cast<size_t>(t % P::kStages)] != t) return "split of tile " + std::to_string(t) + " from another tile";
        if (op_readers[b] > 0) return "tile " + std::to_string(t) + " split over a buffer being read";
        op[b] = t;
        for (int a = 0; a < P::kFullCount; ++a) full[b].arrive();  // one per producer warp
        ++split_next;
        copy_due = split_next - 1 + L::kAhead < n;
      }
      continue;
    }
    const size_t w = static_cast<size_t>(who);
    const int t = tile[w];
    const size_t s = static_cast<size_t>(t % P::kStages), b = static_cast<size_t>(t % P::kBufs);
    if (raw[s] != t || op[b] != t)
      return "warp " + std::to_string(who) + " at tile " + std::to_string(t) + " finds raw " + std::to_string(raw[s]) +
             ", operands " + std::to_string(op[b]);
    if (!reading[w]) {  // the wait passed: the chains read the stage and the buffer
      reading[w] = true;
      ++raw_readers[s];
      ++op_readers[b];
    } else {  // the last chain waited for: both released
      reading[w] = false;
      --raw_readers[s];
      --op_readers[b];
      op_empty[b].arrive();
      raw_empty[s].arrive();
      ++tile[w];
    }
  }
}

template <class L>
void check_protocol() {
  std::mt19937_64 g(0x5eedull + static_cast<unsigned>(L::kStageCount * 31 + L::kThreads));
  for (const int n : {0, 1, 2, 3, L::kStageCount - 1, L::kStageCount, L::kStageCount + 1, 2 * L::kStageCount + 3, 40})
    for (int run = 0; run < 300; ++run) {
      const std::string bad = run_protocol<L>(n, g);
      ASSERT_EQ(bad, "") << "stages " << L::kStageCount << ", consumer warps " << L::kThreads / 32 << ", " << n
                         << " k-tiles, schedule " << run;
    }
}

TEST(Tf32WgmmaWarpSpecialized, ProtocolUnderRandomSchedulesNeitherDeadlocksNorOverwritesWhatIsRead) {
  check_protocol<BigWs>();
  check_protocol<BigWs5>();
  check_protocol<BigWsS>();
  check_protocol<OneWs>();
  check_protocol<InterWs>();
}

TEST(Tf32WgmmaWarpSpecialized, TheProtocolModelCatchesAMissingWaitOrAWrongParity) {
  for (const Break brk : {Break::skip_raw_empty, Break::skip_op_empty, Break::full_parity}) {
    std::mt19937_64 g(7);
    int caught = 0;
    for (int run = 0; run < 200; ++run) caught += !run_protocol<BigWs>(12, g, brk).empty();
    EXPECT_GT(caught, 0) << "break " << static_cast<int>(brk);
  }
}

TEST(Tf32WgmmaWarpSpecialized, EmulatedPassesTheSpecTolerance) {
  // The consumers' sums are the WS 0 kernel's; the emulation copies and splits with the producer's
  // 128 threads, the copy of raw tile t + AHEAD and the split of t + 1 before tile t is read (as
  // early as the protocol lets them come: a stage or buffer shared by mistake spoils the result).
  check_emulated<BigWs, 2>(1, 1, 1);
  check_emulated<BigWs, 2>(127, 129, 65);
  check_emulated<BigWs5, 2>(3, 2, 2000);
  check_emulated<BigWsS, 2>(130, 129, 200);
  check_emulated<BigWs2, 2>(130, 129, 200);
  check_emulated<BigWs2, 1>(1, 1, 1);
  check_emulated<OneWs, 1>(33, 300, 70);
  check_emulated<InterWs, 2>(7, 3, 300);
}

// ---- the error of the chains, in the truncating-adder model ---------------------------------------

// One output of the kernel with BK = 32 and chains of kstep k steps: per chain, t = the small
// products of every step (lo_a*hi_b, hi_a*lo_b), then the large ones (hi_a*hi_b), each wgmma k step
// as two 4-product steps of the truncating adder (tc_mma), the first from zero; part += t in FP32;
// acc += part every inner_tiles(KT, 4 / kstep) k-tiles.
float dot_wgmma(const std::vector<float>& a, const std::vector<float>& b, int guard, int kstep) {
  const size_t K = a.size(), steps = (K + 7) / 8, kt = (K + 31) / 32;
  const int chains = 4 / kstep, inner = Big::inner_tiles(static_cast<int>(kt), chains);
  float acc = 0, part = 0;
  auto operand = [&](const std::vector<float>& x, size_t s, float* hi, float* lo) {
    for (int j = 0; j < 8; ++j) {
      const size_t k = 8 * s + static_cast<size_t>(j);
      const Split v = split(k < K ? x[k] : 0.0f, 2);
      hi[j] = v.hi;
      lo[j] = v.lo;
    }
  };
  size_t tiles = 0;
  for (size_t s0 = 0; s0 < steps; s0 += static_cast<size_t>(kstep)) {
    float t = 0;
    const size_t s1 = std::min(steps, s0 + static_cast<size_t>(kstep));
    for (size_t s = s0; s < s1; ++s) {
      float ah[8], al[8], bh[8], bl[8];
      operand(a, s, ah, al);
      operand(b, s, bh, bl);
      t = tc_mma(t, al, bh, guard);
      t = tc_mma(t, ah, bl, guard);
    }
    for (size_t s = s0; s < s1; ++s) {
      float ah[8], al[8], bh[8], bl[8];
      operand(a, s, ah, al);
      operand(b, s, bh, bl);
      t = tc_mma(t, ah, bh, guard);
    }
    part += t;
    if (s1 % 4 == 0 || s1 == steps)  // the end of a k-tile
      if (++tiles % static_cast<size_t>(inner) == 0) acc += part, part = 0;
  }
  return acc + part;
}

struct ChainErrors {
  ErrStats fp32, kstep[3];  // KSTEP 1, 2, 4
};
ChainErrors chain_errors(Dist d, int K, int trials, int guard) {
  std::mt19937_64 g(0x9a7u + static_cast<unsigned>(K) * 17u + static_cast<unsigned>(d));
  ChainErrors r;
  std::vector<float> a(static_cast<size_t>(K)), b(static_cast<size_t>(K));
  for (int t = 0; t < trials; ++t) {
    const DrawnDot x = draw_dot(d, g, a, b);
    const double ref = x.ref, scale = x.scale;
    r.fp32.add(std::fabs(dot_fp32(a, b) - ref) / scale);
    for (int i = 0; i < 3; ++i) r.kstep[i].add(std::fabs(dot_wgmma(a, b, guard, 1 << i) - ref) / scale);
  }
  return r;
}

// The spec's KSTEP values, in the model: chains of 1 and 2 k steps keep the max and RMS errors
// within 2x of a plain FP32 dot product's (fmaf in k order) on every input class and depth from
// K = 64, in both adder models (worst: 1.4x and 1.5-1.7x, at K = 64 on wide exponents); chains of
// 4 (a whole k-tile in the tensor core) do not (3.3x the RMS on positive inputs at K = 64), which is
// why the spec leaves KSTEP 4 out.
TEST(Tf32WgmmaErrorModel, ChainsOfOneOrTwoStepsStayWithinTwiceFp32AndFourDoNot) {
  double worst[3] = {0, 0, 0};
  std::string at[3];
  for (const int guard : {0, 3})
    for (const Dist d : {Dist::uniform, Dist::wide_exponent, Dist::positive, Dist::split_hard})
      for (const int K : {64, 256, 4096, 70000}) {
        const ChainErrors e = chain_errors(d, K, K >= 70000 ? 3 : K >= 4096 ? 30 : 600, guard);
        for (int i = 0; i < 3; ++i) {
          const double r = std::max(e.kstep[i].max / e.fp32.max, e.kstep[i].rms() / e.fp32.rms());
          if (r > worst[i]) {
            worst[i] = r;
            at[i] = std::string(dist_name(d)) + ", K = " + std::to_string(K) + ", guard bits " + std::to_string(guard);
          }
        }
      }
  EXPECT_LE(worst[0], 2.0) << "KSTEP 1 at " << at[0];
  EXPECT_LE(worst[1], 2.0) << "KSTEP 2 at " << at[1];
  EXPECT_GT(worst[2], 2.0) << "KSTEP 4 at " << at[2];
}

// ---- the spec and NVRTC ------------------------------------------------------------------------------

const std::string kDir = kopt::test::sgemm_template_dir();

TEST(SpecSgemmTf32Wgmma, SeedsAreValidAndLaunchesFitTheDeviceOnEveryCase) {
  const kopt::spec::Spec spec = kopt::spec::load_spec(kDir + "sgemm_tf32_wgmma.json");
  const std::vector<kopt::search::Config> valid = kopt::test::valid_space_with_seeds(spec);
  EXPECT_GT(valid.size(), 100u);
  for (const auto& c : valid)
    ASSERT_NE(c.at("KSTEP"), 4) << "chains of a whole k-tile break the 2x contract in the error model";
  const kopt::spec::Launch& launch = spec.template_kernel->launch.value();
  for (const auto& c : valid)
    for (const kopt::spec::Case& k : spec.cases) {
      const kopt::spec::LaunchDims d = kopt::spec::resolve_launch(launch, k, c);
      const std::string where = kopt::search::config_key(c) + " on " + k.name;
      ASSERT_GE(d.grid[0], 1) << where;
      ASSERT_LE(d.grid[1], 65535) << where;
      ASSERT_EQ(d.block[0], 128 * c.at("WGM") * c.at("WGN")) << where;
      ASSERT_LE(d.shared_bytes, 232448) << where;
    }
}

// kopt compiles a template candidate with the options of its file's `// kopt:options` line after
// -arch=<the device's>; NVRTC takes the last architecture option, so the file compiles for sm_90a
// on any device. Each seed compiles so, with no warning; without the option, for sm_90 or sm_80,
// the file stops with its #error.
kopt::cuda::CompileResult compile_wgmma(const std::map<std::string, int64_t>& defines, const std::string& arch,
                                        const std::vector<std::string>& options) {
  return kopt::test::compile_sgemm_template("sgemm_tf32_wgmma.cu", "sgemm_tf32_wgmma", defines, arch, options);
}

TEST(NvrtcSgemmTf32Wgmma, SeedsCompileForSm90aWithTheFilesOptionsAndOtherTargetsAreRefused) {
  const kopt::spec::Candidate file = kopt::spec::candidate_from_file(kDir + "sgemm_tf32_wgmma.cu");
  ASSERT_EQ(file.options, std::vector<std::string>{"--gpu-architecture=sm_90a"});
  EXPECT_EQ(file.entry, "sgemm_tf32_wgmma");
  const kopt::spec::Spec spec = kopt::spec::load_spec(kDir + "sgemm_tf32_wgmma.json");
  for (const auto& seed : spec.tuning.seeds) {
    const std::map<std::string, int64_t> d(seed.begin(), seed.end());
    const std::string key = kopt::test::config_text(d);
    const kopt::cuda::CompileResult res = compile_wgmma(d, "sm_90", file.options);
    ASSERT_TRUE(res.ok) << key << ": " << res.log;
    EXPECT_EQ(res.lowered_entry, "sgemm_tf32_wgmma") << key;
    EXPECT_EQ(res.log.find("warning"), std::string::npos) << key << ": " << res.log;
  }
  EXPECT_TRUE(compile_wgmma({}, "sm_80", file.options).ok) << "the options line overrides the device's target";
  // The warp-specialized form (not in the spec's space yet), with NVRTC and kopt's include expansion.
  for (const std::map<std::string, int64_t>& ws :
       {std::map<std::string, int64_t>{{"WS", 1}, {"AREG", 1}, {"KSTEP", 2}, {"STAGES", 4}, {"SWZ", 8}},
        std::map<std::string, int64_t>{{"WS", 1}, {"AREG", 0}, {"KSTEP", 2}, {"STAGES", 3}, {"SPLITK", 2}}}) {
    const kopt::cuda::CompileResult res = compile_wgmma(ws, "sm_90", file.options);
    ASSERT_TRUE(res.ok) << kopt::test::config_text(ws) << ": " << res.log;
    EXPECT_EQ(res.log.find("warning"), std::string::npos) << kopt::test::config_text(ws) << ": " << res.log;
  }
  for (const std::string arch : {"sm_90", "sm_80"}) {
    const kopt::cuda::CompileResult bad = compile_wgmma({}, arch, {});
    EXPECT_FALSE(bad.ok) << arch;
    EXPECT_NE(bad.log.find("compile for sm_90a"), std::string::npos) << arch << ": " << bad.log;
  }
}

// The tool's own path, with no GPU: `kopt optimize --arch sm_90` compiles template candidates of the
// spec (the seeds first) through NVRTC with the file's options line; they compile only for sm_90a
// (the file refuses other targets), so "compiled" means the options came through.
TEST(NvrtcSgemmTf32Wgmma, KoptOptimizeCompilesTheSpecsCandidatesForSm90a) {
  kopt::test::TempDir dir("kopt-wgmma");
  const kopt::test::CliRun r =
      kopt::test::run_kopt("optimize --spec " + kDir + "sgemm_tf32_wgmma.json --arch sm_90 --budget evals=2 " +
                           "--cache-dir " + (dir.path() / "cache").string() + " --results-dir " +
                           (dir.path() / "results").string());
  ASSERT_EQ(r.code, 77) << r.err;  // compile-only: no GPU here
  const nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j.at("compiled"), 2) << r.out;
  EXPECT_EQ(j.at("failed"), 0) << r.out;
}

}  // namespace

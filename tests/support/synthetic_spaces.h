// Synthetic recorded spaces for developing and testing search strategies:
// seeded models of GPU tuning landscapes, with the features that decide
// whether a search strategy works on a real one. They are no measurements and
// no substitute for one; they are what a strategy may be tuned on, so that the
// recorded spaces it is then compared on stay unseen.
//
// Each family models a kind of kernel; its seed draws the device, the
// problem and the model's coefficients, and so a different landscape:
//
//   "conv"    a 2D convolution (block_size_x/y, tile_size_x/y, read_only,
//             use_padding): the best configurations lie at the edge of the
//             shared-memory and register limits, beside configurations that
//             fail to compile or launch (a quarter to a half of the space);
//             non-power-of-two tiles may be several times slower than their
//             neighbours (bank conflicts, unaligned loads), so neighbouring
//             values can differ tenfold.
//   "pnpoly"  a point-in-polygon test (block_size_x up to 1024, tile_size,
//             three algorithm switches): the switches interact (one
//             combination of 24 is fastest), block sizes form a sawtooth of
//             occupancy and wave quantisation, large tiles in large blocks
//             fail to launch.
//   "dedisp"  a memory-bound dedispersion-like kernel (eight parameters,
//             about 20,000 configurations): a broad plateau at the memory
//             floor, reached in many ways, with a narrow best region.
//   "random"  a generic landscape of 4-7 parameters of 2-16 values: smooth
//             and categorical main effects, pairwise interactions, a resource
//             limit whose edge holds the optimum, jagged values, scattered
//             failures, sometimes a plateau.
//   "gemm"    a tiled matrix product (block, warp and k tiles, pipeline
//             stages, vector width, a swizzle switch; about 12,000
//             configurations): operand reuse grows with the tiles until the
//             shared memory, registers or occupancy run out, so the few best
//             configurations (1-10 within 5%) sit beside ones that fail
//             (a quarter to a half of the space), with wave quantisation and
//             a switch that helps large tiles and hurts small ones.
//
// A recorded space is rarely the whole grid: a sweep cut short keeps a
// uniform sample of the configurations (scripts/record_spaces.sh records 1200),
// and a space with many constraints is sparse in its grid too. The *sparse*
// spaces (sparse_space()) are such samples of the families' spaces: most of a
// configuration's one-step neighbours in the grid are not in them.
//
// Every entry has an evaluation cost (compile time plus 32 timed runs, as
// Kernel Tuner records), so the spaces are timed. `kopt_synthetic_spaces`
// (tests/support/synthetic_main.cpp) writes them as Kernel Tuner cache files
// for `kopt replay`.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "store/recorded.h"

namespace kopt::test {

/// The families, in the order above.
std::vector<std::string> synthetic_families();

/// The space of `family` with `seed` (label "<family>-<seed>"). Throws
/// UsageError(kopt.replay.120) for an unknown family.
store::RecordedSpace synthetic_space(const std::string& family, uint64_t seed);

/// The development set: the spaces the default strategy was developed on
/// ("conv-1" ... ; docs/search.md lists them with their measures).
std::vector<std::pair<std::string, uint64_t>> development_spaces();
/// Spaces of the same families with other seeds, never used for tuning, to
/// check that what was learnt on the development set carries over.
std::vector<std::pair<std::string, uint64_t>> holdout_spaces();

/// The configurations a sparse space keeps: what scripts/record_spaces.sh
/// records of a large space by default.
inline constexpr size_t kSparseKeep = 1200;

/// A sparse space (label "sparse-<family>-<seed>"): a uniform random sample
/// of kSparseKeep entries of synthetic_space(family, seed), drawn with a seed
/// of its own, in the full space's order, as a sweep cut short records it.
/// Throws UsageError(kopt.replay.120) for an unknown family and
/// kopt.replay.122 for a space of fewer than 4 * kSparseKeep entries (a
/// sample of more than a quarter of it is hardly sparse; the convolution
/// record keeps 25% of its valid configurations, 10% of its grid).
store::RecordedSpace sparse_space(const std::string& family, uint64_t seed);
/// The sparse development set: sparse_space() of every development space of
/// at least 4 * kSparseKeep entries (4% to 25% of each kept).
std::vector<std::pair<std::string, uint64_t>> sparse_development_spaces();
/// The sparse held-out set: the same of the held-out spaces, never used for
/// tuning.
std::vector<std::pair<std::string, uint64_t>> sparse_holdout_spaces();

}  // namespace kopt::test

// The MT19937-64 engine and its jump-ahead (spec/mt19937_64.h) against the
// standard library's std::mt19937_64.
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <vector>

#include "spec/mt19937_64.h"

namespace kopt::spec {
namespace {

const uint64_t kSeeds[] = {0u, 1u, Mt19937_64::kDefaultSeed, 0x0123456789abcdefull, ~uint64_t{0}};

/// The next `n` draws of `e` equal those of `ref` (a failure names the draw).
template <typename Engine>
void expect_same_draws(Engine& e, std::mt19937_64& ref, int n, const std::string& what) {
  for (int i = 0; i < n; ++i) {
    const uint64_t want = ref();
    const uint64_t got = e();
    if (got != want) {
      ADD_FAILURE() << what << ": draw " << i << " is " << got << ", std::mt19937_64 gives " << want;
      return;
    }
  }
}

TEST(Mt19937_64, DrawsAsTheStandardEngineForSeveralSeeds) {
  for (const uint64_t seed : kSeeds) {
    Mt19937_64 e(seed);
    std::mt19937_64 ref(seed);
    expect_same_draws(e, ref, 3 * 312 + 17, "seed " + std::to_string(seed));
  }
  Mt19937_64 e;  // the default seed, and the value the standard fixes ([rand.predef])
  for (int i = 0; i < 9999; ++i) e();
  EXPECT_EQ(e(), 9981545732273789042ull);
}

TEST(Mt19937_64, BlocksOfAnySizeMatchSingleDraws) {
  for (const uint64_t seed : kSeeds) {
    Mt19937_64 e(seed);
    std::mt19937_64 ref(seed);
    // Sizes that start, end and straddle the 312-word blocks.
    for (const size_t n : {size_t{1}, size_t{311}, size_t{312}, size_t{313}, size_t{0}, size_t{1000}, size_t{624}}) {
      std::vector<uint64_t> block(n);
      e.generate(block.data(), n);
      for (size_t i = 0; i < n; ++i) {
        ASSERT_EQ(block[i], ref()) << "seed " << seed << ", block of " << n << ", element " << i;
      }
      expect_same_draws(e, ref, 5, "single draws after a block of " + std::to_string(n));
    }
  }
}

TEST(Mt19937_64, JumpsEqualDiscard) {
  const uint64_t steps[] = {0, 1, 311, 312, 313, 1000007};
  for (const uint64_t seed : {uint64_t{42}, uint64_t{0xfeedfacecafebeefull}}) {
    for (const int before : {0, 5, 312}) {  // jumps from every position in a block
      for (const uint64_t n : steps) {
        const std::string what = "seed " + std::to_string(seed) + ", " + std::to_string(before) +
                                 " draws, then a jump of " + std::to_string(n);
        std::mt19937_64 ref(seed);
        Mt19937_64 jumped(seed), discarded(seed);
        for (int i = 0; i < before; ++i) {
          ref();
          jumped();
          discarded();
        }
        ref.discard(n);
        jumped.jump(MtJumpPolynomial(n));
        discarded.discard(n);
        EXPECT_TRUE(jumped == discarded) << what;
        std::mt19937_64 ref2 = ref;
        expect_same_draws(jumped, ref, 2 * 312 + 1, what + " (polynomial)");
        expect_same_draws(discarded, ref2, 2 * 312 + 1, what + " (discard)");
      }
    }
  }
}

TEST(Mt19937_64, DiscardPastTheSteppingLimitJumps) {
  const uint64_t n = Mt19937_64::kStepJumpLimit * 3 + 7;
  Mt19937_64 e(7);
  std::mt19937_64 ref(7);
  e.discard(n);
  ref.discard(n);
  expect_same_draws(e, ref, 700, "discard(" + std::to_string(n) + ")");
}

TEST(Mt19937_64, JumpsCompose) {
  // Far beyond what std::mt19937_64::discard can check: T^a T^b = T^(a+b).
  const uint64_t a = (uint64_t{1} << 40) + 3, b = 987654321;
  Mt19937_64 twice(11), once(11), other(11);
  twice.jump(MtJumpPolynomial(a));
  twice.jump(MtJumpPolynomial(b));
  once.jump(MtJumpPolynomial(a + b));
  other.jump(MtJumpPolynomial(a + b + 1));
  EXPECT_TRUE(twice == once);
  EXPECT_FALSE(other == once);
  once();
  EXPECT_TRUE(other == once);
  const MtJumpPolynomial max(~uint64_t{0});
  EXPECT_EQ(max.steps(), ~uint64_t{0});
}

TEST(Mt19937_64, CharacteristicPolynomialHasDegree19937) {
  const std::vector<uint64_t>& phi = mt19937_64_characteristic_polynomial();
  ASSERT_EQ(phi.size(), 312u);
  EXPECT_EQ((phi[311] >> 33) & 1u, 1u) << "coefficient of x^19937";
  EXPECT_EQ(phi[311] >> 34, 0u) << "nothing above x^19937";
  EXPECT_EQ(phi[0] & 1u, 1u) << "constant term (phi is irreducible, so not divisible by x)";
  size_t ones = 0;
  for (uint64_t w : phi) ones += static_cast<size_t>(__builtin_popcountll(w));
  EXPECT_GT(ones, 100u) << "MT's polynomial is dense, not a trinomial";
  EXPECT_EQ(&phi, &mt19937_64_characteristic_polynomial()) << "computed once";
  // Any seed's low-bit sequence has the same minimal polynomial: phi is the
  // transition's, not one sequence's.
  EXPECT_EQ(mt19937_64_minimal_polynomial(0x5eed), phi);
  // x^steps for steps < 19937 needs no reduction: the polynomial is x^steps itself.
  const MtJumpPolynomial small(19936);
  EXPECT_EQ(small.coefficients()[311], uint64_t{1} << 32);
  for (size_t k = 0; k < 311; ++k) EXPECT_EQ(small.coefficients()[k], 0u) << k;
}

TEST(Mt19937_64, StateRoundTripsAndIgnoresTheUnusedBits) {
  Mt19937_64 e(99);
  for (int i = 0; i < 100; ++i) e();
  Mt19937_64::State s = e.state();
  Mt19937_64 copy = Mt19937_64::from_state(s);
  EXPECT_TRUE(copy == e);
  s[0] ^= 0x7fffffffu;  // the low 31 bits of the oldest word never reach a draw
  Mt19937_64 junk = Mt19937_64::from_state(s);
  EXPECT_TRUE(junk == e);
  s[0] ^= uint64_t{1} << 31;  // the lowest bit that does
  EXPECT_FALSE(Mt19937_64::from_state(s) == e);
  std::vector<uint64_t> a(1000), b(1000);
  junk.generate(a.data(), a.size());
  e.generate(b.data(), b.size());
  EXPECT_EQ(a, b);
}

}  // namespace
}  // namespace kopt::spec

// generate() over several threads gives the bytes of the sequential stream
// (spec/inputs.h): against the sequential loops that defined the bytes, kept
// here as the oracle, and against generate() on one thread.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "input_generators.h"
#include "spec/inputs.h"
#include "spec/mt19937_64.h"
#include "support/expect_error.h"
#include "temp_dir.h"
#include "util/error.h"

namespace kopt::spec {
namespace {

using test::kAllTypes;
using test::normal;
using test::uniform;

const DType kFloatTypes[] = {DType::f16, DType::bf16, DType::f32, DType::f64};
const unsigned kThreads[] = {1, 2, 3, 7};

/// Stores double x as element i of a floating dtype, as inputs.h specifies.
void store_float(std::vector<uint8_t>& out, DType t, size_t i, double x) {
  const float f = static_cast<float>(x);
  uint16_t h = 0;
  switch (t) {
    case DType::f64: std::memcpy(&out[8 * i], &x, 8); return;
    case DType::f32: std::memcpy(&out[4 * i], &f, 4); return;
    case DType::f16: h = float_to_half(f); break;
    case DType::bf16: h = float_to_bfloat16(f); break;
    default: ADD_FAILURE() << "not a floating type"; return;
  }
  std::memcpy(&out[2 * i], &h, 2);
}

double unit_open(uint64_t bits) { return static_cast<double>(bits >> 11) * 0x1.0p-53; }
double unit_closed(uint64_t bits) { return static_cast<double>((bits >> 11) + 1) * 0x1.0p-53; }

/// Elements [first, min(last, count)) of a sequential loop on
/// std::mt19937_64(seed) (the bytes' definition), the engine at draw `first`:
/// loop(rng, first, last, put) calls put(i, x) for each element i.
template <typename Loop>
std::vector<uint8_t> oracle(DType t, size_t count, uint64_t seed, size_t first, size_t last, const Loop& loop) {
  last = std::min(last, count);
  std::vector<uint8_t> out((last - first) * dtype_size(t));
  std::mt19937_64 rng(seed);
  rng.discard(first);
  loop(rng, first, last, [&](size_t i, double x) { store_float(out, t, i - first, x); });
  return out;
}

/// The uniform loop, elements [first, last); the whole buffer by default.
std::vector<uint8_t> oracle_uniform(const Generator& g, DType t, size_t count, uint64_t seed, size_t first = 0,
                                    size_t last = SIZE_MAX) {
  return oracle(t, count, seed, first, last, [&](std::mt19937_64& rng, size_t begin, size_t end, auto put) {
    const double width = g.high - g.low;
    for (size_t i = begin; i < end; ++i) put(i, g.low + width * unit_open(rng()));
  });
}

/// The Box-Muller loop, elements [first, last) (first even).
std::vector<uint8_t> oracle_normal(const Generator& g, DType t, size_t count, uint64_t seed, size_t first = 0,
                                   size_t last = SIZE_MAX) {
  return oracle(t, count, seed, first, last, [&](std::mt19937_64& rng, size_t begin, size_t end, auto put) {
    constexpr double kTwoPi = 6.283185307179586476925286766559;
    for (size_t i = begin; i < end; i += 2) {
      const double u1 = unit_closed(rng());
      const double u2 = unit_open(rng());
      const double r = std::sqrt(-2.0 * std::log(u1));
      put(i, g.mean + g.stddev * (r * std::cos(kTwoPi * u2)));
      if (i + 1 < end) put(i + 1, g.mean + g.stddev * (r * std::sin(kTwoPi * u2)));
    }
  });
}

/// The first differing element, for a readable failure.
std::string first_difference(const std::vector<uint8_t>& a, const std::vector<uint8_t>& b, DType t) {
  if (a.size() != b.size()) return "sizes " + std::to_string(a.size()) + " and " + std::to_string(b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i] != b[i]) return "element " + std::to_string(i / dtype_size(t));
  }
  return "none";
}

TEST(InputsParallel, UniformAndNormalMatchTheSequentialLoopsForEveryFloatType) {
  for (const size_t count : {size_t{1}, size_t{2}, size_t{3}, size_t{1001}, size_t{100001}}) {
    for (const DType t : kFloatTypes) {
      const auto u_ref = oracle_uniform(uniform(-2, 3), t, count, 77);
      const auto n_ref = oracle_normal(normal(1, 0.5), t, count, 78);
      for (const unsigned threads : kThreads) {
        const std::string what = std::string(dtype_name(t)) + ", " + std::to_string(count) + " elements, " +
                                 std::to_string(threads) + " threads: ";
        const auto u = generate(uniform(-2, 3), t, static_cast<int64_t>(count), 77, "", threads);
        EXPECT_TRUE(u == u_ref) << what << "uniform differs at " << first_difference(u, u_ref, t);
        const auto n = generate(normal(1, 0.5), t, static_cast<int64_t>(count), 78, "", threads);
        EXPECT_TRUE(n == n_ref) << what << "normal differs at " << first_difference(n, n_ref, t);
      }
    }
  }
}

TEST(InputsParallel, PartsThatStartPastTheSteppingLimitJump) {
  // 2 parts: the second starts at element kStepJumpLimit + 4, beyond what
  // discard() steps, so its engine takes the polynomial jump. Checked where
  // it matters: the first elements, both sides of the cut, and the last.
  const size_t cut = Mt19937_64::kStepJumpLimit + 4, count = 2 * cut - 3;
  const std::pair<size_t, size_t> windows[] = {{0, 1000}, {cut - 1000, cut + 1000}, {count - 1001, count}};
  const auto u = generate(uniform(0, 1), DType::bf16, static_cast<int64_t>(count), 5, "", 2);
  const auto n = generate(normal(0, 1), DType::bf16, static_cast<int64_t>(count), 6, "", 2);
  ASSERT_EQ(u.size(), 2 * count);
  for (const auto& [first, last] : windows) {
    const std::vector<uint8_t> u_part(u.begin() + 2 * first, u.begin() + 2 * last);
    const auto u_ref = oracle_uniform(uniform(0, 1), DType::bf16, count, 5, first, last);
    EXPECT_TRUE(u_part == u_ref) << "uniform, elements " << first << " to " << last << ": differs at "
                                 << first_difference(u_part, u_ref, DType::bf16);
    const std::vector<uint8_t> n_part(n.begin() + 2 * first, n.begin() + 2 * last);
    const auto n_ref = oracle_normal(normal(0, 1), DType::bf16, count, 6, first, last);
    EXPECT_TRUE(n_part == n_ref) << "normal, elements " << first << " to " << last << ": differs at "
                                 << first_difference(n_part, n_ref, DType::bf16);
  }
}

TEST(InputsParallel, EveryKindAndTypeGivesTheOneThreadBytes) {
  std::vector<Generator> gens = {uniform(-300, 70000), normal(-3, 1000)};
  gens.emplace_back().kind = Generator::Kind::int_range;  // sequential whatever the threads
  gens.back().int_low = -7;
  gens.back().int_high = 1000;
  gens.emplace_back().kind = Generator::Kind::constant;
  gens.back().value = 2.5;
  gens.emplace_back().kind = Generator::Kind::iota;
  gens.back().start = -10;
  gens.back().step = 0.25;
  for (const Generator& g : gens) {
    for (const DType t : kAllTypes) {
      const auto one = generate(g, t, 4099, 1234, "", 1);
      for (const unsigned threads : kThreads) {
        const auto many = generate(g, t, 4099, 1234, "", threads);
        EXPECT_TRUE(many == one) << generator_kind_name(g.kind) << " " << dtype_name(t) << ", " << threads
                                 << " threads: differs at " << first_difference(many, one, t);
      }
    }
  }
}

TEST(InputsParallel, IntRangeIsTheRejectionLoopOnTheStandardEngine) {
  Generator g;
  g.kind = Generator::Kind::int_range;
  g.int_low = -3;
  g.int_high = 1u << 30;  // a span that rejects now and then
  const auto v = generate(g, DType::i64, 5000, 9);
  std::mt19937_64 rng(9);
  const uint64_t span = static_cast<uint64_t>(g.int_high - g.int_low + 1);
  const uint64_t limit = ~uint64_t{0} - (~uint64_t{0} % span + 1) % span;
  for (size_t i = 0; i < 5000; ++i) {
    uint64_t bits = rng();
    while (bits > limit) bits = rng();
    int64_t want = g.int_low + static_cast<int64_t>(bits % span), got = 0;
    std::memcpy(&got, &v[8 * i], 8);
    ASSERT_EQ(got, want) << i;
  }
}

TEST(InputsParallel, GenerateIntoWritesTheSameBytes) {
  for (const unsigned threads : kThreads) {
    for (const Generator& g : {uniform(-1, 1), normal(0, 2)}) {
      const auto want = generate(g, DType::bf16, 20001, 8);
      std::vector<uint8_t> got(want.size() + 2, 0xab);  // one guard byte each side
      generate_into(g, DType::bf16, 20001, 8, got.data() + 1, "", threads);
      EXPECT_EQ(got.front(), 0xab);
      EXPECT_EQ(got.back(), 0xab);
      EXPECT_TRUE(std::vector<uint8_t>(got.begin() + 1, got.end() - 1) == want)
          << generator_kind_name(g.kind) << ", " << threads << " threads";
    }
  }
  // An npy generator's file, "{case}" expanded as generate() does.
  test::TempDir dir;
  NpyArray a;
  a.dtype = DType::i32;
  a.shape = {3};
  a.data = {1, 0, 0, 0, 2, 0, 0, 0, 0xff, 0xff, 0xff, 0xff};
  write_npy(dir / "x_small.npy", a);
  Generator npy;
  npy.kind = Generator::Kind::npy;
  npy.npy = dir / "x_{case}.npy";
  std::vector<uint8_t> got(12);
  generate_into(npy, DType::i32, 3, 0, got.data(), "small");
  EXPECT_EQ(got, a.data);
  test::expect_error([&] { generate_into(npy, DType::i32, 4, 0, got.data(), "small"); }, "kopt.inputs.202");
  uint8_t none = 0;
  test::expect_error([&] { generate_into(uniform(0, 1), DType::f32, -1, 1, &none); }, "kopt.inputs.203");
  Generator view;
  view.kind = Generator::Kind::view;
  view.view_of = "A";
  test::expect_error([&] { generate_into(view, DType::f32, 1, 1, &none); }, "kopt.inputs.205", {"'A'"});
}

TEST(InputsParallel, AutomaticThreadsAndTheirCap) {
  // 4Mi elements: the automatic choice splits (on a machine of 2 or more
  // hardware threads); KOPT_INPUT_THREADS caps it, and the bytes stay.
  const int64_t count = int64_t{1} << 22;
  const char* old = std::getenv("KOPT_INPUT_THREADS");
  const std::string saved = old ? old : "";
  const auto one = generate(uniform(-1, 1), DType::f32, count, 3, "", 1);
  ::unsetenv("KOPT_INPUT_THREADS");
  EXPECT_TRUE(generate(uniform(-1, 1), DType::f32, count, 3) == one);
  ::setenv("KOPT_INPUT_THREADS", "1", 1);
  EXPECT_TRUE(generate(uniform(-1, 1), DType::f32, count, 3) == one);
  for (const char* bad : {"0", "-2", "two", "3x", "", "70000"}) {
    ::setenv("KOPT_INPUT_THREADS", bad, 1);
    test::expect_error<EnvironmentError>([&] { generate(uniform(-1, 1), DType::f32, count, 3); },
                                         "kopt.inputs.206", {"KOPT_INPUT_THREADS='" + std::string(bad) + "'"});
    // Small buffers never read it, and explicit threads win.
    EXPECT_EQ(generate(uniform(-1, 1), DType::f32, 1000, 3).size(), 4000u);
    EXPECT_TRUE(generate(uniform(-1, 1), DType::f32, count, 3, "", 2) == one);
  }
  if (old)
    ::setenv("KOPT_INPUT_THREADS", saved.c_str(), 1);
  else
    ::unsetenv("KOPT_INPUT_THREADS");
}

}  // namespace
}  // namespace kopt::spec

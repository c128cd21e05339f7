// MT19937-64 with an accessible state, a block generator and jump-ahead.
//
// The engine is std::mt19937_64 as the C++ standard specifies it
// ([rand.predef]: mersenne_twister_engine<uint_fast64_t, 64, 312, 156, 31,
// 0xb5026f5aa96619e9, 29, 0x5555555555555555, 17, 0x71d67fffeda60000, 37,
// 0xfff7eee000000000, 43, 6364136223846793005>; the algorithm of
// [rand.eng.mers]): the same seed gives the same draws as the standard
// library's engine, draw for draw. What it adds is the state, laid out for
// linear algebra, and jumps: the state after `steps` draws without making
// them, so that far-apart stretches of one stream can be generated at once
// on several threads.
//
// Jump-ahead (Haramoto, Matsumoto, Nishimura, Panneton, L'Ecuyer, "Efficient
// jump ahead for F2-linear random number generators", INFORMS Journal on
// Computing 20(3):385-390, 2008): the state transition T is linear over GF(2)
// on a 19937-bit state, so T^J s = g(T) s for g(x) = x^J mod phi(x), phi the
// characteristic polynomial of T (degree 19937). g comes from square-and-
// multiply in GF(2)[x] (64 coefficients a word); g(T) s by Horner's rule,
// 19937 transitions and an XOR of s for each non-zero coefficient.
//
// phi is computed once per process (mt19937_64_characteristic_polynomial()):
// the least significant bit of the draws is a linear function of the state,
// so the sequence it forms obeys the recurrence of T's minimal polynomial;
// Berlekamp-Massey (J. L. Massey, "Shift-register synthesis and BCH
// decoding", IEEE Trans. Information Theory 15(1):122-127, 1969) over 2 x 19937
// of those bits finds that polynomial. It is phi itself because phi is
// primitive (the period of MT19937-64 is the Mersenne prime 2^19937 - 1:
// Nishimura, "Tables of 64-bit Mersenne twisters", ACM TOMACS 10(4):348-357,
// 2000); a result of any other degree would be a bug and throws.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace kopt::spec {

class MtJumpPolynomial;

/// std::mt19937_64, draw for draw. Not thread-safe (one engine per thread);
/// copies are independent.
class Mt19937_64 {
 public:
  using result_type = uint64_t;
  static constexpr size_t kWords = 312;          // n: words of state
  static constexpr size_t kMiddle = 156;         // m: the middle word's offset
  static constexpr int kStateBits = 312 * 64 - 31;  // 19937 = n w - r, the degree of phi
  static constexpr uint64_t kDefaultSeed = 5489u;   // the standard's default_seed

  /// The state: the last kWords words of the recurrence, oldest first
  /// (x_{j-n} ... x_{j-1} in [rand.eng.mers]'s notation); the next draw is
  /// the tempered x_j. Only the top 33 bits of the oldest word take part (the
  /// low 31 never reach an output): state() returns them as stored, and
  /// operator== ignores them.
  using State = std::array<uint64_t, kWords>;

  explicit Mt19937_64(uint64_t seed = kDefaultSeed) { this->seed(seed); }
  /// The state of std::mt19937_64(seed) ([rand.eng.mers] p8: x_{-n} = seed,
  /// x_i = f (x_{i-1} xor (x_{i-1} >> 62)) + (i mod n)).
  void seed(uint64_t value);
  static Mt19937_64 from_state(const State& state);
  State state() const;

  /// The next draw.
  uint64_t operator()() { return temper(step()); }
  /// The next `count` draws into out[0..count), as `count` calls of
  /// operator() would give them; whole blocks of 312 are twisted at once.
  void generate(uint64_t* out, size_t count);
  /// Advances by `steps` draws: by stepping up to kStepJumpLimit (0.8 ns a
  /// step), else by a jump polynomial (6-19 ms for 2^23 to 2^40 steps;
  /// measurements in docs/spec-format.md#reproducibility).
  void discard(uint64_t steps);
  /// Advances by p.steps() draws: one Horner evaluation (about 0.7 ms).
  void jump(const MtJumpPolynomial& p);

  /// Equal when every bit that takes part in a future draw is equal.
  bool operator==(const Mt19937_64& o) const;
  bool operator!=(const Mt19937_64& o) const { return !(*this == o); }

  /// Where stepping and a jump polynomial cost about the same (6.0 and
  /// 5.4 + 0.7 ms at 2^23 on the machine of docs/spec-format.md#reproducibility;
  /// at 2^22 stepping takes 3.4 ms, the polynomial 4.7 + 0.7).
  static constexpr uint64_t kStepJumpLimit = uint64_t{1} << 23;
  static constexpr uint64_t min() { return 0; }
  static constexpr uint64_t max() { return ~uint64_t{0}; }

 private:
  /// Makes x_j (replacing x_{j-n}) and returns it untempered.
  uint64_t step() {
    const size_t i = i_;
    const size_t i1 = i + 1 == kWords ? 0 : i + 1;
    const size_t im = i + kMiddle >= kWords ? i + kMiddle - kWords : i + kMiddle;
    const uint64_t v = x_[im] ^ twist(x_[i], x_[i1]);
    x_[i] = v;
    i_ = i1;
    return v;
  }
  static uint64_t twist(uint64_t oldest, uint64_t next) {
    const uint64_t y = (oldest & kUpperMask) | (next & kLowerMask);
    return (y >> 1) ^ ((y & 1u) ? kMatrixA : 0u);
  }
  static uint64_t temper(uint64_t y) {
    y ^= (y >> 29) & 0x5555555555555555ull;
    y ^= (y << 17) & 0x71d67fffeda60000ull;
    y ^= (y << 37) & 0xfff7eee000000000ull;
    return y ^ (y >> 43);
  }
  /// Makes the next kWords words at once; only when i_ == 0.
  void twist_block();
  /// x_ ^= o's state, word for word in the recurrence's order.
  void add_state(const uint64_t* o_oldest_first);

  static constexpr uint64_t kMatrixA = 0xb5026f5aa96619e9ull;
  static constexpr uint64_t kUpperMask = ~uint64_t{0} << 31;  // w - r = 33 upper bits
  static constexpr uint64_t kLowerMask = ~kUpperMask;

  uint64_t x_[kWords];
  size_t i_ = 0;  // the slot of the oldest word, x_{j-n}
};

/// g(x) = x^steps mod phi(x): what advances an engine by `steps` draws
/// (Mt19937_64::jump). Made once, applied to any number of engines. Costs
/// about one squaring modulo phi per bit of `steps` (about 0.6 ms each past 2^14),
/// plus phi the first time in the process (mt19937_64_characteristic_polynomial).
/// Throws std::bad_alloc, and what computing phi throws.
class MtJumpPolynomial {
 public:
  explicit MtJumpPolynomial(uint64_t steps);
  uint64_t steps() const { return steps_; }
  /// Coefficient i is bit i % 64 of word i / 64; degree < 19937.
  const std::vector<uint64_t>& coefficients() const { return g_; }

 private:
  uint64_t steps_;
  std::vector<uint64_t> g_;
};

/// phi(x), the characteristic polynomial of MT19937-64's state transition
/// (degree 19937; coefficient i is bit i % 64 of word i / 64; 312 words).
/// Computed on the first call (Berlekamp-Massey, see the file comment; about
/// 9 ms), then cached; thread-safe. Throws std::logic_error if
/// the result is not of degree 19937 (a bug, not an input error).
const std::vector<uint64_t>& mt19937_64_characteristic_polynomial();

/// The minimal polynomial of the sequence of low bits of the draws of
/// Mt19937_64(seed), by Berlekamp-Massey over 2 x 19937 draws, not cached
/// (same layout as above). phi for every seed: the cached one is this for
/// kDefaultSeed. Throws std::logic_error if it is not of degree 19937.
std::vector<uint64_t> mt19937_64_minimal_polynomial(uint64_t seed);

}  // namespace kopt::spec

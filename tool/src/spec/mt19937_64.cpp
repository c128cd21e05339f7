// MT19937-64: the engine, its jumps, and phi by Berlekamp-Massey. See
// mt19937_64.h for the sources of the algorithm and of every constant.
#include "spec/mt19937_64.h"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace kopt::spec {

// ---------------------------------------------------------------------------
// The engine
// ---------------------------------------------------------------------------

void Mt19937_64::seed(uint64_t value) {
  x_[0] = value;
  for (size_t i = 1; i < kWords; ++i) {
    x_[i] = 6364136223846793005ull * (x_[i - 1] ^ (x_[i - 1] >> 62)) + i;
  }
  i_ = 0;
}

Mt19937_64 Mt19937_64::from_state(const State& state) {
  Mt19937_64 e;
  for (size_t i = 0; i < kWords; ++i) e.x_[i] = state[i];
  e.i_ = 0;
  return e;
}

Mt19937_64::State Mt19937_64::state() const {
  State s;
  for (size_t j = 0; j < kWords; ++j) s[j] = x_[(i_ + j) % kWords];
  return s;
}

bool Mt19937_64::operator==(const Mt19937_64& o) const {
  const State a = state(), b = o.state();
  if ((a[0] & kUpperMask) != (b[0] & kUpperMask)) return false;
  for (size_t j = 1; j < kWords; ++j) {
    if (a[j] != b[j]) return false;
  }
  return true;
}

void Mt19937_64::twist_block() {
  // The recurrence of [rand.eng.mers] p4 for j = n ... 2n-1 in place: slot k
  // holds x_{k-n} until it is replaced by x_k; the middle word is an old one
  // for k < n - m and a new one after.
  size_t k = 0;
  for (; k < kWords - kMiddle; ++k) x_[k] = x_[k + kMiddle] ^ twist(x_[k], x_[k + 1]);
  for (; k < kWords - 1; ++k) x_[k] = x_[k + kMiddle - kWords] ^ twist(x_[k], x_[k + 1]);
  x_[kWords - 1] = x_[kMiddle - 1] ^ twist(x_[kWords - 1], x_[0]);
}

void Mt19937_64::generate(uint64_t* out, size_t count) {
  size_t done = 0;
  while (done < count && i_ != 0) out[done++] = (*this)();
  for (; count - done >= kWords; done += kWords) {
    twist_block();
    for (size_t k = 0; k < kWords; ++k) out[done + k] = temper(x_[k]);
  }
  while (done < count) out[done++] = (*this)();
}

void Mt19937_64::discard(uint64_t steps) {
  if (steps > kStepJumpLimit) {
    jump(MtJumpPolynomial(steps));
    return;
  }
  while (steps > 0 && i_ != 0) {
    step();
    --steps;
  }
  for (; steps >= kWords; steps -= kWords) twist_block();
  for (; steps > 0; --steps) step();
}

namespace {
/// dst[0..n) ^= src[0..n), four words a step (which -O2 turns into vector
/// instructions; the plain loop stays scalar there).
void xor_words(uint64_t* __restrict dst, const uint64_t* __restrict src, size_t n) {
  size_t k = 0;
  for (; k + 4 <= n; k += 4) {
    dst[k] ^= src[k];
    dst[k + 1] ^= src[k + 1];
    dst[k + 2] ^= src[k + 2];
    dst[k + 3] ^= src[k + 3];
  }
  for (; k < n; ++k) dst[k] ^= src[k];
}
}  // namespace

void Mt19937_64::add_state(const uint64_t* o) {
  const size_t head = kWords - i_;  // x_[i_ .. n) then x_[0 .. i_)
  xor_words(x_ + i_, o, head);
  xor_words(x_, o + head, i_);
}

void Mt19937_64::jump(const MtJumpPolynomial& p) {
  // Horner: acc = g_d s; acc = T acc + g_k s for k = d-1 ... 0 gives g(T) s.
  // g is never zero (x^J mod an irreducible phi), so its top term starts it.
  const State s = state();
  const std::vector<uint64_t>& g = p.coefficients();
  size_t w = g.size();
  while (w > 0 && g[w - 1] == 0) --w;
  if (w == 0) throw std::logic_error("MT19937-64 jump: zero jump polynomial");
  int top = 63 - __builtin_clzll(g[w - 1]);
  Mt19937_64 acc = from_state(s);
  for (size_t word = w; word-- > 0;) {
    const uint64_t bits = g[word];
    for (int b = (word == w - 1 ? top : 64) - 1; b >= 0; --b) {
      acc.step();
      if ((bits >> b) & 1u) acc.add_state(s.data());
    }
  }
  *this = acc;
}

// ---------------------------------------------------------------------------
// GF(2)[x] modulo phi
// ---------------------------------------------------------------------------

namespace {

constexpr int kDegree = Mt19937_64::kStateBits;        // 19937
constexpr size_t kPolyWords = kDegree / 64 + 1;         // 312: coefficients 0 ... 19937
constexpr size_t kShiftedWords = kPolyWords + 1;        // phi x^s for s < 64
constexpr size_t kProductWords = 2 * kPolyWords;        // a square, degree <= 2 * 19936

/// phi and phi x^s (s = 0 ... 63), for reduction without per-bit shifts.
struct PhiTables {
  std::vector<uint64_t> phi;
  std::vector<uint64_t> shifted;  // 64 rows of kShiftedWords
};

bool coefficient(const std::vector<uint64_t>& p, size_t i) { return (p[i / 64] >> (i % 64)) & 1u; }

}  // namespace

std::vector<uint64_t> mt19937_64_minimal_polynomial(uint64_t seed) {
  constexpr size_t kBits = 2 * kDegree;
  constexpr size_t kWordsBM = kBits / 64 + 3;
  // rev holds the sequence backwards (bit j = s_{kBits-1-j}), so that the
  // discrepancy sum_i c_i s_{n-i} reads rev forwards from bit kBits-1-n.
  std::vector<uint64_t> rev(kWordsBM + 1, 0);
  Mt19937_64 e(seed);
  for (size_t n = 0; n < kBits; ++n) {
    const size_t j = kBits - 1 - n;
    rev[j / 64] |= (e() & 1u) << (j % 64);
  }
  auto window = [&rev](size_t bit) {
    const size_t w = bit / 64, s = bit % 64;
    return s == 0 ? rev[w] : (rev[w] >> s) | (rev[w + 1] << (64 - s));
  };
  std::vector<uint64_t> c(kWordsBM, 0), b(kWordsBM, 0), t;
  c[0] = b[0] = 1;
  size_t len = 0, m = 1;  // L, and the shift of b since it was last replaced
  size_t b_len = 0;       // deg b <= b_len (the L of the time b was c)
  for (size_t n = 0; n < kBits; ++n) {
    uint64_t d = 0;
    for (size_t k = 0; k <= len / 64; ++k) d ^= c[k] & window(kBits - 1 - n + 64 * k);
    if (!(__builtin_popcountll(d) & 1)) {
      ++m;
      continue;
    }
    const bool grow = 2 * len <= n;
    if (grow) t = c;
    // c ^= b x^m over the words where b x^m can be non-zero.
    const size_t ws = m / 64, bs = m % 64, hi = std::min(kWordsBM, (b_len + m) / 64 + 1);
    for (size_t k = hi; k-- > ws;) {
      uint64_t v = b[k - ws] << bs;
      if (bs != 0 && k > ws) v |= b[k - ws - 1] >> (64 - bs);
      c[k] ^= v;
    }
    if (grow) {
      b_len = len;
      len = n + 1 - len;
      b.swap(t);
      m = 1;
    } else {
      ++m;
    }
  }
  std::vector<uint64_t> phi(kPolyWords, 0);
  if (len != static_cast<size_t>(kDegree) || !coefficient(c, len)) {
    throw std::logic_error("MT19937-64: Berlekamp-Massey found a recurrence of degree " + std::to_string(len) +
                           ", expected " + std::to_string(kDegree));
  }
  for (size_t i = 0; i <= len; ++i) {
    if (coefficient(c, len - i)) phi[i / 64] |= uint64_t{1} << (i % 64);
  }
  return phi;
}

namespace {

const PhiTables& phi_tables() {
  static const PhiTables tables = [] {
    PhiTables t;
    t.phi = mt19937_64_minimal_polynomial(Mt19937_64::kDefaultSeed);
    t.shifted.assign(64 * kShiftedWords, 0);
    for (size_t s = 0; s < 64; ++s) {
      uint64_t* row = &t.shifted[s * kShiftedWords];
      for (size_t k = 0; k < kPolyWords; ++k) {
        row[k] |= t.phi[k] << s;
        if (s != 0) row[k + 1] |= t.phi[k] >> (64 - s);
      }
    }
    return t;
  }();
  return tables;
}

/// Bits 0..31 of v spread to the even bits of the result.
uint64_t spread32(uint64_t v) {
  v &= 0xffffffffull;
  v = (v | (v << 16)) & 0x0000ffff0000ffffull;
  v = (v | (v << 8)) & 0x00ff00ff00ff00ffull;
  v = (v | (v << 4)) & 0x0f0f0f0f0f0f0f0full;
  v = (v | (v << 2)) & 0x3333333333333333ull;
  return (v | (v << 1)) & 0x5555555555555555ull;
}

/// p <- p^2 mod phi (p: kPolyWords words, degree < 19937; sq: scratch).
void square_mod(std::vector<uint64_t>& p, std::vector<uint64_t>& sq, const PhiTables& t) {
  sq.assign(kProductWords, 0);
  for (size_t k = 0; k < kPolyWords; ++k) {  // (sum a_i x^i)^2 = sum a_i x^2i over GF(2)
    sq[2 * k] = spread32(p[k]);
    sq[2 * k + 1] = spread32(p[k] >> 32);
  }
  // Clear every coefficient >= 19937, highest first, with phi x^(b - 19937).
  for (size_t w = kProductWords; w-- > kDegree / 64;) {
    const uint64_t mask = w == kDegree / 64 ? ~uint64_t{0} << (kDegree % 64) : ~uint64_t{0};
    while (const uint64_t high = sq[w] & mask) {
      const size_t shift = w * 64 + 63 - __builtin_clzll(high) - kDegree;
      const uint64_t* row = &t.shifted[(shift % 64) * kShiftedWords];
      xor_words(&sq[shift / 64], row, kShiftedWords);
    }
  }
  std::copy(sq.begin(), sq.begin() + kPolyWords, p.begin());
}

/// p <- p x mod phi.
void times_x_mod(std::vector<uint64_t>& p, const PhiTables& t) {
  for (size_t k = kPolyWords; k-- > 1;) p[k] = (p[k] << 1) | (p[k - 1] >> 63);
  p[0] <<= 1;
  if (coefficient(p, kDegree)) {
    for (size_t k = 0; k < kPolyWords; ++k) p[k] ^= t.phi[k];
  }
}

}  // namespace

const std::vector<uint64_t>& mt19937_64_characteristic_polynomial() { return phi_tables().phi; }

MtJumpPolynomial::MtJumpPolynomial(uint64_t steps) : steps_(steps), g_(kPolyWords, 0) {
  const PhiTables& t = phi_tables();
  g_[0] = 1;
  if (steps == 0) return;
  // Left to right: g = x^(the bits of steps read so far).
  std::vector<uint64_t> scratch;
  for (int b = 63 - __builtin_clzll(steps); b >= 0; --b) {
    square_mod(g_, scratch, t);
    if ((steps >> b) & 1u) times_x_mod(g_, t);
  }
}

}  // namespace kopt::spec

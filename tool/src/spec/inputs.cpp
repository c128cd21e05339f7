// Seeded input generation, seed derivation, .npy reading and writing,
// half/bfloat16 conversions. See inputs.h for the exact value mapping.
#include "spec/inputs.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <limits>
#include <memory>
#include <system_error>
#include <thread>
#include <type_traits>

#include "spec/mt19937_64.h"
#include "util/error.h"
#include "util/fs.h"

namespace kopt::spec {

static_assert(std::numeric_limits<float>::is_iec559 && std::numeric_limits<double>::is_iec559,
              "IEEE 754 floating point required");
static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
              "packed buffers and .npy data are little-endian; a big-endian host is unsupported");

// ---------------------------------------------------------------------------
// half / bfloat16
// ---------------------------------------------------------------------------

namespace {
uint32_t float_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}
float bits_float(uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}
/// Shifts `m` right by `shift` (1..31) rounding to nearest, ties to even.
uint32_t shift_round_even(uint32_t m, int shift) {
  const uint32_t rem = m & ((1u << shift) - 1);
  const uint32_t half = 1u << (shift - 1);
  const uint32_t r = m >> shift;
  // Without a branch: the comparison is a coin toss for generated values.
  return r + static_cast<uint32_t>((rem > half) | ((rem == half) & (r & 1u)));
}
}  // namespace

uint16_t float_to_half(float f) {
  const uint32_t x = float_bits(f);
  const uint32_t sign = (x >> 16) & 0x8000u;
  const uint32_t ax = x & 0x7fffffffu;
  if (ax >= 0x7f800000u) {  // Inf or NaN (NaN keeps its top payload bits, made quiet)
    return static_cast<uint16_t>(sign | 0x7c00u |
                                 (ax > 0x7f800000u ? 0x200u | ((ax >> 13) & 0x3ffu) : 0u));
  }
  if (ax >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // >= 65520: Inf
  if (ax >= 0x38800000u) {  // normal half (>= 2^-14): rebias exponent 127 -> 15
    return static_cast<uint16_t>(sign | shift_round_even(ax - 0x38000000u, 13));
  }
  if (ax < 0x33000000u) return static_cast<uint16_t>(sign);  // < 2^-25: rounds to zero
  // Subnormal half: value in units of 2^-24.
  const int exp = static_cast<int>(ax >> 23);
  const uint32_t mant = (ax & 0x7fffffu) | 0x800000u;
  return static_cast<uint16_t>(sign | shift_round_even(mant, 126 - exp));
}

float half_to_float(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t mant = h & 0x3ffu;
  if (exp == 0x1f) return bits_float(sign | 0x7f800000u | (mant << 13));  // Inf / NaN
  if (exp != 0) return bits_float(sign | ((exp + 112u) << 23) | (mant << 13));
  if (mant == 0) return bits_float(sign);  // +-0
  // Subnormal: normalize.
  uint32_t e = 113;
  while ((mant & 0x400u) == 0) {
    mant <<= 1;
    --e;
  }
  return bits_float(sign | (e << 23) | ((mant & 0x3ffu) << 13));
}

uint16_t float_to_bfloat16(float f) {
  const uint32_t x = float_bits(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((x >> 16) | 0x40u);  // NaN
  return static_cast<uint16_t>((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}

float bfloat16_to_float(uint16_t b) { return bits_float(static_cast<uint32_t>(b) << 16); }

// ---------------------------------------------------------------------------
// Storing values
// ---------------------------------------------------------------------------

namespace {

template <typename T>
void put(uint8_t* out, int64_t i, T v) {
  std::memcpy(out + static_cast<size_t>(i) * sizeof(T), &v, sizeof(T));
}

/// Rounds to nearest (ties away from zero) and saturates to T's range.
template <typename T>
T saturate_double(double x) {
  if (std::isnan(x)) return T{0};
  x = std::round(x);
  // Compare in double: the limits of 64-bit types are rounded up to 2^63/2^64,
  // so use >= on the exclusive bound.
  const double lo = static_cast<double>(std::numeric_limits<T>::min());
  const double hi_excl = 2.0 * static_cast<double>((std::numeric_limits<T>::max() >> 1) + 1);
  if (x <= lo) return std::numeric_limits<T>::min();
  if (x >= hi_excl) return std::numeric_limits<T>::max();
  return static_cast<T>(x);
}

template <typename T>
T saturate_int(int64_t v) {
  if constexpr (std::is_signed_v<T>) {
    if (v < static_cast<int64_t>(std::numeric_limits<T>::min())) return std::numeric_limits<T>::min();
    if (v > static_cast<int64_t>(std::numeric_limits<T>::max())) return std::numeric_limits<T>::max();
  } else {
    if (v < 0) return 0;
    if (static_cast<uint64_t>(v) > static_cast<uint64_t>(std::numeric_limits<T>::max())) {
      return std::numeric_limits<T>::max();
    }
  }
  return static_cast<T>(v);
}

/// Calls fn(store) once, where store(out, i, x) stores double `x` as element
/// i of `dtype` (conversion rules in inputs.h): a loop inside fn switches on
/// the type once, not once per element.
template <typename Fn>
void with_double_store(DType dtype, Fn&& fn) {
  switch (dtype) {
    case DType::f64: fn([](uint8_t* out, int64_t i, double x) { put(out, i, x); }); break;
    case DType::f32: fn([](uint8_t* out, int64_t i, double x) { put(out, i, static_cast<float>(x)); }); break;
    case DType::f16:
      fn([](uint8_t* out, int64_t i, double x) { put(out, i, float_to_half(static_cast<float>(x))); });
      break;
    case DType::bf16:
      fn([](uint8_t* out, int64_t i, double x) { put(out, i, float_to_bfloat16(static_cast<float>(x))); });
      break;
    case DType::i8: fn([](uint8_t* out, int64_t i, double x) { put(out, i, saturate_double<int8_t>(x)); }); break;
    case DType::u8: fn([](uint8_t* out, int64_t i, double x) { put(out, i, saturate_double<uint8_t>(x)); }); break;
    case DType::i32: fn([](uint8_t* out, int64_t i, double x) { put(out, i, saturate_double<int32_t>(x)); }); break;
    case DType::u32: fn([](uint8_t* out, int64_t i, double x) { put(out, i, saturate_double<uint32_t>(x)); }); break;
    case DType::i64: fn([](uint8_t* out, int64_t i, double x) { put(out, i, saturate_double<int64_t>(x)); }); break;
    case DType::u64: fn([](uint8_t* out, int64_t i, double x) { put(out, i, saturate_double<uint64_t>(x)); }); break;
  }
}

/// Stores double `x` as element i of `dtype` (conversion rules in inputs.h).
void store_double(uint8_t* out, DType dtype, int64_t i, double x) {
  with_double_store(dtype, [&](auto store) { store(out, i, x); });
}

/// Stores integer `v` as element i: exact for integer types (saturated),
/// through double for floating types.
void store_int(uint8_t* out, DType dtype, int64_t i, int64_t v) {
  switch (dtype) {
    case DType::i8: put(out, i, saturate_int<int8_t>(v)); break;
    case DType::u8: put(out, i, saturate_int<uint8_t>(v)); break;
    case DType::i32: put(out, i, saturate_int<int32_t>(v)); break;
    case DType::u32: put(out, i, saturate_int<uint32_t>(v)); break;
    case DType::i64: put(out, i, v); break;
    case DType::u64: put(out, i, saturate_int<uint64_t>(v)); break;
    default: store_double(out, dtype, i, static_cast<double>(v)); break;
  }
}

// ---------------------------------------------------------------------------
// Generators
// ---------------------------------------------------------------------------

/// [0, 1) from the top 53 bits.
double unit_open(uint64_t bits) { return static_cast<double>(bits >> 11) * 0x1.0p-53; }
/// (0, 1] from the top 53 bits (safe for log).
double unit_closed(uint64_t bits) { return static_cast<double>((bits >> 11) + 1) * 0x1.0p-53; }

/// generate() splits a buffer of this many elements or more over threads,
/// each part at least kParallelMinPart elements (see inputs.h for why).
constexpr int64_t kParallelMinCount = int64_t{1} << 22;
constexpr int64_t kParallelMinPart = int64_t{1} << 21;

/// Draws taken from the engine at a time (even: normal takes pairs).
constexpr int64_t kDrawBatch = 4 * Mt19937_64::kWords;

/// Elements [begin, end) of a uniform buffer; `rng` is at draw `begin`.
void uniform_part(const Generator& g, DType dtype, Mt19937_64& rng, int64_t begin, int64_t end, uint8_t* out) {
  const double low = g.low, width = g.high - g.low;
  with_double_store(dtype, [&](auto store) {
    uint64_t bits[kDrawBatch];
    for (int64_t i = begin; i < end;) {
      const int64_t n = std::min(kDrawBatch, end - i);
      rng.generate(bits, static_cast<size_t>(n));
      for (int64_t k = 0; k < n; ++k) store(out, i + k, low + width * unit_open(bits[k]));
      i += n;
    }
  });
}

/// Elements [begin, end) of a normal buffer: begin even (a pair's first
/// element), `rng` at draw `begin` (element i of a pair starts at draw i).
void normal_part(const Generator& g, DType dtype, Mt19937_64& rng, int64_t begin, int64_t end, uint8_t* out) {
  constexpr double kTwoPi = 6.283185307179586476925286766559;
  const double mean = g.mean, stddev = g.stddev;
  with_double_store(dtype, [&](auto store) {
    uint64_t bits[kDrawBatch];
    for (int64_t i = begin; i < end;) {
      const int64_t n = std::min(kDrawBatch, (end - i + 1) & ~int64_t{1});  // whole pairs
      rng.generate(bits, static_cast<size_t>(n));
      for (int64_t k = 0; k < n; k += 2) {
        const double u1 = unit_closed(bits[k]);
        const double u2 = unit_open(bits[k + 1]);
        const double r = std::sqrt(-2.0 * std::log(u1));
        store(out, i + k, mean + stddev * (r * std::cos(kTwoPi * u2)));
        if (i + k + 1 < end) store(out, i + k + 1, mean + stddev * (r * std::sin(kTwoPi * u2)));
      }
      i += n;
    }
  });
}

void gen_int_range(const Generator& g, DType dtype, int64_t count, uint64_t seed, uint8_t* out) {
  Mt19937_64 rng(seed);
  // span = high - low + 1 in uint64 arithmetic; 0 means the full 2^64 range.
  const uint64_t span = static_cast<uint64_t>(g.int_high) - static_cast<uint64_t>(g.int_low) + 1u;
  // Largest multiple of span representable: draws at or above it are redrawn.
  const uint64_t limit = span == 0 ? 0 : std::numeric_limits<uint64_t>::max() -
                                             (std::numeric_limits<uint64_t>::max() % span + 1) % span;
  for (int64_t i = 0; i < count; ++i) {
    uint64_t bits = rng();
    if (span != 0) {
      while (bits > limit) bits = rng();
      bits %= span;
    }
    store_int(out, dtype, i, static_cast<int64_t>(static_cast<uint64_t>(g.int_low) + bits));
  }
}

void gen_npy(const Generator& g, DType dtype, int64_t count, const std::string& case_name,
             std::vector<uint8_t>& out) {
  const std::string path = expand_case(g.npy, case_name).string();
  // The header first: a file of the wrong dtype or shape is not loaded.
  for (const bool header_only : {true, false}) {
    NpyArray a = header_only ? read_npy_header(path) : read_npy(path);
    if (a.dtype != dtype) {
      throw SpecError("kopt.inputs.201", fs::display(path) + ": expected dtype " + dtype_name(dtype) +
                                             " (the buffer's), found " + dtype_name(a.dtype));
    }
    if (a.count() != count) {
      throw SpecError("kopt.inputs.202", fs::display(path) + ": expected " + std::to_string(count) +
                                             " elements, found " + std::to_string(a.count()));
    }
    if (!header_only) out = std::move(a.data);
  }
}

// ---------------------------------------------------------------------------
// Parallel generation
// ---------------------------------------------------------------------------

/// Runs part(begin, end) over [0, count) cut into `parts` ranges of one even
/// size (the last shorter): the first on this thread, each other on a thread
/// of its own (on this one too when no thread can be started). Rethrows the
/// first exception of a part once every thread has ended.
template <typename Part>
void run_parts(int64_t count, unsigned parts, const Part& part) {
  const int64_t size = ((count + parts - 1) / parts + 1) & ~int64_t{1};
  std::vector<std::thread> threads;
  threads.reserve(parts);  // no allocation between starting threads: a throw there would leave them joinable
  std::vector<std::exception_ptr> errors(parts);
  auto guarded = [&part, &errors](size_t k, int64_t begin, int64_t end) {
    try {
      part(begin, end);
    } catch (...) {
      errors[k] = std::current_exception();
    }
  };
  size_t k = 1;
  for (int64_t begin = size; begin < count; begin += size, ++k) {
    const int64_t end = std::min(count, begin + size);
    try {
      threads.emplace_back(guarded, k, begin, end);
    } catch (...) {  // the process or user thread limit (std::system_error): this thread does it
      guarded(k, begin, end);
    }
  }
  guarded(0, 0, std::min(count, size));
  for (std::thread& t : threads) t.join();
  for (const std::exception_ptr& e : errors) {
    if (e) std::rethrow_exception(e);
  }
}

/// How many parts generate() cuts `count` elements into (see inputs.h).
unsigned generate_parts(int64_t count, unsigned threads) {
  if (threads == 0) {
    if (count < kParallelMinCount) return 1;
    const unsigned hw = std::max(1u, std::thread::hardware_concurrency());
    threads = std::min(hw, input_threads_cap());
    threads = static_cast<unsigned>(std::min<int64_t>(threads, count / kParallelMinPart));
  }
  return std::max(1u, std::min(threads, 1024u));
}

/// A generator of random elements over parts: each part seeds its own engine
/// and jumps it to the part's first draw (element i takes draw i).
template <typename Fill>
void generate_random(int64_t count, uint64_t seed, unsigned parts, const Fill& fill) {
  if (parts > 1) mt19937_64_characteristic_polynomial();  // once per process, here rather than in a part
  run_parts(count, parts, [&](int64_t begin, int64_t end) {
    Mt19937_64 rng(seed);
    rng.discard(static_cast<uint64_t>(begin));
    fill(rng, begin, end);
  });
}

/// The byte size of `count` elements; throws kopt.inputs.203 / 205 as
/// generate() documents.
int64_t checked_bytes(const Generator& g, DType dtype, int64_t count) {
  int64_t bytes = 0;
  if (count < 0 || __builtin_mul_overflow(count, static_cast<int64_t>(dtype_size(dtype)), &bytes)) {
    throw SpecError("kopt.inputs.203", "cannot generate " + std::to_string(count) + " elements of " +
                                           dtype_name(dtype));
  }
  if (g.kind == Generator::Kind::view) {
    throw SpecError("kopt.inputs.205", "a view of '" + g.view_of + "' is made from that buffer's contents "
                                       "(view_elements), not generated");
  }
  return bytes;
}

/// Element i = value(i) for i in [0, count), over `parts` parts.
template <typename Value>
void fill_each(int64_t count, unsigned parts, DType dtype, uint8_t* p, const Value& value) {
  run_parts(count, parts, [&](int64_t begin, int64_t end) {
    with_double_store(dtype, [&](auto store) {
      for (int64_t i = begin; i < end; ++i) store(p, i, value(i));
    });
  });
}

/// Every kind but npy and view into `p`.
void fill(const Generator& g, DType dtype, int64_t count, uint64_t seed, uint8_t* p, unsigned threads) {
  const unsigned parts = generate_parts(count, threads);
  switch (g.kind) {
    case Generator::Kind::uniform:
      generate_random(count, seed, parts, [&](Mt19937_64& rng, int64_t begin, int64_t end) {
        uniform_part(g, dtype, rng, begin, end, p);
      });
      break;
    case Generator::Kind::normal:
      generate_random(count, seed, parts, [&](Mt19937_64& rng, int64_t begin, int64_t end) {
        normal_part(g, dtype, rng, begin, end, p);
      });
      break;
    case Generator::Kind::int_range: gen_int_range(g, dtype, count, seed, p); break;  // sequential (inputs.h)
    case Generator::Kind::constant: fill_each(count, parts, dtype, p, [&](int64_t) { return g.value; }); break;
    case Generator::Kind::iota:
      fill_each(count, parts, dtype, p, [&](int64_t i) { return g.start + static_cast<double>(i) * g.step; });
      break;
    case Generator::Kind::npy:
    case Generator::Kind::view: break;  // the callers' own
  }
}

}  // namespace

Generator npy_fresh_generator(const Generator& g, DType dtype, int64_t count, const std::string& case_name) {
  std::vector<uint8_t> bytes;
  gen_npy(g, dtype, count, case_name, bytes);
  double lo = std::numeric_limits<double>::infinity(), hi = -lo;
  for (int64_t i = 0; i < count; ++i) {
    const double v = element_as_double(bytes.data(), dtype, i);
    if (!std::isfinite(v)) continue;
    lo = std::min(lo, v);
    hi = std::max(hi, v);
  }
  Generator out;
  out.fixed = g.fixed;
  if (!(lo <= hi)) {  // no finite element (or none at all)
    out.kind = Generator::Kind::constant;
    out.value = 0;
  } else if (!dtype_is_float(dtype)) {
    // int64 holds every value of the integer types but u64's top half: clamped.
    constexpr double kTop = 9223372036854775807.0;
    out.kind = Generator::Kind::int_range;
    out.int_low = static_cast<int64_t>(std::min(lo, kTop));
    out.int_high = hi >= kTop ? std::numeric_limits<int64_t>::max() : static_cast<int64_t>(hi);
  } else if (lo == hi) {
    out.kind = Generator::Kind::constant;
    out.value = lo;
  } else {
    out.kind = Generator::Kind::uniform;
    out.low = lo;
    out.high = hi;
  }
  return out;
}

unsigned input_threads_cap() {
  const char* env = std::getenv("KOPT_INPUT_THREADS");
  if (!env) return std::numeric_limits<unsigned>::max();
  char* end = nullptr;
  errno = 0;
  const unsigned long v = std::strtoul(env, &end, 10);
  if (*env < '0' || *env > '9' || *end != '\0' || errno != 0 || v < 1 || v > 65536) {
    throw EnvironmentError("kopt.inputs.206", std::string("KOPT_INPUT_THREADS='") + env +
                                                  "': expected a whole number from 1 to 65536 (the most threads "
                                                  "that generate one input buffer)");
  }
  return static_cast<unsigned>(v);
}

std::vector<uint8_t> generate(const Generator& g, DType dtype, int64_t count, uint64_t seed,
                              const std::string& case_name, unsigned threads) {
  const int64_t bytes = checked_bytes(g, dtype, count);
  std::vector<uint8_t> out;
  if (g.kind == Generator::Kind::npy) {
    gen_npy(g, dtype, count, case_name, out);
    return out;
  }
  out.resize(static_cast<size_t>(bytes));
  fill(g, dtype, count, seed, out.data(), threads);
  return out;
}

void generate_into(const Generator& g, DType dtype, int64_t count, uint64_t seed, uint8_t* out,
                   const std::string& case_name, unsigned threads) {
  const int64_t bytes = checked_bytes(g, dtype, count);
  if (g.kind == Generator::Kind::npy) {
    std::vector<uint8_t> file;
    gen_npy(g, dtype, count, case_name, file);
    if (bytes > 0) std::memcpy(out, file.data(), static_cast<size_t>(bytes));
    return;
  }
  fill(g, dtype, count, seed, out, threads);
}

std::vector<uint8_t> view_elements(const Generator& g, DType dtype, int64_t count, const uint8_t* source,
                                   DType source_dtype, int64_t source_count, const std::string& name,
                                   const std::string& case_name) {
  const size_t elem = dtype_size(dtype);
  int64_t bytes = 0, last = 0;
  if (count < 0 || __builtin_mul_overflow(count, static_cast<int64_t>(elem), &bytes)) {
    throw SpecError("kopt.inputs.203", "cannot make " + std::to_string(count) + " elements of " + dtype_name(dtype));
  }
  if (count > 0 && (__builtin_mul_overflow(count - 1, g.view_stride, &last) ||
                    __builtin_add_overflow(last, g.view_start, &last) || last >= source_count || g.view_start < 0)) {
    throw SpecError("kopt.inputs.204", "case " + case_name + ": '" + name + "' is a view of " +
                                           std::to_string(count) + " elements of '" + g.view_of + "' from element " +
                                           std::to_string(g.view_start) + " in steps of " +
                                           std::to_string(g.view_stride) + ", but '" + g.view_of + "' has " +
                                           std::to_string(source_count) + " elements");
  }
  std::vector<uint8_t> out(static_cast<size_t>(bytes));
  const size_t src_elem = dtype_size(source_dtype);
  for (int64_t i = 0; i < count; ++i) {
    const int64_t j = g.view_start + i * g.view_stride;
    if (source_dtype == dtype) {
      std::memcpy(out.data() + static_cast<size_t>(i) * elem, source + static_cast<size_t>(j) * src_elem, elem);
    } else {
      store_double(out.data(), dtype, i, element_as_double(source, source_dtype, j));
    }
  }
  return out;
}

// ---------------------------------------------------------------------------
// Seeds
// ---------------------------------------------------------------------------

namespace {
/// splitmix64 finalizer (Steele, Lea, Flood 2014).
uint64_t splitmix64(uint64_t z) {
  z += 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}
/// Absorbs the length, then every byte: ("ab","c") and ("a","bc") differ.
uint64_t absorb(uint64_t h, const std::string& s) {
  h = splitmix64(h ^ static_cast<uint64_t>(s.size()));
  for (unsigned char c : s) h = splitmix64(h ^ c);
  return h;
}
}  // namespace

uint64_t derive_seed(uint64_t spec_seed, const std::string& case_name,
                     const std::string& buffer_name, int trial) {
  uint64_t h = splitmix64(spec_seed);
  h = absorb(h, case_name);
  h = absorb(h, buffer_name);
  return splitmix64(h ^ static_cast<uint64_t>(static_cast<int64_t>(trial)));
}

// ---------------------------------------------------------------------------
// .npy
// ---------------------------------------------------------------------------

int64_t NpyArray::count() const {
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0 || __builtin_mul_overflow(n, d, &n)) return -1;
  }
  return n;
}

const char* npy_descr(DType dtype) {
  switch (dtype) {
    case DType::f16: return "<f2";
    case DType::f32: return "<f4";
    case DType::f64: return "<f8";
    case DType::i8: return "|i1";
    case DType::u8: return "|u1";
    case DType::i32: return "<i4";
    case DType::u32: return "<u4";
    case DType::i64: return "<i8";
    case DType::u64: return "<u8";
    case DType::bf16: return nullptr;
  }
  return nullptr;
}

namespace {

constexpr char kMagic[] = "\x93NUMPY";
constexpr size_t kMagicLen = 6;
/// numpy writes headers of a few hundred bytes (np.load refuses more than
/// 10000 by default); a longer one is refused before it is read.
constexpr size_t kMaxHeaderLen = 64 * 1024;

/// Header text quoted in messages, cut to 60 characters.
std::string cut(const std::string& s) { return s.size() <= 60 ? s : s.substr(0, 57) + "..."; }

[[noreturn]] void npy_fail(const char* id, const std::filesystem::path& file,
                           const std::string& what) {
  throw SpecError(id, fs::display(file) + ": " + what);
}

/// The Python dict literal numpy writes, e.g.
///   {'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }
class HeaderParser {
 public:
  HeaderParser(const std::string& text, const std::filesystem::path& file)
      : s_(text), file_(file) {}

  void parse(std::string& descr, bool& fortran, std::vector<int64_t>& shape) {
    bool have_descr = false, have_order = false, have_shape = false;
    expect('{');
    for (;;) {
      skip_ws();
      if (eat('}')) break;
      const std::string key = string_literal();
      expect(':');
      if (key == "descr") {
        skip_ws();
        if (pos_ < s_.size() && s_[pos_] == '[') {
          npy_fail("kopt.npy.305", file_, "structured dtypes are not supported");
        }
        descr = string_literal();
        have_descr = true;
      } else if (key == "fortran_order") {
        fortran = boolean();
        have_order = true;
      } else if (key == "shape") {
        shape = tuple();
        have_shape = true;
      } else {
        bad("unexpected key '" + cut(key) + "'");
      }
      skip_ws();
      if (eat(',')) continue;
      expect('}');
      break;
    }
    if (!have_descr || !have_order || !have_shape) {
      bad("the header lacks one of 'descr', 'fortran_order', 'shape'");
    }
  }

 private:
  [[noreturn]] void bad(const std::string& why) const {
    npy_fail("kopt.npy.302", file_,
             "malformed .npy header (" + why + ") at offset " + std::to_string(pos_) + ": " +
                 (s_.size() <= 200 ? s_ : s_.substr(0, 197) + "..."));
  }
  void skip_ws() {
    while (pos_ < s_.size() && (s_[pos_] == ' ' || s_[pos_] == '\t' || s_[pos_] == '\n')) ++pos_;
  }
  bool eat(char c) {
    skip_ws();
    if (pos_ < s_.size() && s_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }
  void expect(char c) {
    if (!eat(c)) bad(std::string("expected '") + c + "'");
  }
  std::string string_literal() {
    skip_ws();
    if (pos_ >= s_.size() || (s_[pos_] != '\'' && s_[pos_] != '"')) bad("expected a string");
    const char q = s_[pos_++];
    const size_t end = s_.find(q, pos_);
    if (end == std::string::npos) bad("unterminated string");
    std::string out = s_.substr(pos_, end - pos_);
    pos_ = end + 1;
    return out;
  }
  bool boolean() {
    skip_ws();
    if (s_.compare(pos_, 4, "True") == 0) {
      pos_ += 4;
      return true;
    }
    if (s_.compare(pos_, 5, "False") == 0) {
      pos_ += 5;
      return false;
    }
    bad("expected True or False");
  }
  int64_t integer() {
    skip_ws();
    int64_t v = 0;
    const size_t start = pos_;
    while (pos_ < s_.size() && s_[pos_] >= '0' && s_[pos_] <= '9') {
      if (__builtin_mul_overflow(v, int64_t{10}, &v) ||
          __builtin_add_overflow(v, int64_t{s_[pos_] - '0'}, &v)) {
        bad("dimension too large");
      }
      ++pos_;
    }
    if (pos_ == start) bad("expected a non-negative integer");
    if (pos_ < s_.size() && s_[pos_] == 'L') ++pos_;  // Python 2 long suffix
    return v;
  }
  std::vector<int64_t> tuple() {
    std::vector<int64_t> out;
    expect('(');
    if (eat(')')) return out;
    for (;;) {
      out.push_back(integer());
      if (eat(')')) return out;
      expect(',');
      if (eat(')')) return out;
    }
  }

  const std::string& s_;
  const std::filesystem::path& file_;
  size_t pos_ = 0;
};

/// Maps a descr to a dtype (kopt.npy.302/304/305).
DType dtype_from_descr(const std::string& descr, const std::filesystem::path& file) {
  struct Entry {
    const char* code;
    DType dtype;
  };
  static const Entry kCodes[] = {{"f2", DType::f16}, {"f4", DType::f32}, {"f8", DType::f64},
                                 {"i1", DType::i8},  {"u1", DType::u8},  {"i4", DType::i32},
                                 {"u4", DType::u32}, {"i8", DType::i64}, {"u8", DType::u64}};
  const char* supported = "<f2 <f4 <f8 |i1 |u1 <i4 <u4 <i8 <u8";
  if (descr.size() < 2 || std::string("<>|=").find(descr[0]) == std::string::npos) {
    npy_fail("kopt.npy.305", file,
             "unsupported dtype '" + cut(descr) + "' (supported: " + supported + ")");
  }
  const std::string code = descr.substr(1);
  for (const Entry& e : kCodes) {
    if (code != e.code) continue;
    const bool one_byte = dtype_size(e.dtype) == 1;
    if (!one_byte && descr[0] == '>') {
      npy_fail("kopt.npy.304", file,
               "big-endian data ('" + cut(descr) + "') is not supported; save it little-endian, "
               "e.g. a.astype(a.dtype.newbyteorder('<'))");
    }
    if (!one_byte && descr[0] == '|') {
      npy_fail("kopt.npy.302", file, "invalid dtype '" + cut(descr) + "' (byte order missing)");
    }
    return e.dtype;
  }
  npy_fail("kopt.npy.305", file, "unsupported dtype '" + cut(descr) + "' (supported: " + supported + ")");
}

struct NpyLayout {
  DType dtype = DType::f32;
  std::vector<int64_t> shape;
  uint64_t data_offset = 0;
};

/// Parses magic, version and header from `prefix` (the file's first bytes,
/// at least the whole header if the file has one). `file_size` checks data.
NpyLayout parse_layout(const std::string& prefix, uint64_t file_size,
                       const std::filesystem::path& file) {
  if (prefix.size() < kMagicLen + 4 || prefix.compare(0, kMagicLen, kMagic, kMagicLen) != 0) {
    npy_fail("kopt.npy.302", file, "not a .npy file (missing the \\x93NUMPY magic)");
  }
  const int major = static_cast<unsigned char>(prefix[6]);
  const int minor = static_cast<unsigned char>(prefix[7]);
  if (major < 1 || major > 3 || minor != 0) {
    npy_fail("kopt.npy.302", file,
             "unsupported .npy format version " + std::to_string(major) + "." +
                 std::to_string(minor) + " (supported: 1.0, 2.0, 3.0)");
  }
  const size_t len_bytes = major == 1 ? 2 : 4;
  if (prefix.size() < 8 + len_bytes) npy_fail("kopt.npy.302", file, "truncated header");
  uint64_t header_len = 0;
  for (size_t i = 0; i < len_bytes; ++i) {
    header_len |= static_cast<uint64_t>(static_cast<unsigned char>(prefix[8 + i])) << (8 * i);
  }
  const uint64_t header_start = 8 + len_bytes;
  if (header_len > kMaxHeaderLen) {
    npy_fail("kopt.npy.302", file, "the header announces " + std::to_string(header_len) +
                                       " bytes, more than the " + std::to_string(kMaxHeaderLen) +
                                       " this reader accepts (numpy writes a few hundred)");
  }
  if (prefix.size() < header_start + header_len) {
    npy_fail("kopt.npy.302", file, "truncated header (" + std::to_string(header_len) + " bytes announced)");
  }
  std::string descr;
  bool fortran = false;
  NpyLayout out;
  HeaderParser(prefix.substr(header_start, header_len), file).parse(descr, fortran, out.shape);
  if (fortran) {
    npy_fail("kopt.npy.303", file,
             "fortran_order True is not supported; save a C-ordered array "
             "(np.save(f, np.ascontiguousarray(a)))");
  }
  out.dtype = dtype_from_descr(descr, file);
  out.data_offset = header_start + header_len;
  NpyArray probe;
  probe.shape = out.shape;
  int64_t bytes = 0;
  if (probe.count() < 0 ||
      __builtin_mul_overflow(probe.count(), static_cast<int64_t>(dtype_size(out.dtype)), &bytes)) {
    npy_fail("kopt.npy.302", file, "shape too large");
  }
  const uint64_t have = file_size - out.data_offset;
  if (have != static_cast<uint64_t>(bytes)) {
    npy_fail("kopt.npy.306", file,
             "data size mismatch: shape and dtype need " + std::to_string(bytes) +
                 " bytes, the file holds " + std::to_string(have) +
                 (have < static_cast<uint64_t>(bytes) ? " (truncated)" : " (trailing bytes)"));
  }
  return out;
}

/// Opens `file` as a regular file (kopt.npy.301 naming the reason otherwise).
std::unique_ptr<fs::InputFile> open_npy(const std::filesystem::path& file) {
  try {
    return std::make_unique<fs::InputFile>(file, ".npy file");
  } catch (const SpecError& e) {
    const std::string prefix = "[" + e.id() + "] ";
    std::string msg = e.what();
    if (msg.rfind(prefix, 0) == 0) msg = msg.substr(prefix.size());
    throw SpecError("kopt.npy.301", msg);
  }
}

/// Magic, version and header of an open .npy file; the data size is checked
/// against the file size.
NpyLayout read_layout(const fs::InputFile& in) {
  std::string prefix = in.read(0, 12);
  // Enough for the header length field; then read the whole header.
  if (prefix.size() >= 10 && prefix.compare(0, kMagicLen, kMagic, kMagicLen) == 0) {
    const bool v1 = static_cast<unsigned char>(prefix[6]) == 1;
    uint64_t len = static_cast<unsigned char>(prefix[8]) |
                   (static_cast<uint64_t>(static_cast<unsigned char>(prefix[9])) << 8);
    if (!v1 && prefix.size() >= 12) {
      len |= static_cast<uint64_t>(static_cast<unsigned char>(prefix[10])) << 16 |
             static_cast<uint64_t>(static_cast<unsigned char>(prefix[11])) << 24;
    }
    if (len <= kMaxHeaderLen) prefix = in.read(0, static_cast<size_t>((v1 ? 10 : 12) + len));
  }
  return parse_layout(prefix, in.size(), in.path());
}

}  // namespace

NpyArray read_npy_header(const std::filesystem::path& file) {
  const auto in = open_npy(file);
  NpyLayout layout = read_layout(*in);
  NpyArray out;
  out.dtype = layout.dtype;
  out.shape = std::move(layout.shape);
  return out;
}

NpyArray read_npy(const std::filesystem::path& file) {
  const auto in = open_npy(file);
  NpyLayout layout = read_layout(*in);
  // parse_layout checked that the data the header declares fills the file
  // exactly: what is read is what the shape needs, nothing more.
  const uint64_t bytes = in->size() - layout.data_offset;
  const std::string data = in->read(layout.data_offset, static_cast<size_t>(bytes));
  if (data.size() != bytes) {
    npy_fail("kopt.npy.306", file, "the file shrank while it was read (" + std::to_string(data.size()) +
                                       " of " + std::to_string(bytes) + " data bytes)");
  }
  NpyArray out;
  out.dtype = layout.dtype;
  out.shape = std::move(layout.shape);
  out.data.assign(data.begin(), data.end());
  return out;
}

void write_npy(const std::filesystem::path& file, const NpyArray& array) {
  const char* descr = npy_descr(array.dtype);
  if (!descr) {
    npy_fail("kopt.npy.307", file,
             "bfloat16 has no .npy dtype; store the data as float32 (or as uint16 bits)");
  }
  const int64_t count = array.count();
  if (count < 0 || static_cast<uint64_t>(count) * dtype_size(array.dtype) != array.data.size()) {
    npy_fail("kopt.npy.306", file,
             "data holds " + std::to_string(array.data.size()) + " bytes, shape and dtype need " +
                 std::to_string(count) + " x " + std::to_string(dtype_size(array.dtype)));
  }
  std::string shape = "(";
  for (size_t i = 0; i < array.shape.size(); ++i) {
    shape += (i ? ", " : "") + std::to_string(array.shape[i]);
  }
  shape += array.shape.size() == 1 ? ",)" : ")";
  std::string header = std::string("{'descr': '") + descr + "', 'fortran_order': False, 'shape': " +
                       shape + ", }";
  // Pad with spaces and end with '\n' so that the data starts 64-byte aligned.
  auto padded_total = [&](size_t preamble) { return (preamble + header.size() + 1 + 63) / 64 * 64; };
  const bool v1 = padded_total(10) - 10 <= 65535;  // version 1.0 has a 16-bit length field
  const size_t preamble = v1 ? 10 : 12;
  const size_t total = padded_total(preamble);
  header.append(total - preamble - header.size() - 1, ' ');
  header += '\n';
  std::string out(kMagic, kMagicLen);
  out += static_cast<char>(v1 ? 1 : 2);
  out += '\0';
  for (size_t i = 0; i < preamble - 8; ++i) {
    out += static_cast<char>((header.size() >> (8 * i)) & 0xff);  // little-endian length
  }
  out += header;
  out.append(reinterpret_cast<const char*>(array.data.data()), array.data.size());
  fs::write_file_atomic(file, out);
}

double element_as_double(const uint8_t* data, DType dtype, int64_t i) {
  const uint8_t* p = data + static_cast<size_t>(i) * dtype_size(dtype);
  auto get = [p](auto v) {
    std::memcpy(&v, p, sizeof v);
    return v;
  };
  switch (dtype) {
    case DType::f16: return half_to_float(get(uint16_t{}));
    case DType::bf16: return bfloat16_to_float(get(uint16_t{}));
    case DType::f32: return get(float{});
    case DType::f64: return get(double{});
    case DType::i8: return get(int8_t{});
    case DType::u8: return get(uint8_t{});
    case DType::i32: return get(int32_t{});
    case DType::u32: return get(uint32_t{});
    case DType::i64: return static_cast<double>(get(int64_t{}));
    case DType::u64: return static_cast<double>(get(uint64_t{}));
  }
  return 0;
}

}  // namespace kopt::spec

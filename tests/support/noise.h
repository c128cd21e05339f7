// Deterministic pseudo-random numbers from a key and a salt, for the
// synthetic records of tests/support: the same configuration always gets the
// same noise, whatever the order in which a model visits it.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>

namespace kopt::search::replay::noise {

/// splitmix64.
inline uint64_t mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

/// A hash of a key (FNV-1a) and a salt.
inline uint64_t hash_of(const std::string& key, uint64_t salt) {
  uint64_t h = 0xcbf29ce484222325ull ^ mix(salt);
  for (unsigned char ch : key) {
    h ^= ch;
    h *= 0x100000001b3ull;
  }
  return mix(h);
}

/// Uniform in [0, 1).
inline double unit(uint64_t h) { return static_cast<double>(h >> 11) * 0x1.0p-53; }

/// A standard normal deviate (Box-Muller).
inline double normal(uint64_t h) {
  const double u1 = std::max(unit(h), 1e-12), u2 = unit(mix(h));
  return std::sqrt(-2 * std::log(u1)) * std::cos(6.283185307179586 * u2);
}

}  // namespace kopt::search::replay::noise

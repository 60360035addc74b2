// The counter-based generator of Random instructions: a pure function of (seed,
// stream, counter), so a number does not depend on the order instructions run in,
// and a run with the same seed gives the same numbers.
//
// Mixing is SplitMix64's finalizer (Steele, Lea and Flood, "Fast splittable
// pseudorandom number generators", OOPSLA 2014) applied twice over the three keys;
// the top `bits` bits give a number in [0, 1) that is a multiple of 2^-bits: 24 for
// fp32 (as torch.rand's fp32 numbers are), the mantissa width for bf16 (8) and fp16
// (11), so that the number is exact in the dtype and never rounds up to 1.
#pragma once

#include <cmath>
#include <cstdint>

namespace neuron::runtime {

inline uint64_t mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

/// Uniform in [0, 1) on a grid of 2^-bits (bits <= 24): number `counter` of stream
/// `stream` under `seed`.
inline float uniform01(uint64_t seed, uint64_t stream, uint64_t counter, int bits = 24) {
  const uint64_t key = mix64(seed + 0x9e3779b97f4a7c15ULL * (stream + 1));
  const uint64_t mixed = mix64(key ^ mix64(counter + 0x632be59bd9b4e019ULL));
  return float(mixed >> (64 - bits)) * std::ldexp(1.0f, -bits);
}

} // namespace neuron::runtime

// The counter-based generator of Random instructions: a pure function of (seed,
// stream, counter), so a number does not depend on the order instructions run in,
// and a run with the same seed gives the same numbers.
//
// Mixing is SplitMix64's finalizer (Steele, Lea and Flood, "Fast splittable
// pseudorandom number generators", OOPSLA 2014) applied twice over the three keys;
// the top `bits` bits give a number in [0, 1) that is a multiple of 2^-bits: 24 for
// fp32 (as torch.rand's fp32 numbers are), the mantissa width for bf16 (8) and fp16
// (11), so that the number is exact in the dtype and never rounds up to 1.
//
// The stateful generators of rng / rand2 (Memory::rngState) are XORWOW, seeded by SplitMix64
// from (seed, engine, core, partition, generator).
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

/// One XORWOW generator (Marsaglia, "Xorshift RNGs", J. Stat. Softw. 8(14), 2003; cuRAND's
/// default): words x, y, z, w, v of xorshift state and the Weyl counter d, in that order (the 6
/// uint32 words of a lane's state that nki.isa.rand_get_state / rand_set_state move).
inline uint32_t xorwowNext(uint32_t *s) {
  const uint32_t t = s[0] ^ (s[0] >> 2);
  s[0] = s[1];
  s[1] = s[2];
  s[2] = s[3];
  s[3] = s[4];
  s[4] = (s[4] ^ (s[4] << 4)) ^ (t ^ (t << 1));
  s[5] += 362437u;
  return s[4] + s[5];
}

/// A generator's 6 words from a 64-bit key (SplitMix64's finalizer over the key and the word
/// number); the xorshift words are never all zero.
inline void xorwowSeed(uint32_t *s, uint64_t key) {
  for (int i = 0; i < 6; ++i)
    s[i] = uint32_t(mix64(key + 0x9e3779b97f4a7c15ULL * uint64_t(i + 1)) >> 32);
  if ((s[0] | s[1] | s[2] | s[3] | s[4]) == 0)
    s[0] = 1;
}

/// The key of generator `g` of partition `p` of engine `engine` on core `core` under `seed`.
inline uint64_t rngKey(uint64_t seed, int engine, int core, int p, int g) {
  return mix64(seed ^ mix64(uint64_t(engine) << 40 | uint64_t(core) << 32 |
                            uint64_t(p) << 8 | uint64_t(g)));
}

} // namespace neuron::runtime

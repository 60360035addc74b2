// Tests of the engines' stateful random number generators (rng, rand2, rand_set_state,
// rand_get_state, set_rng_seed): the numbers against an XORWOW reference written here from the
// generator's recurrence (bit-exact), their distribution, determinism under RunOptions::seed,
// the state round trip, legality per target and engine, and cost.
#include "runtime/program/Serialize.h"

#include "IsaHarness.h"

#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>

using namespace neuron::runtime;
using namespace neuron::runtime::test;
using namespace neuron::runtime::test::isa;
using Catch::Matchers::Contains;

namespace {

/// Marsaglia's xorwow (J. Stat. Softw. 8(14), 2003, the "xorwow" example), on words x, y, z,
/// w, v, d.
uint32_t refXorwow(uint32_t *s) {
  uint32_t t = s[0] ^ (s[0] >> 2);
  s[0] = s[1], s[1] = s[2], s[2] = s[3], s[3] = s[4];
  s[4] = (s[4] ^ (s[4] << 4)) ^ (t ^ (t << 1));
  return s[4] + (s[5] += 362437u);
}

/// A program of integer SBUF tiles: `ops` are added in order, then each tile in `reads` is
/// stored to an i32 output; returns the outputs.
struct IntRun {
  Builder b;
  RunOptions options;
  int64_t offset = 0;
  explicit IntRun(const char *t) { b.prog.target = t; }
  AccessPattern tile(int64_t rows, int64_t cols, DType dt = DType::I32) {
    AccessPattern a = sbuf(dt, 0, offset, rows, {cols});
    offset += cols * 4;
    return a;
  }
  /// A [rows, cols] i32 tile of `values`, loaded from an input.
  std::vector<std::vector<int32_t>> inputs;
  AccessPattern in(int64_t rows, int64_t cols, std::vector<int32_t> values) {
    uint32_t buf = b.input("in" + std::to_string(inputs.size()), DType::I32, {rows, cols});
    AccessPattern t = tile(rows, cols);
    b.dma(kQueueDma0 + int(inputs.size() % 8), t, hbm(buf, DType::I32, 0, {{cols, rows}, {1, cols}}));
    inputs.push_back(std::move(values));
    return t;
  }
  std::vector<std::vector<int32_t>> read(const std::vector<AccessPattern> &tiles) {
    std::vector<std::vector<int32_t>> out;
    for (size_t k = 0; k < tiles.size(); ++k) {
      const int64_t rows = tiles[k].dims[0][1], cols = tiles[k].numElements() / rows;
      AccessPattern t = tiles[k];
      uint32_t o = b.output("out" + std::to_string(k), t.dtype, {rows, cols});
      b.dma(kQueueDma0 + 9 + int(k % 7), hbm(o, t.dtype, 0, {{cols, rows}, {1, cols}}), t);
      out.emplace_back(size_t(rows * cols));
    }
    b.sequential();
    std::vector<void *> outs;
    for (auto &v : out)
      outs.push_back(v.data());
    std::vector<const void *> ins;
    for (const auto &v : inputs)
      ins.push_back(v.data());
    simulate(b.prog, *findTarget(b.prog.target), ins, outs, options);
    return out;
  }
};

Instruction op(Opcode o, int queue, AccessPattern dst) {
  return make(o, queue, std::move(dst), {});
}

} // namespace

TEST_CASE("rng: XORWOW bits per lane, bit-exact against the recurrence from rand_get_state",
          "[isa][rng]") {
  constexpr int64_t P = 128, F = 64;
  for (const char *name : {"trn2", "trn3"})
    for (int queue : {kQueueGpSimd, kQueueVector}) {
      const bool vector = queue == kQueueVector;
      if (vector && std::string(name) != "trn3")
        continue; // the Vector engine's state moves from NC-v4 on
      const int64_t words = vector ? 24 : 6;
      IntRun r(name);
      r.options.seed = 7;
      AccessPattern state = r.tile(P, words), bits32 = r.tile(P, F), again = r.tile(P, F);
      r.b.add(op(Opcode::RandGetState, queue, state));
      r.b.add(op(Opcode::Rng, queue, bits32));
      r.b.add(op(Opcode::RandSetState, queue, state)); // back to before the rng
      r.b.add(op(Opcode::Rng, queue, again));
      auto out = r.read({state, bits32, again});
      for (int64_t p = 0; p < P; ++p) {
        uint32_t s[24];
        for (int64_t w = 0; w < words; ++w)
          s[w] = uint32_t(out[0][size_t(p * words + w)]);
        for (int64_t f = 0; f < F; ++f) {
          const uint32_t want = refXorwow(vector ? s + 6 * (f % 4) : s);
          CHECK(uint32_t(out[1][size_t(p * F + f)]) == want);
          CHECK(out[2][size_t(p * F + f)] == out[1][size_t(p * F + f)]);
        }
      }
    }
}

TEST_CASE("rng: deterministic under RunOptions::seed, uniform bits, truncation to u8 and i8",
          "[isa][rng]") {
  constexpr int64_t P = 128, F = 256;
  auto run = [&](uint64_t seed, DType dt) {
    IntRun r("trn1");
    r.options.seed = seed;
    AccessPattern d = r.tile(P, F, dt);
    r.b.add(op(Opcode::Rng, kQueueVector, d));
    AccessPattern d2 = r.tile(P, F, DType::I32);
    r.b.add(op(Opcode::Rng, kQueueVector, d2));
    return r.read({d2});
  };
  const auto a = run(1, DType::I32), b = run(1, DType::I32), c = run(2, DType::I32);
  CHECK(a == b);
  CHECK(a != c);
  // Each of the 32 bits is set in about half of the P x F numbers (within 5 sigma).
  const double n = double(P * F);
  for (int bit = 0; bit < 32; ++bit) {
    double ones = 0;
    for (int32_t v : a[0])
      ones += (uint32_t(v) >> bit) & 1u;
    CHECK(std::abs(ones - n / 2) < 5 * std::sqrt(n / 4));
  }
  // u8 and i8: the low 8 bits of the 32 (the same draws as an i32 rng's).
  IntRun r("trn2");
  AccessPattern st = r.tile(P, 6), u8 = r.tile(P, F, DType::U8), i8 = r.tile(P, F, DType::I8),
                i32 = r.tile(P, F), i32b = r.tile(P, F);
  r.b.add(op(Opcode::RandGetState, kQueueGpSimd, st));
  r.b.add(op(Opcode::Rng, kQueueGpSimd, u8));
  r.b.add(op(Opcode::RandSetState, kQueueGpSimd, st));
  r.b.add(op(Opcode::Rng, kQueueGpSimd, i8));
  r.b.add(op(Opcode::RandSetState, kQueueGpSimd, st));
  r.b.add(op(Opcode::Rng, kQueueGpSimd, i32));
  // u8 / i8 tiles read back through i32 copies (tensor_copy converts exactly).
  AccessPattern u8w = r.tile(P, F), i8w = r.tile(P, F);
  r.b.add(make(Opcode::TensorCopy, kQueueVector, u8w, {u8}));
  r.b.add(make(Opcode::TensorCopy, kQueueVector, i8w, {i8}));
  (void)i32b;
  auto out = r.read({i32, u8w, i8w});
  std::vector<int> histogram(256, 0);
  for (size_t k = 0; k < out[0].size(); ++k) {
    const uint32_t u = uint32_t(out[0][k]);
    CHECK(out[1][k] == int32_t(u & 0xffu));
    CHECK(out[2][k] == int32_t(int8_t(uint8_t(u & 0xffu))));
    ++histogram[size_t(u & 0xffu)];
  }
  // Chi-square of the 256 byte values against uniform: 255 degrees of freedom, mean 255,
  // sd about 22.6; accept below mean + 6 sd.
  double chi2 = 0, expect = double(out[0].size()) / 256;
  for (int h : histogram)
    chi2 += (h - expect) * (h - expect) / expect;
  CHECK(chi2 < 255 + 6 * 22.6);
}

TEST_CASE("set_rng_seed: the same seed, the same Vector numbers, whatever the run's seed",
          "[isa][rng][set_rng_seed]") {
  constexpr int64_t P = 64, F = 32;
  auto run = [&](uint64_t runSeed, int32_t seed) {
    IntRun r("trn1");
    r.options.seed = runSeed;
    AccessPattern s = r.in(1, 1, {seed}), d = r.tile(P, F);
    r.b.add(op(Opcode::SetRngSeed, kQueueVector, s));
    r.b.add(op(Opcode::Rng, kQueueVector, d));
    return r.read({d})[0];
  };
  CHECK(run(1, 42) == run(99, 42));
  CHECK(run(1, 42) != run(1, 43));
  // set_rng_seed(s) starts the generators where a run with seed s does.
  IntRun r("trn1");
  r.options.seed = 42;
  AccessPattern d = r.tile(P, F);
  r.b.add(op(Opcode::Rng, kQueueVector, d));
  CHECK(r.read({d})[0] == run(5, 42));
}

TEST_CASE("rand2: uniform between min and max on trn3, its mean and variance", "[isa][rand2]") {
  constexpr int64_t P = 128, F = 512;
  Harness h("trn3");
  h.options.seed = 3;
  AccessPattern d = h.tile(P, F);
  Instruction in = op(Opcode::Rand2, kQueueVector, d);
  in.imm[0] = -1.5;
  in.imm[1] = 2.5;
  h.b.add(in);
  auto out = h.read({d})[0];
  double sum = 0, sq = 0;
  for (float v : out) {
    CHECK(v >= -1.5f);
    CHECK(v < 2.5f);
    sum += v;
    sq += double(v) * v;
  }
  const double n = double(out.size()), mean = sum / n, var = sq / n - mean * mean;
  // Uniform on a width of 4: mean 0.5 (sd of the mean 4 / sqrt(12 n)), variance 16 / 12.
  CHECK(std::abs(mean - 0.5) < 5 * 4 / std::sqrt(12 * n));
  CHECK(std::abs(var - 16.0 / 12) < 0.02);
  Harness h2("trn3");
  h2.options.seed = 3;
  AccessPattern d2 = h2.tile(P, F);
  Instruction in2 = in;
  in2.dst = d2;
  h2.b.add(in2);
  CHECK(h2.read({d2})[0] == out); // deterministic under the seed
}

TEST_CASE("rng, rand2, rand_set_state, rand_get_state, set_rng_seed: legality and cost",
          "[isa][rng]") {
  const AccessPattern i32 = sbuf(DType::I32, 0, 0, 128, {64}),
                      st6 = sbuf(DType::I32, 0, 0, 128, {6}),
                      st24 = sbuf(DType::I32, 0, 0, 128, {24}),
                      seed = sbuf(DType::I32, 0, 0, 1, {1});
  CHECK(rejection(target("trn1"), op(Opcode::Rng, kQueueVector, i32)).empty());
  CHECK_THAT(rejection(target("trn1"), op(Opcode::Rng, kQueueGpSimd, i32)),
             Contains("the GpSimd engine draws random numbers from NC-v3 on"));
  CHECK(rejection(target("trn2"), op(Opcode::Rng, kQueueGpSimd, i32)).empty());
  CHECK_THAT(rejection(target("trn2"), op(Opcode::Rng, kQueueVector,
                                          sbuf(DType::F32, 0, 0, 128, {64}))),
             Contains("writes random bits into an integer dst (i32, i8, u8), not f32"));
  CHECK_THAT(rejection(target("trn2"), op(Opcode::Rng, kQueueScalar, i32)),
             Contains("it runs on vector, gpsimd"));
  Instruction r2 = op(Opcode::Rand2, kQueueVector, sbuf(DType::F32, 0, 0, 128, {64}));
  r2.imm[1] = 1;
  CHECK(rejection(target("trn3"), r2).empty());
  CHECK_THAT(rejection(target("trn2"), r2),
             Contains("(rand2): is not an instruction of trn2 (NC-v3); it exists on trn3"));
  r2.imm[1] = 0;
  CHECK_THAT(rejection(target("trn3"), r2), Contains("min imm[0] must be below max imm[1]"));
  for (Opcode o : {Opcode::RandSetState, Opcode::RandGetState}) {
    CHECK_THAT(rejection(target("trn1"), op(o, kQueueGpSimd, st6)),
               Contains("is not an instruction of trn1 (NC-v2); it exists on trn2, trn3"));
    CHECK(rejection(target("trn2"), op(o, kQueueGpSimd, st6)).empty());
    CHECK_THAT(rejection(target("trn2"), op(o, kQueueVector, st24)),
               Contains("the Vector engine's generator state moves from NC-v4 on (trn3)"));
    CHECK(rejection(target("trn3"), op(o, kQueueVector, st24)).empty());
    CHECK_THAT(rejection(target("trn3"), op(o, kQueueGpSimd, st24)),
               Contains("a gpsimd lane's XORWOW state is 6 words, but dst has 24"));
  }
  CHECK(rejection(target("trn1"), op(Opcode::SetRngSeed, kQueueVector, seed)).empty());
  CHECK_THAT(rejection(target("trn1"), op(Opcode::SetRngSeed, kQueueVector, st6)),
             Contains("dst must be [1, 1]"));
  CHECK_THAT(rejection(target("trn1"), op(Opcode::SetRngSeed, kQueueGpSimd, seed)),
             Contains("it runs on vector"));
  // ESTIMATE costs (HARDWARE.md): max(MIN_II, N) on Vector, 150 + N on GpSimd.
  for (const char *name : {"trn2", "trn3"})
    for (int64_t n : {int64_t(16), int64_t(256), int64_t(1000)}) {
      const Target &t = target(name);
      AccessPattern d = sbuf(DType::I32, 0, 0, 128, {n});
      CHECK(cyclesOf(t, op(Opcode::Rng, kQueueVector, d)) == std::max(double(n), double(t.minII)));
      CHECK(cyclesOf(t, op(Opcode::Rng, kQueueGpSimd, d)) == 150.0 + double(n));
    }
  CHECK(cyclesOf(target("trn2"), op(Opcode::RandGetState, kQueueGpSimd, st6)) == 156.0);
  CHECK(cyclesOf(target("trn3"), op(Opcode::RandSetState, kQueueVector, st24)) == 64.0);
  CHECK(cyclesOf(target("trn1"), op(Opcode::SetRngSeed, kQueueVector, seed)) == 64.0);
  r2.imm[1] = 1;
  r2.dst.dims.back() = {1, 300};
  CHECK(cyclesOf(target("trn3"), r2) == 300.0);
  // Serialization: the opcodes round-trip.
  Builder b;
  b.prog.target = "trn3";
  b.add(op(Opcode::Rng, kQueueVector, i32));
  b.add(r2);
  b.add(op(Opcode::RandSetState, kQueueVector, st24));
  b.add(op(Opcode::RandGetState, kQueueGpSimd, st6));
  b.add(op(Opcode::SetRngSeed, kQueueVector, seed));
  for (const Program &back :
       {programFromJson(programToJson(b.prog)), programFromCbor(programToCbor(b.prog))}) {
    REQUIRE(back.instructions.size() == 5);
    CHECK(back.instructions[0].opcode == Opcode::Rng);
    CHECK(back.instructions[1].opcode == Opcode::Rand2);
    CHECK(back.instructions[1].imm[1] == 1.0);
    CHECK(back.instructions[2].opcode == Opcode::RandSetState);
    CHECK(back.instructions[3].opcode == Opcode::RandGetState);
    CHECK(back.instructions[4].opcode == Opcode::SetRngSeed);
  }
}

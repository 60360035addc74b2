// Random instructions: uniform numbers from a counter-based generator, keyed by the
// run's seed, the instruction's stream and how many numbers it has produced.
#include "ProgramBuilder.h"

#include "runtime/simulator/Simulator.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <vector>

using namespace neuron::runtime;
using namespace neuron::runtime::test;
using Catch::Matchers::Contains;

namespace {

const Target &trn2() { return *findTarget("trn2"); }

/// A loop of 4 iterations: Random into a [128, 256] tile, stored to rows of y.
Program fourTiles(DType dt = DType::F32, double stream = 7) {
  Builder b;
  uint32_t y = b.output("y", dt, {4 * 128, 256});
  size_t body = b.next();
  b.op(Opcode::Random, kQueueGpSimd, sbuf(dt, 0, 0, 128, {256}), {},
       {waitFor(kQueueDma0, 0, {term(0, 1)})});
  b.last().imm[0] = stream;
  b.dma(kQueueDma0, withTerms(hbm(y, dt, 0, {{256, 128}, {1, 256}}), {term(0, 128 * 256)}),
        sbuf(dt, 0, 0, 128, {256}), {waitFor(kQueueGpSimd, 1, {term(0, 1)})});
  b.loop(body, 4);
  return b.prog;
}

std::vector<float> run(const Program &p, uint64_t seed) {
  std::vector<float> y(4 * 128 * 256, -1.0f);
  RunOptions o;
  o.seed = seed;
  simulate(p, trn2(), {}, {y.data()}, o);
  return y;
}

} // namespace

TEST_CASE("random numbers are uniform in 0 <= u < 1 and differ per tile", "[random]") {
  const std::vector<float> y = run(fourTiles(), 42);
  double sum = 0, sq = 0;
  for (float v : y) {
    REQUIRE(v >= 0.0f);
    REQUIRE(v < 1.0f);
    sum += v;
    sq += double(v) * v;
  }
  const double n = double(y.size()), mean = sum / n, var = sq / n - mean * mean;
  // 131072 numbers: the mean's standard error is 0.0008.
  CHECK(std::abs(mean - 0.5) < 0.005);
  CHECK(std::abs(var - 1.0 / 12) < 0.002);
  // Each iteration draws the next numbers of the stream: no two tiles repeat.
  const size_t tile = 128 * 256;
  for (size_t t = 1; t < 4; ++t)
    CHECK_FALSE(std::equal(y.begin(), y.begin() + tile, y.begin() + t * tile));
}

TEST_CASE("the seed and the stream key the numbers", "[random]") {
  CHECK(run(fourTiles(), 1) == run(fourTiles(), 1));
  CHECK(run(fourTiles(), 1) != run(fourTiles(), 2));
  CHECK(run(fourTiles(DType::F32, 3), 1) != run(fourTiles(DType::F32, 4), 1));
}

TEST_CASE("random into bf16, and what a Random instruction may not do", "[random]") {
  Program p = fourTiles(DType::BF16);
  std::vector<uint16_t> y(4 * 128 * 256, 0xffff);
  RunOptions o;
  o.seed = 5;
  simulate(p, trn2(), {}, {y.data()}, o);
  CHECK(std::all_of(y.begin(), y.end(), [](uint16_t v) { return v < 0x3f80; })); // < 1.0
  Program q = fourTiles();
  q.instructions[0].dst.dtype = DType::I32;
  q.instructions[1].srcs[0].dtype = DType::I32;
  q.buffers[0].dtype = DType::I32;
  q.instructions[1].dst.dtype = DType::I32;
  std::vector<int32_t> yi(4 * 128 * 256);
  CHECK_THROWS_WITH(simulate(q, trn2(), {}, {yi.data()}),
                    Contains("random numbers are floats, not i32"));
  Program r = fourTiles(DType::F32, 0.5);
  std::vector<float> yf(4 * 128 * 256);
  CHECK_THROWS_WITH(simulate(r, trn2(), {}, {yf.data()}),
                    Contains("the stream id imm[0] must be an integer"));
  Program v = fourTiles();
  v.instructions[0].queue = kQueueVector;
  CHECK_THROWS_WITH(simulate(v, trn2(), {}, {yf.data()}),
                    Contains("cannot run on the vector engine"));
}

// Tests of the Scalar engine's activation with per-partition scale and bias tiles and
// row sums (accumulate): results, legality checks, cost and serialization.
#include "runtime/program/Serialize.h"
#include "runtime/simulator/Simulator.h"
#include "runtime/simulator/timing/CostModel.h"

#include "ProgramBuilder.h"

#include <catch2/catch.hpp>

#include <cmath>

using namespace neuron::runtime;
using namespace neuron::runtime::test;
using Catch::Matchers::Contains;

namespace {

const Target &trn2() { return *findTarget("trn2"); }

constexpr int64_t P = 4, F = 6;

/// [P, 1] tile at `offset` read with free stride 0 along F columns.
AccessPattern perPartition(int64_t offset) {
  AccessPattern ap = sbuf(DType::F32, 0, offset, P, {1});
  ap.dims.back() = {0, F};
  return ap;
}

/// x [P, F], s [P, 1], b [P, 1] in; y = exp(x * 2s - b) [P, F] and the row sums of y
/// (accumulated in fp32) out.
Program program(bool accumulate) {
  Builder b;
  uint32_t x = b.input("x", DType::F32, {P, F});
  uint32_t s = b.input("s", DType::F32, {P, 1});
  uint32_t bias = b.input("b", DType::F32, {P, 1});
  uint32_t y = b.output("y", DType::F32, {P, F});
  uint32_t sums = b.output("sums", DType::F32, {P, 1});
  b.dma(kQueueDma0, sbuf(DType::F32, 0, 0, P, {F}), hbm(x, DType::F32, 0, {{F, P}, {1, F}}));
  b.dma(kQueueDma0 + 1, sbuf(DType::F32, 0, 256, P, {1}), hbm(s, DType::F32, 0, {{1, P}, {1, 1}}));
  b.dma(kQueueDma0 + 2, sbuf(DType::F32, 0, 512, P, {1}),
        hbm(bias, DType::F32, 0, {{1, P}, {1, 1}}));
  std::vector<AccessPattern> srcs = {sbuf(DType::F32, 0, 0, P, {F}), perPartition(256),
                                     perPartition(512)};
  if (accumulate)
    srcs.push_back(sbuf(DType::F32, 0, 768, P, {1}));
  b.op(Opcode::Activation, kQueueScalar, sbuf(DType::F32, 0, 1024, P, {F}), srcs);
  Instruction &act = b.last();
  act.func = ActFunc::Exp;
  act.imm[0] = 2.0;
  act.imm[1] = -1.0;
  act.scaleTile = act.biasTile = true;
  act.accumulate = accumulate;
  b.dma(kQueueDma0 + 3, hbm(y, DType::F32, 0, {{F, P}, {1, F}}), sbuf(DType::F32, 0, 1024, P, {F}));
  if (accumulate)
    b.dma(kQueueDma0 + 4, hbm(sums, DType::F32, 0, {{1, P}, {1, 1}}),
          sbuf(DType::F32, 0, 768, P, {1}));
  b.sequential();
  return b.prog;
}

std::string errorOf(const Program &p) {
  RunOptions o;
  o.timingOnly = true;
  try {
    simulate(p, trn2(), {}, {}, o);
  } catch (const SimulationError &e) {
    return e.what();
  }
  return "<no error>";
}

} // namespace

TEST_CASE("activation scales and biases each partition by its tile and sums its rows",
          "[activation]") {
  std::vector<float> x(P * F), s = {1.0f, 0.5f, -1.0f, 0.25f}, bias = {0.0f, 1.0f, -2.0f, 3.0f};
  for (int64_t i = 0; i < P * F; ++i)
    x[size_t(i)] = float(i % 7) * 0.25f - 0.5f;
  std::vector<float> y(P * F, -1.0f), sums(P, -1.0f);
  Program p = program(true);
  simulate(p, trn2(), {x.data(), s.data(), bias.data()}, {y.data(), sums.data()});
  for (int64_t r = 0; r < P; ++r) {
    float sum = 0.0f;
    for (int64_t c = 0; c < F; ++c) {
      float expect = std::exp(x[size_t(r * F + c)] * (s[size_t(r)] * 2.0f) - bias[size_t(r)]);
      CHECK(y[size_t(r * F + c)] == Approx(expect).epsilon(1e-6));
      sum += y[size_t(r * F + c)];
    }
    CHECK(sums[size_t(r)] == Approx(sum).epsilon(1e-6));
  }
}

TEST_CASE("an activation's row sums cost MIN_II more (activation_reduce)", "[activation]") {
  Program with = program(true), without = program(false);
  auto busy = [](const Program &p) {
    for (const Instruction &in : p.instructions)
      if (in.opcode == Opcode::Activation) {
        InstrShape shape;
        shape.partitions = P;
        shape.freeElems = F * 100; // above MIN_II
        return computeCycles(trn2(), in, shape);
      }
    return -1.0;
  };
  CHECK(busy(without) == Approx(F * 100));
  CHECK(busy(with) == Approx(F * 100 + trn2().minII));
}

TEST_CASE("per-partition operands and row sums are checked", "[activation][checks]") {
  Program p = program(true);
  size_t act = 0;
  while (p.instructions[act].opcode != Opcode::Activation)
    ++act;
  SECTION("a bias tile must have free stride 0") {
    p.instructions[act].srcs[2].dims.back() = {1, F};
    CHECK_THAT(errorOf(p), Contains("is a per-partition bias: its free dims must have stride 0"));
  }
  SECTION("the row sums are [P, 1] f32") {
    p.instructions[act].srcs[3] = sbuf(DType::F32, 0, 768, P, {2});
    CHECK_THAT(errorOf(p), Contains("receives the reduce result (the accumulator registers): it must be [4, 1] f32"));
  }
  SECTION("only activations have per-partition operands") {
    Instruction &in = p.instructions[act];
    in.opcode = Opcode::TensorTensor;
    in.queue = kQueueVector;
    in.srcs.resize(2);
    in.accumulate = false;
    CHECK_THAT(errorOf(p), Contains("only an activation or activate2 has a per-partition bias source"));
    in.biasTile = false;
    in.srcs.resize(2);
    CHECK_THAT(errorOf(p), Contains("only activation, activate2, exponential, tensor_scalar, "
                                    "tensor_scalar_reduce, select_reduce, dropout, "
                                    "scalar_tensor_tensor and tensor_tensor_scan have a "
                                    "per-partition scalar source"));
  }
  SECTION("the sources must match the flags") {
    p.instructions[act].biasTile = false;
    CHECK_THAT(errorOf(p), Contains("expects 2 source operand(s) (3 with a reduce result), got 4"));
  }
}

TEST_CASE("the GpSimd engine cannot access PSUM", "[checks]") {
  Builder b;
  b.op(Opcode::Memset, kQueueVector, psum(DType::F32, 0, 0, 128, {16}), {});
  b.op(Opcode::TensorCopy, kQueueGpSimd, sbuf(DType::F32, 0, 0, 128, {16}),
       {psum(DType::F32, 0, 0, 128, {16})});
  b.sequential();
  CHECK_THAT(errorOf(b.prog), Contains("the GpSimd engine cannot access PSUM"));
}

TEST_CASE("per-partition operands and row sums round-trip through the format",
          "[activation][serialize]") {
  Program p = program(true);
  Program back = programFromJson(programToJson(p));
  REQUIRE(back.instructions.size() == p.instructions.size());
  for (size_t i = 0; i < p.instructions.size(); ++i) {
    CHECK(back.instructions[i].scaleTile == p.instructions[i].scaleTile);
    CHECK(back.instructions[i].biasTile == p.instructions[i].biasTile);
    CHECK(back.instructions[i].accumulate == p.instructions[i].accumulate);
    CHECK(back.instructions[i].srcs.size() == p.instructions[i].srcs.size());
  }
}

// Tests of the Scalar engine's accumulator registers (activation's reduce_cmd) and of the
// instructions that use them: numbers against references computed here (bit-exact where the
// order of the fp32 operations is documented), legality per target, cost against the
// documented formula, serialization.
#include "runtime/program/Serialize.h"

#include "IsaHarness.h"

#include <catch2/catch.hpp>

#include <cmath>

using namespace neuron::runtime;
using namespace neuron::runtime::test;
using namespace neuron::runtime::test::isa;
using Catch::Matchers::Contains;

namespace {

/// An activation dst = x * scale (Identity: exact in fp32) that reduces into the Scalar
/// engine's registers with `cmd`, with a reduce result `res` unless it is null.
Instruction reducingActivation(AccessPattern dst, AccessPattern x, ReduceCmd cmd, double scale,
                               const AccessPattern *res) {
  std::vector<AccessPattern> srcs = {std::move(x)};
  if (res)
    srcs.push_back(*res);
  Instruction in = make(Opcode::Activation, kQueueScalar, std::move(dst), std::move(srcs));
  in.func = ActFunc::Identity;
  in.imm[0] = scale;
  in.accumulate = true;
  in.reduceCmd = cmd;
  return in;
}

/// The fp32 sum, in order, of row p of x [P, F] times `scale`.
float rowSum(const std::vector<float> &x, int64_t p, int64_t f, float scale) {
  float s = 0;
  for (int64_t i = 0; i < f; ++i)
    s += x[size_t(p * f + i)] * scale;
  return s;
}

} // namespace

TEST_CASE("activation reduce_cmd: the Scalar engine's registers accumulate across instructions",
          "[isa][activation][reduce_cmd]") {
  constexpr int64_t P = 32, F = 40;
  const std::vector<float> x1 = randoms(P * F, 1), x2 = randoms(P * F, 2), x3 = randoms(P * F, 3);
  for (const char *name : {"trn1", "trn2", "trn3"}) {
    Harness h(name);
    AccessPattern a = h.in(P, F, x1), b = h.in(P, F, x2), c = h.in(P, F, x3);
    AccessPattern d1 = h.tile(P, F), d2 = h.tile(P, F), d3 = h.tile(P, F), plain = h.tile(P, F);
    AccessPattern r2 = h.tile(P, 1), r3 = h.tile(P, 1), rIdle = h.tile(P, 1),
                  rReset = h.tile(P, 1);
    // reset_reduce without a result, reduce without one, a plain activation (registers
    // untouched), reduce with a result; then idle and reset reading them out.
    h.b.add(reducingActivation(d1, a, ReduceCmd::ResetReduce, 1.5, nullptr));
    h.b.add(reducingActivation(d2, b, ReduceCmd::Reduce, 0.5, &r2));
    Instruction noReduce = make(Opcode::Activation, kQueueScalar, plain, {c});
    noReduce.func = ActFunc::Identity;
    noReduce.imm[0] = 3.0;
    h.b.add(noReduce);
    h.b.add(reducingActivation(d3, c, ReduceCmd::Reduce, 2.0, &r3));
    h.b.add(reducingActivation(plain, a, ReduceCmd::Idle, 1.0, &rIdle));
    h.b.add(reducingActivation(plain, a, ReduceCmd::Reset, 1.0, &rReset));
    auto out = h.read({d1, d2, d3, r2, r3, rIdle, rReset});
    for (int64_t p = 0; p < P; ++p) {
      for (int64_t f = 0; f < F; ++f) {
        const size_t k = size_t(p * F + f);
        CHECK(bits(out[0][k]) == bits(x1[k] * 1.5f));
        CHECK(bits(out[1][k]) == bits(x2[k] * 0.5f));
        CHECK(bits(out[2][k]) == bits(x3[k] * 2.0f));
      }
      // reduce adds the instruction's row sum (in order, from 0) to the register.
      float reg = 0.0f + rowSum(x1, p, F, 1.5f);
      reg += rowSum(x2, p, F, 0.5f);
      CHECK(bits(out[3][size_t(p)]) == bits(reg));
      reg += rowSum(x3, p, F, 2.0f);
      CHECK(bits(out[4][size_t(p)]) == bits(reg));
      CHECK(bits(out[5][size_t(p)]) == bits(reg)); // idle: read out, unchanged
      CHECK(out[6][size_t(p)] == 0.0f);            // reset: zeroed, nothing added
    }
  }
}

TEST_CASE("activation reduce_cmd: one register per partition, apart from the Vector engine's",
          "[isa][activation][reduce_cmd]") {
  constexpr int64_t P = 64, F = 16;
  const std::vector<float> x = randoms(P * F, 11), y = randoms(P * F, 12);
  Harness h("trn2");
  AccessPattern xs = h.in(P, F, x), ys = h.in(P, F, y), d = h.tile(P, F), r = h.tile(P, 1),
                vd = h.tile(P, F), vr = h.tile(P, 1);
  // All 64 partitions reset_reduce; then partitions 32..63 only add y's row sums.
  h.b.add(reducingActivation(d, xs, ReduceCmd::ResetReduce, 1.0, nullptr));
  auto upper = [](AccessPattern ap) {
    ap.partition = 32;
    ap.dims[0][1] = 32;
    return ap;
  };
  AccessPattern rUpper = upper(r);
  h.b.add(reducingActivation(upper(d), upper(ys), ReduceCmd::Reduce, 1.0, &rUpper));
  AccessPattern rLower = r;
  rLower.dims[0][1] = 32;
  AccessPattern dLower = d;
  dLower.dims[0][1] = 32;
  AccessPattern xLower = xs;
  xLower.dims[0][1] = 32;
  h.b.add(reducingActivation(dLower, xLower, ReduceCmd::Idle, 1.0, &rLower));
  // The Vector engine's registers are its own: a tensor_scalar_reduce `reduce` after the
  // activations starts from their zero.
  Instruction v = make(Opcode::TensorScalarReduce, kQueueVector, vd, {ys, vr});
  v.alu = AluOp::Mul;
  v.imm[0] = 1.0;
  v.alu2 = AluOp::Add;
  v.reduceCmd = ReduceCmd::Reduce;
  h.b.add(v);
  auto out = h.read({r, vr});
  for (int64_t p = 0; p < P; ++p) {
    const float lower = 0.0f + rowSum(x, p, F, 1.0f);
    if (p < 32) {
      CHECK(bits(out[0][size_t(p)]) == bits(lower));
    } else {
      const float upperSum = lower + rowSum(y, p, F, 1.0f);
      CHECK(bits(out[0][size_t(p)]) == bits(upperSum));
    }
    CHECK(bits(out[1][size_t(p)]) == bits(rowSum(y, p, F, 1.0f)));
  }
}

TEST_CASE("activation reduce_cmd: legality, cost and serialization",
          "[isa][activation][reduce_cmd]") {
  constexpr int64_t P = 128;
  const AccessPattern x = sbuf(DType::F32, 0, 0, P, {64}), d = sbuf(DType::F32, 0, 4096, P, {64}),
                      r = sbuf(DType::F32, 0, 8192, P, {1});
  SECTION("load_reduce does not exist for the Scalar engine") {
    Instruction in = reducingActivation(d, x, ReduceCmd::LoadReduce, 1.0, &r);
    CHECK_THAT(rejection(target("trn2"), in),
               Contains("the Scalar engine's accumulator registers have no load_reduce"));
  }
  SECTION("a register command needs a reducing activation") {
    Instruction in = make(Opcode::Activation, kQueueScalar, d, {x});
    in.reduceCmd = ReduceCmd::Reduce;
    CHECK_THAT(rejection(target("trn2"), in),
               Contains("reduce_cmd reduce drives the Scalar engine's accumulator registers"));
    in.reduceCmd = ReduceCmd::Idle;
    CHECK(rejection(target("trn2"), in).empty());
  }
  SECTION("the reduce result is [P, 1] f32 and the sources match the flags") {
    AccessPattern wide = sbuf(DType::F32, 0, 8192, P, {2});
    Instruction in = reducingActivation(d, x, ReduceCmd::Reduce, 1.0, &wide);
    CHECK_THAT(rejection(target("trn2"), in),
               Contains("receives the reduce result (the accumulator registers): it must be "
                        "[128, 1] f32"));
    in.srcs.push_back(r);
    CHECK_THAT(rejection(target("trn2"), in),
               Contains("expects 1 source operand(s) (2 with a reduce result), got 3"));
  }
  SECTION("the reduce is free; reading the registers out costs MIN_II (activation_reduce)") {
    for (const char *name : {"trn1", "trn2", "trn3"}) {
      const Target &t = target(name);
      for (int64_t n : {int64_t(16), int64_t(64), int64_t(512), int64_t(2000)}) {
        AccessPattern xn = sbuf(DType::F32, 0, 0, P, {n}), dn = sbuf(DType::F32, 0, 8192, P, {n}),
                      rn = sbuf(DType::F32, 0, 16384, P, {1});
        const double base = std::max(double(n), double(t.minII));
        for (ReduceCmd c : {ReduceCmd::Idle, ReduceCmd::Reset, ReduceCmd::Reduce,
                            ReduceCmd::ResetReduce}) {
          CHECK(cyclesOf(t, reducingActivation(dn, xn, c, 1.0, nullptr)) == base);
          CHECK(cyclesOf(t, reducingActivation(dn, xn, c, 1.0, &rn)) == base + t.minII);
        }
      }
    }
  }
  SECTION("reduce_cmd round-trips through JSON and CBOR") {
    for (ReduceCmd c :
         {ReduceCmd::Idle, ReduceCmd::Reset, ReduceCmd::Reduce, ReduceCmd::ResetReduce}) {
      Builder b;
      b.add(reducingActivation(d, x, c, 1.0, nullptr));
      b.add(reducingActivation(d, x, c, 1.0, &r));
      for (const Program &back : {programFromJson(programToJson(b.prog)),
                                  programFromCbor(programToCbor(b.prog))}) {
        CHECK(back.instructions[0].reduceCmd == c);
        CHECK(back.instructions[0].srcs.size() == 1);
        CHECK(back.instructions[1].srcs.size() == 2);
        CHECK(writesLastSource(back.instructions[1]));
        CHECK_FALSE(writesLastSource(back.instructions[0]));
      }
    }
  }
}

// Tests of the Scalar engine's accumulator registers (activation's reduce_cmd) and of the
// instructions that use them: numbers against references computed here (bit-exact where the
// order of the fp32 operations is documented), legality per target, cost against the
// documented formula, serialization.
#include "runtime/program/Serialize.h"
#include "runtime/simulator/functional/Kernels.h"

#include "IsaHarness.h"

#include <catch2/catch.hpp>

#include <algorithm>
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

namespace {

/// kernels::activation's `f` of every element of `v` (the simulator's fp32 functions).
std::vector<float> applied(ActFunc f, std::vector<float> v) {
  kernels::activation(f, v.data(), v.data(), int64_t(v.size()), 1.0f, 0.0f);
  return v;
}

Instruction activate2(AccessPattern dst, std::vector<AccessPattern> srcs, ActFunc f, AluOp op0,
                      double imm0, AluOp op1, double imm1) {
  Instruction in = make(Opcode::Activate2, kQueueScalar, std::move(dst), std::move(srcs));
  in.func = f;
  in.alu = op0;
  in.imm[0] = imm0;
  in.alu2 = op1;
  in.imm[1] = imm1;
  in.reduceCmd = ReduceCmd::Idle;
  return in;
}

} // namespace

TEST_CASE("activate2: two ALU ops, a function and a register reduce (trn3)",
          "[isa][activate2]") {
  constexpr int64_t P = 32, F = 40;
  const std::vector<float> x = randoms(P * F, 31), y = randoms(P * F, 32), b = randoms(P, 33);
  Harness h("trn3");
  AccessPattern xs = h.in(P, F, x), ys = h.in(P, F, y), bs = h.in(P, 1, b);
  AccessPattern d1 = h.tile(P, F), d2 = h.tile(P, F), d3 = h.tile(P, F), d4 = h.tile(P, F),
                d5 = h.tile(P, F), rMax = h.tile(P, 1), rAbsMin = h.tile(P, 1),
                rShared = h.tile(P, 1);
  // exp(x * 1.5 - b[p]), max-reduce reset_reduce without a result, then reduce with one.
  Instruction a1 = activate2(d1, {xs, bs}, ActFunc::Exp, AluOp::Mul, 1.5, AluOp::Sub, 0);
  a1.biasTile = true;
  a1.accumulate = true;
  a1.reduceOp = AluOp::Max;
  a1.reduceCmd = ReduceCmd::ResetReduce;
  Instruction a2 = a1;
  a2.dst = d2;
  a2.srcs = {ys, bs, rMax};
  a2.reduceCmd = ReduceCmd::Reduce;
  // tanh(0.25 - y) (reverse0, (sub, bypass)), abs_min from its identity.
  Instruction a3 = activate2(d3, {ys, rAbsMin}, ActFunc::Tanh, AluOp::Sub, 0.25, AluOp::Bypass, 0);
  a3.reverse = true;
  a3.accumulate = true;
  a3.reduceOp = AluOp::AbsMin;
  a3.reduceCmd = ReduceCmd::ResetReduce;
  // (bypass, bypass) identity: a bit-exact copy; registers untouched.
  Instruction a4 = activate2(d4, {xs}, ActFunc::Identity, AluOp::Bypass, 0, AluOp::Bypass, 0);
  // The registers are activation's: an activation's row sums, then activate2 adds elements.
  Instruction act = make(Opcode::Activation, kQueueScalar, d5, {xs});
  act.accumulate = true;
  act.reduceCmd = ReduceCmd::ResetReduce;
  act.imm[0] = 1.0;
  Instruction a5 = activate2(d4, {ys, rShared}, ActFunc::Identity, AluOp::Mul, 2.0, AluOp::Bypass,
                             0);
  a5.accumulate = true;
  a5.reduceCmd = ReduceCmd::Reduce;
  for (const Instruction &in : {a1, a2, a3, a4})
    h.b.add(in);
  h.b.add(act);
  h.b.add(a5);
  auto out = h.read({d1, d2, d3, d4, rMax, rAbsMin, rShared});
  std::vector<float> v1(x.size()), v2(y.size()), v3(y.size());
  for (int64_t p = 0; p < P; ++p)
    for (int64_t f = 0; f < F; ++f) {
      const size_t k = size_t(p * F + f);
      v1[k] = x[k] * 1.5f - b[size_t(p)];
      v2[k] = y[k] * 1.5f - b[size_t(p)];
      v3[k] = 0.25f - y[k];
    }
  v1 = applied(ActFunc::Exp, v1);
  v2 = applied(ActFunc::Exp, v2);
  v3 = applied(ActFunc::Tanh, v3);
  for (int64_t p = 0; p < P; ++p) {
    float mx = -INFINITY, amin = INFINITY, shared = 0.0f;
    for (int64_t f = 0; f < F; ++f)
      shared += x[size_t(p * F + f)];
    for (int64_t f = 0; f < F; ++f) {
      const size_t k = size_t(p * F + f);
      CHECK(bits(out[0][k]) == bits(v1[k]));
      CHECK(bits(out[1][k]) == bits(v2[k]));
      CHECK(bits(out[2][k]) == bits(v3[k]));
      CHECK(bits(out[3][k]) == bits(y[k] * 2.0f)); // a5's dst (a4's overwritten)
      mx = std::max(mx, std::max(v1[k], v2[k]));
      amin = std::min(amin, std::fabs(v3[k]));
      shared += y[k] * 2.0f;
    }
    CHECK(bits(out[4][size_t(p)]) == bits(mx));
    CHECK(bits(out[5][size_t(p)]) == bits(amin));
    CHECK(bits(out[6][size_t(p)]) == bits(shared));
  }
}

TEST_CASE("activate2: bypass copies bit-exactly", "[isa][activate2]") {
  constexpr int64_t P = 16, F = 24;
  std::vector<float> x = randoms(P * F, 41);
  x[0] = -0.0f;
  x[1] = INFINITY;
  Harness h("trn3");
  AccessPattern xs = h.in(P, F, x), d = h.tile(P, F);
  h.b.add(activate2(d, {xs}, ActFunc::Identity, AluOp::Bypass, 7, AluOp::Bypass, 9));
  auto out = h.read({d});
  for (size_t k = 0; k < x.size(); ++k)
    CHECK(bits(out[0][k]) == bits(x[k]));
}

TEST_CASE("activate2: legality per target, cost and serialization", "[isa][activate2]") {
  constexpr int64_t P = 128;
  const AccessPattern x = sbuf(DType::F32, 0, 0, P, {64}), d = sbuf(DType::F32, 0, 4096, P, {64}),
                      r = sbuf(DType::F32, 0, 8192, P, {1});
  Instruction ok = activate2(d, {x, r}, ActFunc::Exp, AluOp::Mul, 2, AluOp::Add, 1);
  ok.accumulate = true;
  ok.reduceOp = AluOp::AbsMax;
  ok.reduceCmd = ReduceCmd::ResetReduce;
  CHECK(rejection(target("trn3"), ok).empty());
  CHECK_THAT(rejection(target("trn2"), ok),
             Contains("(activate2): is not an instruction of trn2 (NC-v3); it exists on trn3"));
  CHECK_THAT(rejection(target("trn1"), ok),
             Contains("(activate2): is not an instruction of trn1 (NC-v2); it exists on trn3"));
  Instruction bad = ok;
  bad.alu2 = AluOp::Mul;
  CHECK_THAT(rejection(target("trn3"), bad), Contains("takes the op pairs (mul, add)"));
  CHECK_THAT(rejection(target("trn3"), bad), Contains("not (mul, mul)"));
  bad = ok;
  bad.alu = AluOp::Bypass;
  bad.alu2 = AluOp::Bypass;
  bad.reverse = true;
  CHECK_THAT(rejection(target("trn3"), bad), Contains("reverse (reverse0) needs op0"));
  bad = ok;
  bad.reduceOp = AluOp::Mul;
  CHECK_THAT(rejection(target("trn3"), bad),
             Contains("cannot reduce with mul (add, max, min, abs_max, abs_min)"));
  bad = ok;
  bad.reduceCmd = ReduceCmd::LoadReduce;
  CHECK_THAT(rejection(target("trn3"), bad), Contains("have no load_reduce"));
  bad = ok;
  bad.queue = kQueueVector;
  CHECK_THAT(rejection(target("trn3"), bad), Contains("it runs on scalar"));
  Instruction tt = make(Opcode::TensorTensor, kQueueVector, d, {x, x});
  tt.alu = AluOp::AbsMax;
  CHECK_THAT(rejection(target("trn3"), tt),
             Contains("takes no abs_max (bypass, abs_max and abs_min are activate2's)"));
  // ESTIMATE (HARDWARE.md): activation's max(MIN_II, N), + MIN_II with a reduce result.
  const Target &t = target("trn3");
  for (int64_t n : {int64_t(16), int64_t(256), int64_t(1000)}) {
    Instruction c = ok;
    c.dst.dims.back() = {1, n};
    c.srcs[0].dims.back() = {1, n};
    const double base = std::max(double(n), double(t.minII));
    CHECK(cyclesOf(t, c) == base + t.minII);
    c.srcs.pop_back();
    CHECK(cyclesOf(t, c) == base);
  }
  Builder b;
  b.prog.target = "trn3";
  b.add(ok);
  for (const Program &back :
       {programFromJson(programToJson(b.prog)), programFromCbor(programToCbor(b.prog))}) {
    const Instruction &in = back.instructions[0];
    CHECK(in.opcode == Opcode::Activate2);
    CHECK(in.reduceOp == AluOp::AbsMax);
    CHECK(in.alu == AluOp::Mul);
    CHECK(in.alu2 == AluOp::Add);
    CHECK(in.reduceCmd == ReduceCmd::ResetReduce);
    CHECK(writesLastSource(in));
  }
}

TEST_CASE("exponential: exp(x - max) with a sum through the Vector registers (trn3)",
          "[isa][exponential]") {
  constexpr int64_t P = 32, F = 40;
  const std::vector<float> x = randoms(P * F, 51), m = randoms(P, 52);
  Harness h("trn3");
  AccessPattern xs = h.in(P, F, x), ms = h.in(P, 1, m);
  AccessPattern d1 = h.tile(P, F), d2 = h.tile(P, F), d3 = h.tile(P, F), r1 = h.tile(P, 1),
                r2 = h.tile(P, 1), r3 = h.tile(P, 1), r4 = h.tile(P, 1), tsd = h.tile(P, F);
  Instruction e1 = make(Opcode::Exponential, kQueueVector, d1, {xs, ms, r1});
  e1.scaleTile = true; // max_value per partition
  e1.reduceCmd = ReduceCmd::ResetReduce;
  Instruction e2 = make(Opcode::Exponential, kQueueVector, d2, {xs, r2});
  e2.imm[0] = 0.5; // max_value immediate
  e2.imm[1] = 2.5; // reduce_init
  e2.reduceCmd = ReduceCmd::LoadReduce;
  Instruction e3 = make(Opcode::Exponential, kQueueVector, d3, {xs});
  e3.imm[0] = 0.5;
  e3.reduceCmd = ReduceCmd::Idle; // registers unused
  Instruction e4 = make(Opcode::Exponential, kQueueVector, d3, {xs, r3});
  e4.imm[0] = 0.5;
  e4.reduceCmd = ReduceCmd::Reduce; // continues e2's
  // tensor_scalar_reduce shares the registers: reset_reduce them, exponential continues.
  Instruction ts = make(Opcode::TensorScalarReduce, kQueueVector, tsd, {xs, r4});
  ts.alu = AluOp::Mul;
  ts.imm[0] = 1.0;
  ts.alu2 = AluOp::Add;
  Instruction e5 = make(Opcode::Exponential, kQueueVector, d3, {xs, r4});
  e5.imm[0] = 0.5;
  e5.reduceCmd = ReduceCmd::Reduce;
  for (const Instruction &in : {e1, e2, e3, e4, ts, e5})
    h.b.add(in);
  auto out = h.read({d1, d2, r1, r2, r3, r4});
  std::vector<float> t1(x.size()), t2(x.size());
  for (int64_t p = 0; p < P; ++p)
    for (int64_t f = 0; f < F; ++f) {
      const size_t k = size_t(p * F + f);
      t1[k] = x[k] - m[size_t(p)];
      t2[k] = x[k] - 0.5f;
    }
  t1 = applied(ActFunc::Exp, t1);
  t2 = applied(ActFunc::Exp, t2);
  for (int64_t p = 0; p < P; ++p) {
    float s1 = 0.0f, s2 = 2.5f, s4 = 0.0f;
    for (int64_t f = 0; f < F; ++f) {
      const size_t k = size_t(p * F + f);
      CHECK(bits(out[0][k]) == bits(t1[k]));
      CHECK(bits(out[1][k]) == bits(t2[k]));
      s1 += t1[k];
      s2 += t2[k];
      s4 += x[k];
    }
    CHECK(bits(out[2][size_t(p)]) == bits(s1));
    CHECK(bits(out[3][size_t(p)]) == bits(s2));
    float s3 = s2;
    for (int64_t f = 0; f < F; ++f) {
      s3 += t2[size_t(p * F + f)];
      s4 += t2[size_t(p * F + f)];
    }
    CHECK(bits(out[4][size_t(p)]) == bits(s3));
    CHECK(bits(out[5][size_t(p)]) == bits(s4));
  }
}

TEST_CASE("exponential: legality per target, cost and serialization", "[isa][exponential]") {
  constexpr int64_t P = 128;
  const AccessPattern x = sbuf(DType::F32, 0, 0, P, {64}), d = sbuf(DType::F32, 0, 4096, P, {64}),
                      r = sbuf(DType::F32, 0, 8192, P, {1});
  Instruction ok = make(Opcode::Exponential, kQueueVector, d, {x, r});
  ok.reduceCmd = ReduceCmd::ResetReduce;
  CHECK(rejection(target("trn3"), ok).empty());
  for (const char *name : {"trn1", "trn2"})
    CHECK_THAT(rejection(target(name), ok),
               Contains(std::string("(exponential): is not an instruction of ") + name));
  Instruction bad = ok;
  bad.reduceCmd = ReduceCmd::Reset;
  CHECK_THAT(rejection(target("trn3"), bad), Contains("reduce_cmd reset is not one of"));
  bad = ok;
  bad.imm[1] = 1.0;
  CHECK_THAT(rejection(target("trn3"), bad),
             Contains("reduce_init imm[1] is load_reduce's: it must be 0 with reduce_cmd "
                      "reset_reduce"));
  bad = ok;
  bad.reduceCmd = ReduceCmd::Idle;
  CHECK_THAT(rejection(target("trn3"), bad), Contains("a reduce result needs reduce_cmd"));
  bad = ok;
  bad.queue = kQueueScalar;
  CHECK_THAT(rejection(target("trn3"), bad), Contains("it runs on vector"));
  const Target &t = target("trn3");
  for (int64_t n : {int64_t(16), int64_t(256), int64_t(1000)}) {
    Instruction c = ok;
    c.dst.dims.back() = {1, n};
    c.srcs[0].dims.back() = {1, n};
    const double base = std::max(double(n), double(t.minII));
    CHECK(cyclesOf(t, c) == base + t.minII);
    c.srcs.pop_back();
    CHECK(cyclesOf(t, c) == base);
  }
  Builder b;
  b.prog.target = "trn3";
  b.add(ok);
  for (const Program &back :
       {programFromJson(programToJson(b.prog)), programFromCbor(programToCbor(b.prog))}) {
    CHECK(back.instructions[0].opcode == Opcode::Exponential);
    CHECK(writesLastSource(back.instructions[0]));
  }
}

// Tests of the Isa.def instructions added after the first cut (issue 25's remaining list):
// each one's numbers against a reference computed here, its legality per target and
// engine, its cost against the documented formula, its serialization and, for the
// instructions with a second output (F(ReduceRes)), the hazard detector's view of it.
#include "runtime/program/Isa.h"
#include "runtime/program/Serialize.h"
#include "runtime/simulator/Checks.h"
#include "runtime/simulator/Simulator.h"
#include "runtime/simulator/functional/Random.h"
#include "runtime/simulator/timing/CostModel.h"

#include "IsaHarness.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>

using namespace neuron::runtime;
using namespace neuron::runtime::test;
using namespace neuron::runtime::test::isa;
using Catch::Matchers::Contains;

TEST_CASE("tensor_scalar_reduce: tensor_scalar and a free-axis reduce into a P x 1 tile",
          "[isa][tensor_scalar_reduce]") {
  constexpr int64_t P = 32, F = 48;
  const std::vector<float> x = randoms(P * F, 21), s = randoms(P, 22);
  SECTION("an immediate, add-reduce, on every target") {
    for (const char *name : {"trn1", "trn2", "trn3"}) {
      Harness h(name);
      AccessPattern xs = h.in(P, F, x), dst = h.tile(P, F), red = h.tile(P, 1);
      Instruction in = make(Opcode::TensorScalarReduce, kQueueVector, dst, {xs, red});
      in.alu = AluOp::Mul;
      in.imm[0] = 1.75;
      in.alu2 = AluOp::Add;
      h.b.add(in);
      auto out = h.read({dst, red});
      for (int64_t p = 0; p < P; ++p) {
        float sum = 0;
        for (int64_t f = 0; f < F; ++f) {
          const float v = x[size_t(p * F + f)] * 1.75f;
          CHECK(bits(out[0][size_t(p * F + f)]) == bits(v));
          sum += v;
        }
        CHECK(bits(out[1][size_t(p)]) == bits(sum));
      }
    }
  }
  SECTION("a per-partition scalar on the left, max-reduce: max over f of s[p] - x") {
    Harness h;
    AccessPattern xs = h.in(P, F, x), sp = h.in(P, 1, s), dst = h.tile(P, F),
                  red = h.tile(P, 1);
    sp.dims.back() = {0, F};
    Instruction in = make(Opcode::TensorScalarReduce, kQueueVector, dst, {xs, sp, red});
    in.alu = AluOp::Sub;
    in.scaleTile = true;
    in.reverse = true;
    in.alu2 = AluOp::Max;
    h.b.add(in);
    auto out = h.read({dst, red});
    for (int64_t p = 0; p < P; ++p) {
      float m = -std::numeric_limits<float>::infinity();
      for (int64_t f = 0; f < F; ++f) {
        const float v = s[size_t(p)] - x[size_t(p * F + f)];
        CHECK(bits(out[0][size_t(p * F + f)]) == bits(v));
        m = std::max(m, v);
      }
      CHECK(bits(out[1][size_t(p)]) == bits(m));
    }
  }
}

TEST_CASE("tensor_scalar_reduce operands, engines, cost and round trip are checked",
          "[isa][tensor_scalar_reduce]") {
  const AccessPattern x = sbuf(DType::F32, 0, 0, 128, {256}),
                      dst = sbuf(DType::F32, 0, 4096, 128, {256}),
                      red = sbuf(DType::F32, 0, 8192, 128, {1});
  Instruction in = make(Opcode::TensorScalarReduce, kQueueVector, dst, {x, red});
  in.alu = AluOp::Add;
  in.alu2 = AluOp::Max;
  const Target &t2 = target("trn2");
  CHECK(rejection(t2, in).empty());
  {
    Instruction bad = in;
    bad.alu2 = AluOp::Sub;
    CHECK_THAT(rejection(t2, bad), Contains("cannot reduce with sub (add, mul, max, min)"));
    bad = in;
    bad.alu = AluOp::Xor;
    CHECK_THAT(rejection(t2, bad), Contains("not the bitvec op xor"));
    bad = in;
    bad.srcs[1] = sbuf(DType::F32, 0, 8192, 128, {2});
    CHECK_THAT(rejection(t2, bad), Contains("srcs[1] must be [128, 1], got [128, 2]"));
    bad = in;
    bad.queue = kQueueGpSimd;
    CHECK_THAT(rejection(t2, bad), Contains("it runs on vector"));
    bad = in;
    bad.srcs.pop_back();
    CHECK_THAT(rejection(t2, bad), Contains("expects 2 source operand(s), got 1"));
  }
  // max(MIN_II, N) + MIN_II on every target, no performance mode (bf16 included).
  for (const char *name : {"trn1", "trn2", "trn3"})
    for (int64_t n : {int64_t(16), int64_t(256), int64_t(512)})
      for (DType dt : {DType::F32, DType::BF16}) {
        INFO(name << " N=" << n);
        Instruction c = make(Opcode::TensorScalarReduce, kQueueVector,
                             sbuf(dt, 0, 4096, 128, {n}),
                             {sbuf(dt, 0, 0, 128, {n}), red});
        c.alu2 = AluOp::Add;
        CHECK(cyclesOf(target(name), c) == std::max<double>(64, double(n)) + 64);
      }
  // The row sums of activation_reduce follow the same max(MIN_II, N) + MIN_II at small N.
  Instruction act = make(Opcode::Activation, kQueueScalar, sbuf(DType::F32, 0, 4096, 128, {16}),
                         {sbuf(DType::F32, 0, 0, 128, {16}), red});
  act.accumulate = true;
  CHECK(cyclesOf(t2, act) == 64 + 64);
  // JSON and CBOR.
  Builder b;
  Instruction rt = in;
  rt.scaleTile = true;
  rt.reverse = true;
  rt.imm[0] = 0.5;
  rt.srcs = {x, sbuf(DType::F32, 0, 12288, 128, {1}), red};
  b.add(rt);
  for (const Program &p : {programFromJson(programToJson(b.prog)),
                           programFromCbor(programToCbor(b.prog))}) {
    REQUIRE(p.instructions.size() == 1);
    const Instruction &a = p.instructions[0];
    CHECK(a.opcode == Opcode::TensorScalarReduce);
    CHECK(a.alu == AluOp::Add);
    CHECK(a.alu2 == AluOp::Max);
    CHECK(a.scaleTile);
    CHECK(a.reverse);
    CHECK(a.imm[0] == 0.5);
    CHECK(a.srcs.size() == 3);
  }
  CHECK_THAT(programToJson(b.prog), Contains("\"op\":\"tensor_scalar_reduce\""));
}

TEST_CASE("a reduce result is a write: an unordered read of it is a hazard",
          "[isa][hazards]") {
  constexpr int64_t P = 128, F = 64;
  Builder b;
  uint32_t xin = b.input("x", DType::F32, {P, F});
  uint32_t yout = b.output("y", DType::F32, {P, 1});
  const AccessPattern x = sbuf(DType::F32, 0, 0, P, {F}), dst = sbuf(DType::F32, 0, 1024, P, {F}),
                      red = sbuf(DType::F32, 0, 2048, P, {1}),
                      copy = sbuf(DType::F32, 0, 3072, P, {1});
  b.dma(kQueueDma0, x, hbm(xin, DType::F32, 0, {{F, P}, {1, F}}));          // 0
  Instruction in = make(Opcode::TensorScalarReduce, kQueueVector, dst, {x, red}); // 1
  in.waits = {waitFor(kQueueDma0, 1)};
  b.add(in);
  // 2: the Scalar engine reads the reduce result without waiting for the Vector engine.
  Instruction cp = make(Opcode::TensorCopy, kQueueScalar, copy, {red});
  cp.waits = {waitFor(kQueueDma0, 1)};
  b.add(cp);
  b.dma(kQueueDma0 + 1, hbm(yout, DType::F32, 0, {{1, P}, {1, 1}}), copy,
        {waitFor(kQueueScalar, 1)});
  std::vector<float> xs(P * F, 1.0f), ys(P);
  CHECK_THROWS_WITH(simulate(b.prog, target("trn2"), {xs.data()}, {ys.data()}),
                    Contains("hazard (read after write)") &&
                        Contains("(tensor_scalar_reduce on queue vector)"));
  b.prog.instructions[2].waits.push_back(waitFor(kQueueVector, 1));
  simulate(b.prog, target("trn2"), {xs.data()}, {ys.data()});
  CHECK(ys[0] == float(F));
}

TEST_CASE("range_select keeps the index range of each row and reduces it by max, trn2 and later",
          "[isa][range_select]") {
  constexpr int64_t P = 16, F = 40;
  const std::vector<float> x = randoms(P * F, 31);
  std::vector<float> lo(P), hi(P);
  for (int64_t p = 0; p < P; ++p) { // row p keeps indices [p + 2, 2p + 10) of f + 3
    lo[size_t(p)] = float(p + 2);
    hi[size_t(p)] = float(2 * p + 10);
  }
  const float fill = -3.0e38f;
  Harness h;
  AccessPattern xs = h.in(P, F, x), b0 = h.in(P, 1, lo), b1 = h.in(P, 1, hi),
                dst = h.tile(P, F), red = h.tile(P, 1);
  Instruction in = make(Opcode::RangeSelect, kQueueVector, dst, {xs, b0, b1, red});
  in.alu = AluOp::Ge;
  in.alu2 = AluOp::Lt;
  in.imm[0] = 3; // range_start
  in.imm[1] = double(fill);
  h.b.add(in);
  auto out = h.read({dst, red});
  for (int64_t p = 0; p < P; ++p) {
    float m = -std::numeric_limits<float>::infinity();
    for (int64_t f = 0; f < F; ++f) {
      const int64_t i = f + 3;
      const float want = i >= p + 2 && i < 2 * p + 10 ? x[size_t(p * F + f)] : fill;
      CHECK(bits(out[0][size_t(p * F + f)]) == bits(want));
      m = std::max(m, want);
    }
    CHECK(bits(out[1][size_t(p)]) == bits(m));
  }
  // Legality: NC-v3 and later, comparisons only, [P, 1] bounds.
  const AccessPattern t = sbuf(DType::F32, 0, 0, 128, {256}), one = sbuf(DType::F32, 0, 8192, 128, {1});
  Instruction c = make(Opcode::RangeSelect, kQueueVector, sbuf(DType::F32, 0, 4096, 128, {256}),
                       {t, one, one, sbuf(DType::F32, 0, 8196, 128, {1})});
  c.alu = AluOp::Ge;
  c.alu2 = AluOp::Lt;
  CHECK(rejection(target("trn2"), c).empty());
  CHECK_THAT(rejection(target("trn1"), c),
             Contains("(range_select): is not an instruction of trn1 (NC-v2); it exists on trn2, "
                      "trn3"));
  Instruction bad = c;
  bad.alu2 = AluOp::Add;
  CHECK_THAT(rejection(target("trn2"), bad), Contains("by eq, ne, lt, le, gt or ge, not add"));
  bad = c;
  bad.srcs[1] = t;
  CHECK_THAT(rejection(target("trn2"), bad), Contains("srcs[1] must be [128, 1], got [128, 256]"));
  // ESTIMATE cost: max(MIN_II, N) + MIN_II.
  for (const char *name : {"trn2", "trn3"})
    for (int64_t n : {int64_t(16), int64_t(256), int64_t(512)}) {
      Instruction k = c;
      k.dst.dims.back() = {1, n};
      k.srcs[0].dims.back() = {1, n};
      CHECK(cyclesOf(target(name), k) == std::max<double>(64, double(n)) + 64);
    }
  // Round trip.
  Builder rb;
  rb.add(in);
  const Program back = programFromCbor(programToCbor(rb.prog));
  CHECK(back.instructions[0].opcode == Opcode::RangeSelect);
  CHECK(back.instructions[0].alu2 == AluOp::Lt);
  CHECK(back.instructions[0].imm[0] == 3);
  CHECK(back.instructions[0].imm[1] == double(fill));
  CHECK(programFromJson(programToJson(rb.prog)).instructions[0].alu == AluOp::Ge);
}

TEST_CASE("select_reduce picks on_true where the predicate holds and reduces by max",
          "[isa][select_reduce]") {
  constexpr int64_t P = 8, F = 24;
  const std::vector<float> x = randoms(P * F, 41), other = randoms(P, 42);
  std::vector<float> predf(P * F);
  for (size_t i = 0; i < predf.size(); ++i)
    predf[i] = float((i * 7) % 5 == 0 ? 0 : (i % 3) + 1);
  for (bool reverse : {false, true})
    for (bool tile : {false, true}) {
      Harness h;
      AccessPattern pf = h.in(P, F, predf), xs = h.in(P, F, x), os = h.in(P, 1, other),
                    dst = h.tile(P, F), red = h.tile(P, 1);
      AccessPattern pu8 = sbuf(DType::U8, 0, h.sbufOffset, P, {F});
      h.sbufOffset += F * 4;
      h.b.add(make(Opcode::TensorCopy, kQueueVector, pu8, {pf}));
      std::vector<AccessPattern> srcs = {pu8, xs};
      if (tile)
        srcs.push_back(os);
      srcs.push_back(red);
      Instruction in = make(Opcode::SelectReduce, kQueueVector, dst, srcs);
      in.reverse = reverse;
      in.scaleTile = tile;
      in.imm[0] = -1.5;
      h.b.add(in);
      auto out = h.read({dst, red});
      for (int64_t p = 0; p < P; ++p) {
        float m = -std::numeric_limits<float>::infinity();
        for (int64_t f = 0; f < F; ++f) {
          const size_t k = size_t(p * F + f);
          const float want = (predf[k] != 0) != reverse ? x[k] : tile ? other[size_t(p)] : -1.5f;
          CHECK(bits(out[0][k]) == bits(want));
          m = std::max(m, want);
        }
        CHECK(bits(out[1][size_t(p)]) == bits(m));
      }
    }
  const AccessPattern pred = sbuf(DType::U8, 0, 0, 128, {256}),
                      on = sbuf(DType::F32, 0, 1024, 128, {256}),
                      red = sbuf(DType::F32, 0, 8192, 128, {1});
  Instruction c =
      make(Opcode::SelectReduce, kQueueVector, sbuf(DType::F32, 0, 4096, 128, {256}),
           {pred, on, red});
  CHECK(rejection(target("trn3"), c).empty());
  CHECK_THAT(rejection(target("trn1"), c), Contains("is not an instruction of trn1"));
  Instruction bad = c;
  bad.srcs[0].dtype = DType::F32;
  CHECK_THAT(rejection(target("trn2"), bad), Contains("takes an i8 or u8 predicate"));
  bad = c;
  bad.srcs[0] = psum(DType::U8, 0, 0, 128, {256});
  bad.srcs[1] = psum(DType::F32, 0, 1024, 128, {256});
  CHECK_THAT(rejection(target("trn2"), bad), Contains("cannot both be in PSUM"));
  // ESTIMATE cost: max(MIN_II, 2N) + MIN_II, N with predicate and on_true split over SBUF / PSUM.
  for (int64_t n : {int64_t(16), int64_t(256), int64_t(512)}) {
    Instruction k = c;
    k.dst.dims.back() = {1, n};
    k.srcs[0].dims.back() = {1, n};
    k.srcs[1].dims.back() = {1, n};
    CHECK(cyclesOf(target("trn2"), k) == std::max<double>(64, 2.0 * n) + 64);
    k.srcs[1] = psum(DType::F32, 0, 0, 128, {n});
    CHECK(cyclesOf(target("trn2"), k) == std::max<double>(64, double(n)) + 64);
  }
  Builder rb;
  Instruction rt = c;
  rt.reverse = true;
  rt.imm[0] = -2;
  rb.add(rt);
  const Program back = programFromJson(programToJson(rb.prog));
  CHECK(back.instructions[0].opcode == Opcode::SelectReduce);
  CHECK(back.instructions[0].reverse);
  CHECK(back.instructions[0].imm[0] == -2);
  CHECK(programFromCbor(programToCbor(rb.prog)).instructions[0].srcs[0].dtype == DType::U8);
}

TEST_CASE("nc_stream_shuffle permutes partitions within each 32-partition quadrant, bit-exact",
          "[isa][nc_stream_shuffle]") {
  constexpr int64_t P = 64, F = 10;
  std::vector<float> x = randoms(P * F, 51), old = randoms(P * F, 52);
  x[3] = std::numeric_limits<float>::quiet_NaN();
  x[P * F - 1] = -0.0f;
  x[100] = std::numeric_limits<float>::infinity();
  std::vector<int64_t> mask(32);
  for (int64_t i = 0; i < 32; ++i)
    mask[size_t(i)] = i % 7 == 3 ? 255 : (i * 5 + 3) % 32; // a permutation, some kept
  for (const char *name : {"trn1", "trn2", "trn3"}) {
    Harness h(name);
    AccessPattern xs = h.in(P, F, x), dst = h.in(P, F, old);
    Instruction in = make(Opcode::StreamShuffle, kQueueVector, dst, {xs});
    in.affine = mask;
    h.b.add(in);
    auto out = h.read({dst});
    for (int64_t q = 0; q < P; q += 32)
      for (int64_t i = 0; i < 32; ++i)
        for (int64_t f = 0; f < F; ++f) {
          const int64_t m = mask[size_t(i)];
          const float want = m == 255 ? old[size_t((q + i) * F + f)] : x[size_t((q + m) * F + f)];
          CHECK(bits(out[0][size_t((q + i) * F + f)]) == bits(want));
        }
  }
  const Target &t2 = target("trn2");
  Instruction c = make(Opcode::StreamShuffle, kQueueVector, sbuf(DType::BF16, 0, 0, 128, {256}),
                       {sbuf(DType::BF16, 0, 4096, 128, {256})});
  c.affine = mask;
  CHECK(rejection(t2, c).empty());
  Instruction bad = c;
  bad.affine.pop_back();
  CHECK_THAT(rejection(t2, bad), Contains("needs a 32-entry shuffle mask (affine), got 31"));
  bad = c;
  bad.affine[4] = 40;
  CHECK_THAT(rejection(t2, bad), Contains("shuffle mask entry 40 is neither"));
  bad = c;
  bad.dst = sbuf(DType::BF16, 0, 0, 48, {256});
  bad.srcs[0] = sbuf(DType::BF16, 0, 4096, 48, {256});
  CHECK_THAT(rejection(t2, bad), Contains("span 32, 64, 96 or 128 partitions, not 48"));
  bad = c;
  bad.dst.dtype = DType::F32;
  CHECK_THAT(rejection(t2, bad), Contains("(a shuffle is bit-exact)"));
  bad = c;
  bad.queue = kQueueScalar;
  CHECK_THAT(rejection(t2, bad), Contains("it runs on vector"));
  // max(MIN_II, N) on every target, bf16 included (no performance mode).
  for (const char *name : {"trn1", "trn2", "trn3"})
    for (int64_t n : {int64_t(16), int64_t(256), int64_t(512)}) {
      Instruction k = c;
      k.dst.dims.back() = {1, n};
      k.srcs[0].dims.back() = {1, n};
      CHECK(cyclesOf(target(name), k) == std::max<double>(64, double(n)));
    }
  Builder rb;
  rb.add(c);
  for (const Program &p : {programFromJson(programToJson(rb.prog)),
                           programFromCbor(programToCbor(rb.prog))}) {
    CHECK(p.instructions[0].opcode == Opcode::StreamShuffle);
    CHECK(p.instructions[0].affine == mask);
  }
}

TEST_CASE("tensor_scalar_cumulative runs through the Vector accumulator registers across "
          "instructions",
          "[isa][tensor_scalar_cumulative]") {
  constexpr int64_t P = 32, F = 20;
  const std::vector<float> a = randoms(P * F, 61), bvals = randoms(P * F, 62);
  SECTION("reset_reduce then reduce: one cumulative sum over two tiles") {
    Harness h;
    AccessPattern as = h.in(P, F, a), bs = h.in(P, F, bvals), da = h.tile(P, F),
                  db = h.tile(P, F);
    Instruction first = make(Opcode::TensorScalarCumulative, kQueueVector, da, {as});
    first.alu = AluOp::Mul;
    first.imm[0] = 0.5;
    first.alu2 = AluOp::Add;
    first.reduceCmd = ReduceCmd::ResetReduce;
    Instruction second = first;
    second.dst = db;
    second.srcs = {bs};
    second.reduceCmd = ReduceCmd::Reduce;
    h.b.add(first);
    h.b.add(second);
    auto out = h.read({da, db});
    for (int64_t p = 0; p < P; ++p) {
      float r = 0;
      for (int64_t i = 0; i < F; ++i) {
        r = a[size_t(p * F + i)] * 0.5f + r;
        CHECK(bits(out[0][size_t(p * F + i)]) == bits(r));
      }
      for (int64_t i = 0; i < F; ++i) {
        r = bvals[size_t(p * F + i)] * 0.5f + r;
        CHECK(bits(out[1][size_t(p * F + i)]) == bits(r));
      }
    }
  }
  SECTION("load_reduce from imm[1], a running max of imm[0] - x") {
    Harness h("trn3");
    AccessPattern as = h.in(P, F, a), da = h.tile(P, F);
    Instruction in = make(Opcode::TensorScalarCumulative, kQueueVector, da, {as});
    in.alu = AluOp::Sub;
    in.reverse = true;
    in.imm[0] = 1;
    in.alu2 = AluOp::Max;
    in.reduceCmd = ReduceCmd::LoadReduce;
    in.imm[1] = 0.25;
    h.b.add(in);
    auto out = h.read({da});
    for (int64_t p = 0; p < P; ++p) {
      float r = 0.25f;
      for (int64_t i = 0; i < F; ++i) {
        r = std::max(1.0f - a[size_t(p * F + i)], r);
        CHECK(bits(out[0][size_t(p * F + i)]) == bits(r));
      }
    }
  }
  const AccessPattern x = sbuf(DType::F32, 0, 0, 128, {256}),
                      dst = sbuf(DType::F32, 0, 4096, 128, {256});
  Instruction c = make(Opcode::TensorScalarCumulative, kQueueVector, dst, {x});
  c.alu = AluOp::Mul;
  c.alu2 = AluOp::Add;
  CHECK(rejection(target("trn2"), c).empty());
  CHECK_THAT(rejection(target("trn1"), c),
             Contains("(tensor_scalar_cumulative): is not an instruction of trn1"));
  Instruction bad = c;
  bad.reduceCmd = ReduceCmd::Idle;
  CHECK_THAT(rejection(target("trn2"), bad),
             Contains("reduce_cmd reset_reduce, reduce or load_reduce, not idle"));
  bad = c;
  bad.alu2 = AluOp::Div;
  CHECK_THAT(rejection(target("trn2"), bad), Contains("cannot accumulate with div"));
  for (const char *name : {"trn2", "trn3"})
    for (int64_t n : {int64_t(16), int64_t(256), int64_t(512)}) {
      Instruction k = c;
      k.dst.dims.back() = {1, n};
      k.srcs[0].dims.back() = {1, n};
      CHECK(cyclesOf(target(name), k) == std::max<double>(64, double(n)));
    }
  Builder rb;
  Instruction rt = c;
  rt.reduceCmd = ReduceCmd::LoadReduce;
  rt.imm[1] = 7;
  rb.add(rt);
  CHECK_THAT(programToJson(rb.prog), Contains("\"reduce_cmd\":\"load_reduce\""));
  for (const Program &p : {programFromJson(programToJson(rb.prog)),
                           programFromCbor(programToCbor(rb.prog))}) {
    CHECK(p.instructions[0].opcode == Opcode::TensorScalarCumulative);
    CHECK(p.instructions[0].reduceCmd == ReduceCmd::LoadReduce);
    CHECK(p.instructions[0].imm[1] == 7);
  }
}

TEST_CASE("nc_n_gather gathers within each partition by flattened index, bit-exact",
          "[isa][nc_n_gather]") {
  constexpr int64_t P = 16, N = 30, M = 45;
  std::vector<float> x = randoms(P * N, 71);
  x[7] = std::numeric_limits<float>::quiet_NaN();
  x[8] = -0.0f;
  std::vector<float> idxf(P * M);
  for (int64_t p = 0; p < P; ++p)
    for (int64_t j = 0; j < M; ++j)
      idxf[size_t(p * M + j)] = float((j * 7 + p * 3) % N);
  auto run = [&](const char *name, std::vector<float> indices) {
    Harness h(name);
    AccessPattern xs = h.in(P, N, x), fi = h.in(P, M, std::move(indices)), dst = h.tile(P, M);
    AccessPattern ii = sbuf(DType::I32, 0, h.sbufOffset, P, {M});
    h.sbufOffset += M * 4;
    h.b.add(make(Opcode::TensorCopy, kQueueVector, ii, {fi}));
    h.b.add(make(Opcode::NGather, kQueueGpSimd, dst, {xs, ii}));
    return h.read({dst})[0];
  };
  for (const char *name : {"trn1", "trn2", "trn3"}) {
    const std::vector<float> y = run(name, idxf);
    for (int64_t p = 0; p < P; ++p)
      for (int64_t j = 0; j < M; ++j)
        CHECK(bits(y[size_t(p * M + j)]) ==
              bits(x[size_t(p * N + int64_t(idxf[size_t(p * M + j)]))]));
  }
  std::vector<float> bad = idxf;
  bad[size_t(3 * M + 5)] = float(N);
  CHECK_THROWS_WITH(run("trn2", bad),
                    Contains("(nc_n_gather): index 30 at partition 3, element 5 is outside [0, "
                             "30)"));
  const AccessPattern data = sbuf(DType::BF16, 0, 0, 128, {256}),
                      ix = sbuf(DType::I32, 0, 1024, 128, {512}),
                      dst = sbuf(DType::BF16, 0, 4096, 128, {512});
  Instruction c = make(Opcode::NGather, kQueueGpSimd, dst, {data, ix});
  CHECK(rejection(target("trn1"), c).empty());
  Instruction b2 = c;
  b2.srcs[1].dtype = DType::F32;
  CHECK_THAT(rejection(target("trn2"), b2), Contains("takes u32 (or i32) indices (srcs[1]), not f32"));
  b2 = c;
  b2.dst.dtype = DType::F32;
  CHECK_THAT(rejection(target("trn2"), b2), Contains("(a gather is bit-exact)"));
  b2 = c;
  b2.queue = kQueueVector;
  CHECK_THAT(rejection(target("trn2"), b2), Contains("it runs on gpsimd"));
  // ESTIMATE: 150 per 512-element group of dst + M.
  for (const char *name : {"trn1", "trn2", "trn3"})
    for (int64_t m : {int64_t(16), int64_t(512), int64_t(1000)}) {
      Instruction k = c;
      k.dst.dims.back() = {1, m};
      k.srcs[1].dims.back() = {1, m};
      CHECK(cyclesOf(target(name), k) == 150.0 * double((m + 511) / 512) + double(m));
    }
  Builder rb;
  rb.add(c);
  CHECK(programFromJson(programToJson(rb.prog)).instructions[0].opcode == Opcode::NGather);
  CHECK(programFromCbor(programToCbor(rb.prog)).instructions[0].srcs[1].dtype == DType::I32);
}

TEST_CASE("tensor_scalar_reduce accumulates across instructions with reduce_cmd",
          "[isa][tensor_scalar_reduce]") {
  constexpr int64_t P = 16, F = 24;
  const std::vector<float> a = randoms(P * F, 81), bvals = randoms(P * F, 82);
  Harness h("trn1");
  AccessPattern as = h.in(P, F, a), bs = h.in(P, F, bvals), da = h.tile(P, F), db = h.tile(P, F),
                ra = h.tile(P, 1), rb = h.tile(P, 1), rc = h.tile(P, 1);
  Instruction first = make(Opcode::TensorScalarReduce, kQueueVector, da, {as, ra});
  first.alu = AluOp::Add;
  first.imm[0] = 0.5;
  first.alu2 = AluOp::Add; // reset_reduce (the default)
  Instruction second = first;
  second.dst = db;
  second.srcs = {bs, rb};
  second.reduceCmd = ReduceCmd::Reduce; // continues from the first's sums
  Instruction third = first;
  third.dst = db;
  third.srcs = {bs, rc};
  third.alu2 = AluOp::Max;
  third.reduceCmd = ReduceCmd::LoadReduce; // starts from imm[1]
  third.imm[1] = 1.0;
  h.b.add(first);
  h.b.add(second);
  h.b.add(third);
  auto out = h.read({ra, rb, rc});
  for (int64_t p = 0; p < P; ++p) {
    float sum = 0, mx = 1.0f;
    for (int64_t f = 0; f < F; ++f)
      sum += a[size_t(p * F + f)] + 0.5f;
    CHECK(bits(out[0][size_t(p)]) == bits(sum));
    for (int64_t f = 0; f < F; ++f) {
      sum += bvals[size_t(p * F + f)] + 0.5f;
      mx = std::max(mx, bvals[size_t(p * F + f)] + 0.5f);
    }
    CHECK(bits(out[1][size_t(p)]) == bits(sum));
    CHECK(bits(out[2][size_t(p)]) == bits(mx));
  }
  Instruction idle = make(Opcode::TensorScalarReduce, kQueueVector,
                          sbuf(DType::F32, 0, 0, 128, {64}),
                          {sbuf(DType::F32, 0, 1024, 128, {64}), sbuf(DType::F32, 0, 2048, 128, {1})});
  idle.reduceCmd = ReduceCmd::Idle;
  CHECK_THAT(rejection(target("trn2"), idle),
             Contains("writes a reduce result: reduce_cmd reset_reduce, reduce or load_reduce, "
                      "not idle"));
}

TEST_CASE("dropout zeroes elements with probability prob and keeps the rest bit-exact",
          "[isa][dropout]") {
  constexpr int64_t P = 64, F = 256;
  const std::vector<float> x = randoms(P * F, 91, 0.5f, 2.0f); // never 0
  SECTION("an immediate probability, NeuronSim's numbers of stream imm[1]") {
    for (const char *name : {"trn1", "trn2", "trn3"}) {
      Harness h(name);
      AccessPattern xs = h.in(P, F, x), dst = h.tile(P, F);
      Instruction in = make(Opcode::Dropout, kQueueVector, dst, {xs});
      in.imm[0] = 0.3;
      in.imm[1] = 5;
      h.b.add(in);
      const std::vector<float> y = h.read({dst})[0];
      int64_t dropped = 0;
      for (int64_t e = 0; e < P * F; ++e) {
        const bool drop = uniform01(0, 5, uint64_t(e)) < 0.3f;
        CHECK(bits(y[size_t(e)]) == bits(drop ? 0.0f : x[size_t(e)]));
        dropped += y[size_t(e)] == 0;
      }
      // 16384 draws: the drop rate is within 5 standard deviations (0.018) of 0.3.
      CHECK(std::abs(double(dropped) / (P * F) - 0.3) < 0.018);
    }
  }
  SECTION("a per-partition probability: 0 keeps everything, 1 drops everything") {
    std::vector<float> prob(P);
    for (int64_t p = 0; p < P; ++p)
      prob[size_t(p)] = p % 2 == 0 ? 0.0f : 1.0f;
    Harness h;
    AccessPattern xs = h.in(P, F, x), ps = h.in(P, 1, prob), dst = h.tile(P, F);
    Instruction in = make(Opcode::Dropout, kQueueVector, dst, {xs, ps});
    in.scaleTile = true;
    h.b.add(in);
    const std::vector<float> y = h.read({dst})[0];
    for (int64_t p = 0; p < P; ++p)
      for (int64_t f = 0; f < F; ++f)
        CHECK(bits(y[size_t(p * F + f)]) == bits(p % 2 == 0 ? x[size_t(p * F + f)] : 0.0f));
  }
  const AccessPattern t = sbuf(DType::BF16, 0, 0, 128, {256}),
                      dst = sbuf(DType::BF16, 0, 4096, 128, {256});
  Instruction c = make(Opcode::Dropout, kQueueVector, dst, {t});
  c.imm[0] = 0.1;
  CHECK(rejection(target("trn1"), c).empty());
  Instruction bad = c;
  bad.imm[0] = 1.5;
  CHECK_THAT(rejection(target("trn2"), bad), Contains("drop probability imm[0] must be in [0, 1]"));
  bad = c;
  bad.imm[1] = 0.5;
  CHECK_THAT(rejection(target("trn2"), bad), Contains("stream id imm[1] must be an integer"));
  bad = c;
  bad.dst.dtype = DType::F32;
  CHECK_THAT(rejection(target("trn2"), bad), Contains("(dropout keeps or zeroes elements)"));
  bad = c;
  bad.queue = kQueueGpSimd;
  CHECK_THAT(rejection(target("trn2"), bad), Contains("it runs on vector"));
  for (const char *name : {"trn1", "trn2", "trn3"})
    for (int64_t n : {int64_t(16), int64_t(256), int64_t(512)}) {
      Instruction k = c;
      k.dst.dims.back() = {1, n};
      k.srcs[0].dims.back() = {1, n};
      CHECK(cyclesOf(target(name), k) == std::max<double>(64, double(n)));
    }
  Builder rb;
  Instruction rt = c;
  rt.imm[1] = 3;
  rb.add(rt);
  for (const Program &p : {programFromJson(programToJson(rb.prog)),
                           programFromCbor(programToCbor(rb.prog))}) {
    CHECK(p.instructions[0].opcode == Opcode::Dropout);
    CHECK(p.instructions[0].imm[0] == 0.1);
    CHECK(p.instructions[0].imm[1] == 3);
  }
}

TEST_CASE("nonzero_with_count compacts the nonzero indices of every 16th partition, trn2 and later",
          "[isa][nonzero_with_count]") {
  constexpr int64_t P = 48, T = 20;
  std::vector<float> x(P * T, 0.0f);
  for (int64_t p = 0; p < P; ++p)
    for (int64_t f = 0; f < T; ++f)
      if ((f * 3 + p) % 4 == 0)
        x[size_t(p * T + f)] = float(f + 1) * (p % 2 ? -1.0f : 1.0f);
  x[size_t(16 * T + 1)] = std::numeric_limits<float>::quiet_NaN(); // nonzero
  std::vector<float> oldf(P * (T + 1));
  for (size_t i = 0; i < oldf.size(); ++i)
    oldf[i] = float(1000 + i);
  for (const char *name : {"trn2", "trn3"}) {
    Harness h(name);
    AccessPattern xs = h.in(P, T, x), of = h.in(P, T + 1, oldf);
    AccessPattern dst = sbuf(DType::I32, 0, h.sbufOffset, P, {T + 1});
    h.sbufOffset += (T + 1) * 4;
    h.b.add(make(Opcode::TensorCopy, kQueueVector, dst, {of})); // dst's old values
    Instruction in = make(Opcode::NonzeroWithCount, kQueueGpSimd, dst, {xs});
    in.imm[0] = 100; // index_offset
    in.imm[1] = -1;  // padding_val
    h.b.add(in);
    AccessPattern back = h.tile(P, T + 1);
    h.b.add(make(Opcode::TensorCopy, kQueueVector, back, {dst}));
    const std::vector<float> y = h.read({back})[0];
    for (int64_t p = 0; p < P; ++p) {
      std::vector<float> want(size_t(T + 1));
      if (p % 16 == 0) {
        int64_t count = 0;
        for (int64_t f = 0; f < T; ++f)
          if (x[size_t(p * T + f)] != 0)
            want[size_t(count++)] = float(f + 100);
        for (int64_t k = count; k < T; ++k)
          want[size_t(k)] = -1;
        want[size_t(T)] = float(count);
      } else {
        for (int64_t k = 0; k <= T; ++k)
          want[size_t(k)] = oldf[size_t(p * (T + 1) + k)];
      }
      for (int64_t k = 0; k <= T; ++k)
        CHECK(y[size_t(p * (T + 1) + k)] == want[size_t(k)]);
    }
  }
  const AccessPattern src = sbuf(DType::F32, 0, 0, 128, {256}),
                      dst = sbuf(DType::I32, 0, 4096, 128, {257});
  Instruction c = make(Opcode::NonzeroWithCount, kQueueGpSimd, dst, {src});
  CHECK(rejection(target("trn2"), c).empty());
  CHECK_THAT(rejection(target("trn1"), c),
             Contains("(nonzero_with_count): is not an instruction of trn1 (NC-v2); it exists on "
                      "trn2, trn3"));
  Instruction bad = c;
  bad.dst = sbuf(DType::I32, 0, 4096, 128, {256});
  CHECK_THAT(rejection(target("trn2"), bad), Contains("dst must be [128, 257]"));
  bad = c;
  bad.dst.dtype = DType::F32;
  CHECK_THAT(rejection(target("trn2"), bad), Contains("writes i32 indices and a count, not f32"));
  bad = c;
  bad.imm[1] = 0.5;
  CHECK_THAT(rejection(target("trn2"), bad), Contains("padding_val imm[1] must be a 32-bit integer"));
  bad = c;
  bad.queue = kQueueVector;
  CHECK_THAT(rejection(target("trn2"), bad), Contains("it runs on gpsimd"));
  // ESTIMATE: 150 + N, N the source's elements per partition.
  for (const char *name : {"trn2", "trn3"})
    for (int64_t n : {int64_t(16), int64_t(256), int64_t(512)}) {
      Instruction k = c;
      k.srcs[0].dims.back() = {1, n};
      k.dst.dims.back() = {1, n + 1};
      CHECK(cyclesOf(target(name), k) == 150.0 + double(n));
    }
  Builder rb;
  Instruction rt = c;
  rt.imm[0] = 7;
  rt.imm[1] = -3;
  rb.add(rt);
  for (const Program &p : {programFromJson(programToJson(rb.prog)),
                           programFromCbor(programToCbor(rb.prog))}) {
    CHECK(p.instructions[0].opcode == Opcode::NonzeroWithCount);
    CHECK(p.instructions[0].imm[0] == 7);
    CHECK(p.instructions[0].imm[1] == -3);
  }
}

// The sequencer registers (register_alloc / move / load / store), dynamic loops whose trip
// count or condition is a register, and dynamic (register) offsets of dma_copy: semantics
// against hand-computed references, costs against the formulas, and the error cases.
#include "IsaHarness.h"

#include "runtime/program/Serialize.h"

#include <catch2/catch.hpp>

#include <cstdint>
#include <vector>

using namespace neuron::runtime;
using namespace neuron::runtime::test;
using namespace neuron::runtime::test::isa;
using Catch::Matchers::Contains;

namespace {

constexpr int V = kQueueVector, D = kQueueDma0;

Instruction regOp(Opcode op, int queue, int reg) {
  Instruction in;
  in.opcode = op;
  in.queue = uint16_t(queue);
  in.reg = uint8_t(reg);
  return in;
}
Instruction alloc(int queue, int reg) { return regOp(Opcode::RegisterAlloc, queue, reg); }
Instruction allocInit(int queue, int reg, double value) {
  Instruction in = alloc(queue, reg);
  in.regInit = true;
  in.imm[0] = value;
  return in;
}
Instruction move(int queue, int reg, double value) {
  Instruction in = regOp(Opcode::RegisterMove, queue, reg);
  in.imm[0] = value;
  return in;
}
Instruction load(int queue, int reg, AccessPattern src) {
  Instruction in = regOp(Opcode::RegisterLoad, queue, reg);
  in.srcs = {std::move(src)};
  return in;
}
Instruction store(int queue, int reg, AccessPattern dst) {
  Instruction in = regOp(Opcode::RegisterStore, queue, reg);
  in.dst = std::move(dst);
  return in;
}
AccessPattern scalarHbm(uint32_t buf, DType dt = DType::I32, int64_t offset = 0) {
  return hbm(buf, dt, offset, {{1, 1}});
}
AccessPattern scalarSbuf(int64_t offset, DType dt = DType::I32) {
  return sbuf(dt, 0, offset, 1, {1});
}

std::string errorOf(const Program &p, const Target &t, std::vector<const void *> ins,
                    std::vector<void *> outs) {
  try {
    simulate(p, t, ins, outs);
  } catch (const SimulationError &e) {
    return e.what();
  }
  return "";
}

} // namespace

TEST_CASE("register_alloc / move / store: int32 values into memory", "[isa][registers]") {
  Builder b;
  const uint32_t out = b.output("out", DType::I32, {4});
  const uint32_t out8 = b.output("out8", DType::U8, {1});
  b.add(allocInit(V, 0, 7));
  Instruction copy = regOp(Opcode::RegisterMove, V, 1);
  copy.regSrc = 0;
  b.add(alloc(V, 1));
  b.add(copy);
  b.add(allocInit(V, 5, -123456789));
  b.add(store(V, 0, scalarHbm(out, DType::I32, 0)));
  b.add(store(V, 1, scalarHbm(out, DType::I32, 1)));
  b.add(store(V, 5, scalarHbm(out, DType::I32, 2)));
  b.add(move(V, 0, 300));
  b.add(store(V, 0, scalarHbm(out, DType::I32, 3)));
  b.add(store(V, 0, scalarHbm(out8, DType::U8))); // the low byte: 300 & 0xFF
  std::vector<int32_t> o(4, 0);
  std::vector<uint8_t> o8(1, 0);
  simulate(b.prog, target("trn2"), {}, {o.data(), o8.data()});
  CHECK(o == std::vector<int32_t>{7, 7, -123456789, 300});
  CHECK(int(o8[0]) == (300 & 0xFF));
}

TEST_CASE("register_load reads one integer from HBM or SBUF", "[isa][registers]") {
  for (const char *t : {"trn1", "trn2", "trn3"}) {
    Builder b;
    b.prog.target = t;
    const uint32_t in = b.input("in", DType::I32, {2});
    const uint32_t in8 = b.input("in8", DType::I8, {1});
    const uint32_t out = b.output("out", DType::I32, {3});
    b.dma(D, scalarSbuf(0), scalarHbm(in, DType::I32, 1));
    b.add(alloc(kQueueGpSimd, 2));
    b.add(load(kQueueGpSimd, 2, scalarHbm(in))); // from HBM
    b.add(store(kQueueGpSimd, 2, scalarHbm(out, DType::I32, 0)));
    b.add(load(kQueueGpSimd, 2, scalarSbuf(0))); // from SBUF
    b.add(store(kQueueGpSimd, 2, scalarHbm(out, DType::I32, 1)));
    b.add(load(kQueueGpSimd, 2, scalarHbm(in8, DType::I8))); // sign-extended
    b.add(store(kQueueGpSimd, 2, scalarHbm(out, DType::I32, 2)));
    b.sequential();
    const std::vector<int32_t> x = {-5, 99};
    const std::vector<int8_t> x8 = {-3};
    std::vector<int32_t> o(3, 0);
    simulate(b.prog, target(t), {x.data(), x8.data()}, {o.data()});
    CHECK(o == std::vector<int32_t>{-5, 99, -3});
  }
}

TEST_CASE("register errors: unallocated, no value, bad operands", "[isa][registers]") {
  const Target &t = target("trn2");
  SECTION("a use before any register_alloc") {
    Builder b;
    b.add(move(V, 3, 1));
    CHECK_THAT(errorOf(b.prog, t, {}, {}),
               Contains("register 3 of queue 1 (vector) is used before any register_alloc"));
  }
  SECTION("another queue's allocation does not count") {
    Builder b;
    b.add(allocInit(kQueueScalar, 3, 1));
    b.add(move(V, 3, 1));
    CHECK_THAT(errorOf(b.prog, t, {}, {}), Contains("is used before any register_alloc"));
  }
  SECTION("a read of a register that holds no value") {
    Builder b;
    const uint32_t out = b.output("out", DType::I32, {1});
    b.add(alloc(V, 0));
    b.add(store(V, 0, scalarHbm(out)));
    std::vector<int32_t> o(1);
    CHECK_THAT(errorOf(b.prog, t, {}, {o.data()}), Contains("which holds no value"));
  }
  SECTION("operand rules") {
    CHECK_THAT(rejection(t, regOp(Opcode::RegisterAlloc, V, 64)),
               Contains("register 64 does not exist (64 per queue)"));
    CHECK_THAT(rejection(t, move(V, 0, 2.5)), Contains("is no int32 value"));
    CHECK_THAT(rejection(t, move(V, 0, 4294967296.0)), Contains("is no int32 value"));
    CHECK_THAT(rejection(t, load(V, 0, scalarSbuf(0, DType::F32))),
               Contains("must be an integer of up to 32 bits"));
    CHECK_THAT(rejection(t, load(V, 0, sbuf(DType::I32, 0, 0, 2, {1}))),
               Contains("must hold exactly one element, got 2"));
    AccessPattern ps = scalarSbuf(0);
    ps.space = MemSpace::Psum;
    CHECK_THAT(rejection(t, store(V, 0, ps)), Contains("must be in SBUF or HBM, not PSUM"));
    CHECK_THAT(rejection(t, regOp(Opcode::RegisterMove, D, 0)),
               Contains("cannot run on the dma engine"));
  }
}

TEST_CASE("register instruction costs follow the ESTIMATE formulas", "[isa][registers][cost]") {
  for (const char *name : {"trn1", "trn2", "trn3"}) {
    const Target &t = target(name);
    Program p;
    p.buffers.push_back(BufferDecl{"x", BufferDecl::Kind::Input, 0, DType::I32, {1}, {}});
    auto cycles = [&](Instruction in) {
      p.target = t.name;
      p.instructions = {in};
      return computeCycles(t, p.instructions[0], checkInstruction(p, t, 0));
    };
    const double tiny = t.staticOverheadCycles, access = t.accessOverheadCycles;
    CHECK(cycles(alloc(V, 0)) == 0);
    CHECK(cycles(allocInit(V, 0, 3)) == tiny);
    CHECK(cycles(move(V, 0, 3)) == tiny);
    CHECK(cycles(load(V, 0, scalarSbuf(0))) == tiny + access);
    CHECK(cycles(store(V, 0, scalarSbuf(0))) == tiny + access);
    CHECK(cycles(load(V, 0, scalarHbm(0))) ==
          Approx(tiny + access + t.dmaStartLatencyNs * t.vectorGhz));
    // computeCost adds nothing on top: the busy time is the cycles at the engine's clock.
    p.instructions = {move(kQueueScalar, 0, 1)};
    CHECK(computeCost(t, p.instructions[0], checkInstruction(p, t, 0)).busyNs ==
          Approx(tiny / t.scalarGhz));
  }
}

namespace {

/// acc (an SBUF [1, 1] i32 tile) += 1 once per iteration of a dynamic loop on the count in
/// input `n`, bounded by `bound`; returns acc, or the error.
struct CountedLoop {
  Builder b;
  uint32_t n, out;
  size_t body = 0;
  explicit CountedLoop(int64_t bound, bool whileLoop = false, const char *t = "trn2") {
    b.prog.target = t;
    n = b.input("n", DType::I32, {1});
    out = b.output("out", DType::I32, {1});
    const AccessPattern acc = scalarSbuf(0), counter = scalarSbuf(4);
    Instruction zero = make(Opcode::Memset, V, acc, {});
    b.add(zero);                                            // vector #1
    b.dma(D, counter, scalarHbm(n));                        // dma #1
    b.add(alloc(V, 0));                                     // vector #2
    Instruction ld = load(V, 0, counter);
    ld.waits = {waitFor(D, 1)};
    b.add(ld);                                              // vector #3
    body = b.next();
    Instruction inc = make(Opcode::TensorScalar, V, acc, {acc});
    inc.alu = AluOp::Add;
    inc.imm[0] = 1;
    b.add(inc);
    if (whileLoop) { // counter -= 1; reload the condition
      Instruction dec = make(Opcode::TensorScalar, V, counter, {counter});
      dec.alu = AluOp::Sub;
      dec.imm[0] = 1;
      b.add(dec);
      b.add(load(V, 0, counter));
    }
    b.loop(body, bound);
    b.prog.loops.back().countReg = RegRef{int16_t(V), 0};
    b.prog.loops.back().whileLoop = whileLoop;
    // Written for the bound: 3 vector instructions, then (1 or 3) per iteration.
    const int64_t perIter = whileLoop ? 3 : 1;
    b.dma(D + 1, scalarHbm(out), acc, {waitFor(V, 3 + bound * perIter)});
  }
  RunStats run(int32_t count, int32_t &result, RunOptions o = {}) {
    std::vector<int32_t> x = {count}, y = {-1};
    RunStats s = simulate(b.prog, *findTarget(b.prog.target), {x.data()}, {y.data()}, o);
    result = y[0];
    return s;
  }
  std::string error(int32_t count) {
    std::vector<int32_t> x = {count}, y = {-1};
    return errorOf(b.prog, *findTarget(b.prog.target), {x.data()}, {y.data()});
  }
};

} // namespace

TEST_CASE("a dynamic loop runs its register's count, 0 .. its bound", "[isa][loops]") {
  for (const char *t : {"trn1", "trn2", "trn3"}) {
    CountedLoop l(8, false, t);
    for (int32_t n : {0, 1, 3, 8}) {
      int32_t r = -1;
      l.run(n, r);
      CHECK(r == n);
    }
    CHECK_THAT(l.error(9), Contains("trip count 9") && Contains("outside 0..8"));
    CHECK_THAT(l.error(-1), Contains("trip count -1"));
  }
}

TEST_CASE("a while loop runs while its register is nonzero", "[isa][loops]") {
  CountedLoop l(10, /*whileLoop=*/true);
  for (int32_t n : {0, 1, 4, 10}) {
    int32_t r = -1;
    l.run(n, r);
    CHECK(r == n);
  }
  CHECK_THAT(l.error(11), Contains("is still 1 after 10 iterations, the loop's bound"));
}

TEST_CASE("dynamic loop iterations cost the body plus a branch", "[isa][loops][cost]") {
  const Target &t = target("trn2");
  CountedLoop l(8);
  int32_t r;
  const RunStats s0 = l.run(0, r), s3 = l.run(3, r), s5 = l.run(5, r);
  Program one;
  one.target = "trn2";
  one.instructions = {l.b.prog.instructions[l.body]};
  const double body = computeCost(t, one.instructions[0], checkInstruction(one, t, 0)).busyNs;
  const double branchNs = t.staticOverheadCycles / t.vectorGhz; // ESTIMATE per test
  // n iterations: n bodies and n + 1 tests of the register (the last one leaves).
  CHECK(s3.queueBusyNs[V] - s0.queueBusyNs[V] == Approx(3 * (body + branchNs)));
  CHECK(s5.queueBusyNs[V] - s3.queueBusyNs[V] == Approx(2 * (body + branchNs)));
  CHECK(s5.instructions - s3.instructions == 2);
  // Timing-only runs cannot read the count from memory: they run the bound.
  RunOptions timing;
  timing.timingOnly = true;
  const RunStats st = l.run(3, r, timing);
  CHECK(st.instructions == l.run(8, r).instructions);
}

TEST_CASE("dynamic loop errors", "[isa][loops]") {
  const Target &t = target("trn2");
  SECTION("an unallocated count register") {
    Builder b;
    b.add(make(Opcode::Memset, V, scalarSbuf(0), {}));
    b.loop(0, 4);
    b.prog.loops[0].countReg = RegRef{int16_t(V), 9};
    CHECK_THAT(errorOf(b.prog, t, {}, {}),
               Contains("loops[0]: the dynamic loop's register 9 of queue 1 (vector) is used "
                        "before any register_alloc"));
  }
  SECTION("a while loop needs a register") {
    Builder b;
    b.add(make(Opcode::Memset, V, scalarSbuf(0), {}));
    b.loop(0, 4);
    b.prog.loops[0].whileLoop = true;
    CHECK_THAT(errorOf(b.prog, t, {}, {}), Contains("a while loop needs a condition register"));
  }
}

namespace {

/// out[0, :] = table row r, r = the register loaded from input `idx`, as a dma_copy with a
/// dynamic offset (NKI's .ap(scalar_offset=r, indirect_dim=0)).
struct RowCopy {
  Builder b;
  uint32_t table, idx, out;
  RowCopy() {
    table = b.input("table", DType::F32, {4, 8});
    idx = b.input("idx", DType::I32, {1});
    out = b.output("out", DType::F32, {1, 8});
    b.add(alloc(kQueueGpSimd, 1));
    b.add(load(kQueueGpSimd, 1, scalarHbm(idx)));
    AccessPattern row = hbm(table, DType::F32, 0, {{1, 8}});
    row.offsetReg = RegRef{int16_t(kQueueGpSimd), 1};
    row.offsetRegScale = 8; // elements per row
    b.dma(D, sbuf(DType::F32, 0, 0, 1, {8}), row, {waitFor(kQueueGpSimd, 2)});
    b.dma(D + 1, hbm(out, DType::F32, 0, {{1, 8}}), sbuf(DType::F32, 0, 0, 1, {8}),
          {waitFor(D, 1)});
  }
};

} // namespace

TEST_CASE("dma_copy with a dynamic (register) offset", "[isa][dynamic]") {
  RowCopy c;
  std::vector<float> table(32);
  for (size_t i = 0; i < table.size(); ++i)
    table[i] = float(i);
  for (int32_t r : {0, 2, 3}) {
    std::vector<int32_t> idx = {r};
    std::vector<float> out(8, -1);
    simulate(c.b.prog, target("trn2"), {table.data(), idx.data()}, {out.data()});
    for (int k = 0; k < 8; ++k)
      CHECK(out[size_t(k)] == float(8 * r + k));
  }
  SECTION("out of range at run time") {
    std::vector<int32_t> idx = {4};
    std::vector<float> out(8);
    CHECK_THAT(errorOf(c.b.prog, target("trn2"), {table.data(), idx.data()}, {out.data()}),
               Contains("dynamic offset out of range: register 1 of queue 3 (gpsimd) = 4") &&
                   Contains("elements 32..39, outside buffer 0 (\"table\") of 32 elements"));
    idx = {-1};
    CHECK_THAT(errorOf(c.b.prog, target("trn2"), {table.data(), idx.data()}, {out.data()}),
               Contains("dynamic offset out of range"));
  }
  SECTION("the DMA waits for the register's value") {
    std::vector<int32_t> idx = {1};
    std::vector<float> out(8);
    std::vector<InstructionTiming> tl;
    RunOptions o;
    o.timeline = &tl;
    simulate(c.b.prog, target("trn2"), {table.data(), idx.data()}, {out.data()}, o);
    REQUIRE(tl.size() == 4);
    CHECK(tl[2].startNs >= tl[1].completeNs);
  }
  SECTION("rules") {
    Program p = c.b.prog;
    p.instructions[2].srcs[0].offsetReg.queue = int16_t(D);
    std::string error;
    try {
      checkInstruction(p, target("trn2"), 2);
    } catch (const SimulationError &e) {
      error = e.what();
    }
    CHECK_THAT(error, Contains("it must be a compute engine's of physical core 0"));
  }
}

TEST_CASE("dynamic offsets only on dma_copy HBM patterns", "[isa][dynamic]") {
  const Target &t = target("trn2");
  AccessPattern s = sbuf(DType::F32, 0, 0, 1, {8});
  s.offsetReg = RegRef{int16_t(V), 0};
  s.offsetRegScale = 4;
  Instruction copy = make(Opcode::TensorCopy, V, sbuf(DType::F32, 0, 64, 1, {8}), {s});
  CHECK_THAT(rejection(t, copy), Contains("only a dma_copy's HBM access patterns take a dynamic"));
  Instruction dma = make(Opcode::DmaCopy, D, sbuf(DType::F32, 0, 64, 1, {8}), {s});
  CHECK_THAT(rejection(t, dma),
             Contains("a dynamic (register) offset applies to an HBM access pattern, not SBUF"));
}

TEST_CASE("registers, dynamic loops and offsets survive serialization", "[isa][serialize]") {
  CountedLoop l(8, /*whileLoop=*/true);
  RowCopy c;
  for (Program *p : {&l.b.prog, &c.b.prog}) {
    const Program back = programFromJson(programToJson(*p));
    REQUIRE(back.loops.size() == p->loops.size());
    for (size_t k = 0; k < p->loops.size(); ++k) {
      CHECK(back.loops[k].countReg.queue == p->loops[k].countReg.queue);
      CHECK(back.loops[k].countReg.index == p->loops[k].countReg.index);
      CHECK(back.loops[k].whileLoop == p->loops[k].whileLoop);
    }
    REQUIRE(back.instructions.size() == p->instructions.size());
    for (size_t i = 0; i < p->instructions.size(); ++i) {
      const Instruction &a = p->instructions[i], &z = back.instructions[i];
      CHECK(a.reg == z.reg);
      CHECK(a.regSrc == z.regSrc);
      CHECK(a.regInit == z.regInit);
      for (size_t k = 0; k < a.srcs.size(); ++k) {
        CHECK(a.srcs[k].offsetReg.queue == z.srcs[k].offsetReg.queue);
        CHECK(a.srcs[k].offsetReg.index == z.srcs[k].offsetReg.index);
        CHECK(a.srcs[k].offsetRegScale == z.srcs[k].offsetRegScale);
      }
    }
    CHECK(programToJson(back) == programToJson(*p));
  }
  Program alloc1;
  alloc1.target = "trn2";
  alloc1.instructions = {allocInit(V, 4, 12)};
  const Program back = programFromJson(programToJson(alloc1));
  CHECK(back.instructions[0].regInit);
  CHECK(back.instructions[0].reg == 4);
  CHECK(back.instructions[0].imm[0] == 12);
}

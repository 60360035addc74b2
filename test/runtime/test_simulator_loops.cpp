// Tests of counted loops in the simulator: a looped program runs exactly like
// its unrolled equivalent (results, timing, stats, timeline); checks and
// deadlocks inside loops.
#include "runtime/simulator/Simulator.h"
#include "runtime/simulator/Trace.h"

#include "ProgramBuilder.h"

#include <catch2/catch.hpp>

#include <cstring>

using namespace neuron::runtime;
using namespace neuron::runtime::test;
using Catch::Matchers::Contains;

namespace {

const Target &trn2() { return *findTarget("trn2"); }

struct Run {
  RunStats stats;
  std::vector<InstructionTiming> timeline;
};

Run run(const Program &p, const std::vector<const void *> &in = {},
        const std::vector<void *> &out = {}) {
  Run r;
  RunOptions o;
  o.timingOnly = in.empty() && out.empty();
  o.timeline = &r.timeline;
  r.stats = simulate(p, trn2(), in, out, o);
  return r;
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

/// Every stat of two runs, compared exactly (the same doubles, to the bit).
void checkSameStats(const RunStats &a, const RunStats &b) {
  CHECK(a.simNs == b.simNs);
  CHECK(a.instructions == b.instructions);
  CHECK(a.hbmBytes == b.hbmBytes);
  CHECK(a.flops == b.flops);
  CHECK(a.engineBusyNs == b.engineBusyNs);
  CHECK(a.queueBusyNs == b.queueBusyNs);
  CHECK(a.dmaTransfers == b.dmaTransfers);
  CHECK(a.dmaBytes == b.dmaBytes);
  CHECK(a.matmuls == b.matmuls);
  CHECK(a.mfu == b.mfu);
  CHECK(a.engineUtilization == b.engineUtilization);
}

/// The looped timeline is the unrolled one, with static instruction indices
/// (`origin`: the static index of each unrolled instance).
void checkSameTimeline(const std::vector<InstructionTiming> &looped,
                       const std::vector<InstructionTiming> &flat,
                       const std::vector<size_t> &origin) {
  REQUIRE(looped.size() == flat.size());
  REQUIRE(origin.size() == flat.size());
  for (size_t k = 0; k < flat.size(); ++k) {
    INFO("instance " << k);
    CHECK(looped[k].instruction == origin[k]);
    CHECK(looped[k].queue == flat[k].queue);
    CHECK(looped[k].startNs == flat[k].startNs);
    CHECK(looped[k].endNs == flat[k].endNs);
    CHECK(looped[k].completeNs == flat[k].completeNs);
  }
}

constexpr int64_t kTiles = 7, kCols = 64, kTile = 128 * kCols;
constexpr int kLoadQ = kQueueDma0, kStoreQ = kQueueDma0 + 1;

/// y = relu(x) - 1 over kTiles tiles of [128, 64] f32: per tile a DMA load
/// into a ring of 3 SBUF buffers, an activation into a second ring, a
/// subtraction on the Vector engine, and a store. With `looped`, one loop
/// body with offset terms (HBM: the tile; SBUF: the ring slot, a modulus
/// term) and wait value terms; otherwise the same instructions written out
/// by hand, as a compiler without loops emits them.
Program pipeline(bool looped) {
  Builder b;
  uint32_t x = b.input("x", DType::F32, {kTiles * 128, kCols});
  uint32_t y = b.output("y", DType::F32, {kTiles * 128, kCols});
  const int64_t slot = kCols * 4; // bytes of one ring slot per partition
  auto hbmTile = [&](uint32_t buf, int64_t t) {
    AccessPattern ap = hbm(buf, DType::F32, looped ? 0 : t * kTile,
                           {{kCols, 128}, {1, kCols}});
    return looped ? withTerms(ap, {term(0, kTile)}) : ap;
  };
  auto ring = [&](int64_t base, int64_t t) {
    AccessPattern ap =
        sbuf(DType::F32, 0, base + (looped ? 0 : t % 3 * slot), 128, {kCols});
    return looped ? withTerms(ap, {term(0, slot, 3)}) : ap;
  };
  // Wait for `value + t` completions of `queue` (tile t's producer).
  auto after = [&](int queue, int64_t value, int64_t t) {
    return looped ? waitFor(queue, value, {term(0, 1)})
                  : waitFor(queue, value + t);
  };
  const size_t body = b.next();
  for (int64_t t = 0; t < (looped ? 1 : kTiles); ++t) {
    // The load reuses the slot of tile t - 3: it waits for that tile's store
    // (a value <= 0, satisfied at once, for the first three tiles).
    std::vector<SemWait> reuse;
    if (looped || t >= 3)
      reuse = {after(kStoreQ, -2, t)};
    b.dma(kLoadQ, ring(0, t), hbmTile(x, t), reuse);
    b.op(Opcode::Activation, kQueueScalar, ring(3 * slot, t), {ring(0, t)},
         {after(kLoadQ, 1, t)});
    b.last().func = ActFunc::Relu;
    b.op(Opcode::TensorScalar, kQueueVector, ring(3 * slot, t),
         {ring(3 * slot, t)}, {after(kQueueScalar, 1, t)});
    b.last().alu = AluOp::Sub;
    b.last().imm[0] = 1.0;
    b.dma(kStoreQ, hbmTile(y, t), ring(3 * slot, t),
          {after(kQueueVector, 1, t)});
  }
  if (looped)
    b.loop(body, kTiles);
  return b.prog;
}

std::vector<float> inputData(size_t n) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i)
    v[i] = float(int(i % 19) - 9) * 0.5f;
  return v;
}

/// Additions on the Vector engine in a nest of two loops (with instructions
/// before and after the inner one) whose offsets and waits use both levels
/// and moduli: per outer iteration o a memset of rows o to -1 (its wait's
/// value is <= 0 in the first iteration), 4 additions of iota columns into
/// them, and a store of the rows.
Program nestedProgram() {
  Builder b;
  uint32_t y = b.output("y", DType::F32, {3 * 4, 16});
  b.op(Opcode::Iota, kQueueGpSimd, sbuf(DType::F32, 0, 0, 32, {64}), {});
  b.last().imm[1] = 100; // iota: 100 * p + i
  const size_t outer = b.next();
  b.op(Opcode::Memset, kQueueScalar,
       withTerms(sbuf(DType::F32, 0, 1024, 32, {16}), {term(0, 64)}), {},
       {waitFor(kQueueVector, -3, {term(0, 4)})});
  b.last().imm[0] = -1;
  const size_t inner = b.next();
  b.op(Opcode::TensorTensor, kQueueVector,
       withTerms(sbuf(DType::F32, 0, 1024, 32, {4}),
                 {term(0, 64), term(1, 16)}),
       {withTerms(sbuf(DType::F32, 0, 0, 32, {4}),
                  {term(0, 16, 2), term(1, 48, 3)}),
        withTerms(sbuf(DType::F32, 0, 1024, 32, {4}),
                  {term(0, 64), term(1, 16)})},
       {waitFor(kQueueScalar, 1, {term(0, 1)}), waitFor(kQueueGpSimd, 1)});
  b.last().alu = AluOp::Add;
  b.loop(inner, 4);
  b.dma(kQueueDma0 + 3,
        withTerms(hbm(y, DType::F32, 0, {{16, 4}, {1, 16}}), {term(0, 64)}),
        withTerms(sbuf(DType::F32, 0, 1024, 4, {16}), {term(0, 64)}),
        {waitFor(kQueueVector, 4, {term(0, 4)})});
  b.loop(outer, 3);
  return b.prog;
}

} // namespace

TEST_CASE("a looped pipeline matches its hand-unrolled program exactly",
          "[loops]") {
  const Program looped = pipeline(true), flat = pipeline(false);
  REQUIRE(looped.instructions.size() == 4);
  REQUIRE(flat.instructions.size() == 4 * kTiles);
  const std::vector<float> x = inputData(size_t(kTiles * kTile));
  std::vector<float> yLooped(x.size(), 7.0f), yFlat(x.size(), 8.0f);

  const Run l = run(looped, {x.data()}, {yLooped.data()});
  const Run f = run(flat, {x.data()}, {yFlat.data()});
  CHECK(l.stats.instructions == uint64_t(4 * kTiles));
  CHECK(l.stats.hbmBytes == uint64_t(2 * kTiles * kTile * 4));
  checkSameStats(l.stats, f.stats);
  std::vector<size_t> origin;
  for (int64_t t = 0; t < kTiles; ++t)
    for (size_t i = 0; i < 4; ++i)
      origin.push_back(i);
  checkSameTimeline(l.timeline, f.timeline, origin);
  CHECK(std::memcmp(yLooped.data(), yFlat.data(), x.size() * 4) == 0);
  for (size_t i = 0; i < x.size(); i += 97)
    CHECK(yLooped[i] == std::max(x[i], 0.0f) - 1.0f);

  // Timing-only runs time the same, and so does the generic unrolling.
  checkSameStats(run(looped).stats, f.stats);
  checkSameStats(run(unrolled(looped)).stats, f.stats);
}

TEST_CASE("nested loops run the instances of the unrolled program in order",
          "[loops]") {
  const Program p = nestedProgram();
  REQUIRE(p.loops.size() == 2);
  std::vector<size_t> origin;
  const Program flat = unrolled(p, &origin);
  REQUIRE(flat.instructions.size() == 1 + 3 * (1 + 4 + 1));

  std::vector<float> yl(12 * 16, 5.0f), yf(12 * 16, 6.0f);
  const Run l = run(p, {}, {yl.data()});
  const Run f = run(flat, {}, {yf.data()});
  checkSameStats(l.stats, f.stats);
  checkSameTimeline(l.timeline, f.timeline, origin);
  CHECK(yl == yf);
  // y[4o + r][4i + j] (outer iteration o, inner i, partition r) = the memset
  // -1 plus the iota value 100 r + c at column c = 4 (o % 2) + 12 (i % 3) + j.
  for (int64_t o = 0; o < 3; ++o)
    for (int64_t r = 0; r < 4; ++r)
      for (int64_t i = 0; i < 4; ++i)
        for (int64_t j = 0; j < 4; ++j)
          CHECK(yl[size_t((4 * o + r) * 16 + 4 * i + j)] ==
                float(-1 + 100 * r + 4 * (o % 2) + 12 * (i % 3) + j));
}

TEST_CASE("loops over the same range nest in list order", "[loops]") {
  // Two loops over the same single instruction: 2 x 3 instances, with the
  // inner induction variable moving fastest.
  Builder b;
  b.op(Opcode::Memset, kQueueVector,
       withTerms(sbuf(DType::F32, 0, 0, 1, {1}), {term(0, 64), term(1, 4)}),
       {});
  b.loop(0, 3); // inner: added first
  b.loop(0, 2);
  REQUIRE(b.prog.loops[0].count == 2);
  std::vector<size_t> origin;
  const Program flat = unrolled(b.prog, &origin);
  REQUIRE(flat.instructions.size() == 6);
  CHECK(flat.instructions[4].dst.offset == 64 + 4);
  const Run l = run(b.prog), f = run(flat);
  checkSameStats(l.stats, f.stats);
  checkSameTimeline(l.timeline, f.timeline, origin);
}

TEST_CASE("deadlocks inside loops are detected", "[loops]") {
  // Each iteration waits for one more activation than have been issued.
  Builder b;
  b.op(Opcode::Activation, kQueueScalar, sbuf(DType::F32, 0, 0, 128, {64}),
       {sbuf(DType::F32, 0, 1024, 128, {64})});
  b.op(Opcode::TensorCopy, kQueueVector, sbuf(DType::F32, 0, 2048, 128, {64}),
       {sbuf(DType::F32, 0, 0, 128, {64})},
       {waitFor(kQueueScalar, 1, {term(0, 1)})});
  b.loop(0, 3);
  CHECK(errorOf(b.prog) == "<no error>");
  b.last().waits[0].valueTerms = {term(0, 2)}; // 1, 3, 5: too many at iv 1
  CHECK(errorOf(b.prog) ==
        "deadlock: instruction 1 (tensor_copy) waits for 3 completions of "
        "queue 2 (scalar), but only 2 are issued before it in program order");

  // More completions than the queue has instances in all iterations.
  Builder c;
  c.op(Opcode::Activation, kQueueScalar, sbuf(DType::F32, 0, 0, 128, {64}),
       {sbuf(DType::F32, 0, 1024, 128, {64})});
  c.loop(0, 4);
  c.op(Opcode::TensorCopy, kQueueVector, sbuf(DType::F32, 0, 2048, 128, {64}),
       {sbuf(DType::F32, 0, 0, 128, {64})}, {waitFor(kQueueScalar, 5)});
  CHECK(errorOf(c.prog) ==
        "deadlock: instruction 1 (tensor_copy) waits for 5 completions of "
        "queue 2 (scalar), but the queue has only 4 instructions");
  c.last().waits[0].value = 4;
  CHECK(errorOf(c.prog) == "<no error>");

  // Nested: the scalar queue runs 2 x 3 = 6 instances in all.
  Builder d;
  d.op(Opcode::Activation, kQueueScalar, sbuf(DType::F32, 0, 0, 128, {64}),
       {sbuf(DType::F32, 0, 1024, 128, {64})});
  d.loop(0, 3);
  d.loop(0, 2);
  d.op(Opcode::TensorCopy, kQueueVector, sbuf(DType::F32, 0, 2048, 128, {64}),
       {sbuf(DType::F32, 0, 0, 128, {64})}, {waitFor(kQueueScalar, 7)});
  CHECK_THAT(errorOf(d.prog),
             Contains("but the queue has only 6 instructions"));
}

TEST_CASE("bounds are checked for every iteration of a loop", "[loops]") {
  // Four loads of a three-tile buffer: only the last iteration is outside.
  Builder b;
  uint32_t x = b.input("x", DType::F32, {3 * 128, 64});
  b.dma(kQueueDma0, sbuf(DType::F32, 0, 0, 128, {64}),
        withTerms(hbm(x, DType::F32, 0, {{64, 128}, {1, 64}}),
                  {term(0, 128 * 64)}));
  b.loop(0, 4);
  const std::string want =
      "HBM access [elements 24576..32767] is outside buffer 0 (\"x\") of "
      "24576 elements (operand srcs[0])";
  CHECK(errorOf(b.prog) == "instruction 0 (dma_copy): " + want);
  // The unrolled program reports the same access, at its last instance.
  CHECK(errorOf(unrolled(b.prog)) == "instruction 3 (dma_copy): " + want);
  b.prog.loops[0].count = 3;
  CHECK(errorOf(b.prog) == "<no error>");

  // SBUF: a ring slot that runs past the partition in iteration 5 only (the
  // modulus keeps a rotating buffer inside).
  Builder c;
  c.op(Opcode::Memset, kQueueVector,
       withTerms(sbuf(DType::F32, 0, 0, 128, {1024}), {term(0, 46080)}), {});
  c.loop(0, 6);
  CHECK(errorOf(c.prog) ==
        "instruction 0 (memset): SBUF access [offset 230400, 4096 bytes] "
        "exceeds the partition size 229376 (operand dst)");
  c.last().dst.offsetTerms[0].modulus = 5;
  CHECK(errorOf(c.prog) == "<no error>");
  // Negative coefficients: the lowest offset is checked too.
  c.last().dst.offsetTerms = {term(0, -4096)};
  c.last().dst.offset = 8192;
  CHECK(errorOf(c.prog) ==
        "instruction 0 (memset): SBUF access [offset -12288, 4096 bytes] "
        "exceeds the partition size 229376 (operand dst)");
}

TEST_CASE("a matmul whose dst moves across PSUM banks fails at that instance",
          "[loops]") {
  // [64, 384] f32 = 1536 bytes per partition, moving by 1024 bytes: the
  // second iteration crosses the bank boundary at 2048.
  Builder b;
  b.op(Opcode::Matmul, kQueueTensor,
       withTerms(psum(DType::F32, 0, 0, 64, {384}), {term(0, 1024)}),
       {sbuf(DType::BF16, 0, 0, 128, {64}),
        sbuf(DType::BF16, 0, 256, 128, {384})});
  b.loop(0, 2);
  CHECK(errorOf(b.prog) ==
        "instruction 0 (nc_matmul): dst PSUM access [offset 1024, 1536 bytes] "
        "crosses a 2048-byte PSUM bank boundary");
  // Whole banks: the bank rule holds in every iteration if it holds in the
  // first.
  b.last().dst.offsetTerms = {term(0, 2048, 4)};
  b.prog.loops[0].count = 8;
  CHECK(errorOf(b.prog) == "<no error>");
}

TEST_CASE("simulate rejects malformed loops and terms", "[loops]") {
  Builder b;
  b.op(Opcode::Memset, kQueueVector, sbuf(DType::F32, 0, 0, 128, {64}), {});
  b.op(Opcode::Memset, kQueueVector, sbuf(DType::F32, 0, 256, 128, {64}), {});
  b.prog.loops = {{0, 3, 2}};
  CHECK(errorOf(b.prog) == "loops[0]: range [0, 3) exceeds the 2 instructions");
  b.prog.loops = {{0, 2, 0}};
  CHECK(errorOf(b.prog) == "loops[0]: count 0 must be at least 1");
  b.prog.loops = {{1, 2, 2}, {0, 1, 2}};
  CHECK_THAT(errorOf(b.prog), Contains("loops[1]: begins before loops[0]"));
  b.prog.loops = {{0, 2, 2}};
  b.last().dst.offsetTerms = {term(1, 64)};
  CHECK(errorOf(b.prog) ==
        "instruction 1 (memset): offset term 0 uses loop level 1, but the "
        "instruction is inside 1 loop(s) (operand dst)");
  b.last().dst.offsetTerms = {term(0, 64, -1)};
  CHECK_THAT(errorOf(b.prog), Contains("offset term 0 has a negative modulus"));
  b.last().dst.offsetTerms = {};
  b.last().waits = {waitFor(kQueueVector, 1, {term(2, 1)})};
  CHECK(errorOf(b.prog) ==
        "instruction 1 (memset): wait value term 0 uses loop level 2, but the "
        "instruction is inside 1 loop(s) (wait on queue 1)");
}

TEST_CASE("trace of a looped run: one event per instance, affine waits",
          "[loops][trace]") {
  const Program p = pipeline(true);
  const Run r = run(p);
  REQUIRE(r.timeline.size() == size_t(4 * kTiles));
  const std::string trace = traceToJson(p, r.timeline, &r.stats);
  CHECK_THAT(trace, Contains("\"waits\":[\"DMA q1>=-2+1*i0\"]"));
  CHECK_THAT(trace, Contains("\"waits\":[\"DMA q0>=1+1*i0\"]"));
  size_t events = 0;
  for (size_t at = trace.find("\"ph\":\"X\""); at != std::string::npos;
       at = trace.find("\"ph\":\"X\"", at + 1))
    ++events;
  CHECK(events == size_t(4 * kTiles));
}

TEST_CASE("a long loop runs every instance in timing-only mode", "[loops]") {
  // 100k tiles of the pipeline: 400k instruction instances (speed: runtime-bench).
  Program p = pipeline(true);
  p.loops[0].count = 100000;
  p.buffers[0].shape[0] = p.buffers[1].shape[0] = 100000 * 128;
  RunOptions o;
  o.timingOnly = true;
  const RunStats st = simulate(p, trn2(), {}, {}, o);
  CHECK(st.instructions == 400000);
  CHECK(st.dmaTransfers == 200000);
}

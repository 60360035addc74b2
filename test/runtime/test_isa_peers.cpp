// sendrecv and core_barrier between the two physical cores of a logical core (trn2-lnc2,
// trn3-lnc2): the exchange's data, the pair's timing against the formula, the barrier's
// ordering, and the errors (no peer, mismatched pair, single-core and NC-v2 targets).
#include "IsaHarness.h"

#include <catch2/catch.hpp>

#include <cstdint>
#include <vector>

using namespace neuron::runtime;
using namespace neuron::runtime::test;
using namespace neuron::runtime::test::isa;
using Catch::Matchers::Contains;

namespace {

AccessPattern tileOn(int core, int64_t offset, int64_t cols = 64) {
  AccessPattern ap = sbuf(DType::F32, 0, offset, 128, {cols});
  ap.core = uint8_t(core);
  return ap;
}

Instruction sendrecv(int core, int dmaQueue, AccessPattern dst, AccessPattern src,
                     std::vector<SemWait> waits = {}, int pipe = 0) {
  Instruction in = make(Opcode::SendRecv, queueOf(core, kQueueDma0 + dmaQueue), std::move(dst),
                        {std::move(src)});
  in.waits = std::move(waits);
  in.pipe = uint16_t(pipe);
  return in;
}

/// x and y ([128, 64] f32) loaded into core 0's and core 1's SBUF; the cores exchange them
/// with a sendrecv each (into `dstOffset`), then store what they received to out0 and out1.
struct Exchange {
  Builder b;
  uint32_t x, y, out0, out1;
  std::vector<float> xs = randoms(128 * 64, 1), ys = randoms(128 * 64, 2);
  std::vector<float> o0 = std::vector<float>(128 * 64), o1 = std::vector<float>(128 * 64);
  explicit Exchange(const char *t = "trn2-lnc2", int64_t dstOffset = 1024) {
    b.prog.target = t;
    x = b.input("x", DType::F32, {128, 64});
    y = b.input("y", DType::F32, {128, 64});
    out0 = b.output("out0", DType::F32, {128, 64});
    out1 = b.output("out1", DType::F32, {128, 64});
    const auto rows = [](uint32_t buf) { return hbm(buf, DType::F32, 0, {{64, 128}, {1, 64}}); };
    b.dma(queueOf(0, kQueueDma0), tileOn(0, 0), rows(x));
    b.dma(queueOf(1, kQueueDma0), tileOn(1, 0), rows(y));
    b.add(sendrecv(0, 1, tileOn(0, dstOffset), tileOn(0, 0), {waitFor(queueOf(0, kQueueDma0), 1)}));
    b.add(sendrecv(1, 1, tileOn(1, dstOffset), tileOn(1, 0), {waitFor(queueOf(1, kQueueDma0), 1)}));
    b.dma(queueOf(0, kQueueDma0 + 2), rows(out0), tileOn(0, dstOffset),
          {waitFor(queueOf(0, kQueueDma0 + 1), 1)});
    b.dma(queueOf(1, kQueueDma0 + 2), rows(out1), tileOn(1, dstOffset),
          {waitFor(queueOf(1, kQueueDma0 + 1), 1)});
  }
  RunStats run(RunOptions o = {}) {
    return simulate(b.prog, *findTarget(b.prog.target), {xs.data(), ys.data()},
                    {o0.data(), o1.data()}, o);
  }
  std::string error() {
    try {
      run();
    } catch (const SimulationError &e) {
      return e.what();
    }
    return "";
  }
};

} // namespace

TEST_CASE("sendrecv exchanges tiles between the physical cores", "[isa][peers]") {
  for (const char *t : {"trn2-lnc2", "trn3-lnc2"}) {
    for (int64_t dstOffset : {int64_t(1024), int64_t(0)}) { // 0: a swap in place
      Exchange e(t, dstOffset);
      e.run();
      CHECK(e.o0 == e.ys); // bit-exact
      CHECK(e.o1 == e.xs);
    }
  }
}

TEST_CASE("a sendrecv pair starts with the later end and costs dma_copy's time",
          "[isa][peers][cost]") {
  const Target &t = target("trn2-lnc2");
  Exchange e;
  std::vector<InstructionTiming> tl;
  RunOptions o;
  o.timeline = &tl;
  const RunStats s = e.run(o);
  REQUIRE(tl.size() == 6);
  // The timeline lists the pair when the second end is issued, in program order.
  const InstructionTiming &a = tl[2], &c = tl[3];
  REQUIRE(a.instruction == 2);
  REQUIRE(c.instruction == 3);
  const double ready =
      std::max(tl[0].completeNs, tl[1].completeNs) + t.dmaStartLatencyNs;
  CHECK(a.startNs == Approx(ready));
  CHECK(c.startNs == Approx(ready));
  const int64_t bytes = 128 * 64 * 4;
  const double ns = dmaQueueNs(t, bytes, 64 * 4); // one partition's row per descriptor
  CHECK(a.endNs - a.startNs == Approx(ns));
  CHECK(c.endNs - c.startNs == Approx(ns));
  CHECK(s.dmaTransfers == 6);
  CHECK(s.hbmBytes == 4 * uint64_t(bytes)); // the exchange moves no HBM bytes
}

TEST_CASE("sendrecv errors", "[isa][peers]") {
  SECTION("no peer on the other core") {
    Exchange e;
    e.b.prog.instructions.resize(3); // core 1's sendrecv and the stores that wait for them
    CHECK_THAT(e.error(), Contains("unmatched sendrecv of pipe 0 on physical core 0") &&
                              Contains("the other physical core runs no matching sendrecv"));
  }
  SECTION("two of one pipe on one core") {
    Exchange e;
    e.b.prog.instructions[3] = sendrecv(0, 3, tileOn(0, 2048), tileOn(0, 0),
                                        {waitFor(queueOf(0, kQueueDma0), 1)});
    CHECK_THAT(e.error(), Contains("unmatched sendrecv of pipe 0: instruction 2, the previous "
                                   "sendrecv of pipe 0 of physical core 0, has no peer"));
  }
  SECTION("different pipes do not pair") {
    Exchange e;
    e.b.prog.instructions.resize(4); // drop the stores, which would queue behind the sendrecvs
    e.b.prog.instructions[3].pipe = 1;
    CHECK_THAT(e.error(), Contains("unmatched sendrecv"));
  }
  SECTION("a mismatched pair") {
    Exchange e;
    e.b.prog.instructions[3] = sendrecv(1, 1, tileOn(1, 1024, 32), tileOn(1, 0, 32),
                                        {waitFor(queueOf(1, kQueueDma0), 1)});
    CHECK_THAT(e.error(), Contains("sendrecv pair with instruction 2 does not match: a source "
                                   "of 128 partitions x 64 f32 goes to a dst of 128 "
                                   "partitions x 32 f32"));
  }
  SECTION("an instruction queued behind an unpaired sendrecv") {
    Exchange e;
    Instruction behind = make(Opcode::DmaCopy, queueOf(0, kQueueDma0 + 1), tileOn(0, 4096),
                              {tileOn(0, 0)});
    e.b.prog.instructions.insert(e.b.prog.instructions.begin() + 3, behind);
    CHECK_THAT(e.error(), Contains("queues behind or waits for sendrecv instruction 2 on dma1") &&
                              Contains("issue the peer's sendrecv first in program order"));
  }
  SECTION("operand rules") {
    const Target &t = target("trn2-lnc2");
    CHECK_THAT(rejection(t, sendrecv(0, 1, tileOn(0, 1024), tileOn(0, 0, 32))),
               Contains("has 32 elements per partition but dst has 64"));
    Instruction ps = sendrecv(0, 1, tileOn(0, 1024), tileOn(0, 0));
    ps.srcs[0].space = MemSpace::Psum;
    CHECK_THAT(rejection(t, ps), Contains("srcs[0] must be in SBUF, not PSUM"));
    CHECK_THAT(rejection(t, make(Opcode::SendRecv, kQueueVector, tileOn(0, 1024), {tileOn(0, 0)})),
               Contains("cannot run on the vector engine"));
  }
  SECTION("targets without two physical cores") {
    Instruction in = sendrecv(0, 1, tileOn(0, 1024), tileOn(0, 0));
    CHECK_THAT(rejection(target("trn2"), in),
               Contains("trn2 has one physical core per logical core: sendrecv runs between the "
                        "physical cores of a logical core (trn2-lnc2, trn3-lnc2)"));
    CHECK_THAT(rejection(target("trn3"), in), Contains("trn3 has one physical core"));
    CHECK_THAT(rejection(target("trn1"), in),
               Contains("is not an instruction of trn1 (NC-v2); it exists on trn2, trn3"));
  }
}

namespace {

Instruction barrier(int core, int local, uint32_t data, std::vector<SemWait> waits = {}) {
  Instruction in = make(Opcode::CoreBarrier, queueOf(core, local),
                        hbm(data, DType::F32, 0, {{1, 128 * 64}}), {});
  in.waits = std::move(waits);
  return in;
}

/// Each core writes its half of a shared HBM tensor from its SBUF, then (with `barriers`)
/// both run core_barrier on GpSimd and core 0 reads the whole tensor back.
struct SharedWrite {
  Builder b;
  uint32_t x, shared, out;
  std::vector<float> xs = randoms(128 * 64, 3), o = std::vector<float>(2 * 128 * 64);
  explicit SharedWrite(bool barriers) {
    b.prog.target = "trn2-lnc2";
    x = b.input("x", DType::F32, {128, 64});
    shared = b.buffer(BufferDecl::Kind::Internal, "shared", DType::F32, {256, 64});
    out = b.output("out", DType::F32, {256, 64});
    const auto half = [&](int k) { return hbm(shared, DType::F32, k * 128 * 64, {{64, 128}, {1, 64}}); };
    const auto whole = [](uint32_t buf) { return hbm(buf, DType::F32, 0, {{64, 256}, {1, 64}}); };
    for (int core = 0; core < 2; ++core) {
      b.dma(queueOf(core, kQueueDma0), tileOn(core, 0), hbm(x, DType::F32, 0, {{64, 128}, {1, 64}}));
      // Core 1 writes its half late: it loads x a second time first.
      if (core == 1)
        b.dma(queueOf(1, kQueueDma0), tileOn(1, 8192), hbm(x, DType::F32, 0, {{64, 128}, {1, 64}}));
      b.dma(queueOf(core, kQueueDma0 + 1), half(core), tileOn(core, 0),
            {waitFor(queueOf(core, kQueueDma0), core == 1 ? 2 : 1)});
    }
    if (barriers) {
      b.add(barrier(0, kQueueGpSimd, shared, {waitFor(queueOf(0, kQueueDma0 + 1), 1)}));
      b.add(barrier(1, kQueueGpSimd, shared, {waitFor(queueOf(1, kQueueDma0 + 1), 1)}));
    }
    b.dma(queueOf(0, kQueueDma0 + 2), whole(out), whole(shared),
          {barriers ? waitFor(queueOf(0, kQueueGpSimd), 1)
                    : waitFor(queueOf(0, kQueueDma0 + 1), 1)});
  }
  std::string run(std::vector<InstructionTiming> *tl = nullptr) {
    RunOptions opts;
    opts.timeline = tl;
    try {
      simulate(b.prog, target("trn2-lnc2"), {xs.data()}, {o.data()}, opts);
    } catch (const SimulationError &e) {
      return e.what();
    }
    return "";
  }
};

} // namespace

TEST_CASE("core_barrier orders both cores' writes before either goes on", "[isa][peers]") {
  SECTION("without it, core 0 reads core 1's half too early") {
    SharedWrite w(false);
    CHECK_THAT(w.run(), Contains("hazard (read after write)"));
  }
  SECTION("with it, the read is ordered and sees both halves") {
    SharedWrite w(true);
    CHECK(w.run() == "");
    for (int half = 0; half < 2; ++half)
      for (size_t i = 0; i < w.xs.size(); ++i)
        REQUIRE(w.o[size_t(half) * w.xs.size() + i] == w.xs[i]);
  }
}

TEST_CASE("core_barrier completes after the later core arrives", "[isa][peers][cost]") {
  const Target &t = target("trn2-lnc2");
  SharedWrite w(true);
  std::vector<InstructionTiming> tl;
  REQUIRE(w.run(&tl) == "");
  std::vector<InstructionTiming> bars;
  for (const InstructionTiming &x : tl)
    if (w.b.prog.instructions[x.instruction].opcode == Opcode::CoreBarrier)
      bars.push_back(x);
  REQUIRE(bars.size() == 2);
  // Core 1 arrives when its half is written; core 0 earlier, and waits.
  const double arrive1 = tl[4].completeNs; // core 1's write of its half
  CHECK(bars[0].startNs == Approx(arrive1));
  CHECK(bars[1].startNs == Approx(arrive1));
  const double cost = 2.0 * t.staticOverheadCycles / t.gpsimdGhz; // ESTIMATE formula
  CHECK(bars[0].endNs - bars[0].startNs == Approx(cost));
  CHECK(bars[1].endNs == Approx(bars[0].endNs));
  Program one;
  one.target = t.name;
  one.buffers = w.b.prog.buffers;
  one.instructions = {barrier(0, kQueueGpSimd, w.shared)};
  CHECK(computeCycles(t, one.instructions[0], checkInstruction(one, t, 0)) ==
        2 * t.staticOverheadCycles);
}

TEST_CASE("core_barrier errors", "[isa][peers]") {
  SECTION("no peer") {
    SharedWrite w(true);
    w.b.prog.instructions.erase(w.b.prog.instructions.begin() + 6);
    w.b.prog.instructions.pop_back(); // the read that waits for the barrier
    CHECK_THAT(w.run(), Contains("unmatched core_barrier on physical core 0"));
  }
  SECTION("targets") {
    Builder b;
    const uint32_t d = b.input("d", DType::F32, {128 * 64});
    b.prog.target = "trn2";
    CHECK_THAT(rejection(target("trn2"), barrier(0, kQueueGpSimd, d)),
               Contains("trn2 has one physical core per logical core: core_barrier runs"));
    CHECK_THAT(rejection(target("trn1"), barrier(0, kQueueGpSimd, d)),
               Contains("is not an instruction of trn1 (NC-v2); it exists on trn2, trn3"));
  }
}

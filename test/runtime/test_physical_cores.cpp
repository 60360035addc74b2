// A logical core of two physical cores (trn2-lnc2): both cores' queues run in parallel,
// each engine touches only its own core's SBUF/PSUM, and semaphores and the hazard
// detector work across cores.
#include "ProgramBuilder.h"

#include "runtime/simulator/Simulator.h"

#include <catch2/catch.hpp>

#include <vector>

using namespace neuron::runtime;
using namespace neuron::runtime::test;
using Catch::Matchers::Contains;

namespace {

const Target &lnc2() { return *findTarget("trn2-lnc2"); }

AccessPattern tileOn(int core, int64_t offset) {
  AccessPattern ap = sbuf(DType::F32, 0, offset, 128, {64});
  ap.core = uint8_t(core);
  return ap;
}

/// A [128, 64] f32 input x and output y.
struct Tile {
  Builder b;
  uint32_t x, y;
  std::vector<float> in = std::vector<float>(128 * 64, 1.5f);
  std::vector<float> out = std::vector<float>(128 * 64, 0.0f);
  Tile() {
    b.prog.target = "trn2-lnc2";
    x = b.input("x", DType::F32, {128, 64});
    y = b.output("y", DType::F32, {128, 64});
  }
  AccessPattern hbmX() const { return hbm(x, DType::F32, 0, {{64, 128}, {1, 64}}); }
  AccessPattern hbmY() const { return hbm(y, DType::F32, 0, {{64, 128}, {1, 64}}); }
  RunStats run(const Target &t = lnc2(), RunOptions o = {}) {
    return simulate(b.prog, t, {in.data()}, {out.data()}, o);
  }
};

} // namespace

TEST_CASE("queues are numbered core by core", "[cores]") {
  CHECK(queueOf(0, kQueueScalar) == kQueueScalar);
  CHECK(queueOf(1, kQueueTensor) == kQueuesPerCore);
  CHECK(coreOfQueue(queueOf(1, kQueueDma0 + 3)) == 1);
  CHECK(localQueue(queueOf(1, kQueueDma0 + 3)) == kQueueDma0 + 3);
  CHECK(engineOfQueue(queueOf(1, kQueueVector)) == Engine::Vector);
  CHECK(dmaIndexOfQueue(queueOf(1, kQueueDma0 + 3)) == kNumDmaQueues + 3);
  CHECK(queueName(queueOf(0, kQueueDma0 + 2)) == "dma2");
  CHECK(queueName(queueOf(1, kQueueDma0 + 2)) == "c1.dma2");
  CHECK(queueName(queueOf(1, kQueueGpSimd)) == "c1.gpsimd");
  const Target &t = lnc2();
  CHECK(t.physicalCores == 2);
  CHECK(findTarget("trn2")->physicalCores == 1);
  CHECK(t.hbmBytesPerCore == 2 * findTarget("trn2")->hbmBytesPerCore);
  CHECK(t.hbmBytesPerNs == Approx(2 * findTarget("trn2")->hbmBytesPerNs));
}

TEST_CASE("the two cores' engines and DMA queues run in parallel", "[cores]") {
  Tile t;
  for (int core : {0, 1}) {
    t.b.dma(queueOf(core, kQueueDma0), tileOn(core, 0), t.hbmX());
    t.b.op(Opcode::Activation, queueOf(core, kQueueScalar), tileOn(core, 256),
           {tileOn(core, 0)}, {waitFor(queueOf(core, kQueueDma0), 1)});
  }
  std::vector<InstructionTiming> timeline;
  RunOptions o;
  o.timeline = &timeline;
  RunStats s = t.run(lnc2(), o);
  REQUIRE(timeline.size() == 4);
  CHECK(timeline[2].startNs == timeline[0].startNs); // core 1's load beside core 0's
  CHECK(timeline[3].startNs == Approx(timeline[1].startNs));
  CHECK(s.simNs == Approx(timeline[1].completeNs));
  CHECK(s.engineBusyNs["scalar"] == Approx(2 * (timeline[1].endNs - timeline[1].startNs)));
  CHECK(s.engineUtilization["scalar"] < 1.0);

  // On one core the same work serializes on the Scalar engine.
  Tile one;
  for (int64_t offset : {0, 512}) {
    one.b.dma(kQueueDma0 + offset / 512, tileOn(0, offset), one.hbmX());
    one.b.op(Opcode::Activation, kQueueScalar, tileOn(0, offset + 256), {tileOn(0, offset)},
             {waitFor(kQueueDma0 + offset / 512, 1)});
  }
  CHECK(one.run().simNs > s.simNs);
}

TEST_CASE("an engine cannot touch the other core's SBUF or PSUM", "[cores]") {
  Tile t;
  t.b.dma(queueOf(1, kQueueDma0), tileOn(1, 0), t.hbmX());
  t.b.op(Opcode::Activation, kQueueScalar, tileOn(0, 256), {tileOn(1, 0)},
         {waitFor(queueOf(1, kQueueDma0), 1)});
  CHECK_THROWS_AS(t.run(), SimulationError);
  CHECK_THROWS_WITH(t.run(), Contains("queue scalar of physical core 0 cannot access the "
                                      "SBUF of physical core 1"));
  // A DMA queue of core 0 writing core 1's SBUF is rejected the same way.
  Tile d;
  d.b.dma(kQueueDma0, tileOn(1, 0), d.hbmX());
  CHECK_THROWS_WITH(d.run(), Contains("queue dma0 of physical core 0 cannot access"));
  // A single-core target has no core 1 queues.
  Tile s;
  s.b.dma(queueOf(1, kQueueDma0), tileOn(1, 0), s.hbmX());
  CHECK_THROWS_WITH(s.run(*findTarget("trn2")),
                    Contains("is on physical core 1, but trn2 has 1 physical core(s)"));
}

TEST_CASE("semaphores and hazard checks work across cores", "[cores]") {
  // Core 0 computes y = relu(x) into HBM; core 1 reads y back, doubles it and writes y.
  Tile t;
  t.b.dma(kQueueDma0, tileOn(0, 0), t.hbmX());
  t.b.op(Opcode::Activation, kQueueScalar, tileOn(0, 256), {tileOn(0, 0)},
         {waitFor(kQueueDma0, 1)});
  t.b.dma(kQueueDma0 + 1, t.hbmY(), tileOn(0, 256), {waitFor(kQueueScalar, 1)});
  const int load1 = queueOf(1, kQueueDma0), act1 = queueOf(1, kQueueScalar);
  t.b.dma(load1, tileOn(1, 0), t.hbmY()); // no wait for core 0's store yet
  t.b.op(Opcode::Activation, act1, tileOn(1, 256), {tileOn(1, 0)}, {waitFor(load1, 1)});
  t.b.last().imm[0] = 2.0;
  t.b.dma(queueOf(1, kQueueDma0 + 1), t.hbmY(), tileOn(1, 256), {waitFor(act1, 1)});
  CHECK_THROWS_WITH(t.run(), Contains("hazard (read after write)") &&
                                 Contains("c1.dma0") && Contains("dma1"));
  t.b.prog.instructions[3].waits = {waitFor(kQueueDma0 + 1, 1)};
  std::vector<InstructionTiming> timeline;
  RunOptions o;
  o.timeline = &timeline;
  CHECK_NOTHROW(t.run(lnc2(), o));
  // The DMA starts the semaphore-to-start latency after core 0's store completes.
  CHECK(timeline[3].startNs == Approx(timeline[2].completeNs + lnc2().dmaStartLatencyNs));
  CHECK(t.out[7] == 3.0f);
}

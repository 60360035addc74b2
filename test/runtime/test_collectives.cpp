// Collective instructions: the simulator hands them to RunOptions::collective
// on their own queue, other queues overlap them, and what compute did not hide
// is reported as exposed.
#include "ProgramBuilder.h"

#include "runtime/simulator/Simulator.h"

#include <catch2/catch.hpp>

#include <vector>

using namespace neuron::runtime;
using namespace neuron::runtime::test;
using Catch::Matchers::Contains;

namespace {

const Target &trn2() { return *findTarget("trn2"); }

constexpr int64_t kN = 128 * 512;

/// grads (input) -> all_reduce -> reduced (output), and independently
/// x (input) -> exp in SBUF -> y (output), whose 8 tiles take a few us.
struct Overlap {
  Builder b;
  uint32_t grads, x, reduced, y;
  std::vector<float> gradsIn = std::vector<float>(kN, 0.25f);
  std::vector<float> xIn = std::vector<float>(kN, 0.0f);
  std::vector<float> reducedOut = std::vector<float>(kN, -1.0f);
  std::vector<float> yOut = std::vector<float>(kN, -1.0f);

  explicit Overlap(int32_t ranks, bool dependent = false) {
    grads = b.input("grads", DType::F32, {kN});
    x = b.input("x", DType::F32, {kN});
    reduced = b.output("reduced", DType::F32, {kN});
    y = b.output("y", DType::F32, {kN});
    b.prog.groups = {{"0", ranks}};
    b.op(Opcode::Collective, kQueueCollective, hbm(reduced, DType::F32, 0, {{1, kN}}),
         {hbm(grads, DType::F32, 0, {{1, kN}})});
    for (int t = 0; t < 8; ++t) {
      const int64_t at = t * 128 * 64;
      b.dma(kQueueDma0 + t % 4, sbuf(DType::F32, 0, 0, 128, {64}),
            hbm(x, DType::F32, at, {{64, 128}, {1, 64}}),
            t ? std::vector<SemWait>{waitFor(kQueueDma0 + 4, t)} : std::vector<SemWait>{});
      b.op(Opcode::Activation, kQueueScalar, sbuf(DType::F32, 0, 256, 128, {64}),
           {sbuf(DType::F32, 0, 0, 128, {64})}, {waitFor(kQueueDma0 + t % 4, t / 4 + 1)});
      b.last().func = ActFunc::Exp;
      std::vector<SemWait> waits = {waitFor(kQueueScalar, t + 1)};
      if (dependent)
        waits.push_back(waitFor(kQueueCollective, 1));
      b.dma(kQueueDma0 + 4, hbm(y, DType::F32, at, {{64, 128}, {1, 64}}),
            sbuf(DType::F32, 0, 256, 128, {64}), waits);
    }
  }

  RunStats run(RunOptions o = {}) {
    return simulate(b.prog, trn2(), {gradsIn.data(), xIn.data()},
                    {reducedOut.data(), yOut.data()}, o);
  }
};

} // namespace

TEST_CASE("a collective runs through the hook, overlapped by independent work",
          "[collective]") {
  Overlap p(2);
  std::vector<CollectiveCall> calls;
  RunOptions o;
  o.collective = [&](const CollectiveCall &c) {
    calls.push_back(c);
    // Two ranks holding the same gradients: the sum is twice this rank's.
    auto *dst = static_cast<float *>(c.dst);
    const auto *src = static_cast<const float *>(c.src);
    for (int64_t i = 0; i < c.srcElements; ++i)
      dst[i] = 2 * src[i];
    return c.readyNs + 10000.0;
  };
  RunStats s = p.run(o);
  REQUIRE(calls.size() == 1);
  CHECK(calls[0].instruction == 0);
  CHECK(calls[0].kind == CollectiveKind::AllReduce);
  CHECK(calls[0].reduce == AluOp::Add);
  CHECK(calls[0].group->size == 2);
  CHECK(calls[0].srcElements == kN);
  CHECK(calls[0].readyNs == 0);
  CHECK(p.reducedOut[0] == 0.5f);
  CHECK(p.reducedOut[kN - 1] == 0.5f);
  CHECK(p.yOut[kN - 1] == 1.0f); // exp(0)
  CHECK(s.collectives == 1);
  CHECK(s.collectiveNs == 10000.0);
  // The exp tiles ran during the collective: the run is shorter than the sum
  // of both, and only part of the collective is exposed.
  RunOptions alone;
  alone.collective = [](const CollectiveCall &c) { return c.readyNs; };
  Overlap q(2);
  const double computeNs = q.run(alone).simNs;
  CHECK(computeNs > 1000);
  CHECK(s.simNs < computeNs + 10000.0);
  CHECK(s.simNs >= 10000.0);
  CHECK(s.exposedCollectiveNs < 10000.0 - 0.5 * std::min(computeNs, 10000.0));
  CHECK(s.exposedCollectiveNs >= std::max(0.0, 10000.0 - computeNs) - 16);
  CHECK(s.engineBusyNs.at("collective") == 10000.0);
}

TEST_CASE("work that waits for a collective starts after it completes",
          "[collective]") {
  Overlap p(2, /*dependent=*/true);
  RunOptions o;
  o.timeline = new std::vector<InstructionTiming>();
  o.collective = [](const CollectiveCall &c) { return c.readyNs + 50000.0; };
  RunStats s = p.run(o);
  for (const InstructionTiming &t : *o.timeline)
    if (t.queue == kQueueDma0 + 4)
      CHECK(t.startNs >= 50000.0);
  CHECK(s.simNs > 50000.0);
  // Nothing else was left to do for most of it.
  CHECK(s.exposedCollectiveNs > 25000.0);
  delete o.timeline;
}

TEST_CASE("timing-only runs call the hook without data", "[collective]") {
  Overlap p(4);
  RunOptions o;
  o.timingOnly = true;
  bool called = false;
  o.collective = [&](const CollectiveCall &c) {
    called = true;
    CHECK(c.src == nullptr);
    CHECK(c.dst == nullptr);
    return c.readyNs + 10.0;
  };
  p.run(o);
  CHECK(called);
}

TEST_CASE("without a hook: one rank copies, more ranks are an error",
          "[collective]") {
  Overlap one(1);
  RunStats s = one.run();
  CHECK(one.reducedOut[7] == 0.25f);
  CHECK(s.collectiveNs == 0.0);
  Overlap two(2);
  CHECK_THROWS_WITH(two.run(), Contains("instruction 0 (collective): a collective over 2 "
                                        "ranks (group \"0\") needs the ranks"));
}

TEST_CASE("collective operands are checked", "[collective]") {
  SECTION("all_gather needs ranks x the source elements") {
    Overlap p(2);
    p.b.prog.instructions[0].collective = CollectiveKind::AllGather;
    CHECK_THROWS_WITH(p.run(), Contains("all_gather over 2 ranks of 65536 elements gives "
                                        "131072, but dst has 65536"));
  }
  SECTION("the group must exist") {
    Overlap p(2);
    p.b.prog.instructions[0].group = 3;
    CHECK_THROWS_WITH(p.run(), Contains("group 3 does not exist (1 groups)"));
  }
  SECTION("only on the collective queue") {
    Overlap p(2);
    p.b.prog.instructions[0].queue = kQueueDma0;
    CHECK_THROWS_WITH(p.run(), Contains("cannot run on the dma engine"));
  }
  SECTION("not inside loops") {
    Overlap p(1);
    p.b.loop(0, 1);
    p.b.prog.loops[0].end = 1;
    CHECK_THROWS_WITH(p.run(), Contains("a collective cannot run inside a loop"));
  }
  SECTION("HBM operands only") {
    Overlap p(1);
    p.b.prog.instructions[0].srcs[0] = sbuf(DType::F32, 0, 0, 128, {512});
    CHECK_THROWS_WITH(p.run(), Contains("srcs[0] must be in HBM, not SBUF"));
  }
}

TEST_CASE("a collective's result in an internal buffer survives later reads",
          "[collective]") {
  // Internal HBM is recycled between runs and cleared lazily where a run has not
  // written it: the collective's write must count as one.
  Builder b;
  uint32_t g = b.input("g", DType::F32, {128, 64});
  uint32_t tmp = b.buffer(BufferDecl::Kind::Internal, "tmp", DType::F32, {128, 64});
  uint32_t y = b.output("y", DType::F32, {128, 64});
  b.prog.groups = {{"0", 2}};
  b.op(Opcode::Collective, kQueueCollective, hbm(tmp, DType::F32, 0, {{1, 128 * 64}}),
       {hbm(g, DType::F32, 0, {{1, 128 * 64}})});
  b.dma(kQueueDma0, sbuf(DType::F32, 0, 0, 128, {64}),
        hbm(tmp, DType::F32, 0, {{64, 128}, {1, 64}}), {waitFor(kQueueCollective, 1)});
  b.dma(kQueueDma0 + 1, hbm(y, DType::F32, 0, {{64, 128}, {1, 64}}),
        sbuf(DType::F32, 0, 0, 128, {64}), {waitFor(kQueueDma0, 1)});
  RunOptions o;
  o.collective = [](const CollectiveCall &c) {
    auto *dst = static_cast<float *>(c.dst);
    const auto *src = static_cast<const float *>(c.src);
    for (int64_t i = 0; i < c.srcElements; ++i)
      dst[i] = src[i] + 1;
    return c.readyNs + 100;
  };
  std::vector<float> in(128 * 64, 2.0f), out(128 * 64, 0.0f);
  for (int run = 0; run < 3; ++run) {
    std::fill(out.begin(), out.end(), 0.0f);
    simulate(b.prog, trn2(), {in.data()}, {out.data()}, o);
    CHECK(out[0] == 3.0f);
    CHECK(out[128 * 64 - 1] == 3.0f);
  }
}

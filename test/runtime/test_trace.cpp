// Tests of the trace writer (Chrome trace-event / Perfetto JSON) and of the
// report fields of RunStats (mfu, roofline, utilization).
#include "runtime/simulator/Simulator.h"
#include "runtime/simulator/Trace.h"

#include "ProgramBuilder.h"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>

using namespace neuron::runtime;
using namespace neuron::runtime::test;
using nlohmann::json;

namespace {

const Target &trn2() { return *findTarget("trn2"); }

struct Run {
  RunStats stats;
  std::vector<InstructionTiming> timeline;
};

Run runTiming(const Program &p, const Target &t = trn2()) {
  Run r;
  RunOptions o;
  o.timingOnly = true;
  o.timeline = &r.timeline;
  r.stats = simulate(p, t, {}, {}, o);
  return r;
}

/// Load -> activation -> matmul -> copy -> store over several queues, with
/// origins (one with characters JSON must escape).
Program pipeline() {
  Builder b;
  uint32_t x = b.input("x", DType::F32, {128, 512});
  uint32_t y = b.output("y", DType::F32, {128, 512});
  b.prog.origins = {"aten.mm.default (model.py:12)",
                    "aten.gelu.default (\"quoted\"\n\ttab \xc3\xa9)"};
  b.dma(kQueueDma0, sbuf(DType::F32, 0, 0, 128, {512}),
        hbm(x, DType::F32, 0, {{512, 128}, {1, 512}}));
  b.last().origin = 1;
  b.dma(kQueueDma0 + 5, sbuf(DType::BF16, 0, 8192, 128, {128}),
        hbm(b.input("w", DType::BF16, {128, 128}), DType::BF16, 0,
            {{128, 128}, {1, 128}}));
  b.op(Opcode::Activation, kQueueScalar, sbuf(DType::BF16, 0, 4096, 128, {512}),
       {sbuf(DType::F32, 0, 0, 128, {512})}, {{kQueueDma0, 1}});
  b.last().func = ActFunc::Gelu;
  b.last().origin = 1;
  b.op(Opcode::Matmul, kQueueTensor, psum(DType::F32, 0, 0, 128, {512}),
       {sbuf(DType::BF16, 0, 8192, 128, {128}),
        sbuf(DType::BF16, 0, 4096, 128, {512})},
       {{kQueueScalar, 1}, {kQueueDma0 + 5, 1}});
  b.op(Opcode::TensorCopy, kQueueVector, sbuf(DType::F32, 0, 16384, 128, {512}),
       {psum(DType::F32, 0, 0, 128, {512})}, {{kQueueTensor, 1}});
  b.op(Opcode::TensorScalar, kQueueGpSimd,
       sbuf(DType::F32, 0, 32768, 128, {512}),
       {sbuf(DType::F32, 0, 0, 128, {512})}, {{kQueueDma0, 1}});
  b.last().alu = AluOp::Mul;
  b.dma(kQueueDma0 + 3, hbm(y, DType::F32, 0, {{512, 128}, {1, 512}}),
        sbuf(DType::F32, 0, 16384, 128, {512}), {{kQueueVector, 1}});
  b.prog.flops = 2ull * 128 * 128 * 512;
  return b.prog;
}

} // namespace

TEST_CASE("trace follows the trace-event format", "[trace]") {
  Program p = pipeline();
  Run r = runTiming(p);
  const std::string text = traceToJson(p, r.timeline, &r.stats);
  json doc = json::parse(text); // throws if not JSON

  REQUIRE(doc.is_object());
  REQUIRE(doc.contains("traceEvents"));
  REQUIRE(doc["traceEvents"].is_array());
  CHECK(doc["displayTimeUnit"] == "ns");
  CHECK(doc["otherData"]["target"] == "trn2");
  CHECK(doc["otherData"]["mfu"].get<double>() == Approx(r.stats.mfu));

  std::map<int, std::string> laneNames;
  std::map<int, int> sortIndex;
  std::vector<json> complete;
  for (const json &e : doc["traceEvents"]) {
    // Fields every event needs.
    REQUIRE(e.is_object());
    REQUIRE(e["name"].is_string());
    REQUIRE(e["ph"].is_string());
    REQUIRE(e["pid"].is_number_integer());
    const std::string ph = e["ph"];
    if (ph == "M") {
      REQUIRE(e["args"].is_object());
      if (e["name"] == "thread_name")
        laneNames[e["tid"].get<int>()] = e["args"]["name"].get<std::string>();
      else if (e["name"] == "thread_sort_index")
        sortIndex[e["tid"].get<int>()] = e["args"]["sort_index"].get<int>();
      else
        CHECK(e["name"] == "process_name");
      continue;
    }
    REQUIRE(ph == "X");
    REQUIRE(e["tid"].is_number_integer());
    REQUIRE(e["ts"].is_number());
    REQUIRE(e["dur"].is_number());
    CHECK(e["dur"].get<double>() >= 0);
    REQUIRE(e["args"].is_object());
    complete.push_back(e);
  }

  // One named lane per engine and per DMA queue (of the one physical core used).
  REQUIRE(laneNames.size() == size_t(kQueuesPerCore));
  CHECK(laneNames[kQueueTensor] == "Tensor");
  CHECK(laneNames[kQueueVector] == "Vector");
  CHECK(laneNames[kQueueScalar] == "Scalar");
  CHECK(laneNames[kQueueGpSimd] == "GpSimd");
  for (int i = 0; i < kNumDmaQueues; ++i)
    CHECK(laneNames[kQueueDma0 + i] == "DMA q" + std::to_string(i));
  CHECK(sortIndex.size() == size_t(kQueuesPerCore));
  // A second physical core's lanes are named after it.
  CHECK(traceLaneName(queueOf(1, kQueueTensor)) == "Core 1 Tensor");
  CHECK(traceLaneName(queueOf(1, kQueueDma0 + 2)) == "Core 1 DMA q2");

  // One complete event per instruction, matching the timeline.
  REQUIRE(complete.size() == p.instructions.size());
  std::vector<bool> seen(p.instructions.size(), false);
  for (const json &e : complete) {
    const uint32_t i = e["args"]["instruction"];
    REQUIRE(i < p.instructions.size());
    CHECK_FALSE(seen[i]);
    seen[i] = true;
    const Instruction &inst = p.instructions[i];
    const InstructionTiming &t = r.timeline[i];
    CHECK(e["name"] == opcodeName(inst.opcode));
    CHECK(e["cat"] == engineName(engineOfQueue(inst.queue)));
    CHECK(e["tid"] == int(inst.queue));
    CHECK(e["ts"].get<double>() * 1e3 == Approx(t.startNs).margin(1e-3));
    CHECK(e["dur"].get<double>() * 1e3 ==
          Approx(t.endNs - t.startNs).margin(1e-3));
    CHECK(e["args"]["complete_us"].get<double>() * 1e3 ==
          Approx(t.completeNs).margin(1e-3));
    CHECK(e["args"]["origin"] == p.origins[inst.origin]);
    CHECK(e["args"]["waits"].size() == inst.waits.size());
  }
  // Specific args.
  CHECK(complete.front()["args"]["instruction"] == 0); // starts at 0, queue 4
  for (const json &e : complete) {
    const uint32_t i = e["args"]["instruction"];
    if (i == 0)
      CHECK(e["args"]["bytes"] == 128 * 512 * 4);
    if (i == 2) {
      CHECK(e["args"]["func"] == "gelu");
      CHECK(e["args"]["bytes"] == 128 * 512 * (2 + 4));
      CHECK(e["args"]["waits"] == json::array({"DMA q0>=1"}));
      CHECK(e["args"]["origin"] ==
            "aten.gelu.default (\"quoted\"\n\ttab \xc3\xa9)");
    }
    if (i == 3)
      CHECK(e["args"]["waits"] == json::array({"Scalar>=1", "DMA q5>=1"}));
    if (i == 5)
      CHECK(e["args"]["alu"] == "mul");
  }

  // Sorted by start time; on each lane, events never overlap.
  std::map<int, double> laneEnd;
  double lastTs = -1;
  for (const json &e : complete) {
    double ts = e["ts"], dur = e["dur"];
    CHECK(ts >= lastTs);
    lastTs = ts;
    int tid = e["tid"];
    if (laneEnd.count(tid))
      CHECK(ts >= laneEnd[tid] - 1e-6);
    laneEnd[tid] = ts + dur;
  }
  // The last event ends at the simulated time (the store is last).
  double end = 0;
  for (const auto &[tid, e] : laneEnd)
    end = std::max(end, e);
  CHECK(end * 1e3 == Approx(r.stats.simNs).margin(1e-3));
}

TEST_CASE("writeTrace writes the same JSON to a file", "[trace]") {
  Program p = pipeline();
  Run r = runTiming(p);
  const std::string path = "runtime_test_trace.json";
  writeTrace(path, p, r.timeline);
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  CHECK(ss.str() == traceToJson(p, r.timeline));
  CHECK_NOTHROW(json::parse(ss.str()));
  std::remove(path.c_str());
  CHECK_THROWS_AS(writeTrace("/nonexistent-dir/x/trace.json", p, r.timeline),
                  std::runtime_error);
}

TEST_CASE("trace edge cases", "[trace]") {
  // An empty run is still a valid trace with all lanes of one core; a timeline on
  // core 1 adds that core's lanes.
  Program empty;
  json doc = json::parse(traceToJson(empty, {}));
  CHECK(doc["traceEvents"].size() == 1 + 2 * size_t(kQueuesPerCore));
  Program one;
  one.instructions.resize(1);
  InstructionTiming onCore1;
  onCore1.queue = uint16_t(queueOf(1, kQueueScalar));
  onCore1.endNs = onCore1.completeNs = 10;
  doc = json::parse(traceToJson(one, {onCore1}));
  CHECK(doc["traceEvents"].size() == 1 + 2 * size_t(kNumQueues) + 1);
  // A functional run's timeline works too; an origin index without an entry
  // in Program::origins is left out.
  Program p = pipeline();
  p.instructions[0].origin = 99;
  std::vector<float> x(128 * 512, 0.5f), y(128 * 512);
  std::vector<uint16_t> w(128 * 128, 0);
  std::vector<InstructionTiming> tl;
  RunOptions o;
  o.timeline = &tl;
  simulate(p, trn2(), {x.data(), w.data()}, {y.data()}, o);
  doc = json::parse(traceToJson(p, tl));
  for (const json &e : doc["traceEvents"])
    if (e["ph"] == "X" && e["args"]["instruction"] == 0)
      CHECK_FALSE(e["args"].contains("origin"));
  // A timeline that does not belong to the program is rejected.
  tl[0].instruction = 1000;
  CHECK_THROWS_AS(traceToJson(p, tl), std::invalid_argument);
}

TEST_CASE("report: mfu, peak and roofline", "[report]") {
  // Four back-to-back full bf16 matmuls: 512 cycles each at 2.4 GHz.
  Builder b;
  for (int i = 0; i < 4; ++i)
    b.op(Opcode::Matmul, kQueueTensor,
         psum(DType::F32, 0, 2048 * i, 128, {512}),
         {sbuf(DType::BF16, 0, 0, 128, {128}),
          sbuf(DType::BF16, 0, 256, 128, {512})});
  Run r = runTiming(b.prog);
  const double flops = 4.0 * 2 * 128 * 128 * 512;
  CHECK(r.stats.peakFlopsPerNs == Approx(79e3)); // trn2 bf16: 79 TF
  CHECK(r.stats.mfu == Approx(flops / (r.stats.simNs * 79e3)));
  CHECK(r.stats.mfu > 0.9); // only the first fill latency is lost
  CHECK(r.stats.mfu < 1.0);
  CHECK(r.stats.minimalHbmBytes == 0);
  CHECK(r.stats.rooflineNs == Approx(flops / 79e3));

  // All matmuls fp32: the fp32 peak; any bf16 matmul: the bf16 peak.
  Builder f;
  for (int i = 0; i < 2; ++i)
    f.op(Opcode::Matmul, kQueueTensor, psum(DType::F32, 0, 2048 * i, 128, {512}),
         {sbuf(DType::F32, 0, 0, 128, {128}),
          sbuf(DType::F32, 0, 1024, 128, {512})});
  r = runTiming(f.prog);
  CHECK(r.stats.peakFlopsPerNs == Approx(20e3));
  CHECK(r.stats.mfu == Approx(2.0 * 2 * 128 * 128 * 512 / (r.stats.simNs * 20e3)));
  f.prog.instructions[1].srcs[0].dtype = DType::BF16;
  f.prog.instructions[1].srcs[1].dtype = DType::BF16;
  CHECK(runTiming(f.prog).stats.peakFlopsPerNs == Approx(79e3));
  // trn1's fp32 peak.
  f.prog.instructions.pop_back();
  CHECK(runTiming(f.prog, *findTarget("trn1")).stats.peakFlopsPerNs ==
        Approx(23e3));

  // Memory bound: a 1 MiB copy input -> output. Minimal bytes are the sizes
  // of inputs, outputs and constants (not internal buffers).
  Builder m;
  uint32_t in = m.input("x", DType::F32, {256, 1024});
  uint32_t out = m.output("y", DType::F32, {256, 1024});
  m.buffer(BufferDecl::Kind::Internal, "tmp", DType::F32, {1 << 20});
  uint32_t c = m.buffer(BufferDecl::Kind::Constant, "c", DType::BF16, {64});
  m.prog.buffers[c].data.assign(128, 0);
  m.dma(kQueueDma0, hbm(out, DType::F32, 0, {{1, 256 * 1024}}),
        hbm(in, DType::F32, 0, {{1, 256 * 1024}}));
  r = runTiming(m.prog);
  CHECK(r.stats.minimalHbmBytes == 2u * (1 << 20) + 128);
  CHECK(r.stats.rooflineNs == Approx((2.0 * (1 << 20) + 128) / (2900.0 / 8)));
  CHECK(r.stats.mfu == 0);
  CHECK(r.stats.simNs >= r.stats.rooflineNs);
}

TEST_CASE("report: per-engine utilization", "[report]") {
  Program p = pipeline();
  Run r = runTiming(p);
  REQUIRE(r.stats.engineUtilization.size() == r.stats.engineBusyNs.size());
  for (const auto &[engine, busy] : r.stats.engineBusyNs) {
    INFO(engine);
    double u = r.stats.engineUtilization.at(engine);
    CHECK(u == Approx(busy / r.stats.simNs));
    CHECK(u >= 0);
    CHECK(u <= 1.0 + 1e-12);
  }
  CHECK(r.stats.engineUtilization.at("tensor") > 0);
  // An empty program reports zeros, not NaN.
  RunStats e = simulate(Program{}, trn2(), {}, {}, RunOptions{true});
  CHECK(e.mfu == 0);
  CHECK(e.rooflineNs == 0);
  for (const auto &[engine, u] : e.engineUtilization)
    CHECK(u == 0);
}

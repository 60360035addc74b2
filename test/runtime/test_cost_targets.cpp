// The cost model against HARDWARE.md for every target (trn1, trn2, trn3):
// formulas at each engine's own clock, peaks, DMA and HBM, NC-v2 ports, and
// end-to-end simulations that reproduce the documented and measured points.
#include "runtime/simulator/Simulator.h"
#include "runtime/simulator/timing/CostModel.h"

#include "ProgramBuilder.h"

#include <catch2/catch.hpp>

using namespace neuron::runtime;
using namespace neuron::runtime::test;

namespace {

InstrShape shapeOf(const Target &t, const Instruction &in) {
  Program p;
  p.instructions = {in};
  return checkInstruction(p, t, 0);
}

Instruction matmulOf(DType dt, int64_t k, int64_t m, int64_t n) {
  Instruction in;
  in.opcode = Opcode::Matmul;
  in.queue = kQueueTensor;
  in.dst = psum(DType::F32, 0, 0, m, {n});
  in.srcs = {sbuf(dt, 0, 0, k, {m}), sbuf(dt, 0, 4096, k, {n})};
  return in;
}

Instruction onEngine(Opcode op, int queue, DType dt, int64_t n,
                     MemSpace srcSpace = MemSpace::Sbuf) {
  Instruction in;
  in.opcode = op;
  in.queue = uint16_t(queue);
  in.dst = sbuf(dt, 0, 0, 128, {n});
  AccessPattern src = onChip(srcSpace, dt, 0, 0, 128, {n});
  if (op == Opcode::TensorTensor)
    in.srcs = {src, src};
  else if (op != Opcode::Memset && op != Opcode::Iota)
    in.srcs = {src};
  if (op == Opcode::Activation)
    in.imm[0] = 1;
  return in;
}

double busyNs(const Target &t, const Instruction &in) {
  return computeCost(t, in, shapeOf(t, in)).busyNs;
}

RunStats runTiming(const Program &p, const Target &t,
                   std::vector<InstructionTiming> *tl = nullptr) {
  RunOptions o;
  o.timingOnly = true;
  o.timeline = tl;
  return simulate(p, t, {}, {}, o);
}

const Target &target(const std::string &name) { return *findTarget(name); }

} // namespace

TEST_CASE("every target: Tensor-engine peaks match its clock", "[cost][targets]") {
  const std::string name = GENERATE("trn1", "trn2", "trn3");
  const Target &t = target(name);
  INFO(name);
  // HARDWARE.md: a 128x128 systolic array, one bf16 MAC per PE per cycle.
  const double arrayTflops = 128.0 * 128 * 2 * t.tensorGhz / 1e3;
  CHECK(t.tensorPeakBf16Tflops == Approx(arrayTflops).epsilon(0.02));
  // fp32 runs at a quarter of the bf16 rate (the x4 matmul cost).
  CHECK(t.tensorPeakFp32Tflops ==
        Approx(t.tensorPeakBf16Tflops / t.matmulFp32Factor).epsilon(0.02));
  CHECK(t.matmulFp32Factor == 4);
}

TEST_CASE("every target: matmul initiation interval and latency",
          "[cost][targets]") {
  const std::string name = GENERATE("trn1", "trn2", "trn3");
  const Target &t = target(name);
  INFO(name);
  const double ghz = t.tensorGhz;
  // HARDWARE.md: max(min(64, N_stationary), N_moving) cycles, x4 for fp32.
  CHECK(busyNs(t, matmulOf(DType::BF16, 128, 128, 512)) == Approx(512 / ghz));
  CHECK(busyNs(t, matmulOf(DType::F16, 128, 128, 512)) == Approx(512 / ghz));
  CHECK(busyNs(t, matmulOf(DType::F32, 128, 128, 512)) == Approx(2048 / ghz));
  CHECK(busyNs(t, matmulOf(DType::BF16, 128, 128, 32)) == Approx(64 / ghz));
  CHECK(busyNs(t, matmulOf(DType::BF16, 128, 16, 8)) == Approx(16 / ghz));
  CHECK(busyNs(t, matmulOf(DType::F32, 128, 16, 8)) == Approx(64 / ghz));
  // K (the partitions) does not change the II.
  CHECK(busyNs(t, matmulOf(DType::BF16, 32, 128, 512)) == Approx(512 / ghz));
  // Initial latency about 64 cycles.
  Instruction mm = matmulOf(DType::BF16, 128, 128, 512);
  CHECK(computeCost(t, mm, shapeOf(t, mm)).latencyNs == Approx(64 / ghz));

  // Back-to-back full bf16 matmuls keep the Tensor engine at its peak.
  Builder b;
  for (int i = 0; i < 64; ++i) {
    b.op(Opcode::Matmul, kQueueTensor,
         psum(DType::F32, 0, 2048 * (i % 8), 128, {512}),
         {sbuf(DType::BF16, 0, 0, 128, {128}),
          sbuf(DType::BF16, 0, 4096, 128, {512})});
    b.last().accumulate = i >= 8;
  }
  RunStats s = runTiming(b.prog, t);
  CHECK(s.simNs == Approx((64 * 512 + 64) / ghz));
  CHECK(s.mfu > 0.97); // 1 - fill latency, less the 2% peak rounding
  CHECK(s.mfu <= 1.0);
  CHECK(s.engineUtilization.at("tensor") == Approx(64 * 512 / (64 * 512 + 64.0)));
}

TEST_CASE("every target: Vector, Scalar and GpSimd costs at their own clocks",
          "[cost][targets]") {
  const std::string name = GENERATE("trn1", "trn2", "trn3");
  const Target &t = target(name);
  INFO(name);
  const double v = t.vectorGhz, sc = t.scalarGhz, g = t.gpsimdGhz;
  const int ovh = 60; // HARDWARE.md: ~60 cycles per SBUF/PSUM access
  // activation (Scalar): max(MIN_II, N).
  CHECK(busyNs(t, onEngine(Opcode::Activation, kQueueScalar, DType::F32, 1024)) ==
        Approx((1024 + ovh) / sc));
  CHECK(busyNs(t, onEngine(Opcode::Activation, kQueueScalar, DType::F32, 10)) ==
        Approx((64 + ovh) / sc));
  // tensor_scalar, tensor_copy: max(MIN_II, N), on Vector or GpSimd.
  CHECK(busyNs(t, onEngine(Opcode::TensorScalar, kQueueVector, DType::F32, 700)) ==
        Approx((700 + ovh) / v));
  CHECK(busyNs(t, onEngine(Opcode::TensorCopy, kQueueGpSimd, DType::BF16, 700)) ==
        Approx((700 + ovh) / g));
  // tensor_tensor: N with a PSUM input or all-bf16 add/sub/mul, else 2N.
  // NC-v3 and later: bf16 SBUF inputs run 2x (the Vector engine's performance mode).
  const double ttMode = t.generation == Generation::Trn1 ? 1 : 2;
  CHECK(busyNs(t, onEngine(Opcode::TensorTensor, kQueueVector, DType::BF16, 512)) ==
        Approx((512 / ttMode + ovh) / v));
  CHECK(busyNs(t, onEngine(Opcode::TensorTensor, kQueueVector, DType::F32, 512)) ==
        Approx((1024 + ovh) / v));
  CHECK(busyNs(t, onEngine(Opcode::TensorTensor, kQueueVector, DType::F32, 512,
                           MemSpace::Psum)) == Approx((512 + ovh) / v));
  Instruction maxOp =
      onEngine(Opcode::TensorTensor, kQueueVector, DType::BF16, 512);
  maxOp.alu = AluOp::Max; // not add/sub/mul: 2N even in bf16
  CHECK(busyNs(t, maxOp) == Approx((1024 / ttMode + ovh) / v));
  // tensor_reduce: N/2 for bf16 add/max, else N.
  Instruction red = onEngine(Opcode::TensorReduce, kQueueVector, DType::BF16, 2048);
  red.dst = sbuf(DType::BF16, 0, 0, 128, {1});
  red.alu = AluOp::Max;
  CHECK(busyNs(t, red) == Approx((1024 + ovh) / v));
  red.alu = AluOp::Min;
  CHECK(busyNs(t, red) == Approx((2048 + ovh) / v));
  red.srcs[0].dtype = red.dst.dtype = DType::F32;
  red.alu = AluOp::Add;
  CHECK(busyNs(t, red) == Approx((2048 + ovh) / v));
  // memset: N/2 for bf16, else N; iota on GpSimd: 150 + N.
  CHECK(busyNs(t, onEngine(Opcode::Memset, kQueueVector, DType::BF16, 4096)) ==
        Approx((2048 + ovh) / v));
  CHECK(busyNs(t, onEngine(Opcode::Iota, kQueueGpSimd, DType::I32, 100)) ==
        Approx((150 + 100 + ovh) / g));
  // An innermost stride above 16 bytes halves the bandwidth.
  Instruction strided =
      onEngine(Opcode::TensorScalar, kQueueVector, DType::F32, 256);
  strided.srcs[0].dims = {{1, 128}, {5, 256}}; // 20-byte stride
  CHECK(busyNs(t, strided) == Approx((512 + ovh) / v));
  strided.srcs[0].dims = {{1, 128}, {4, 256}}; // 16 bytes: full speed
  CHECK(busyNs(t, strided) == Approx((256 + ovh) / v));
}

TEST_CASE("trn2: tiny dependent Scalar ops issue every ~189 ns",
          "[cost][targets]") {
  // HARDWARE.md (measured): MIN_II + access overhead + static overhead.
  const Target &t = target("trn2");
  Builder b;
  for (int i = 0; i < 100; ++i)
    b.op(Opcode::Activation, kQueueScalar,
         sbuf(DType::F32, 0, 64 * ((i + 1) % 2), 128, {8}),
         {sbuf(DType::F32, 0, 64 * (i % 2), 128, {8})},
         i ? std::vector<SemWait>{{kQueueScalar, uint32_t(i)}}
           : std::vector<SemWait>{});
  std::vector<InstructionTiming> tl;
  runTiming(b.prog, t, &tl);
  const double period = (tl[99].startNs - tl[1].startNs) / 98;
  CHECK(period == Approx(189).epsilon(0.05));
  CHECK(period == Approx((64 + 60 + 100) / 1.2));
}

TEST_CASE("every target: DMA per-queue bandwidth, fixed cost and HBM cap",
          "[cost][targets][dma]") {
  const std::string name = GENERATE("trn1", "trn2", "trn3");
  const Target &t = target(name);
  INFO(name);
  CHECK(t.dmaQueues == 16);
  // Loads into 8 partitions: rows of 4 KiB and more, at the queue's full bandwidth.
  auto load = [&](Builder &b, int q, int64_t bytes) {
    const int64_t per = bytes / 8 / 4;
    uint32_t buf = b.input("in" + std::to_string(b.inputs), DType::F32,
                           {8, per});
    b.dma(kQueueDma0 + q, sbuf(DType::F32, 0, 0, 8, {per}),
          hbm(buf, DType::F32, 0, {{per, 8}, {1, per}}));
  };
  // One 32 KiB transfer on one queue.
  Builder one;
  load(one, 0, 32768);
  // HARDWARE.md: the transfer starts dmaStartLatencyNs (1.3 us) after the run starts.
  const double oneNs = t.dmaStartLatencyNs + 32768 / t.dmaBytesPerNsPerQueue;
  CHECK(t.dmaStartLatencyNs == 1300);
  CHECK(runTiming(one.prog, t).simNs == Approx(oneNs));
  if (name == "trn2") // HARDWARE.md: measured 1,416 ns for the (queued) transfer itself
    CHECK(oneNs - t.dmaStartLatencyNs == Approx(1416).epsilon(0.10));

  // A second transfer on the same queue starts when the first ends: queued, it hides the
  // start latency.
  Builder two;
  load(two, 0, 32768);
  load(two, 0, 32768);
  CHECK(runTiming(two.prog, t).simNs ==
        Approx(t.dmaStartLatencyNs + 2 * 32768 / t.dmaBytesPerNsPerQueue));

  // 16 queues x 1 MiB at once: bound by the queues or by HBM, whichever is
  // slower (trn2: 16 x 23 B/ns > 362.5 B/ns of HBM; trn1, trn3: queues).
  const int64_t mib = 1 << 20;
  Builder all;
  for (int q = 0; q < 16; ++q)
    load(all, q, mib);
  RunStats s = runTiming(all.prog, t);
  const double queueBound = t.dmaStartLatencyNs + mib / t.dmaBytesPerNsPerQueue;
  const double hbmBound = t.dmaStartLatencyNs + 16.0 * mib / t.hbmBytesPerNs;
  CHECK(s.simNs == Approx(std::max(queueBound, hbmBound)).epsilon(0.002));
  CHECK(s.hbmBytes == 16u * mib);
  // Achieved HBM bandwidth never exceeds the cap.
  CHECK(16.0 * mib / (s.simNs - t.dmaStartLatencyNs) <= t.hbmBytesPerNs * 1.0001);
  if (name == "trn2")
    CHECK(hbmBound > queueBound);
  else
    CHECK(queueBound > hbmBound);
}

TEST_CASE("NC-v2 shares SBUF (Vector, GpSimd) and PSUM (Vector, Scalar) ports",
          "[cost][targets]") {
  struct Pair {
    int q0, q1;
    MemSpace s0, s1;
    bool sharedOnV2;
  };
  const std::vector<Pair> pairs = {
      {kQueueVector, kQueueGpSimd, MemSpace::Sbuf, MemSpace::Sbuf, true},
      {kQueueVector, kQueueScalar, MemSpace::Psum, MemSpace::Psum, true},
      {kQueueScalar, kQueueGpSimd, MemSpace::Sbuf, MemSpace::Sbuf, false},
      {kQueueGpSimd, kQueueScalar, MemSpace::Sbuf, MemSpace::Psum, false},
  };
  for (const std::string name : {"trn1", "trn2", "trn3"}) {
    const Target &t = target(name);
    for (const Pair &pr : pairs) {
      INFO(name << " queues " << pr.q0 << ", " << pr.q1);
      // Each op reads its space and writes SBUF, except that the Vector op
      // of the PSUM pair writes PSUM, so only the PSUM port is shared.
      Builder b;
      auto add = [&](int q, MemSpace src, int64_t dstOff) {
        Opcode op = q == kQueueScalar ? Opcode::Activation : Opcode::TensorCopy;
        AccessPattern dst = sbuf(DType::F32, 0, dstOff, 128, {512});
        if (q == kQueueVector && src == MemSpace::Psum)
          dst = psum(DType::F32, 0, 4096, 128, {512});
        b.op(op, q, dst, {onChip(src, DType::F32, 0, 0, 128, {512})});
      };
      add(pr.q0, pr.s0, 8192);
      add(pr.q1, pr.s1, 16384);
      std::vector<InstructionTiming> tl;
      runTiming(b.prog, t, &tl);
      const bool serial = pr.sharedOnV2 && t.sharedSbufPsumPorts;
      if (serial)
        CHECK(tl[1].startNs == Approx(tl[0].endNs));
      else
        CHECK(tl[1].startNs == 0);
    }
    CHECK(t.sharedSbufPsumPorts == (name == "trn1"));
  }
}

// Tests of the cost formulas (HARDWARE.md) as the cost model computes them.
#include "runtime/simulator/timing/CostModel.h"

#include "ProgramBuilder.h"

#include <catch2/catch.hpp>

using namespace neuron::runtime;
using namespace neuron::runtime::test;

namespace {

const Target &trn2() { return *findTarget("trn2"); }

Instruction matmulOf(DType dt, int64_t k, int64_t m, int64_t n) {
  Instruction in;
  in.opcode = Opcode::Matmul;
  in.queue = kQueueTensor;
  in.dst = psum(DType::F32, 0, 0, m, {n});
  in.srcs = {sbuf(dt, 0, 0, k, {m}), sbuf(dt, 0, 0, k, {n})};
  return in;
}

InstrShape shapeOf(const Instruction &in) {
  Program p;
  p.instructions = {in};
  return checkInstruction(p, trn2(), 0);
}

Instruction vectorOp(Opcode op, DType dt, int64_t n,
                     MemSpace srcSpace = MemSpace::Sbuf) {
  Instruction in;
  in.opcode = op;
  in.queue = kQueueVector;
  in.dst = sbuf(dt, 0, 0, 128, {n});
  AccessPattern src = onChip(srcSpace, dt, 0, 0, 128, {n});
  if (op == Opcode::TensorTensor)
    in.srcs = {src, src};
  else if (op != Opcode::Memset && op != Opcode::Iota)
    in.srcs = {src};
  return in;
}

double cycles(const Instruction &in) {
  return computeCycles(trn2(), in, shapeOf(in));
}

} // namespace

TEST_CASE("matmul initiation interval", "[cost]") {
  // HARDWARE.md: a full 128x128 by 128x512 bf16 matmul has an II of ~512
  // cycles.
  CHECK(matmulCycles(trn2(), 128, 512, false) == 512);
  CHECK(matmulCycles(trn2(), 128, 512, true) == 2048); // x4 for fp32
  CHECK(matmulCycles(trn2(), 32, 16, false) == 32);    // min(64, M) dominates
  CHECK(matmulCycles(trn2(), 128, 16, false) == 64);
  CHECK(matmulCycles(trn2(), 128, 100, false) == 100);

  Instruction bf = matmulOf(DType::BF16, 128, 128, 512);
  CHECK(cycles(bf) == 512);
  Cost c = computeCost(trn2(), bf, shapeOf(bf));
  CHECK(c.busyNs == Approx(512 / 2.4));
  CHECK(c.latencyNs == Approx(64 / 2.4));
  Instruction f32 = matmulOf(DType::F32, 128, 128, 512);
  CHECK(computeCost(trn2(), f32, shapeOf(f32)).busyNs == Approx(2048 / 2.4));
}

TEST_CASE("vector, scalar and gpsimd formulas", "[cost]") {
  CHECK(cycles(vectorOp(Opcode::TensorCopy, DType::F32, 1024)) == 1024);
  CHECK(cycles(vectorOp(Opcode::TensorScalar, DType::F32, 10)) == 64); // MIN_II
  // tensor_tensor: N when all-bf16 add or one input in PSUM, else 2N; on trn2 (NC-v3) bf16
  // inputs in SBUF run 2x in the Vector engine's performance mode.
  CHECK(cycles(vectorOp(Opcode::TensorTensor, DType::BF16, 1000)) == 500);
  CHECK(cycles(vectorOp(Opcode::TensorTensor, DType::F32, 1000)) == 2000);
  CHECK(cycles(vectorOp(Opcode::TensorTensor, DType::F32, 1000,
                        MemSpace::Psum)) == 1000);
  Instruction div = vectorOp(Opcode::TensorTensor, DType::BF16, 1000);
  div.alu = AluOp::Div;
  CHECK(cycles(div) == 1000);
  // tensor_reduce: N/2 for bf16 add/max, else N.
  Instruction red = vectorOp(Opcode::TensorReduce, DType::BF16, 1000);
  red.dst = sbuf(DType::BF16, 0, 0, 128, {1});
  CHECK(cycles(red) == 500);
  red.alu = AluOp::Mul;
  CHECK(cycles(red) == 1000);
  // memset: N/2 for bf16, else N; iota: 150 + N.
  CHECK(cycles(vectorOp(Opcode::Memset, DType::BF16, 1000)) == 500);
  CHECK(cycles(vectorOp(Opcode::Memset, DType::F32, 1000)) == 1000);
  Instruction iota = vectorOp(Opcode::Iota, DType::I32, 1000);
  iota.queue = kQueueGpSimd;
  CHECK(cycles(iota) == 1150);
  // A strided innermost dim (> 16 bytes) halves the bandwidth.
  Instruction strided = vectorOp(Opcode::TensorCopy, DType::F32, 1000);
  strided.srcs[0].dims = {{1, 128}, {8, 1000}};
  CHECK(cycles(strided) == 2000);

  // Busy time adds the access overhead at the engine's own clock.
  Instruction act = vectorOp(Opcode::Activation, DType::F32, 512);
  act.queue = kQueueScalar;
  CHECK(computeCost(trn2(), act, shapeOf(act)).busyNs ==
        Approx((512 + 60) / 1.2));
  Instruction copy = vectorOp(Opcode::TensorCopy, DType::F32, 512);
  CHECK(computeCost(trn2(), copy, shapeOf(copy)).busyNs ==
        Approx((512 + 60) / 0.96));
  CHECK(stalledOverheadNs(trn2(), Engine::Scalar) == Approx(100 / 1.2));
}

TEST_CASE("DMA and HBM times", "[cost]") {
  // HARDWARE.md: 32 KiB HBM->SBUF on one engine measured at 1,416 ns on trn2 (queued: no
  // start latency). One 32 KiB descriptor moves at the queue's full 23 B/ns.
  double ns = dmaQueueNs(trn2(), 32768, 32768);
  CHECK(ns == Approx(32768 / 23.0));
  CHECK(ns == Approx(1416).epsilon(0.10));
  CHECK(dmaQueueNs(*findTarget("trn1"), 17000, 17000) == Approx(1000));
  // The same bytes in 256-byte runs: each run at the 1 KiB run's 42% of full rate.
  CHECK(dmaQueueNs(trn2(), 32768, 256) == Approx(128 * 256 / 0.42 / 23.0));
  // 2 KiB runs: each a 2438-byte descriptor's time; 4-byte runs: a 256-byte packet's.
  CHECK(dmaQueueNs(trn2(), 32768, 2048) == Approx(16 * (1024 / 0.42) / 23.0));
  CHECK(dmaQueueNs(trn2(), 512, 4) == Approx(128 * 256 / 0.42 / 23.0));
  // A remainder run is its own descriptor.
  CHECK(dmaQueueNs(trn2(), 10000, 4096) ==
        Approx(2 * 4096 / 23.0 + (1024 / 0.42) / 23.0));
  CHECK(hbmNs(trn2(), 3625) == Approx(10));
}

TEST_CASE("DMA efficiency against bytes per run: the published curve from 1 KiB, the "
          "tutorial's 256-byte rows below",
          "[cost]") {
  // HARDWARE.md: relative HBM->SBUF throughput against bytes per partition (the NKI DMA
  // overview's plot) from its 1 KiB knee on, against the model's: run bytes at full rate /
  // the descriptor's time. Below 1 KiB the plot's single transfers are latency-bound (the
  // start latency), and a stream of runs moves at the 1 KiB run's 42% per byte (the matmul
  // tutorial on trn1: 256-byte rows at 42%), no run faster than a 256-byte one.
  const struct { int64_t bytes; double published; } curve[] = {
      {1024, 0.42}, {2048, 0.81}, {4096, 0.97}, {8192, 0.98}, {16384, 1.0}};
  for (const Target *t : {findTarget("trn1"), findTarget("trn2"), findTarget("trn3")}) {
    const double bw = t->dmaBytesPerNsPerQueue;
    for (const auto &point : curve) {
      INFO(t->name << " " << point.bytes << " B");
      CHECK(point.bytes / bw / dmaDescriptorNs(*t, point.bytes) ==
            Approx(point.published).margin(0.035));
    }
    for (int64_t bytes : {256, 512, 1000}) {
      INFO(t->name << " " << bytes << " B");
      CHECK(bytes / bw / dmaDescriptorNs(*t, bytes) == Approx(0.42).margin(0.001));
    }
    // K1 (trn1): a [128, 128] bf16 tile of 256-byte rows over 16 engines in about 288 ns
    if (t->name == "trn1")
      CHECK(8 * dmaDescriptorNs(*t, 256) == Approx(288).epsilon(0.05));
    // shorter runs: a packet each, so per byte slower and slower
    CHECK(dmaDescriptorNs(*t, 4) == Approx(dmaDescriptorNs(*t, 256)));
    CHECK(dmaDescriptorNs(*t, 1023) < dmaDescriptorNs(*t, 1024) + 1e-9);
    CHECK(dmaDescriptorNs(*t, 1024) == Approx(dmaDescriptorNs(*t, 2438)));
  }
}

TEST_CASE("dma_transpose runs at 90% of DMA throughput from HBM and 50% on chip", "[cost]") {
  CHECK(dmaTransposeQueueNs(trn2(), 23000, true) == Approx(1000 / 0.9));
  CHECK(dmaTransposeQueueNs(trn2(), 23000, false) == Approx(1000 / 0.5));
}

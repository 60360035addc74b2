// Hazard detection: conflicting accesses on different queues must be ordered
// in simulated time as they are in the program (Hazards.h).
#include "ProgramBuilder.h"

#include "runtime/simulator/Simulator.h"

#include <catch2/catch.hpp>

#include <vector>

using namespace neuron::runtime;
using namespace neuron::runtime::test;
using Catch::Matchers::Contains;

namespace {

const Target &trn2() { return *findTarget("trn2"); }

/// A [128, 64] f32 input x and output y, and a load of x into SBUF byte 0.
struct Tile {
  Builder b;
  uint32_t x, y;
  std::vector<float> in = std::vector<float>(128 * 64, 1.5f);
  std::vector<float> out = std::vector<float>(128 * 64, 0.0f);
  Tile() {
    x = b.input("x", DType::F32, {128, 64});
    y = b.output("y", DType::F32, {128, 64});
  }
  AccessPattern hbmX() const { return hbm(x, DType::F32, 0, {{64, 128}, {1, 64}}); }
  AccessPattern hbmY() const { return hbm(y, DType::F32, 0, {{64, 128}, {1, 64}}); }
  RunStats run(RunOptions o = {}) {
    return simulate(b.prog, trn2(), {in.data()}, {out.data()}, o);
  }
};

AccessPattern tileAt(int64_t offset) {
  return sbuf(DType::F32, 0, offset, 128, {64});
}

} // namespace

TEST_CASE("a read that does not wait for the write is a hazard", "[hazards]") {
  Tile t;
  t.b.dma(kQueueDma0, tileAt(0), t.hbmX());                    // 0
  t.b.op(Opcode::Activation, kQueueScalar, tileAt(256), {tileAt(0)}); // 1
  t.b.dma(kQueueDma0 + 1, t.hbmY(), tileAt(256), {waitFor(kQueueScalar, 1)});
  CHECK_THROWS_WITH(
      t.run(),
      Contains("hazard (read after write): instruction 1 (activation on queue "
               "scalar) starts at 0.0 ns and reads SBUF partition 0 bytes [0, "
               "256), which instruction 0 (dma_copy on queue dma0) writes until") &&
          Contains("no semaphore wait orders them as the program does"));
  // Timing-only runs and runs with the check off do not look.
  RunOptions off;
  off.checkHazards = false;
  CHECK_NOTHROW(t.run(off));
  // With the wait, the same program is fine and computes the right numbers.
  t.b.prog.instructions[1].waits = {waitFor(kQueueDma0, 1)};
  CHECK_NOTHROW(t.run());
  CHECK(t.out[5] == 1.5f);
}

TEST_CASE("a write that does not wait for an earlier read is a hazard",
          "[hazards]") {
  Tile t;
  t.b.dma(kQueueDma0, tileAt(0), t.hbmX());
  t.b.op(Opcode::Activation, kQueueScalar, tileAt(256), {tileAt(0)},
         {waitFor(kQueueDma0, 1)});
  // Overwrites the activation's source without waiting for it.
  t.b.op(Opcode::Memset, kQueueVector, tileAt(0), {}, {waitFor(kQueueDma0, 1)});
  t.b.dma(kQueueDma0 + 1, t.hbmY(), tileAt(256), {waitFor(kQueueScalar, 1)});
  CHECK_THROWS_WITH(t.run(),
                    Contains("hazard (write after read): instruction 2 "
                             "(memset on queue vector)") &&
                        Contains("which instruction 1 (activation on queue "
                                 "scalar) reads until"));
  t.b.prog.instructions[2].waits.push_back(waitFor(kQueueScalar, 1));
  CHECK_NOTHROW(t.run());
}

TEST_CASE("two unordered writes of the same bytes are a hazard", "[hazards]") {
  Tile t;
  t.b.op(Opcode::Memset, kQueueVector, tileAt(0), {});
  t.b.op(Opcode::Memset, kQueueGpSimd, tileAt(0), {});
  t.b.dma(kQueueDma0, t.hbmY(), tileAt(0),
          {waitFor(kQueueVector, 1), waitFor(kQueueGpSimd, 1)});
  CHECK_THROWS_WITH(t.run(), Contains("hazard (write after write): "
                                      "instruction 1 (memset on queue gpsimd)"));
  t.b.prog.instructions[1].waits = {waitFor(kQueueVector, 1)};
  CHECK_NOTHROW(t.run());
}

TEST_CASE("a later instruction on an idle queue may not start before an "
          "earlier conflicting one completes", "[hazards]") {
  Tile t;
  // A long load, then a write into HBM y by another queue that the program
  // orders after a store of y which it does not wait for.
  t.b.dma(kQueueDma0, tileAt(0), t.hbmX());
  t.b.dma(kQueueDma0, t.hbmY(), tileAt(0)); // after the load, same queue
  t.b.op(Opcode::Memset, kQueueVector, tileAt(512), {});
  t.b.dma(kQueueDma0 + 1, t.hbmY(), tileAt(512), {waitFor(kQueueVector, 1)});
  CHECK_THROWS_WITH(t.run(),
                    Contains("hazard (write after write): instruction 3 "
                             "(dma_copy on queue dma1)") &&
                        Contains("HBM buffer 1 (y) bytes [0, 32768)"));
}

TEST_CASE("accesses to different bytes of one tile need no order",
          "[hazards]") {
  Tile t;
  // Even and odd columns of one tile, written by two engines at once, then
  // stored after both.
  AccessPattern even = tileAt(0), odd = tileAt(4);
  even.dims[1] = {2, 32};
  odd.dims[1] = {2, 32};
  t.b.op(Opcode::Memset, kQueueVector, even, {});
  t.b.last().imm[0] = 1.0;
  t.b.op(Opcode::Memset, kQueueGpSimd, odd, {});
  t.b.last().imm[0] = 2.0;
  // Other partitions of one byte range: no conflict either.
  t.b.op(Opcode::Memset, kQueueScalar, sbuf(DType::F32, 0, 1024, 64, {64}), {});
  t.b.op(Opcode::Memset, kQueueGpSimd, sbuf(DType::F32, 64, 1024, 64, {64}), {});
  t.b.dma(kQueueDma0, t.hbmY(), tileAt(0),
          {waitFor(kQueueVector, 1), waitFor(kQueueGpSimd, 1)});
  CHECK_NOTHROW(t.run());
  CHECK(t.out[0] == 1.0f);
  CHECK(t.out[1] == 2.0f);
}

TEST_CASE("reads of on-chip memory never written are reported", "[hazards]") {
  Tile t;
  t.b.dma(kQueueDma0, tileAt(0), sbuf(DType::F32, 0, 0, 128, {64}));
  t.b.prog.instructions[0].dst = t.hbmY();
  CHECK_THROWS_WITH(t.run(), Contains("instruction 0 (dma_copy on queue dma0) "
                                      "reads SBUF partition 0 bytes [0, 256) "
                                      "that no instruction wrote"));
  // PSUM: a matmul accumulating into a bank nothing initialized.
  Builder b;
  b.op(Opcode::Memset, kQueueVector, sbuf(DType::BF16, 0, 0, 128, {128}), {});
  b.op(Opcode::Matmul, kQueueTensor, psum(DType::F32, 0, 0, 128, {128}),
       {sbuf(DType::BF16, 0, 0, 128, {128}), sbuf(DType::BF16, 0, 0, 128, {128})},
       {waitFor(kQueueVector, 1)});
  b.last().accumulate = true;
  CHECK_THROWS_WITH(simulate(b.prog, trn2(), {}, {}),
                    Contains("(nc_matmul on queue tensor) reads PSUM partition 0 "
                             "bytes [0, 512) that no instruction wrote"));
  b.prog.instructions[1].accumulate = false;
  CHECK_NOTHROW(simulate(b.prog, trn2(), {}, {}));
}

TEST_CASE("loops: a double-buffered pipeline is checked per instance",
          "[hazards]") {
  // 8 row blocks of a [1024, 64] tensor: load block i into buffer i % 2,
  // exp it into buffer 2 + i % 2, store it. The waits are affine in iv0.
  auto build = [](bool dropStoreWait) {
    Builder b;
    const uint32_t x = b.input("x", DType::F32, {1024, 64});
    const uint32_t y = b.output("y", DType::F32, {1024, 64});
    const size_t begin = b.next();
    auto buf = [](int k) {
      return withTerms(tileAt(256 * k), {term(0, 256, 2)});
    };
    auto rows = [](uint32_t buffer) {
      return withTerms(hbm(buffer, DType::F32, 0, {{64, 128}, {1, 64}}),
                       {term(0, 128 * 64)});
    };
    // load i waits for the activation of i - 2 (which read buffer i % 2).
    b.dma(kQueueDma0, buf(0), rows(x),
          {waitFor(kQueueScalar, -1, {term(0, 1)})});
    b.op(Opcode::Activation, kQueueScalar, buf(2), {buf(0)},
         {waitFor(kQueueDma0, 1, {term(0, 1)}),
          // and for the store of i - 2 (which read buffer 2 + i % 2)
          waitFor(kQueueDma0 + 1, -1, {term(0, 1)})});
    b.last().func = ActFunc::Exp;
    b.dma(kQueueDma0 + 1, rows(y), buf(2),
          dropStoreWait ? std::vector<SemWait>{}
                        : std::vector<SemWait>{waitFor(kQueueScalar, 1, {term(0, 1)})});
    b.loop(begin, 8);
    return b;
  };
  std::vector<float> in(1024 * 64, 0.0f), out(1024 * 64, -1.0f);
  Builder good = build(false);
  CHECK_NOTHROW(simulate(good.prog, trn2(), {in.data()}, {out.data()}));
  CHECK(out[1000] == 1.0f);
  Builder bad = build(true);
  CHECK_THROWS_WITH(simulate(bad.prog, trn2(), {in.data()}, {out.data()}),
                    Contains("hazard (read after write): instruction 2 "
                             "(dma_copy on queue dma1)"));
}

TEST_CASE("a strided read is confirmed exactly against a later write",
          "[hazards]") {
  // T (internal HBM, [128, 128] f32) is written whole, then read transposed
  // (columns 0..63 as partitions: 8192 element runs, a strided read recorded
  // on whole ranges) while another queue overwrites half of T's columns.
  auto build = [](int64_t firstColumn) {
    Builder b;
    const uint32_t x = b.input("x", DType::F32, {128, 128});
    const uint32_t t = b.buffer(BufferDecl::Kind::Internal, "t", DType::F32, {128, 128});
    const uint32_t y = b.output("y", DType::F32, {64, 128});
    const AccessPattern a = sbuf(DType::F32, 0, 0, 128, {128});
    b.dma(kQueueDma0, a, hbm(x, DType::F32, 0, {{128, 128}, {1, 128}}));
    b.dma(kQueueDma0 + 1, hbm(t, DType::F32, 0, {{128, 128}, {1, 128}}), a,
          {waitFor(kQueueDma0, 1)});
    const AccessPattern bt = sbuf(DType::F32, 0, 1024, 64, {128});
    b.dma(kQueueDma0 + 2, bt, hbm(t, DType::F32, 0, {{1, 64}, {128, 128}}),
          {waitFor(kQueueDma0 + 1, 1)});
    // 64 columns from `firstColumn`, waiting for the write of T but not for
    // the transposed read.
    AccessPattern half = sbuf(DType::F32, 0, 4 * firstColumn, 128, {64});
    b.dma(kQueueDma0 + 3, hbm(t, DType::F32, firstColumn, {{128, 128}, {1, 64}}), half,
          {waitFor(kQueueDma0 + 1, 1)});
    b.dma(kQueueDma0 + 4, hbm(y, DType::F32, 0, {{128, 64}, {1, 128}}), bt,
          {waitFor(kQueueDma0 + 2, 1), waitFor(kQueueDma0 + 3, 1)});
    return b;
  };
  std::vector<float> in(128 * 128), out(64 * 128);
  for (size_t i = 0; i < in.size(); ++i)
    in[i] = float(i);
  Builder disjoint = build(64);
  CHECK_NOTHROW(simulate(disjoint.prog, trn2(), {in.data()}, {out.data()}));
  CHECK(out[5 * 128 + 7] == in[7 * 128 + 5]); // y = x[:, :64]^T
  Builder overlapping = build(0);
  CHECK_THROWS_WITH(simulate(overlapping.prog, trn2(), {in.data()}, {out.data()}),
                    Contains("hazard (write after read): instruction 3 "
                             "(dma_copy on queue dma3)") &&
                        Contains("which instruction 2 (dma_copy on queue dma2) reads"));
}

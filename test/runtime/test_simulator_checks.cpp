// Tests of the simulator's legality checks: capacity, partition rules, engines,
// bounds.
#include "runtime/simulator/Simulator.h"

#include "ProgramBuilder.h"

#include <catch2/catch.hpp>

using namespace neuron::runtime;
using namespace neuron::runtime::test;
using Catch::Matchers::Contains;

namespace {

const Target &trn2() { return *findTarget("trn2"); }

std::string errorOf(const Program &p, bool timingOnly = true,
                    const Target &t = *findTarget("trn2")) {
  RunOptions o;
  o.timingOnly = timingOnly;
  try {
    simulate(p, t, {}, {}, o);
  } catch (const SimulationError &e) {
    return e.what();
  }
  return "<no error>";
}

/// A Vector-engine copy between two SBUF tiles.
Program copyProgram(AccessPattern dst, AccessPattern src) {
  Builder b;
  b.op(Opcode::Memset, kQueueVector, sbuf(DType::F32, 0, 0, 128, {16}), {});
  b.op(Opcode::TensorCopy, kQueueVector, std::move(dst), {std::move(src)});
  return b.prog;
}

} // namespace

TEST_CASE("SBUF overflow names the instruction, opcode and access",
          "[checks]") {
  Program p = copyProgram(sbuf(DType::F32, 0, 229000, 128, {1024}),
                          sbuf(DType::F32, 0, 0, 128, {1024}));
  CHECK(errorOf(p) ==
        "instruction 1 (tensor_copy): SBUF access [offset 229000, "
        "4096 bytes] exceeds the partition size 229376 (operand dst)");
  // Functional runs check too; the last byte of a partition is usable.
  CHECK_THAT(errorOf(p, false), Contains("exceeds the partition size 229376"));
  p = copyProgram(sbuf(DType::F32, 0, 229376 - 4096, 128, {1024}),
                  sbuf(DType::F32, 0, 0, 128, {1024}));
  CHECK(errorOf(p) == "<no error>");
  // trn1 has smaller partitions.
  CHECK_THAT(errorOf(p, true, *findTarget("trn1")),
             Contains("exceeds the partition size 196608"));
  // Negative strides that walk below the start of the partition.
  AccessPattern back = sbuf(DType::F32, 0, 8, 128, {4});
  back.dims[1][0] = -4;
  CHECK_THAT(
      errorOf(copyProgram(back, sbuf(DType::F32, 0, 0, 128, {4}))),
      Contains(
          "SBUF access [offset -40, 52 bytes] exceeds the partition size"));
}

TEST_CASE("PSUM capacity and banks", "[checks]") {
  Program p = copyProgram(sbuf(DType::F32, 0, 0, 128, {1024}),
                          psum(DType::F32, 0, 12288, 128, {1025}));
  CHECK_THAT(errorOf(p),
             Contains("PSUM access [offset 12288, 4100 bytes] exceeds "
                      "the partition size 16384 (operand srcs[0])"));
  Builder b;
  b.op(Opcode::Matmul, kQueueTensor, psum(DType::F32, 0, 1024, 128, {512}),
       {sbuf(DType::BF16, 0, 0, 128, {128}),
        sbuf(DType::BF16, 0, 256, 128, {512})});
  CHECK(errorOf(b.prog) ==
        "instruction 0 (nc_matmul): dst PSUM access [offset 1024, "
        "2048 bytes] crosses a 2048-byte PSUM bank boundary");
  b.last().dst.offset = 2048;
  CHECK(errorOf(b.prog) == "<no error>");
  b.last().srcs[1] = sbuf(DType::BF16, 0, 256, 128, {513});
  b.last().dst = psum(DType::F32, 0, 0, 128, {513});
  CHECK_THAT(errorOf(b.prog), Contains("moving free size N = 513 exceeds 512"));
  b.last().srcs[1] = sbuf(DType::BF16, 0, 256, 64, {512});
  b.last().dst = psum(DType::F32, 0, 0, 128, {512});
  CHECK_THAT(errorOf(b.prog), Contains("contraction dims differ"));
}

TEST_CASE("partition start rules for compute engines", "[checks]") {
  auto check = [](uint32_t start, int64_t parts) {
    return errorOf(copyProgram(sbuf(DType::F32, start, 0, parts, {16}),
                               sbuf(DType::F32, 0, 4096, parts, {16})));
  };
  CHECK(check(0, 128) == "<no error>");
  CHECK(check(64, 64) == "<no error>");
  CHECK(check(96, 32) == "<no error>");
  CHECK(check(32, 1) == "<no error>");
  CHECK(
      check(32, 48) ==
      "instruction 1 (tensor_copy): SBUF access spanning 48 partitions starts "
      "at "
      "partition 32; tiles of 33-64 partitions must start at partition 0 or 64 "
      "(operand dst)");
  CHECK_THAT(check(32, 65),
             Contains("SBUF access spanning 65 partitions starts at "
                      "partition 32; tiles of more than 64 partitions "
                      "must start at partition 0"));
  CHECK_THAT(check(8, 16),
             Contains("tiles of at most 32 partitions must start at "
                      "partition 0, 32, 64 or 96"));
  CHECK_THAT(check(96, 64),
             Contains("SBUF access to partitions 96..159 exceeds the "
                      "128 partitions"));
}

TEST_CASE("DMA may address any partition but not beyond the last", "[checks]") {
  Builder b;
  uint32_t x = b.input("x", DType::F32, {5, 16});
  b.dma(kQueueDma0, sbuf(DType::F32, 5, 0, 5, {16}),
        hbm(x, DType::F32, 0, {{16, 5}, {1, 16}}));
  CHECK(errorOf(b.prog) == "<no error>");
  b.last().dst.partition = 124;
  CHECK_THAT(errorOf(b.prog),
             Contains("SBUF access to partitions 124..128 exceeds"));
}

TEST_CASE("HBM accesses stay inside their buffers", "[checks]") {
  Builder b;
  uint32_t x = b.input("x", DType::F32, {4, 16});
  uint32_t y = b.output("y", DType::F32, {4, 16});
  b.dma(kQueueDma0, sbuf(DType::F32, 0, 0, 4, {16}),
        hbm(x, DType::F32, 1, {{16, 4}, {1, 16}}));
  CHECK(errorOf(b.prog) ==
        "instruction 0 (dma_copy): HBM access [elements 1..64] is "
        "outside buffer 0 (\"x\") of 64 elements (operand srcs[0])");
  b.last().srcs[0] = hbm(x, DType::BF16, 0, {{1, 64}});
  b.last().dst = sbuf(DType::BF16, 0, 0, 1, {64});
  CHECK_THAT(errorOf(b.prog),
             Contains("HBM access as bf16 to buffer 0 (\"x\") of dtype f32"));
  b.last().srcs[0] = hbm(7, DType::F32, 0, {{1, 64}});
  CHECK_THAT(errorOf(b.prog),
             Contains("HBM buffer 7 does not exist (2 buffers)"));
  b.last() = Instruction();
  b.last().queue = kQueueDma0;
  b.last().dst = hbm(x, DType::F32, 0, {{1, 64}});
  b.last().srcs = {hbm(y, DType::F32, 0, {{1, 64}})};
  CHECK_THAT(errorOf(b.prog), Contains("writes to input buffer 0 (\"x\")"));
}

TEST_CASE("opcodes run only on their engines, with matching operands",
          "[checks]") {
  Builder b;
  b.op(Opcode::Matmul, kQueueVector, psum(DType::F32, 0, 0, 128, {512}),
       {sbuf(DType::BF16, 0, 0, 128, {128}),
        sbuf(DType::BF16, 0, 256, 128, {512})});
  CHECK(errorOf(b.prog) ==
        "instruction 0 (nc_matmul): cannot run on the vector engine (queue 1); "
        "it runs on tensor");
  b.last().queue = 45;
  CHECK_THAT(errorOf(b.prog), Contains("queue 45 does not exist"));

  Program p = copyProgram(sbuf(DType::F32, 0, 0, 128, {16}),
                          sbuf(DType::F32, 0, 0, 128, {8}));
  CHECK_THAT(errorOf(p),
             Contains("srcs[0] has 8 elements per partition but dst has 16"));
  p = copyProgram(sbuf(DType::F32, 0, 0, 64, {16}),
                  sbuf(DType::F32, 0, 0, 128, {16}));
  CHECK_THAT(errorOf(p),
             Contains("srcs[0] spans 128 partitions but dst spans 64"));

  Builder d;
  uint32_t x = d.input("x", DType::F32, {64});
  d.dma(kQueueDma0, sbuf(DType::BF16, 0, 0, 1, {64}),
        hbm(x, DType::F32, 0, {{1, 64}}));
  CHECK_THAT(errorOf(d.prog),
             Contains("dst dtype bf16 differs from source dtype f32"));
  d.last().dst = sbuf(DType::F32, 0, 0, 1, {32});
  CHECK_THAT(errorOf(d.prog),
             Contains("dst has 32 elements but srcs[0] has 64"));
  d.op(Opcode::TensorCopy, kQueueVector, sbuf(DType::F32, 0, 0, 1, {64}),
       {hbm(x, DType::F32, 0, {{1, 64}})});
  d.prog.instructions.erase(d.prog.instructions.begin());
  CHECK_THAT(errorOf(d.prog), Contains("compute engines cannot access HBM"));
}

TEST_CASE("functional runs need every input and output pointer", "[checks]") {
  Builder b;
  b.input("x", DType::F32, {4});
  b.output("y", DType::F32, {4});
  std::vector<float> x(4), y(4);
  CHECK_THROWS_WITH(simulate(b.prog, trn2(), {x.data()}, {}),
                    Contains("buffer 1 (\"y\") is output 0 but 0 were passed"));
  CHECK_THROWS_WITH(simulate(b.prog, trn2(), {nullptr}, {y.data()}),
                    Contains("buffer 0 (\"x\"): null pointer passed"));
  CHECK_NOTHROW(simulate(b.prog, trn2(), {x.data()}, {y.data()}));
  b.buffer(BufferDecl::Kind::Constant, "c", DType::F32, {2});
  CHECK_THROWS_WITH(
      simulate(b.prog, trn2(), {x.data()}, {y.data()}),
      Contains("buffer 2 (\"c\") holds 0 bytes of data but declares 8"));
}

TEST_CASE("a DMA may read one partition for many, engines and writes may not", "[checks]") {
  // Row 3 of x onto 8 partitions: load x into partitions 0..4, then an SBUF -> SBUF DMA
  // with a source partition stride of 0 (NKI's partition broadcast_to).
  Builder b;
  uint32_t x = b.input("x", DType::F32, {5, 16});
  uint32_t y = b.output("y", DType::F32, {8, 16});
  b.dma(kQueueDma0, sbuf(DType::F32, 0, 0, 5, {16}), hbm(x, DType::F32, 0, {{16, 5}, {1, 16}}));
  AccessPattern row = sbuf(DType::F32, 3, 0, 8, {16});
  row.dims[0][0] = 0;
  b.dma(kQueueDma0 + 1, sbuf(DType::F32, 0, 4096, 8, {16}), row);
  b.dma(kQueueDma0 + 2, hbm(y, DType::F32, 0, {{16, 8}, {1, 16}}),
        sbuf(DType::F32, 0, 4096, 8, {16}));
  b.sequential();
  std::vector<float> in(5 * 16), out(8 * 16, -1.0f);
  for (size_t i = 0; i < in.size(); ++i)
    in[i] = float(i);
  simulate(b.prog, trn2(), {in.data()}, {out.data()});
  for (int p = 0; p < 8; ++p)
    for (int f = 0; f < 16; ++f)
      CHECK(out[size_t(p * 16 + f)] == in[size_t(3 * 16 + f)]);
  // The same pattern as a DMA destination, or as an engine's source, is rejected.
  Builder w;
  w.op(Opcode::Memset, kQueueVector, sbuf(DType::F32, 0, 0, 8, {16}), {});
  w.dma(kQueueDma0, row, sbuf(DType::F32, 0, 0, 8, {16}));
  CHECK_THAT(errorOf(w.prog), Contains("partition stride 0 must be positive (operand dst)"));
  CHECK_THAT(errorOf(copyProgram(sbuf(DType::F32, 0, 64, 8, {16}), row)),
             Contains("partition stride 0 must be positive (operand srcs[0])"));
}

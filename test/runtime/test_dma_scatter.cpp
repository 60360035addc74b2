// Tests of DmaScatter: SBUF rows written (or combined) into data-dependent rows of an
// HBM table, in partition order; its checks, hazards, timing and serialization.
#include "runtime/program/Serialize.h"
#include "runtime/simulator/Checks.h"
#include "runtime/simulator/Simulator.h"
#include "runtime/simulator/functional/Numerics.h"

#include "ProgramBuilder.h"

#include <catch2/catch.hpp>

#include <cmath>
#include <functional>
#include <limits>
#include <optional>

using namespace neuron::runtime;
using namespace neuron::runtime::test;
using Catch::Matchers::Contains;

namespace {

const Target &trn2() { return *findTarget("trn2"); }

std::string errorOf(const std::function<void()> &f) {
  try {
    f();
  } catch (const std::exception &e) {
    return e.what();
  }
  return "";
}

/// y (output [rows, width] of dt) = table (input); then rows idx[p] of y, columns
/// [col, col + n), get src[p, :] ([parts, n] input), combined with `alu` if given.
struct ScatterProgram {
  Builder b;
  size_t scatter = 0;
  ScatterProgram(DType dt, DType idxDt, int64_t rows, int64_t width, int64_t parts,
                 int64_t col, int64_t n, std::optional<AluOp> alu) {
    uint32_t t = b.input("table", dt, {rows, width});
    uint32_t s = b.input("src", dt, {parts, n});
    uint32_t ib = b.input("idx", idxDt, {parts, 1});
    uint32_t y = b.output("y", dt, {rows, width});
    b.dma(kQueueDma0, hbm(y, dt, 0, {{width, rows}, {1, width}}),
          hbm(t, dt, 0, {{width, rows}, {1, width}}));
    b.dma(kQueueDma0 + 1, sbuf(dt, 0, 4096, parts, {n}), hbm(s, dt, 0, {{n, parts}, {1, n}}));
    b.dma(kQueueDma0 + 2, sbuf(idxDt, 0, 0, parts, {1}),
          hbm(ib, idxDt, 0, {{1, parts}, {1, 1}}));
    Instruction in;
    in.opcode = Opcode::DmaScatter;
    in.queue = kQueueDma0 + 3;
    in.dst = hbm(y, dt, col, {{width, rows}, {1, n}});
    in.srcs = {sbuf(dt, 0, 4096, parts, {n}), sbuf(idxDt, 0, 0, parts, {1})};
    in.waits = {{kQueueDma0, 1}, {kQueueDma0 + 1, 1}, {kQueueDma0 + 2, 1}};
    if (alu) {
      in.accumulate = true;
      in.alu = *alu;
    }
    scatter = b.add(in);
  }
};

} // namespace

TEST_CASE("dma_scatter writes rows in partition order: the last duplicate wins",
          "[scatter]") {
  const int64_t rows = 9, width = 6, parts = 5, col = 1, n = 4;
  std::vector<float> table(rows * width), src(parts * n);
  for (size_t i = 0; i < table.size(); ++i)
    table[i] = float(i);
  for (size_t i = 0; i < src.size(); ++i)
    src[i] = -1.0f - float(i);
  for (DType idxDt : {DType::I32, DType::I64}) {
    ScatterProgram g(DType::F32, idxDt, rows, width, parts, col, n, std::nullopt);
    std::vector<int64_t> idx64 = {3, 0, 3, 8, 3};
    std::vector<int32_t> idx32(idx64.begin(), idx64.end());
    const void *idx = idxDt == DType::I32 ? (const void *)idx32.data() : (const void *)idx64.data();
    std::vector<float> y(rows * width);
    simulate(g.b.prog, trn2(), {table.data(), src.data(), idx}, {y.data()});
    std::vector<float> expected = table;
    for (int64_t p = 0; p < parts; ++p)
      for (int64_t i = 0; i < n; ++i)
        expected[idx64[p] * width + col + i] = src[p * n + i];
    CHECK(y == expected);
    CHECK(y[3 * width + col] == src[4 * n]); // partition 4, the last of the three 3s
  }
}

TEST_CASE("dma_scatter accumulates duplicates in partition order", "[scatter]") {
  const int64_t rows = 4, width = 3, parts = 6;
  std::vector<int64_t> idx = {2, 0, 2, 2, 1, 0};
  SECTION("fp32 add, mul, max, min") {
    std::vector<float> table = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
    std::vector<float> src(parts * width);
    for (size_t i = 0; i < src.size(); ++i)
      src[i] = 0.37f * float(i) - 2.1f;
    for (AluOp alu : {AluOp::Add, AluOp::Mul, AluOp::Max, AluOp::Min}) {
      ScatterProgram g(DType::F32, DType::I64, rows, width, parts, 0, width, alu);
      std::vector<float> y(rows * width);
      simulate(g.b.prog, trn2(), {table.data(), src.data(), idx.data()}, {y.data()});
      std::vector<float> expected = table;
      for (int64_t p = 0; p < parts; ++p)
        for (int64_t i = 0; i < width; ++i) {
          float &e = expected[idx[p] * width + i];
          float v = src[p * width + i];
          e = alu == AluOp::Add   ? e + v
              : alu == AluOp::Mul ? e * v
              : alu == AluOp::Max ? std::max(e, v)
                                  : std::min(e, v);
        }
      CHECK(y == expected);
    }
  }
  SECTION("bf16 add rounds after every row, as eager's bf16 index_put does") {
    std::vector<uint16_t> table(rows * width, floatToBf16(256.0f)), src(parts * width);
    for (size_t i = 0; i < src.size(); ++i)
      src[i] = floatToBf16(0.75f + float(i % 3));
    ScatterProgram g(DType::BF16, DType::I64, rows, width, parts, 0, width, AluOp::Add);
    std::vector<uint16_t> y(rows * width);
    simulate(g.b.prog, trn2(), {table.data(), src.data(), idx.data()}, {y.data()});
    std::vector<uint16_t> expected = table;
    for (int64_t p = 0; p < parts; ++p)
      for (int64_t i = 0; i < width; ++i) {
        uint16_t &e = expected[idx[p] * width + i];
        e = floatToBf16(bf16ToFloat(e) + bf16ToFloat(src[p * width + i]));
      }
    CHECK(y == expected);
    // 256 + 0.75 rounds to 256 in bf16 every time: a single fp32 sum would not.
    CHECK(bf16ToFloat(y[2 * width]) == 256.0f);
  }
  SECTION("int64 add and max are exact beyond 2^53") {
    const int64_t big = (int64_t(1) << 60) + 1;
    std::vector<int64_t> table(rows * width, big), src(parts * width);
    for (size_t i = 0; i < src.size(); ++i)
      src[i] = int64_t(i) * 3 - 7;
    for (AluOp alu : {AluOp::Add, AluOp::Max}) {
      ScatterProgram g(DType::I64, DType::I64, rows, width, parts, 0, width, alu);
      std::vector<int64_t> y(rows * width);
      simulate(g.b.prog, trn2(), {table.data(), src.data(), idx.data()}, {y.data()});
      std::vector<int64_t> expected = table;
      for (int64_t p = 0; p < parts; ++p)
        for (int64_t i = 0; i < width; ++i) {
          int64_t &e = expected[idx[p] * width + i];
          e = alu == AluOp::Add ? e + src[p * width + i] : std::max(e, src[p * width + i]);
        }
      CHECK(y == expected);
    }
  }
  SECTION("max and min propagate NaN, as torch's amax and amin do") {
    const float nan = std::numeric_limits<float>::quiet_NaN();
    std::vector<float> table(rows * width, 0.0f), src(parts * width, 1.0f);
    src[1 * width] = nan; // partition 1 -> row 0, column 0
    for (AluOp alu : {AluOp::Max, AluOp::Min}) {
      ScatterProgram g(DType::F32, DType::I64, rows, width, parts, 0, width, alu);
      std::vector<float> y(rows * width);
      simulate(g.b.prog, trn2(), {table.data(), src.data(), idx.data()}, {y.data()});
      CHECK(std::isnan(y[0]));
      CHECK(y[1] == (alu == AluOp::Max ? 1.0f : 0.0f));
    }
  }
}

TEST_CASE("dma_scatter rejects indices outside the table", "[scatter][checks]") {
  const int64_t rows = 5, width = 2, parts = 3;
  std::vector<float> table(rows * width, 0.0f), src(parts * width, 1.0f);
  for (int64_t bad : {int64_t(5), int64_t(-1)}) {
    ScatterProgram g(DType::F32, DType::I64, rows, width, parts, 0, width, AluOp::Add);
    std::vector<int64_t> idx = {0, bad, 1};
    std::vector<float> y(rows * width);
    CHECK_THAT(errorOf([&] {
                 simulate(g.b.prog, trn2(), {table.data(), src.data(), idx.data()}, {y.data()});
               }),
               Contains("instruction 3 (dma_scatter): index " + std::to_string(bad) +
                        " (partition 1) is outside the table's 5 rows"));
  }
}

TEST_CASE("dma_scatter operand checks", "[scatter][checks]") {
  auto check = [](const ScatterProgram &g) {
    return errorOf([&] { checkInstruction(g.b.prog, trn2(), g.scatter); });
  };
  ScatterProgram ok(DType::F32, DType::I64, 8, 4, 3, 0, 4, AluOp::Add);
  CHECK(check(ok).empty());
  {
    ScatterProgram g = ok;
    g.b.prog.instructions[g.scatter].alu = AluOp::Sub;
    CHECK_THAT(check(g), Contains("accumulates with sub; a scatter combines with add, mul, "
                                  "max or min"));
  }
  {
    ScatterProgram g = ok;
    g.b.prog.instructions[g.scatter].srcs[0] = sbuf(DType::F32, 0, 4096, 3, {3});
    CHECK_THAT(check(g), Contains("srcs[0] has 3 elements per partition but a table row has 4"));
  }
  {
    ScatterProgram g = ok;
    g.b.prog.instructions[g.scatter].srcs[1] = sbuf(DType::I64, 0, 0, 2, {1});
    CHECK_THAT(check(g), Contains("srcs[1] must be a [3, 1] index tile, got [2, 1]"));
  }
  {
    ScatterProgram g = ok;
    g.b.prog.instructions[g.scatter].srcs[1].dtype = DType::F32;
    CHECK_THAT(check(g), Contains("index dtype f32 is not supported"));
  }
  {
    ScatterProgram g = ok;
    g.b.prog.instructions[g.scatter].dst = sbuf(DType::F32, 0, 0, 8, {4});
    CHECK_THAT(check(g), Contains("dst must be in HBM"));
  }
  {
    ScatterProgram g = ok; // the table is the input buffer 0
    g.b.prog.instructions[g.scatter].dst.buffer = 0;
    CHECK_THAT(check(g), Contains("writes to input buffer 0"));
  }
  {
    ScatterProgram g = ok;
    g.b.prog.instructions[g.scatter].queue = kQueueVector;
    CHECK_THAT(check(g), Contains("cannot run on the vector engine"));
  }
}

TEST_CASE("dma_scatter timing, hazards and serialization", "[scatter]") {
  const int64_t rows = 64, width = 32, parts = 16;
  std::vector<float> table(rows * width, 0.0f), src(parts * width, 1.0f);
  std::vector<int64_t> idx(parts);
  for (int64_t p = 0; p < parts; ++p)
    idx[p] = (p * 7) % rows;
  ScatterProgram plain(DType::F32, DType::I64, rows, width, parts, 0, width, std::nullopt);
  ScatterProgram added(DType::F32, DType::I64, rows, width, parts, 0, width, AluOp::Add);
  std::vector<float> y(rows * width);
  RunStats a = simulate(plain.b.prog, trn2(), {table.data(), src.data(), idx.data()}, {y.data()});
  RunStats b = simulate(added.b.prog, trn2(), {table.data(), src.data(), idx.data()}, {y.data()});
  // The accumulate reads the rows it writes: twice the scatter's bytes over HBM.
  const uint64_t rowsBytes = uint64_t(parts * width * 4);
  CHECK(b.hbmBytes - a.hbmBytes == rowsBytes);
  CHECK(a.dmaTransfers == 4);
  // Without its waits the scatter races the table copy and its operands' loads (which, with
  // the DMA start latency, finish before the scatter would start if it still waited on the
  // loads): a hazard.
  ScatterProgram racy = added;
  racy.b.prog.instructions[racy.scatter].waits.clear();
  CHECK_THAT(errorOf([&] {
               simulate(racy.b.prog, trn2(), {table.data(), src.data(), idx.data()}, {y.data()});
             }),
             Contains("dma_scatter"));
  // JSON round trip keeps the opcode, accumulate and alu.
  Program back = programFromJson(programToJson(added.b.prog));
  const Instruction &in = back.instructions[added.scatter];
  CHECK(in.opcode == Opcode::DmaScatter);
  CHECK(in.accumulate);
  CHECK(in.alu == AluOp::Add);
  CHECK(programToJson(back) == programToJson(added.b.prog));
}

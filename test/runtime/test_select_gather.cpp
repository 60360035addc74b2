// Tests of Select, DmaGather, broadcast ([P, 1] read with free stride 0)
// operands of every compute instruction, and row reductions into [P, 1].
#include "runtime/program/Serialize.h"
#include "runtime/simulator/Simulator.h"
#include "runtime/simulator/functional/Numerics.h"
#include "runtime/simulator/timing/CostModel.h"

#include "ProgramBuilder.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <functional>
#include <random>

using namespace neuron::runtime;
using namespace neuron::runtime::test;
using Catch::Matchers::Contains;

namespace {

const Target &trn2() { return *findTarget("trn2"); }

float roundBf16Ref(float f) { return bf16ToFloat(floatToBf16(f)); }

/// A [parts, 1] tile read as [parts, f]: free stride 0.
AccessPattern rowBroadcast(DType dt, int64_t offset, int64_t parts, int64_t f) {
  AccessPattern ap = sbuf(dt, 0, offset, parts, {1});
  ap.dims = {{1, parts}, {0, f}};
  return ap;
}

/// Loads input `name` ([p, f] of dt) to SBUF at `offset` on DMA queue `q`.
uint32_t load(Builder &b, const std::string &name, DType dt, int64_t p,
              int64_t f, int64_t offset, int q) {
  uint32_t buf = b.input(name, dt, {p, f});
  b.dma(kQueueDma0 + q, sbuf(dt, 0, offset, p, {f}),
        hbm(buf, dt, 0, {{f, p}, {1, f}}));
  return buf;
}

/// Stores SBUF [p, f] of dt at `offset` to a new output, after everything
/// `waits` names.
void store(Builder &b, DType dt, int64_t p, int64_t f, int64_t offset,
           std::vector<SemWait> waits) {
  uint32_t out = b.output("y" + std::to_string(b.outputs), dt, {p, f});
  b.dma(kQueueDma0 + 15, hbm(out, dt, 0, {{f, p}, {1, f}}),
        sbuf(dt, 0, offset, p, {f}), std::move(waits));
}

std::vector<float> randomFloats(size_t n, uint32_t seed, float lo = -2,
                                float hi = 2) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(n);
  for (float &x : v)
    x = dist(rng);
  return v;
}

std::string errorOf(const std::function<void()> &f) {
  try {
    f();
  } catch (const SimulationError &e) {
    return e.what();
  }
  return "<no error>";
}

constexpr int64_t P = 128, F = 96;
constexpr int64_t kX = 0, kC = 8192, kA = 16384, kB = 24576, kY = 65536;

} // namespace

TEST_CASE("select picks the second source where the condition is non-zero",
          "[select]") {
  for (int queue : {kQueueVector, kQueueGpSimd}) {
    for (DType condDt : {DType::Bool, DType::F32, DType::I32}) {
      Builder b;
      load(b, "c", condDt, P, F, kC, 0);
      load(b, "a", DType::F32, P, F, kA, 1);
      load(b, "b", DType::F32, P, F, kB, 2);
      b.op(Opcode::Select, queue, sbuf(DType::F32, 0, kY, P, {F}),
           {sbuf(condDt, 0, kC, P, {F}), sbuf(DType::F32, 0, kA, P, {F}),
            sbuf(DType::F32, 0, kB, P, {F})},
           {{kQueueDma0, 1}, {kQueueDma0 + 1, 1}, {kQueueDma0 + 2, 1}});
      store(b, DType::F32, P, F, kY, {{uint16_t(queue), 1}});

      std::vector<float> a = randomFloats(P * F, 1), bv = randomFloats(P * F, 2);
      std::vector<float> condF(P * F);
      std::vector<int32_t> condI(P * F);
      std::vector<uint8_t> condB(P * F);
      for (int64_t i = 0; i < P * F; ++i) {
        int v = (i * 7 % 5 == 0) ? 0 : int(i % 3) - 1; // -1, 0, 1 mixed
        condF[i] = float(v) * 0.5f;
        condI[i] = v * 1000000;
        condB[i] = uint8_t(v != 0);
      }
      const void *cond = condDt == DType::F32   ? (const void *)condF.data()
                         : condDt == DType::I32 ? (const void *)condI.data()
                                                : (const void *)condB.data();
      std::vector<float> y(P * F, -99);
      simulate(b.prog, trn2(), {cond, a.data(), bv.data()}, {y.data()});
      for (int64_t i = 0; i < P * F; ++i)
        REQUIRE(y[i] == (condB[i] ? a[i] : bv[i]));
    }
  }
}

TEST_CASE("select on integer and bf16 values converts to dst", "[select]") {
  Builder b;
  load(b, "c", DType::Bool, P, F, kC, 0);
  load(b, "a", DType::I64, P, F, kA, 1);
  load(b, "b", DType::I32, P, F, kB, 2);
  load(b, "x", DType::BF16, P, F, kX, 3);
  std::vector<SemWait> loads = {{kQueueDma0, 1},
                                {kQueueDma0 + 1, 1},
                                {kQueueDma0 + 2, 1},
                                {kQueueDma0 + 3, 1}};
  b.op(Opcode::Select, kQueueVector, sbuf(DType::I64, 0, kY, P, {F}),
       {sbuf(DType::Bool, 0, kC, P, {F}), sbuf(DType::I64, 0, kA, P, {F}),
        sbuf(DType::I32, 0, kB, P, {F})},
       loads);
  // bf16 values, f32 condition, bf16 dst: the float path.
  b.op(Opcode::Select, kQueueGpSimd,
       sbuf(DType::BF16, 0, kY + 8192, P, {F}),
       {sbuf(DType::Bool, 0, kC, P, {F}), sbuf(DType::BF16, 0, kX, P, {F}),
        rowBroadcast(DType::BF16, kX, P, F)},
       loads);
  store(b, DType::I64, P, F, kY, {{kQueueVector, 1}});
  store(b, DType::BF16, P, F, kY + 8192, {{kQueueGpSimd, 1}});

  std::vector<uint8_t> c(P * F);
  std::vector<int64_t> a(P * F);
  std::vector<int32_t> bv(P * F);
  std::vector<uint16_t> x(P * F);
  std::vector<float> xf = randomFloats(P * F, 3);
  for (int64_t i = 0; i < P * F; ++i) {
    c[i] = uint8_t(i % 2);
    a[i] = (int64_t(1) << 40) + i; // exact in the double path
    bv[i] = int32_t(-i);
    x[i] = floatToBf16(xf[i]);
  }
  std::vector<int64_t> y0(P * F);
  std::vector<uint16_t> y1(P * F);
  simulate(b.prog, trn2(), {c.data(), a.data(), bv.data(), x.data()},
           {y0.data(), y1.data()});
  for (int64_t i = 0; i < P * F; ++i) {
    REQUIRE(y0[i] == (c[i] ? a[i] : int64_t(bv[i])));
    REQUIRE(y1[i] == (c[i] ? x[i] : x[i / F * F])); // row broadcast of col 0
  }
}

TEST_CASE("every compute instruction reads per-partition P x 1 tiles with free stride 0",
          "[broadcast]") {
  // The compiler's fusion reads a [P, 1] tile t as [[1, P], [0, F]].
  std::vector<float> x = randomFloats(P * F, 4, 0.5f, 2.0f);
  std::vector<float> col = randomFloats(P, 5, 0.5f, 2.0f);
  for (DType dt : {DType::F32, DType::BF16}) {
    auto rd = [&](float v) { return dt == DType::BF16 ? roundBf16Ref(v) : v; };
    Builder b;
    load(b, "x", DType::F32, P, F, kX, 0);
    uint32_t cb = b.input("col", DType::F32, {P, 1});
    b.dma(kQueueDma0 + 1, sbuf(DType::F32, 0, kC, P, {1}),
          hbm(cb, DType::F32, 0, {{1, P}, {1, 1}}));
    // col as dt at kA (a [P, 1] tile).
    b.op(Opcode::TensorCopy, kQueueVector, sbuf(dt, 0, kA, P, {1}),
         {sbuf(DType::F32, 0, kC, P, {1})}, {{kQueueDma0 + 1, 1}});
    std::vector<SemWait> ready = {{kQueueDma0, 1}, {kQueueVector, 1}};
    const AccessPattern bc = rowBroadcast(dt, kA, P, F);
    const int64_t row = F * 4;
    // 0: x - col (tensor_tensor)
    b.op(Opcode::TensorTensor, kQueueVector,
         sbuf(DType::F32, 0, kY + 0 * row, P, {F}),
         {sbuf(DType::F32, 0, kX, P, {F}), bc}, ready);
    b.last().alu = AluOp::Sub;
    // 1: col / x (tensor_tensor, broadcast first)
    b.op(Opcode::TensorTensor, kQueueGpSimd,
         sbuf(DType::F32, 0, kY + 1 * row, P, {F}),
         {bc, sbuf(DType::F32, 0, kX, P, {F})}, ready);
    b.last().alu = AluOp::Div;
    // 2: col * 3 (tensor_scalar)
    b.op(Opcode::TensorScalar, kQueueGpSimd,
         sbuf(DType::F32, 0, kY + 2 * row, P, {F}), {bc}, ready);
    b.last().alu = AluOp::Mul;
    b.last().imm[0] = 3;
    // 3: exp(col * 0.5 + 1) (activation)
    b.op(Opcode::Activation, kQueueScalar,
         sbuf(DType::F32, 0, kY + 3 * row, P, {F}), {bc}, ready);
    b.last().func = ActFunc::Exp;
    b.last().imm[0] = 0.5;
    b.last().imm[1] = 1;
    // 4: copy with conversion; 5: copy of the same dtype (bytewise)
    b.op(Opcode::TensorCopy, kQueueScalar,
         sbuf(DType::F32, 0, kY + 4 * row, P, {F}), {bc}, ready);
    b.op(Opcode::TensorCopy, kQueueGpSimd, sbuf(dt, 0, kB, P, {F}), {bc},
         ready);
    b.op(Opcode::TensorCopy, kQueueGpSimd,
         sbuf(DType::F32, 0, kY + 5 * row, P, {F}),
         {sbuf(dt, 0, kB, P, {F})}, {{kQueueGpSimd, 3}});
    // 6: select(x > 1, col, x) with a broadcast value operand
    b.op(Opcode::TensorScalar, kQueueVector, sbuf(DType::Bool, 0, kC + 1024, P, {F}),
         {sbuf(DType::F32, 0, kX, P, {F})}, ready);
    b.last().alu = AluOp::Gt;
    b.last().imm[0] = 1;
    b.op(Opcode::Select, kQueueVector,
         sbuf(DType::F32, 0, kY + 6 * row, P, {F}),
         {sbuf(DType::Bool, 0, kC + 1024, P, {F}), bc,
          sbuf(DType::F32, 0, kX, P, {F})});
    // 7: reduce (add) of the broadcast row: F * col
    b.op(Opcode::TensorReduce, kQueueVector,
         sbuf(DType::F32, 0, kY + 7 * row, P, {1}), {bc});
    b.last().alu = AluOp::Add;
    const int64_t outF = 7 * F + 1;
    store(b, DType::F32, P, outF, kY,
          {{kQueueVector, 5}, {kQueueScalar, 2}, {kQueueGpSimd, 4}});
    std::vector<float> y(P * outF);
    simulate(b.prog, trn2(), {x.data(), col.data()}, {y.data()});
    for (int64_t p = 0; p < P; ++p) {
      const float c = rd(col[p]);
      for (int64_t i = 0; i < F; ++i) {
        const float xi = x[p * F + i];
        const float *yr = &y[p * outF];
        REQUIRE(yr[0 * F + i] == xi - c);
        REQUIRE(yr[1 * F + i] == c / xi);
        REQUIRE(yr[2 * F + i] == c * 3);
        REQUIRE(yr[3 * F + i] == Approx(std::exp(c * 0.5f + 1)).epsilon(1e-6));
        REQUIRE(yr[4 * F + i] == c);
        REQUIRE(yr[5 * F + i] == c);
        REQUIRE(yr[6 * F + i] == (xi > 1 ? c : xi));
      }
      REQUIRE(y[p * outF + 7 * F] == Approx(c * F).epsilon(1e-5));
    }
  }
}

TEST_CASE("broadcast operands: costs", "[broadcast][cost]") {
  Program p;
  Instruction tt;
  tt.opcode = Opcode::TensorTensor;
  tt.queue = kQueueVector;
  tt.alu = AluOp::Max;
  tt.dst = sbuf(DType::F32, 0, 0, P, {512});
  tt.srcs = {sbuf(DType::F32, 0, 4096, P, {512}),
             rowBroadcast(DType::F32, 8192, P, 512)};
  p.instructions = {tt};
  InstrShape sh = checkInstruction(p, trn2(), 0);
  // A per-partition operand runs as a tensor_scalar: N, not 2N.
  CHECK(computeCycles(trn2(), tt, sh) == 512);
  tt.srcs[1] = sbuf(DType::F32, 0, 8192, P, {512});
  CHECK(computeCycles(trn2(), tt, sh) == 1024);

  Instruction sel;
  sel.opcode = Opcode::Select;
  sel.queue = kQueueGpSimd;
  sel.dst = sbuf(DType::F32, 0, 0, P, {512});
  sel.srcs = {sbuf(DType::Bool, 0, 4096, P, {512}),
              sbuf(DType::F32, 0, 8192, P, {512}),
              rowBroadcast(DType::F32, 16384, P, 512)};
  p.instructions = {sel};
  sh = checkInstruction(p, trn2(), 0);
  CHECK(computeCycles(trn2(), sel, sh) == 1024); // ESTIMATE: 2N
  CHECK(computeCost(trn2(), sel, sh).busyNs == Approx((1024 + 60) / 1.2));
  sel.dst = sbuf(DType::F32, 0, 0, P, {16});
  for (auto &s : sel.srcs)
    s.dims.back()[1] = 16;
  p.instructions = {sel};
  sh = checkInstruction(p, trn2(), 0);
  CHECK(computeCycles(trn2(), sel, sh) == 64); // MIN_II
}

TEST_CASE("select checks engines and operand shapes", "[select][checks]") {
  Builder b;
  b.op(Opcode::Select, kQueueScalar, sbuf(DType::F32, 0, 0, P, {F}),
       {sbuf(DType::Bool, 0, kC, P, {F}), sbuf(DType::F32, 0, kA, P, {F}),
        sbuf(DType::F32, 0, kB, P, {F})});
  CHECK_THAT(errorOf([&] { checkInstruction(b.prog, trn2(), 0); }),
             Contains("instruction 0 (select): cannot run on the scalar engine"));
  b.last().queue = kQueueVector;
  b.last().srcs.pop_back();
  CHECK_THAT(errorOf([&] { checkInstruction(b.prog, trn2(), 0); }),
             Contains("expects 3 source operand(s), got 2"));
  b.last().srcs.push_back(sbuf(DType::F32, 0, kB, P, {F + 1}));
  CHECK_THAT(errorOf([&] { checkInstruction(b.prog, trn2(), 0); }),
             Contains("srcs[2] has 97 elements per partition but dst has 96"));
}

namespace {

/// table [R, W] (dt) in HBM; indices [P, 1] (idxDt) loaded to SBUF; gathers
/// columns [col, col + n) of rows idx[p] into SBUF and stores them.
struct GatherProgram {
  Builder b;
  size_t gather = 0;
  GatherProgram(DType dt, DType idxDt, int64_t rows, int64_t width,
                int64_t parts, int64_t col, int64_t n) {
    uint32_t t = b.input("table", dt, {rows, width});
    uint32_t ib = b.input("idx", idxDt, {parts, 1});
    b.dma(kQueueDma0, sbuf(idxDt, 0, 0, parts, {1}),
          hbm(ib, idxDt, 0, {{1, parts}, {1, 1}}));
    Instruction g;
    g.opcode = Opcode::DmaGather;
    g.queue = kQueueDma0 + 1;
    g.dst = sbuf(dt, 0, 4096, parts, {n});
    g.srcs = {hbm(t, dt, col, {{width, rows}, {1, n}}),
              sbuf(idxDt, 0, 0, parts, {1})};
    g.waits = {{kQueueDma0, 1}};
    gather = b.add(g);
    store(b, dt, parts, n, 4096, {{kQueueDma0 + 1, 1}});
  }
};

} // namespace

TEST_CASE("dma_gather copies table rows picked by an index tile",
          "[gather]") {
  const int64_t rows = 50, width = 40, col = 3, n = 20;
  std::vector<float> table = randomFloats(rows * width, 6);
  for (DType idxDt : {DType::I32, DType::I64}) {
    for (int64_t parts : {int64_t(1), int64_t(7), P}) {
      GatherProgram g(DType::F32, idxDt, rows, width, parts, col, n);
      std::vector<int64_t> idx64(parts);
      std::vector<int32_t> idx32(parts);
      for (int64_t p = 0; p < parts; ++p)
        idx64[p] = idx32[p] = int32_t((p * 37 + 11) % rows);
      const void *idx = idxDt == DType::I32 ? (const void *)idx32.data()
                                            : (const void *)idx64.data();
      std::vector<float> y(parts * n);
      RunStats s = simulate(g.b.prog, trn2(), {table.data(), idx}, {y.data()});
      for (int64_t p = 0; p < parts; ++p)
        for (int64_t i = 0; i < n; ++i)
          REQUIRE(y[p * n + i] == table[idx64[p] * width + col + i]);
      // The gather reads parts * n elements from HBM; the store writes them.
      const uint64_t idxBytes = uint64_t(parts * dtypeSize(idxDt));
      CHECK(s.hbmBytes == idxBytes + 2 * uint64_t(parts * n * 4));
      CHECK(s.dmaTransfers == 3);
    }
  }
}

TEST_CASE("dma_gather of bf16 embedding rows", "[gather]") {
  const int64_t rows = 1000, width = 64;
  std::vector<uint16_t> table(rows * width);
  for (size_t i = 0; i < table.size(); ++i)
    table[i] = uint16_t(i * 2654435761u >> 16);
  GatherProgram g(DType::BF16, DType::I64, rows, width, P, 0, width);
  std::vector<int64_t> idx(P);
  for (int64_t p = 0; p < P; ++p)
    idx[p] = rows - 1 - p * 5;
  std::vector<uint16_t> y(P * width);
  simulate(g.b.prog, trn2(), {table.data(), idx.data()}, {y.data()});
  for (int64_t p = 0; p < P; ++p)
    for (int64_t i = 0; i < width; ++i)
      REQUIRE(y[p * width + i] == table[idx[p] * width + i]);
}

TEST_CASE("dma_gather rejects indices outside the table", "[gather][checks]") {
  const int64_t rows = 5, width = 8;
  std::vector<float> table(rows * width, 1.0f);
  for (int64_t bad : {int64_t(5), int64_t(-1), int64_t(1) << 40}) {
    GatherProgram g(DType::F32, DType::I64, rows, width, 4, 0, width);
    std::vector<int64_t> idx = {0, 4, bad, 1};
    std::vector<float> y(4 * width);
    std::string e = errorOf([&] {
      simulate(g.b.prog, trn2(), {table.data(), idx.data()}, {y.data()});
    });
    CHECK_THAT(e, Contains("instruction 1 (dma_gather): index " +
                           std::to_string(bad) +
                           " (partition 2) is outside the table's 5 rows"));
    // With an origin, the message names the ATen node too.
    g.b.prog.origins = {"aten.embedding.default at model.py:7"};
    g.b.prog.instructions[g.gather].origin = 0;
    CHECK_THAT(errorOf([&] {
                 simulate(g.b.prog, trn2(), {table.data(), idx.data()}, {y.data()});
               }),
               Contains("rows (from aten.embedding.default at model.py:7)"));
    // Timing-only runs read no data: no error, same timing.
    RunOptions o;
    o.timingOnly = true;
    CHECK_NOTHROW(simulate(g.b.prog, trn2(), {}, {}, o));
  }
}

TEST_CASE("dma_gather checks its operands", "[gather][checks]") {
  GatherProgram g(DType::F32, DType::I32, 10, 8, 16, 0, 8);
  Program &p = g.b.prog;
  Instruction &in = p.instructions[g.gather];
  auto err = [&] { return errorOf([&] { checkInstruction(p, trn2(), 1); }); };
  CHECK_NOTHROW(checkInstruction(p, trn2(), 1));
  SECTION("index dtype") {
    in.srcs[1].dtype = DType::F32;
    CHECK_THAT(err(), Contains("instruction 1 (dma_gather): index dtype f32 "
                               "is not supported (i32, i64)"));
  }
  SECTION("index tile shape") {
    in.srcs[1] = sbuf(DType::I32, 0, 0, 16, {2});
    CHECK_THAT(err(), Contains("srcs[1] must be a [16, 1] index tile, got [16, 2]"));
  }
  SECTION("row width") {
    in.dst = sbuf(DType::F32, 0, 4096, 16, {6});
    CHECK_THAT(err(), Contains("dst has 6 elements per partition but a table "
                               "row has 8"));
  }
  SECTION("table bounds") {
    in.srcs[0].dims[0][1] = 11;
    CHECK_THAT(err(), Contains("outside buffer 0 (\"table\") of 80 elements"));
  }
  SECTION("spaces and engines") {
    in.queue = kQueueVector;
    CHECK_THAT(err(), Contains("cannot run on the vector engine"));
    in.queue = kQueueDma0 + 1;
    in.dst.space = MemSpace::Psum;
    CHECK_THAT(err(), Contains("dst must be in SBUF, not PSUM"));
  }
  SECTION("dtype") {
    in.dst.dtype = DType::BF16;
    CHECK_THAT(err(), Contains("dst dtype bf16 differs from the table dtype f32"));
  }
}

TEST_CASE("dma_gather costs one descriptor per row", "[gather][timing]") {
  for (const char *name : {"trn1", "trn2", "trn3"}) {
    const Target &t = *findTarget(name);
    for (int64_t width : {int64_t(64), int64_t(512), int64_t(1024)}) {
      GatherProgram g(DType::F32, DType::I32, 1000, width, P, 0, width);
      g.b.prog.target = name;
      std::vector<InstructionTiming> tl;
      RunOptions o;
      o.timingOnly = true;
      o.timeline = &tl;
      simulate(g.b.prog, t, {}, {}, o);
      const int64_t rowBytes = width * 4;
      const double expect = double(P) * dmaDescriptorNs(t, rowBytes);
      const InstructionTiming &gt = tl[g.gather];
      CHECK(gt.endNs - gt.startNs == Approx(expect));
      // Rows shorter than the descriptor rate limit (2438 B) are slower than full rate.
      if (rowBytes < t.dmaDescriptorMinBytes)
        CHECK(expect > double(P * rowBytes) / t.dmaBytesPerNsPerQueue);
      else
        CHECK(expect == Approx(double(P * rowBytes) / t.dmaBytesPerNsPerQueue));
    }
  }
}

TEST_CASE("select and dma_gather survive JSON and CBOR round trips",
          "[serialize][gather][select]") {
  GatherProgram g(DType::F32, DType::I64, 10, 8, 16, 2, 4);
  g.b.op(Opcode::Select, kQueueGpSimd, sbuf(DType::F32, 0, 8192, 16, {4}),
         {sbuf(DType::Bool, 0, 0, 16, {4}), rowBroadcast(DType::F32, 64, 16, 4),
          sbuf(DType::F32, 0, 4096, 16, {4})});
  const Program &p = g.b.prog;
  std::string text = programToJson(p);
  CHECK_THAT(text, Contains("\"op\":\"dma_gather\""));
  CHECK_THAT(text, Contains("\"op\":\"select\""));
  CHECK_THAT(text, Contains("\"dims\":[[1,16],[0,4]]"));
  Program fromJson = programFromJson(text);
  Program fromCbor = programFromCbor(programToCbor(p));
  CHECK(programToJson(fromJson) == text);
  CHECK(programToJson(fromCbor) == text);
  const Instruction &gi = fromCbor.instructions[g.gather];
  CHECK(gi.opcode == Opcode::DmaGather);
  CHECK(gi.srcs.size() == 2);
  CHECK(gi.srcs[0].offset == 2);
  CHECK(gi.srcs[0].dims[0][0] == 8);
  CHECK(fromCbor.instructions.back().opcode == Opcode::Select);
  CHECK(fromCbor.instructions.back().srcs[1].dims[1][0] == 0);
}

TEST_CASE("tensor_reduce over the free dim into P x 1 for every dtype",
          "[reduce]") {
  // Row reductions as the compiler emits them: [P, F] -> [P, 1], axes = 1.
  const int64_t f = 300;
  std::mt19937 rng(7);
  for (DType dt : {DType::F32, DType::BF16, DType::I32, DType::I64,
                   DType::Bool}) {
    for (AluOp op : {AluOp::Add, AluOp::Max, AluOp::Min}) {
      Builder b;
      uint32_t in = b.input("x", dt, {P, f});
      b.dma(kQueueDma0, sbuf(dt, 0, 0, P, {f}),
            hbm(in, dt, 0, {{f, P}, {1, f}}));
      // Sums of bools count (i64 dst, as torch's sum); max/min stay i1.
      DType outDt = (dt == DType::Bool && op == AluOp::Add) ? DType::I64 : dt;
      b.op(Opcode::TensorReduce, kQueueVector, sbuf(outDt, 0, 4096, P, {1}),
           {sbuf(dt, 0, 0, P, {f})}, {{kQueueDma0, 1}});
      b.last().alu = op;
      store(b, outDt, P, 1, 4096, {{kQueueVector, 1}});

      std::vector<double> vals(P * f);
      for (int64_t i = 0; i < P * f; ++i) {
        const int64_t p = i / f;
        if (dt == DType::Bool) // rows: all false, all true, mixed
          vals[i] = p % 3 == 0 ? 0 : p % 3 == 1 ? 1 : double(rng() % 2);
        else
          vals[i] = double(int(rng() % 2001) - 1000) / (isIntegerDType(dt) ? 1 : 8);
      }
      std::vector<uint8_t> raw(P * f * dtypeSize(dt));
      storeRun(raw.data(), dtypeSize(dt), dt, vals.data(), P * f);
      loadRun(raw.data(), dtypeSize(dt), dt, vals.data(), P * f); // as stored
      std::vector<uint8_t> out(P * dtypeSize(outDt));
      simulate(b.prog, trn2(), {raw.data()}, {out.data()});
      std::vector<double> got(P);
      loadRun(out.data(), dtypeSize(outDt), outDt, got.data(), P);
      for (int64_t p = 0; p < P; ++p) {
        double want = op == AluOp::Add ? 0 : vals[p * f];
        for (int64_t i = 0; i < f; ++i) {
          const double v = vals[p * f + i];
          want = op == AluOp::Add   ? want + v
                 : op == AluOp::Max ? std::max(want, v)
                                    : std::min(want, v);
        }
        INFO("dtype " << dtypeName(dt) << ", op " << aluOpName(op) << ", row " << p);
        if (dt == DType::BF16 && op == AluOp::Add) // fp32 sum, bf16 result
          REQUIRE(got[p] == Approx(want).epsilon(1e-2).margin(0.5));
        else
          REQUIRE(got[p] == want);
      }
    }
  }
}

// Tests of the instruction set of Isa.def beyond the elementwise core: each instruction's
// numbers against a reference computed here (bit-exact where the hardware is exact:
// transposes, predicated copies, top-8 search), its legality per engine and generation, its
// cost against the documented formula, and the table itself.
#include "runtime/program/Isa.h"
#include "runtime/program/Serialize.h"
#include "runtime/simulator/Checks.h"
#include "runtime/simulator/Simulator.h"
#include "runtime/simulator/timing/CostModel.h"

#include "IsaHarness.h"
#include "ProgramBuilder.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <random>
#include <set>

using namespace neuron::runtime;
using namespace neuron::runtime::test;
using Catch::Matchers::Contains;
using neuron::runtime::test::isa::bits;
using neuron::runtime::test::isa::make;
using neuron::runtime::test::isa::randoms;
using neuron::runtime::test::isa::target;

namespace {

/// A program that loads f32 [rows, cols] inputs into SBUF tiles, runs one instruction on
/// them and stores its dst: the harness of the numeric tests.
struct OneOp {
  Builder b;
  std::vector<std::vector<float>> data;
  int64_t sbufOffset = 0;
  int queue = 0;

  explicit OneOp(const char *targetName = "trn2") { b.prog.target = targetName; }

  /// An SBUF tile holding `values` ([rows, cols] row-major), loaded by its own DMA.
  AccessPattern in(int64_t rows, int64_t cols, std::vector<float> values) {
    uint32_t buf = b.input("in" + std::to_string(data.size()), DType::F32, {rows, cols});
    AccessPattern tile = sbuf(DType::F32, 0, sbufOffset, rows, {cols});
    sbufOffset += cols * 4;
    b.dma(kQueueDma0 + (queue++ % 8), tile, hbm(buf, DType::F32, 0, {{cols, rows}, {1, cols}}));
    data.push_back(std::move(values));
    return tile;
  }
  AccessPattern tile(int64_t rows, int64_t cols, DType dt = DType::F32) {
    AccessPattern t = sbuf(dt, 0, sbufOffset, rows, {cols});
    sbufOffset += cols * 4;
    return t;
  }
  /// Runs `inst` (dst and srcs set) and returns dst ([rows, cols]) as T.
  template <class T = float> std::vector<T> run(Instruction inst, DType outType = DType::F32) {
    const int64_t rows = inst.dst.dims[0][1], cols = inst.dst.numElements() / rows;
    b.add(inst);
    uint32_t out = b.output("out", outType, {rows, cols});
    b.dma(kQueueDma0 + 9, hbm(out, outType, 0, {{cols, rows}, {1, cols}}), inst.dst);
    b.sequential();
    std::vector<T> result(size_t(rows * cols));
    std::vector<const void *> ins;
    for (const auto &d : data)
      ins.push_back(d.data());
    simulate(b.prog, *findTarget(b.prog.target), ins, {result.data()});
    return result;
  }
};

double cyclesOf(const Target &t, Instruction in, std::vector<BufferDecl> buffers = {});


} // namespace

TEST_CASE("the ISA table: one row per opcode, NKI names unique and round-tripping",
          "[isa]") {
  std::set<std::string> names;
  for (int i = 0; i < kNumOpcodes; ++i) {
    const InstructionInfo &info = instructionInfo(Opcode(i));
    CHECK(int(info.opcode) == i);
    CHECK(names.insert(info.name).second);
    CHECK(info.engines != 0);
    CHECK(info.generations != 0);
    Opcode back;
    REQUIRE(parseOpcode(info.name, back));
    CHECK(back == Opcode(i));
  }
  CHECK(std::string(opcodeName(Opcode::Matmul)) == "nc_matmul");
  CHECK(std::string(opcodeName(Opcode::Transpose)) == "nc_transpose");
  CHECK(runsOn(Opcode::Transpose, Engine::Tensor));
  CHECK(runsOn(Opcode::Transpose, Engine::Vector));
  CHECK_FALSE(runsOn(Opcode::Transpose, Engine::Scalar));
  CHECK_FALSE(existsOn(Opcode::DmaTranspose, Generation::Trn1));
  CHECK(existsOn(Opcode::DmaTranspose, Generation::Trn2));
  CHECK(target("trn1").generation == Generation::Trn1);
  CHECK(target("trn2-lnc2").generation == Generation::Trn2);
  CHECK(target("trn3").generation == Generation::Trn3);
}

TEST_CASE("tensor_scalar with two ops and a per-partition scalar is one instruction",
          "[isa]") {
  constexpr int64_t P = 8, F = 16;
  const std::vector<float> x = randoms(P * F, 1), s = randoms(P, 2);
  SECTION("two immediates: 1 - (x * 3)") {
    OneOp t;
    Instruction in = make(Opcode::TensorScalar, kQueueVector, t.tile(P, F), {t.in(P, F, x)});
    in.alu = AluOp::Mul;
    in.imm[0] = 3;
    in.twoOps = true;
    in.alu2 = AluOp::Sub;
    in.imm[1] = 1;
    in.reverse2 = true;
    std::vector<float> y = t.run(in);
    for (size_t i = 0; i < y.size(); ++i)
      CHECK(y[i] == 1.0f - x[i] * 3.0f);
  }
  SECTION("a per-partition scalar then an immediate: (x - s[p]) * 0.5") {
    OneOp t;
    AccessPattern xs = t.in(P, F, x);
    AccessPattern sp = t.in(P, 1, s);
    sp.dims.back() = {0, F}; // read along the row
    Instruction in = make(Opcode::TensorScalar, kQueueVector, t.tile(P, F), {xs, sp});
    in.alu = AluOp::Sub;
    in.scaleTile = true;
    in.twoOps = true;
    in.alu2 = AluOp::Mul;
    in.imm[1] = 0.5;
    std::vector<float> y = t.run(in);
    for (int64_t p = 0; p < P; ++p)
      for (int64_t f = 0; f < F; ++f)
        CHECK(y[size_t(p * F + f)] == (x[size_t(p * F + f)] - s[size_t(p)]) * 0.5f);
  }
  SECTION("only a tensor_scalar has two ops") {
    OneOp t;
    Instruction in = make(Opcode::TensorTensor, kQueueVector, t.tile(P, F),
                          {t.in(P, F, x), t.in(P, F, x)});
    in.twoOps = true;
    CHECK_THROWS_WITH(t.run(in), Contains("only a tensor_scalar has two ops"));
  }
}

TEST_CASE("scalar_tensor_tensor: (x op0 scalar) op1 y", "[isa]") {
  constexpr int64_t P = 16, F = 10;
  const std::vector<float> x = randoms(P * F, 3), y = randoms(P * F, 4), s = randoms(P, 5);
  OneOp t;
  AccessPattern xs = t.in(P, F, x), ys = t.in(P, F, y), sp = t.in(P, 1, s);
  sp.dims.back() = {0, F};
  Instruction in = make(Opcode::ScalarTensorTensor, kQueueVector, t.tile(P, F), {xs, ys, sp});
  in.alu = AluOp::Sub; // (x - mean) * rstd style
  in.alu2 = AluOp::Mul;
  in.scaleTile = true;
  std::vector<float> out = t.run(in);
  for (int64_t p = 0; p < P; ++p)
    for (int64_t f = 0; f < F; ++f) {
      const size_t k = size_t(p * F + f);
      CHECK(out[k] == (x[k] - s[size_t(p)]) * y[k]);
    }
}

TEST_CASE("reciprocal is 1 / x in fp32", "[isa]") {
  const std::vector<float> x = randoms(4 * 32, 6, 0.1f, 9.0f);
  OneOp t;
  std::vector<float> y =
      t.run(make(Opcode::Reciprocal, kQueueVector, t.tile(4, 32), {t.in(4, 32, x)}));
  for (size_t i = 0; i < y.size(); ++i)
    CHECK(y[i] == 1.0f / x[i]);
}

TEST_CASE("bn_stats then bn_aggr give each partition's mean and variance", "[isa]") {
  constexpr int64_t P = 32, F = 700; // two bn_stats calls: 512 + 188 elements
  std::vector<float> x = randoms(P * F, 7, -3, 5);
  OneOp t;
  AccessPattern xs = t.in(P, F, x);
  AccessPattern stats = t.tile(P, 12);
  AccessPattern first = xs, second = xs;
  first.dims.back() = {1, 512};
  second.dims.back() = {1, F - 512};
  second.offset += 512 * 4;
  AccessPattern stats0 = stats, stats1 = stats;
  stats0.dims.back() = {1, 6};
  stats1.dims.back() = {1, 6};
  stats1.offset += 6 * 4;
  t.b.add(make(Opcode::BnStats, kQueueVector, stats0, {first}));
  t.b.add(make(Opcode::BnStats, kQueueVector, stats1, {second}));
  std::vector<float> mv = t.run(make(Opcode::BnAggr, kQueueVector, t.tile(P, 2), {stats}));
  for (int64_t p = 0; p < P; ++p) {
    double mean = 0, var = 0;
    for (int64_t f = 0; f < F; ++f)
      mean += x[size_t(p * F + f)];
    mean /= F;
    for (int64_t f = 0; f < F; ++f)
      var += (x[size_t(p * F + f)] - mean) * (x[size_t(p * F + f)] - mean);
    var /= F;
    CHECK(mv[size_t(2 * p)] == Approx(mean).margin(1e-5));
    CHECK(mv[size_t(2 * p + 1)] == Approx(var).epsilon(1e-5));
  }
}

TEST_CASE("bn_stats takes at most 512 elements, bn_aggr groups of 6", "[isa]") {
  OneOp t;
  CHECK_THROWS_WITH(t.run(make(Opcode::BnStats, kQueueVector, t.tile(4, 6),
                               {t.in(4, 513, randoms(4 * 513, 1))})),
                    Contains("at most 512 elements per partition"));
  OneOp u;
  CHECK_THROWS_WITH(u.run(make(Opcode::BnAggr, kQueueVector, u.tile(4, 2),
                               {u.in(4, 7, randoms(28, 1))})),
                    Contains("6 values each"));
}

TEST_CASE("tensor_tensor_scan is a running (a op0 r) op1 b", "[isa]") {
  constexpr int64_t P = 4, F = 50;
  const std::vector<float> a = randoms(P * F, 8, 0.5f, 1.0f), bv = randoms(P * F, 9);
  OneOp t;
  Instruction in = make(Opcode::TensorTensorScan, kQueueVector, t.tile(P, F),
                        {t.in(P, F, a), t.in(P, F, bv)});
  in.alu = AluOp::Mul; // r = a[i] * r + b[i]: a decayed cumulative sum (selective scan)
  in.alu2 = AluOp::Add;
  in.imm[0] = 0.25;
  std::vector<float> y = t.run(in);
  for (int64_t p = 0; p < P; ++p) {
    float r = 0.25f;
    for (int64_t i = 0; i < F; ++i) {
      r = a[size_t(p * F + i)] * r + bv[size_t(p * F + i)];
      CHECK(y[size_t(p * F + i)] == r);
    }
  }
}

TEST_CASE("tensor_tensor_scan starts each partition from an initial tile", "[isa]") {
  constexpr int64_t P = 8, F = 20;
  const std::vector<float> a = randoms(P * F, 11, 0.5f, 1.0f), bv = randoms(P * F, 12),
                           init = randoms(P, 13);
  OneOp t;
  AccessPattern r0 = t.in(P, 1, init);
  r0.dims.back() = {0, F};
  Instruction in = make(Opcode::TensorTensorScan, kQueueVector, t.tile(P, F),
                        {t.in(P, F, a), t.in(P, F, bv), r0});
  in.alu = AluOp::Mul;
  in.alu2 = AluOp::Add;
  in.scaleTile = true; // a chunk of a longer scan: r starts at the previous chunk's last column
  std::vector<float> y = t.run(in);
  for (int64_t p = 0; p < P; ++p) {
    float r = init[size_t(p)];
    for (int64_t i = 0; i < F; ++i) {
      r = a[size_t(p * F + i)] * r + bv[size_t(p * F + i)];
      CHECK(y[size_t(p * F + i)] == r);
    }
  }
}

TEST_CASE("tensor_partition_reduce reduces across partitions on GpSimd", "[isa]") {
  constexpr int64_t P = 128, F = 20;
  const std::vector<float> x = randoms(P * F, 10);
  for (AluOp op : {AluOp::Add, AluOp::Max}) {
    OneOp t;
    Instruction in =
        make(Opcode::TensorPartitionReduce, kQueueGpSimd, t.tile(1, F), {t.in(P, F, x)});
    in.alu = op;
    std::vector<float> y = t.run(in);
    for (int64_t f = 0; f < F; ++f) {
      float r = x[size_t(f)];
      for (int64_t p = 1; p < P; ++p)
        r = op == AluOp::Add ? r + x[size_t(p * F + f)] : std::max(r, x[size_t(p * F + f)]);
      CHECK(y[size_t(f)] == r);
    }
  }
  OneOp t;
  Instruction in =
      make(Opcode::TensorPartitionReduce, kQueueVector, t.tile(1, F), {t.in(P, F, x)});
  CHECK_THROWS_WITH(t.run(in), Contains("cannot run on the vector engine (queue 1); it runs "
                                        "on gpsimd"));
}

TEST_CASE("nc_transpose on the Tensor and Vector engines is bit-exact", "[isa]") {
  std::vector<float> x = randoms(128 * 64, 11);
  x[5] = std::numeric_limits<float>::quiet_NaN();
  x[77] = -std::numeric_limits<float>::infinity();
  x[100] = -0.0f;
  SECTION("Tensor engine: SBUF [128, 64] -> PSUM [64, 128]") {
    OneOp t;
    Instruction in = make(Opcode::Transpose, kQueueTensor, psum(DType::F32, 0, 0, 64, {128}),
                          {t.in(128, 64, x)});
    std::vector<float> y = t.run(in);
    for (int64_t r = 0; r < 128; ++r)
      for (int64_t c = 0; c < 64; ++c)
        CHECK(bits(y[size_t(c * 128 + r)]) == bits(x[size_t(r * 64 + c)]));
  }
  SECTION("Vector engine: at most 32 x 32") {
    std::vector<float> small(32 * 16);
    std::copy(x.begin(), x.begin() + 32 * 16, small.begin());
    OneOp t;
    std::vector<float> y = t.run(
        make(Opcode::Transpose, kQueueVector, t.tile(16, 32), {t.in(32, 16, small)}));
    for (int64_t r = 0; r < 32; ++r)
      for (int64_t c = 0; c < 16; ++c)
        CHECK(bits(y[size_t(c * 32 + r)]) == bits(small[size_t(r * 16 + c)]));
    OneOp u;
    CHECK_THROWS_WITH(u.run(make(Opcode::Transpose, kQueueVector, u.tile(64, 128),
                                 {u.in(128, 64, x)})),
                      Contains("tiles of at most 32 x 32"));
  }
}

TEST_CASE("dma_transpose moves HBM rows x cols into SBUF cols x rows, trn2 and later",
          "[isa]") {
  constexpr int64_t R = 48, C = 128;
  std::vector<int32_t> x(R * C);
  for (size_t i = 0; i < x.size(); ++i)
    x[i] = int32_t(i * 2654435761u); // every bit pattern matters
  for (const char *name : {"trn2", "trn3", "trn1"}) {
    Builder b;
    b.prog.target = name;
    uint32_t in = b.input("x", DType::I32, {R, C});
    uint32_t out = b.output("y", DType::I32, {C, R});
    Instruction tr = make(Opcode::DmaTranspose, kQueueDma0, sbuf(DType::I32, 0, 0, C, {R}),
                          {hbm(in, DType::I32, 0, {{C, R}, {1, C}})});
    b.add(tr);
    b.dma(kQueueDma0 + 1, hbm(out, DType::I32, 0, {{R, C}, {1, R}}),
          sbuf(DType::I32, 0, 0, C, {R}));
    b.sequential();
    std::vector<int32_t> y(size_t(R * C));
    if (std::string(name) == "trn1") {
      CHECK_THROWS_WITH(simulate(b.prog, target(name), {x.data()}, {y.data()}),
                        Contains("(dma_transpose): is not an instruction of trn1 (NC-v2); it "
                                 "exists on trn2, trn3"));
      continue;
    }
    RunStats s = simulate(b.prog, target(name), {x.data()}, {y.data()});
    for (int64_t r = 0; r < R; ++r)
      for (int64_t c = 0; c < C; ++c)
        CHECK(y[size_t(c * R + r)] == x[size_t(r * C + c)]);
    (void)s;
  }
}

TEST_CASE("max8, nc_find_index8 and nc_match_replace8 iterate a top-k", "[isa]") {
  constexpr int64_t P = 4, F = 40;
  std::vector<float> x = randoms(P * F, 12);
  OneOp t;
  AccessPattern xs = t.in(P, F, x);
  AccessPattern top = t.tile(P, 8), idx = t.tile(P, 8, DType::I32), rest = t.tile(P, F),
                top2 = t.tile(P, 8);
  t.b.add(make(Opcode::Max8, kQueueVector, top, {xs}));
  t.b.add(make(Opcode::FindIndex8, kQueueVector, idx, {xs, top}));
  Instruction replace = make(Opcode::MatchReplace8, kQueueVector, rest, {xs, top});
  replace.imm[0] = -std::numeric_limits<double>::infinity();
  t.b.add(replace);
  std::vector<float> next = t.run(make(Opcode::Max8, kQueueVector, top2, {rest}));
  // The second max8 after replacing the first 8 gives ranks 8..15.
  for (int64_t p = 0; p < P; ++p) {
    std::vector<float> row(x.begin() + p * F, x.begin() + (p + 1) * F);
    std::sort(row.begin(), row.end(), std::greater<float>());
    for (int k = 0; k < 8; ++k)
      CHECK(next[size_t(p * 8 + k)] == row[size_t(8 + k)]);
  }
  // The indices of the first 8, read back on their own.
  OneOp u;
  AccessPattern xs2 = u.in(P, F, x);
  AccessPattern top3 = u.tile(P, 8);
  u.b.add(make(Opcode::Max8, kQueueVector, top3, {xs2}));
  std::vector<int32_t> at =
      u.run<int32_t>(make(Opcode::FindIndex8, kQueueVector, u.tile(P, 8, DType::I32), {xs2, top3}),
                     DType::I32);
  for (int64_t p = 0; p < P; ++p) {
    std::vector<float> row(x.begin() + p * F, x.begin() + (p + 1) * F);
    std::vector<float> sorted = row;
    std::sort(sorted.begin(), sorted.end(), std::greater<float>());
    for (int k = 0; k < 8; ++k)
      CHECK(row[size_t(at[size_t(p * 8 + k)])] == sorted[size_t(k)]);
  }
}

TEST_CASE("tensor_copy_predicated copies where the predicate holds, bit-exact", "[isa]") {
  constexpr int64_t P = 8, F = 12;
  const std::vector<float> x = randoms(P * F, 13), old = randoms(P * F, 14);
  std::vector<float> pred(P * F);
  for (size_t i = 0; i < pred.size(); ++i)
    pred[i] = float(i % 3 == 0);
  for (bool reverse : {false, true}) {
    OneOp t;
    AccessPattern xs = t.in(P, F, x), ps = t.in(P, F, pred), dst = t.in(P, F, old);
    Instruction in = make(Opcode::CopyPredicated, kQueueVector, dst, {xs, ps});
    in.reverse = reverse;
    std::vector<float> y = t.run(in);
    for (size_t i = 0; i < y.size(); ++i)
      CHECK(bits(y[i]) == bits((pred[i] != 0) != reverse ? x[i] : old[i]));
  }
}

TEST_CASE("affine_select masks by an affine function of the indices (a causal mask)", "[isa]") {
  constexpr int64_t P = 16, F = 24;
  const std::vector<float> x = randoms(P * F, 15);
  OneOp t;
  // Keep element (p, f) where (p + 4) - f >= 0: row p of a causal block offset by 4.
  Instruction in = make(Opcode::AffineSelect, kQueueGpSimd, t.tile(P, F), {t.in(P, F, x)});
  in.alu = AluOp::Ge;
  in.affine = {4, 1, -1};
  in.imm[0] = -std::numeric_limits<double>::infinity();
  std::vector<float> y = t.run(in);
  for (int64_t p = 0; p < P; ++p)
    for (int64_t f = 0; f < F; ++f)
      CHECK(bits(y[size_t(p * F + f)]) ==
            bits(p + 4 - f >= 0 ? x[size_t(p * F + f)] : -std::numeric_limits<float>::infinity()));
  OneOp u;
  Instruction bad = make(Opcode::AffineSelect, kQueueGpSimd, u.tile(P, F), {u.in(P, F, x)});
  bad.alu = AluOp::Ge;
  bad.affine = {0, 1};
  CHECK_THROWS_WITH(u.run(bad), Contains("needs 3 affine coefficients"));
  CHECK(cyclesOf(target("trn2"), in) == 150 + F);
}

TEST_CASE("new instructions survive JSON and CBOR round trips", "[isa][serialize]") {
  Builder b;
  Instruction in = make(Opcode::TensorScalar, kQueueVector, sbuf(DType::F32, 0, 0, 8, {8}),
                        {sbuf(DType::F32, 0, 64, 8, {8})});
  in.alu = AluOp::Mul;
  in.twoOps = true;
  in.alu2 = AluOp::Sub;
  in.reverse2 = true;
  in.imm[0] = 2;
  in.imm[1] = 3;
  b.add(in);
  Instruction stt = make(Opcode::ScalarTensorTensor, kQueueVector, sbuf(DType::F32, 0, 0, 8, {8}),
                         {sbuf(DType::F32, 0, 64, 8, {8}), sbuf(DType::F32, 0, 128, 8, {8})});
  stt.alu = AluOp::Sub;
  stt.alu2 = AluOp::Mul;
  b.add(stt);
  for (const Program &p : {programFromJson(programToJson(b.prog)),
                           programFromCbor(programToCbor(b.prog))}) {
    REQUIRE(p.instructions.size() == 2);
    const Instruction &a = p.instructions[0];
    CHECK(a.opcode == Opcode::TensorScalar);
    CHECK(a.twoOps);
    CHECK(a.alu2 == AluOp::Sub);
    CHECK(a.reverse2);
    CHECK(a.imm[1] == 3);
    CHECK(p.instructions[1].opcode == Opcode::ScalarTensorTensor);
    CHECK(p.instructions[1].alu2 == AluOp::Mul);
  }
  CHECK_THAT(programToJson(b.prog), Contains("\"op\":\"scalar_tensor_tensor\""));
}

namespace {

/// Cycles of a one-instruction program's instruction on `t`, from the cost model.
double cyclesOf(const Target &t, Instruction in, std::vector<BufferDecl> buffers) {
  Program p;
  p.target = t.name;
  p.buffers = std::move(buffers);
  p.instructions = {std::move(in)};
  return computeCycles(t, p.instructions[0], checkInstruction(p, t, 0));
}

double atLeastMinII(double c) { return std::max(c, 64.0); }

} // namespace

TEST_CASE("every compute instruction costs its documented formula on every target",
          "[isa][cost]") {
  for (const char *name : {"trn1", "trn2", "trn3"}) {
    const Target &t = target(name);
    const bool nc2 = t.generation == Generation::Trn1;
    for (int64_t n : {int64_t(16), int64_t(256), int64_t(512)}) {
      INFO(name << " N=" << n);
      auto tile = [&](DType dt, int64_t free, int64_t at = 0) {
        return sbuf(dt, 0, at, 128, {free});
      };
      const AccessPattern f32 = tile(DType::F32, n), f32b = tile(DType::F32, n, 4096);
      const AccessPattern bf = tile(DType::BF16, n), bfb = tile(DType::BF16, n, 4096),
                          bfc = tile(DType::BF16, n, 8192);
      // tensor_copy / tensor_scalar: N; NC-v3+ Vector performance mode 4x on bf16 SBUF rows.
      CHECK(cyclesOf(t, make(Opcode::TensorCopy, kQueueVector, f32, {f32b})) ==
            atLeastMinII(n));
      CHECK(cyclesOf(t, make(Opcode::TensorCopy, kQueueVector, bf, {bfb})) ==
            atLeastMinII(nc2 ? n : n / 4.0));
      Instruction ts = make(Opcode::TensorScalar, kQueueVector, bf, {bfb});
      ts.twoOps = true; // two ops cost one instruction
      CHECK(cyclesOf(t, ts) == atLeastMinII(nc2 ? n : n / 4.0));
      // One operand in PSUM: 2x.
      CHECK(cyclesOf(t, make(Opcode::TensorCopy, kQueueVector, bf,
                             {psum(DType::BF16, 0, 0, 128, {n})})) ==
            atLeastMinII(nc2 ? n : n / 2.0));
      // trn3's Scalar engine: 2x on bf16.
      CHECK(cyclesOf(t, make(Opcode::TensorCopy, kQueueScalar, bf, {bfb})) ==
            atLeastMinII(t.generation == Generation::Trn3 ? n / 2.0 : n));
      // tensor_tensor: fp32 2N; NC-v3+ bf16 SBUF inputs 2x.
      CHECK(cyclesOf(t, make(Opcode::TensorTensor, kQueueVector, f32, {f32b, f32b})) ==
            atLeastMinII(2.0 * n));
      CHECK(cyclesOf(t, make(Opcode::TensorTensor, kQueueVector, bf, {bfb, bfc})) ==
            atLeastMinII(nc2 ? n : n / 2.0));
      // scalar_tensor_tensor: N for bf16 subtract then multiply (even N), else 2N.
      Instruction stt = make(Opcode::ScalarTensorTensor, kQueueVector, bf, {bfb, bfc});
      stt.alu = AluOp::Sub;
      stt.alu2 = AluOp::Mul;
      CHECK(cyclesOf(t, stt) == atLeastMinII(n));
      stt.alu2 = AluOp::Add;
      CHECK(cyclesOf(t, stt) == atLeastMinII(2.0 * n));
      CHECK(cyclesOf(t, make(Opcode::Reciprocal, kQueueVector, f32, {f32b})) ==
            atLeastMinII(8.0 * n));
      if (n <= 512)
        CHECK(cyclesOf(t, make(Opcode::BnStats, kQueueVector, tile(DType::F32, 6), {f32b})) ==
              atLeastMinII(n));
      CHECK(cyclesOf(t, make(Opcode::BnAggr, kQueueVector, tile(DType::F32, 2),
                             {tile(DType::F32, 6 * n, 4096)})) ==
            atLeastMinII(13.0 * 6 * n / 3));
      Instruction scan = make(Opcode::TensorTensorScan, kQueueVector, f32, {f32b, f32b});
      CHECK(cyclesOf(t, scan) == atLeastMinII(2.0 * n));
      CHECK(cyclesOf(t, make(Opcode::TensorPartitionReduce, kQueueGpSimd,
                             sbuf(DType::F32, 0, 0, 1, {n}), {f32b})) ==
            atLeastMinII(150 + 128.0 * n / 128));
      CHECK(cyclesOf(t, make(Opcode::Max8, kQueueVector, tile(DType::F32, 8), {f32b})) ==
            atLeastMinII(n));
      // tensor_copy_predicated: N with source and predicate in different memories, else 2N.
      CHECK(cyclesOf(t, make(Opcode::CopyPredicated, kQueueVector, f32, {f32b, f32b})) ==
            atLeastMinII(2.0 * n));
      CHECK(cyclesOf(t, make(Opcode::CopyPredicated, kQueueVector, f32,
                             {f32b, psum(DType::F32, 0, 0, 128, {n})})) ==
            atLeastMinII(n));
      // memset: N/2 for a bf16 zero, else N.
      Instruction ms = make(Opcode::Memset, kQueueVector, bf, {});
      CHECK(cyclesOf(t, ms) == atLeastMinII(n / 2.0));
      ms.imm[0] = 1;
      CHECK(cyclesOf(t, ms) == atLeastMinII(n));
      // nc_transpose: Tensor max(P, min(64, F)); Vector (32 x 32) max(MIN_II, N).
      if (n <= 128) {
        const double pe = cyclesOf(t, make(Opcode::Transpose, kQueueTensor,
                                           psum(DType::BF16, 0, 0, n, {128}), {bfb}));
        CHECK(pe == std::max<double>(128, std::min<double>(64, n)));
      }
      if (n <= 32)
        CHECK(cyclesOf(t, make(Opcode::Transpose, kQueueVector, sbuf(DType::F32, 0, 0, n, {32}),
                               {sbuf(DType::F32, 0, 4096, 32, {n})})) == atLeastMinII(n));
    }
  }
}

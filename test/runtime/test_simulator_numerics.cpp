// Tests of the simulator's functional results: conversions, matmul, engines'
// element ops.
#include "runtime/simulator/Simulator.h"
#include "runtime/simulator/functional/Numerics.h"

#include "ProgramBuilder.h"

#include <catch2/catch.hpp>

#include <cmath>
#include <functional>
#include <limits>
#include <random>

using namespace neuron::runtime;
using namespace neuron::runtime::test;

namespace {

const Target &trn2() { return *findTarget("trn2"); }

float roundBf16(float f) { return bf16ToFloat(floatToBf16(f)); }

/// Runs a one-tile elementwise program: x (f32 [P, F]) is loaded to SBUF,
/// `body` computes SBUF tile `out` (at byte offset 65536) from the tile at
/// offset 0, and the result (dtype `outDt`) is stored to an output.
template <class Out>
std::vector<Out>
runTile(const std::vector<float> &x, int64_t p, int64_t f, DType outDt,
        const std::function<void(Builder &)> &body, int64_t outF = -1) {
  if (outF < 0)
    outF = f;
  Builder b;
  uint32_t in = b.input("x", DType::F32, {p, f});
  uint32_t out = b.output("y", outDt, {p, outF});
  b.dma(kQueueDma0, sbuf(DType::F32, 0, 0, p, {f}),
        hbm(in, DType::F32, 0, {{f, p}, {1, f}}));
  body(b);
  b.dma(kQueueDma0 + 1, hbm(out, outDt, 0, {{outF, p}, {1, outF}}),
        sbuf(outDt, 0, 65536, p, {outF}));
  std::vector<Out> y(size_t(p * outF));
  b.sequential();
  simulate(b.prog, trn2(), {x.data()}, {y.data()});
  return y;
}

/// Adds one single-source op computing tile 65536 (dtype dt) from tile 0 (f32).
void unary(Builder &b, Opcode op, int queue, DType dt, int64_t p, int64_t f) {
  b.op(op, queue, sbuf(dt, 0, 65536, p, {f}), {sbuf(DType::F32, 0, 0, p, {f})});
}

} // namespace

TEST_CASE("bf16 rounds to nearest even", "[numerics]") {
  CHECK(roundBf16(1.0f + 0x1p-8f) == 1.0f);               // tie -> even (down)
  CHECK(roundBf16(1.0f + 3 * 0x1p-8f) == 1.0f + 0x1p-6f); // tie -> even (up)
  CHECK(roundBf16(1.0f + 0x1p-8f + 0x1p-20f) == 1.0f + 0x1p-7f); // above tie
  CHECK(roundBf16(-1.0f - 0x1p-8f) == -1.0f);
  CHECK(std::isinf(roundBf16(std::numeric_limits<float>::max())));
  CHECK(std::isinf(roundBf16(std::numeric_limits<float>::infinity())));
  CHECK(std::isnan(roundBf16(std::numeric_limits<float>::quiet_NaN())));
  CHECK(std::isnan(
      bf16ToFloat(floatToBf16(bitsToFloat(0x7f800001u))))); // sNaN stays NaN
  CHECK(floatToBf16(3.0f) == 0x4040);
}

TEST_CASE("fp16 conversion is exact and rounds to nearest even", "[numerics]") {
  for (uint32_t h = 0; h < 65536; ++h) {
    float f = halfToFloat(uint16_t(h));
    if (std::isnan(f))
      CHECK(std::isnan(halfToFloat(floatToHalf(f))));
    else if (floatToHalf(f) != h)
      FAIL("half " << h << " does not round trip");
  }
  CHECK(halfToFloat(floatToHalf(1.0f + 0x1p-11f)) == 1.0f); // tie -> even
  CHECK(halfToFloat(floatToHalf(1.0f + 3 * 0x1p-11f)) ==
        1.0f + 0x1p-9f); // tie -> even
  CHECK(halfToFloat(floatToHalf(65519.0f)) == 65504.0f);
  CHECK(std::isinf(halfToFloat(floatToHalf(65520.0f))));
  CHECK(halfToFloat(floatToHalf(0x1p-24f)) == 0x1p-24f); // smallest subnormal
  CHECK(halfToFloat(floatToHalf(0x1p-25f)) == 0.0f);     // tie -> even (zero)
  CHECK(halfToFloat(floatToHalf(3 * 0x1p-25f)) == 0x1p-23f);
  CHECK(floatToHalf(-2.0f) == 0xc000);
}

TEST_CASE("stores convert with rounding and int stores truncate",
          "[numerics]") {
  std::vector<float> x = {1.0f + 0x1p-8f, 1.0f + 3 * 0x1p-8f, -2.7f, 300.5f};
  auto bf = runTile<uint16_t>(x, 1, 4, DType::BF16, [](Builder &b) {
    unary(b, Opcode::TensorCopy, kQueueVector, DType::BF16, 1, 4);
  });
  CHECK(bf16ToFloat(bf[0]) == 1.0f);
  CHECK(bf16ToFloat(bf[1]) == 1.0f + 0x1p-6f);
  CHECK(bf[2] == floatToBf16(-2.7f));
  auto h = runTile<uint16_t>(x, 1, 4, DType::F16, [](Builder &b) {
    unary(b, Opcode::TensorCopy, kQueueScalar, DType::F16, 1, 4);
  });
  CHECK(halfToFloat(h[3]) == 300.5f);
  auto i = runTile<int32_t>(x, 1, 4, DType::I32, [](Builder &b) {
    unary(b, Opcode::TensorCopy, kQueueGpSimd, DType::I32, 1, 4);
  });
  CHECK(i == std::vector<int32_t>{1, 1, -2, 300});
  auto u = runTile<uint8_t>(x, 1, 4, DType::Bool, [](Builder &b) {
    unary(b, Opcode::TensorCopy, kQueueVector, DType::Bool, 1, 4);
  });
  CHECK(u == std::vector<uint8_t>{1, 1, 1, 1});
}

TEST_CASE("matmul matches a naive reference", "[numerics][matmul]") {
  const int64_t K = 128, M = 96, N = 200;
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> dist(-1, 1);
  // Inputs in bf16 as the hardware would take them: A is [K, M], B is [K, N].
  std::vector<uint16_t> a(K * M), bm(K * N);
  for (auto &v : a)
    v = floatToBf16(dist(rng));
  for (auto &v : bm)
    v = floatToBf16(dist(rng));

  Builder b;
  uint32_t ia = b.input("a", DType::BF16, {K, M});
  uint32_t ib = b.input("b", DType::BF16, {K, N});
  uint32_t oc = b.output("c", DType::F32, {M, N});
  b.dma(kQueueDma0, sbuf(DType::BF16, 0, 0, K, {M}),
        hbm(ia, DType::BF16, 0, {{M, K}, {1, M}}));
  b.dma(kQueueDma0 + 1, sbuf(DType::BF16, 0, 1024, K, {N}),
        hbm(ib, DType::BF16, 0, {{N, K}, {1, N}}));
  // Two accumulating K-halves must equal one full-K product.
  b.op(Opcode::Matmul, kQueueTensor, psum(DType::F32, 0, 0, M, {N}),
       {sbuf(DType::BF16, 0, 0, 64, {M}), sbuf(DType::BF16, 0, 1024, 64, {N})},
       {{kQueueDma0, 1}, {kQueueDma0 + 1, 1}});
  b.op(Opcode::Matmul, kQueueTensor, psum(DType::F32, 0, 0, M, {N}),
       {sbuf(DType::BF16, 64, 0, 64, {M}),
        sbuf(DType::BF16, 64, 1024, 64, {N})});
  b.last().accumulate = true;
  b.op(Opcode::TensorCopy, kQueueVector, sbuf(DType::F32, 0, 4096, M, {N}),
       {psum(DType::F32, 0, 0, M, {N})}, {{kQueueTensor, 2}});
  b.dma(kQueueDma0 + 2, hbm(oc, DType::F32, 0, {{N, M}, {1, N}}),
        sbuf(DType::F32, 0, 4096, M, {N}), {{kQueueVector, 1}});

  std::vector<float> c(M * N);
  b.sequential();
  RunStats s = simulate(b.prog, trn2(), {a.data(), bm.data()}, {c.data()});
  CHECK(s.flops == uint64_t(2 * K * M * N));
  double worst = 0;
  for (int64_t m = 0; m < M; ++m)
    for (int64_t n = 0; n < N; ++n) {
      double ref = 0;
      for (int64_t k = 0; k < K; ++k)
        ref += double(bf16ToFloat(a[k * M + m])) * bf16ToFloat(bm[k * N + n]);
      worst = std::max(worst, std::fabs(ref - c[m * N + n]));
    }
  CHECK(worst < 1e-4);
}

TEST_CASE("activation functions match torch's definitions", "[numerics]") {
  std::vector<float> x;
  for (int i = 0; i < 64; ++i)
    x.push_back(-4.0f + i * 0.125f);
  struct Case {
    ActFunc f;
    std::function<double(double)> ref;
  };
  const double scale = 0.5, bias = 0.25;
  std::vector<Case> cases = {
      {ActFunc::Gelu,
       [](double v) { return 0.5 * v * (1 + std::erf(v / std::sqrt(2.0))); }},
      {ActFunc::GeluTanh,
       [](double v) {
         return 0.5 * v *
                (1 + std::tanh(std::sqrt(2 / 3.14159265358979323846) *
                               (v + 0.044715 * v * v * v)));
       }},
      {ActFunc::Sigmoid, [](double v) { return 1 / (1 + std::exp(-v)); }},
      {ActFunc::Silu, [](double v) { return v / (1 + std::exp(-v)); }},
      {ActFunc::Softplus, [](double v) { return std::log1p(std::exp(v)); }},
      {ActFunc::Arctan, [](double v) { return std::atan(v); }},
      {ActFunc::Relu, [](double v) { return v > 0 ? v : 0; }},
      {ActFunc::Rsqrt, [](double v) { return 1 / std::sqrt(v); }},
      {ActFunc::Exp, [](double v) { return std::exp(v); }},
  };
  for (const Case &c : cases) {
    auto y = runTile<float>(x, 2, 32, DType::F32, [&](Builder &b) {
      unary(b, Opcode::Activation, kQueueScalar, DType::F32, 2, 32);
      b.last().func = c.f;
      b.last().imm[0] = scale;
      b.last().imm[1] = bias;
    });
    for (size_t i = 0; i < x.size(); ++i) {
      double ref = c.ref(x[i] * scale + bias);
      if (std::isnan(ref))
        CHECK(std::isnan(y[i]));
      else
        CHECK(y[i] == Approx(ref).epsilon(1e-5).margin(1e-6));
    }
  }
}

TEST_CASE("alu ops: arithmetic, comparisons, torch.remainder", "[numerics]") {
  std::vector<float> x = {-7, 7, -7.5f, 3, 2, 0, -1, 5};
  auto scalarOp = [&](AluOp op, double imm, bool reverse) {
    return runTile<float>(x, 1, 8, DType::F32, [&](Builder &b) {
      unary(b, Opcode::TensorScalar, kQueueVector, DType::F32, 1, 8);
      b.last().alu = op;
      b.last().imm[0] = imm;
      b.last().reverse = reverse;
    });
  };
  CHECK(scalarOp(AluOp::Mod, 3, false) ==
        std::vector<float>{2, 1, 1.5f, 0, 2, 0, 2, 2});
  CHECK(scalarOp(AluOp::Mod, -3, false) ==
        std::vector<float>{-1, -2, -1.5f, 0, -1, 0, -1, -1});
  CHECK(scalarOp(AluOp::Fmod, -3, false) ==
        std::vector<float>{-1, 1, -1.5f, 0, 2, 0, -1, 2});
  std::vector<float> reversed = scalarOp(AluOp::Fmod, 2, true); // 2 fmod x
  CHECK(std::isnan(reversed[5]));                               // 2 fmod 0
  reversed[5] = -1;
  CHECK(reversed == std::vector<float>{2, 2, 2, 2, 0, -1, 0, 2});
  CHECK(scalarOp(AluOp::Sub, 1, true) ==
        std::vector<float>{8, -6, 8.5f, -2, -1, 1, 2, -4});
  CHECK(scalarOp(AluOp::Ge, 2, false) ==
        std::vector<float>{0, 1, 0, 1, 1, 0, 0, 1});
  CHECK(scalarOp(AluOp::Pow, 2, false)[2] == Approx(56.25));
  CHECK(scalarOp(AluOp::Max, 0, false) ==
        std::vector<float>{0, 7, 0, 3, 2, 0, 0, 5});

  // tensor_tensor: x (tile 0) against itself shifted by one element.
  auto y = runTile<float>(x, 1, 8, DType::F32, [&](Builder &b) {
    AccessPattern shifted = sbuf(DType::F32, 0, 4, 1, {7});
    b.op(Opcode::TensorTensor, kQueueGpSimd, sbuf(DType::F32, 0, 65536, 1, {7}),
         {sbuf(DType::F32, 0, 0, 1, {7}), shifted});
    b.last().alu = AluOp::Lt;
    b.op(Opcode::Memset, kQueueGpSimd, sbuf(DType::F32, 0, 65536 + 28, 1, {1}),
         {});
    b.last().imm[0] = -std::numeric_limits<double>::infinity();
  });
  CHECK(y == std::vector<float>{1, 0, 1, 0, 0, 0, 1, -INFINITY});
}

TEST_CASE("integer arithmetic is exact beyond 2^24", "[numerics]") {
  Builder b;
  uint32_t in = b.input("x", DType::I64, {4});
  uint32_t out = b.output("y", DType::I64, {4});
  b.dma(kQueueDma0, sbuf(DType::I64, 0, 0, 1, {4}),
        hbm(in, DType::I64, 0, {{1, 4}}));
  b.op(Opcode::TensorTensor, kQueueVector, sbuf(DType::I64, 0, 64, 1, {4}),
       {sbuf(DType::I64, 0, 0, 1, {4}), sbuf(DType::I64, 0, 0, 1, {4})});
  b.op(Opcode::TensorScalar, kQueueVector, sbuf(DType::I64, 0, 64, 1, {4}),
       {sbuf(DType::I64, 0, 64, 1, {4})});
  b.last().alu = AluOp::Xor;
  b.last().imm[0] = 1;
  b.dma(kQueueDma0, hbm(out, DType::I64, 0, {{1, 4}}),
        sbuf(DType::I64, 0, 64, 1, {4}));
  std::vector<int64_t> x = {(int64_t(1) << 40) + 1, -3, 16777217, 0}, y(4);
  b.sequential();
  simulate(b.prog, trn2(), {x.data()}, {y.data()});
  CHECK(y == std::vector<int64_t>{(int64_t(1) << 41) + 3, -5, 33554435, 1});
}

TEST_CASE("tensor_reduce over the innermost axes", "[numerics]") {
  std::vector<float> x(2 * 24);
  for (size_t i = 0; i < x.size(); ++i)
    x[i] = float(i % 7) - 3;
  for (uint8_t axes : {uint8_t(1), uint8_t(2)}) {
    for (AluOp op : {AluOp::Add, AluOp::Max, AluOp::Min, AluOp::Mul}) {
      int64_t outF = axes == 1 ? 6 : 2; // source free dims [2, 3, 4]
      auto y = runTile<float>(
          x, 2, 24, DType::F32,
          [&](Builder &b) {
            b.op(Opcode::TensorReduce, kQueueVector,
                 sbuf(DType::F32, 0, 65536, 2, {outF}),
                 {sbuf(DType::F32, 0, 0, 2, {2, 3, 4})});
            b.last().alu = op;
            b.last().axes = axes;
          },
          outF);
      int64_t group = 24 * 2 / (2 * outF);
      for (int64_t g = 0; g < 2 * outF; ++g) {
        double acc = op == AluOp::Add ? 0 : op == AluOp::Mul ? 1 : x[g * group];
        for (int64_t k = 0; k < group; ++k) {
          double v = x[g * group + k];
          acc = op == AluOp::Add   ? acc + v
                : op == AluOp::Mul ? acc * v
                : op == AluOp::Max ? std::max(acc, v)
                                   : std::min(acc, v);
        }
        CHECK(y[g] == Approx(acc));
      }
    }
  }
}

TEST_CASE("iota, memset and broadcast reads", "[numerics]") {
  Builder b;
  uint32_t out = b.output("y", DType::I32, {4, 6});
  b.op(Opcode::Iota, kQueueGpSimd, sbuf(DType::I32, 0, 0, 4, {2, 3}), {});
  b.last().imm[0] = 10;
  b.last().imm[1] = 100;
  b.dma(kQueueDma0, hbm(out, DType::I32, 0, {{6, 4}, {1, 6}}),
        sbuf(DType::I32, 0, 0, 4, {6}), {{kQueueGpSimd, 1}});
  std::vector<int32_t> y(24);
  b.sequential();
  simulate(b.prog, trn2(), {}, {y.data()});
  for (int p = 0; p < 4; ++p)
    for (int i = 0; i < 6; ++i)
      CHECK(y[p * 6 + i] == 10 + 100 * p + i);

  // A stride-0 source broadcasts one column across the row.
  std::vector<float> x = {1, 2, 3, 4};
  auto z = runTile<float>(x, 2, 2, DType::F32, [](Builder &b) {
    AccessPattern col = sbuf(DType::F32, 0, 0, 2, {2});
    col.dims[1][0] = 0;
    b.op(Opcode::TensorTensor, kQueueVector, sbuf(DType::F32, 0, 65536, 2, {2}),
         {sbuf(DType::F32, 0, 0, 2, {2}), col});
    b.last().alu = AluOp::Mul;
  });
  CHECK(z == std::vector<float>{1, 2, 9, 12});
}

TEST_CASE("DMA with strided patterns transposes", "[numerics]") {
  // x is [3, 5] in HBM; load it transposed into 5 partitions x 3, store back.
  Builder b;
  uint32_t in = b.input("x", DType::F32, {3, 5});
  uint32_t out = b.output("y", DType::F32, {5, 3});
  b.dma(kQueueDma0, sbuf(DType::F32, 0, 0, 5, {3}),
        hbm(in, DType::F32, 0, {{1, 5}, {5, 3}}));
  b.dma(kQueueDma0, hbm(out, DType::F32, 0, {{3, 5}, {1, 3}}),
        sbuf(DType::F32, 0, 0, 5, {3}));
  std::vector<float> x(15), y(15);
  for (int i = 0; i < 15; ++i)
    x[i] = float(i);
  b.sequential();
  simulate(b.prog, trn2(), {x.data()}, {y.data()});
  for (int r = 0; r < 3; ++r)
    for (int c = 0; c < 5; ++c)
      CHECK(y[c * 3 + r] == x[r * 5 + c]);
}

TEST_CASE("poisoned memory exposes reads of unwritten SBUF", "[numerics]") {
  Builder b;
  uint32_t out = b.output("y", DType::F32, {4});
  b.dma(kQueueDma0, hbm(out, DType::F32, 0, {{1, 4}}),
        sbuf(DType::F32, 0, 0, 1, {4}));
  std::vector<float> y(4, 1.0f);
  // The hazard detector reports the read (see test_hazards.cpp); without it,
  // the memory reads back as zeros, or NaN with poison.
  CHECK_THROWS_WITH(simulate(b.prog, trn2(), {}, {y.data()}),
                    Catch::Matchers::Contains("that no instruction wrote"));
  RunOptions o;
  o.checkHazards = false;
  simulate(b.prog, trn2(), {}, {y.data()}, o);
  CHECK(y[0] == 0.0f);
  o.poisonMemory = true;
  simulate(b.prog, trn2(), {}, {y.data()}, o);
  CHECK(std::isnan(y[0]));
}

// Tests of the functional simulator's fast kernels (Kernels.h, VecMath.h) and
// of the fast paths in Execute.cpp / StridedView.h / Memory.cpp that use them.
#include "runtime/simulator/Simulator.h"
#include "runtime/simulator/functional/ElementOps.h"
#include "runtime/simulator/functional/Execute.h"
#include "runtime/simulator/functional/Kernels.h"
#include "runtime/simulator/functional/Numerics.h"

#include "ProgramBuilder.h"

#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <random>

using namespace neuron::runtime;
using namespace neuron::runtime::test;

namespace {

const Target &trn2() { return *findTarget("trn2"); }

const double kFltMax = std::numeric_limits<float>::max();

/// Error of y against the exact `ref` in units of fp32 ulps of ref. Results
/// that overflow fp32 must be inf. Below 1e-30 (deep in the tails, where the
/// rounding of the argument dominates) 1e-4 relative or 1e-40 absolute pass.
double ulpError(float y, double ref) {
  if (std::isnan(ref))
    return std::isnan(y) ? 0 : 1e9;
  if (std::fabs(ref) > kFltMax)
    ref = ref > 0 ? INFINITY : -INFINITY;
  if (std::isinf(ref))
    return double(y) == ref ? 0 : 1e9;
  const double err = std::fabs(double(y) - ref);
  if (std::fabs(ref) < 1e-30)
    return (err < 1e-40 || err < 1e-4 * std::fabs(ref)) ? 0 : 1e9;
  int e;
  std::frexp(std::fabs(ref), &e);
  return err / std::ldexp(1.0, e - 24);
}

double gelu(double x) { return 0.5 * x * std::erfc(-x / std::sqrt(2.0)); }
double geluTanh(double x) {
  const double y = std::sqrt(2 / 3.14159265358979323846) *
                   (x + 0.044715 * x * x * x);
  return x / (1 + std::exp(-2 * y));
}

struct ActCase {
  ActFunc f;
  std::function<double(double)> ref;
  double lo, hi;
  double maxUlp;
  bool logSpaced = false;
};

float runAct(ActFunc f, float x) {
  float y;
  kernels::activation(f, &x, &y, 1, 1.0f, 0.0f);
  return y;
}

} // namespace

TEST_CASE("activation kernels are accurate against double", "[kernels]") {
  const std::vector<ActCase> cases = {
      {ActFunc::Exp, [](double x) { return std::exp(x); }, -110, 90, 1.5},
      {ActFunc::Log, [](double x) { return std::log(x); }, 1e-44, 3e38, 1.5,
       true},
      {ActFunc::Tanh, [](double x) { return std::tanh(x); }, -12, 12, 2},
      {ActFunc::Sigmoid, [](double x) { return 1 / (1 + std::exp(-x)); }, -110,
       40, 3.5},
      {ActFunc::Silu, [](double x) { return x / (1 + std::exp(-x)); }, -110, 90,
       4},
      {ActFunc::Softplus,
       [](double x) { return x > 20 ? x : std::log1p(std::exp(x)); }, -110, 40,
       3.5},
      {ActFunc::Arctan, [](double x) { return std::atan(x); }, -1e6, 1e6, 1.5},
      {ActFunc::Arctan, [](double x) { return std::atan(x); }, -1e-3, 1e-3, 1.5},
      {ActFunc::Erf, [](double x) { return std::erf(x); }, -8, 8, 3},
      {ActFunc::Erf, [](double x) { return std::erf(x); }, -1e-3, 1e-3, 3},
      {ActFunc::Gelu, gelu, -20, 20, 8},
      {ActFunc::GeluTanh, geluTanh, -6, 6, 64},
      {ActFunc::Rsqrt, [](double x) { return 1 / std::sqrt(x); }, 1e-30, 1e30,
       1.5, true},
  };
  const int n = 100003; // not a multiple of any vector width: tails too
  std::vector<float> x(n), y(n);
  for (const ActCase &c : cases) {
    for (int i = 0; i < n; ++i) {
      const double t = double(i) / (n - 1);
      x[size_t(i)] = c.logSpaced
                         ? float(std::exp(std::log(c.lo) +
                                          t * (std::log(c.hi) - std::log(c.lo))))
                         : float(c.lo + t * (c.hi - c.lo));
    }
    kernels::activation(c.f, x.data(), y.data(), n, 1.0f, 0.0f);
    double worst = 0;
    float at = 0;
    for (int i = 0; i < n; ++i) {
      const double e = ulpError(y[size_t(i)], c.ref(x[size_t(i)]));
      if (e > worst) {
        worst = e;
        at = x[size_t(i)];
      }
    }
    INFO(actFuncName(c.f) << " on [" << c.lo << ", " << c.hi << "]: " << worst
                          << " ulp at x = " << at);
    CHECK(worst <= c.maxUlp);
  }
  // Far tail of gelu_tanh: 2e-5 relative (the cubic argument's rounding).
  for (float v = -12; v <= 12; v += 0.01f) {
    const double ref = geluTanh(v);
    if (std::fabs(ref) > 1e-37)
      CHECK(runAct(ActFunc::GeluTanh, v) == Approx(ref).epsilon(2e-5));
  }
  // scale and bias apply before the function.
  float in[3] = {1, 2, 3}, out[3];
  kernels::activation(ActFunc::Exp, in, out, 3, 0.5f, -1.0f);
  CHECK(out[2] == Approx(std::exp(0.5)).epsilon(1e-6));
}

TEST_CASE("activation special values follow torch", "[kernels]") {
  const float inf = INFINITY, nan = NAN;
  for (int f = 0; f <= int(ActFunc::Arctan); ++f) {
    INFO(actFuncName(ActFunc(f)));
    CHECK(std::isnan(runAct(ActFunc(f), nan)));
  }
  CHECK(runAct(ActFunc::Exp, -inf) == 0);
  CHECK(runAct(ActFunc::Exp, inf) == inf);
  CHECK(runAct(ActFunc::Exp, 88.8f) == inf);
  CHECK(runAct(ActFunc::Exp, 0) == 1);
  CHECK(runAct(ActFunc::Exp, -100) == Approx(3.783506e-44).epsilon(0.02));
  CHECK(runAct(ActFunc::Exp, -104) == 0);
  CHECK(runAct(ActFunc::Log, 0) == -inf);
  CHECK(runAct(ActFunc::Log, -0.0f) == -inf);
  CHECK(std::isnan(runAct(ActFunc::Log, -1)));
  CHECK(runAct(ActFunc::Log, inf) == inf);
  CHECK(runAct(ActFunc::Log, 1) == 0);
  CHECK(runAct(ActFunc::Tanh, -inf) == -1);
  CHECK(runAct(ActFunc::Tanh, inf) == 1);
  CHECK(runAct(ActFunc::Sigmoid, -inf) == 0);
  CHECK(runAct(ActFunc::Sigmoid, inf) == 1);
  CHECK(runAct(ActFunc::Sigmoid, 0) == 0.5f);
  CHECK(runAct(ActFunc::Erf, -inf) == -1);
  CHECK(runAct(ActFunc::Erf, inf) == 1);
  CHECK(runAct(ActFunc::Gelu, -100) == 0);
  CHECK(runAct(ActFunc::Gelu, 100) == 100);
  CHECK(runAct(ActFunc::Gelu, inf) == inf);
  CHECK(runAct(ActFunc::GeluTanh, -100) == 0);
  CHECK(runAct(ActFunc::Silu, inf) == inf);
  CHECK(std::isnan(runAct(ActFunc::Silu, -inf))); // -inf * 0, as torch
  CHECK(runAct(ActFunc::Softplus, 30) == 30);
  CHECK(runAct(ActFunc::Softplus, -100) == Approx(3.783506e-44).epsilon(0.02));
  CHECK(runAct(ActFunc::Arctan, inf) == float(M_PI / 2));
  CHECK(runAct(ActFunc::Arctan, -inf) == float(-M_PI / 2));
  CHECK(runAct(ActFunc::Arctan, -1) == float(-M_PI / 4));
  // A bias of 0 is no bias: the input is -0 * 1, still -0 (arctan(-0) is -0, as torch).
  CHECK(std::signbit(runAct(ActFunc::Arctan, -0.0f)));
  CHECK(std::signbit(runAct(ActFunc::Neg, 0.0f)));
  CHECK(runAct(ActFunc::Reciprocal, -0.0f) == -inf);
  CHECK(runAct(ActFunc::Arctan, 1) == float(M_PI / 4));
  CHECK(runAct(ActFunc::Relu, -0.5f) == 0);
  CHECK(runAct(ActFunc::Rsqrt, 0) == inf);
}

TEST_CASE("alu kernels equal the generic functors", "[kernels]") {
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> d(-4, 4);
  const int n = 1003;
  std::vector<float> a(n), b(n), y(n);
  for (int i = 0; i < n; ++i) {
    a[size_t(i)] = std::round(d(rng) * 2) / 2; // many equal values and zeros
    b[size_t(i)] = std::round(d(rng) * 2) / 2;
  }
  a[3] = NAN;
  b[5] = NAN;
  a[7] = -0.0f;
  b[9] = INFINITY;
  auto same = [](float u, float v) {
    return (std::isnan(u) && std::isnan(v)) ||
           std::memcmp(&u, &v, sizeof u) == 0;
  };
  for (int op = 0; op <= int(AluOp::Mod); ++op) {
    const AluOp alu = AluOp(op);
    INFO(aluOpName(alu));
    kernels::tensorTensor(alu, a.data(), b.data(), y.data(), n);
    int bad = 0;
    withAluOp<float>(alu, [&](auto f) {
      for (int i = 0; i < n; ++i)
        bad += !same(y[size_t(i)], f(a[size_t(i)], b[size_t(i)]));
    });
    CHECK(bad == 0);
    for (bool reverse : {false, true}) {
      kernels::tensorScalar(alu, a.data(), 1.5f, reverse, y.data(), n);
      bad = 0;
      withAluOp<float>(alu, [&](auto f) {
        for (int i = 0; i < n; ++i)
          bad += !same(y[size_t(i)], reverse ? f(1.5f, a[size_t(i)])
                                             : f(a[size_t(i)], 1.5f));
      });
      CHECK(bad == 0);
    }
  }
  // In place: out == a.
  std::vector<float> c = b;
  kernels::tensorTensor(AluOp::Add, c.data(), a.data(), c.data(), n);
  CHECK(same(c[10], b[10] + a[10]));
}

TEST_CASE("reduce kernel", "[kernels]") {
  std::mt19937 rng(9);
  std::uniform_real_distribution<float> d(-1, 1);
  for (int n : {0, 1, 7, 8, 15, 16, 17, 100, 10007}) {
    std::vector<float> a(size_t(std::max(n, 1)));
    for (auto &v : a)
      v = d(rng);
    double sum = 0, prod = 1;
    float mx = -INFINITY, mn = INFINITY;
    for (int i = 0; i < n; ++i) {
      sum += a[size_t(i)];
      prod *= 1 + a[size_t(i)] / 64;
      mx = std::max(mx, a[size_t(i)]);
      mn = std::min(mn, a[size_t(i)]);
    }
    INFO("n = " << n);
    CHECK(kernels::reduce(AluOp::Add, a.data(), n) ==
          Approx(sum).margin(1e-5 * std::max(1, n)));
    CHECK(kernels::reduce(AluOp::Max, a.data(), n) == mx);
    CHECK(kernels::reduce(AluOp::Min, a.data(), n) == mn);
    std::vector<float> p(a.size());
    for (size_t i = 0; i < a.size(); ++i)
      p[i] = 1 + a[i] / 64;
    CHECK(kernels::reduce(AluOp::Mul, p.data(), n) == Approx(prod).epsilon(1e-5));
    if (n > 0) { // NaN anywhere propagates through max/min/add
      a[size_t(n / 2)] = NAN;
      CHECK(std::isnan(kernels::reduce(AluOp::Max, a.data(), n)));
      CHECK(std::isnan(kernels::reduce(AluOp::Min, a.data(), n)));
      CHECK(std::isnan(kernels::reduce(AluOp::Add, a.data(), n)));
    }
  }
}

TEST_CASE("bf16 conversion kernels match the scalar rounding", "[kernels]") {
  std::vector<uint16_t> h(65536 + 5);
  for (size_t i = 0; i < h.size(); ++i)
    h[i] = uint16_t(i);
  std::vector<float> f(h.size());
  kernels::bf16ToF32(h.data(), f.data(), int64_t(h.size()));
  int bad = 0;
  for (size_t i = 0; i < h.size(); ++i)
    bad += floatToBits(f[i]) != floatToBits(bf16ToFloat(h[i]));
  CHECK(bad == 0);

  std::mt19937 rng(3);
  std::vector<float> x;
  for (uint32_t u : {0x3f808000u, 0x3f818000u, 0x7f800000u, 0xff800000u,
                     0x7f800001u, 0xffc00001u, 0x00000001u, 0x807fffffu,
                     0x7f7fffffu, 0x7f7f8000u, 0u, 0x80000000u})
    x.push_back(bitsToFloat(u));
  for (int i = 0; i < 100000; ++i)
    x.push_back(bitsToFloat(uint32_t(rng())));
  std::vector<uint16_t> out(x.size());
  kernels::f32ToBf16(x.data(), out.data(), int64_t(x.size()));
  bad = 0;
  for (size_t i = 0; i < x.size(); ++i)
    bad += out[i] != floatToBf16(x[i]);
  CHECK(bad == 0);
}

TEST_CASE("matmul kernel matches a naive product for ragged shapes",
          "[kernels][matmul]") {
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> d(-1, 1);
  constexpr int MR = kernels::kMatmulMR, NR = kernels::kMatmulNR;
  struct Shape {
    int64_t k, m, n;
  };
  for (Shape s : {Shape{1, 1, 1}, Shape{3, 7, 5}, Shape{17, 13, 37},
                  Shape{64, 6, 16}, Shape{5, 12, 33}, Shape{128, 128, 512},
                  Shape{128, 1, 512}, Shape{2, 128, 1}}) {
    INFO("k m n = " << s.k << " " << s.m << " " << s.n);
    std::vector<float> a(size_t(s.k * s.m)), b(size_t(s.k * s.n));
    for (auto &v : a)
      v = d(rng);
    for (auto &v : b)
      v = d(rng);
    // Panels as Kernels.h describes them.
    const int64_t mp = (s.m + MR - 1) / MR, np = (s.n + NR - 1) / NR;
    std::vector<float> ap(size_t(mp * MR * s.k), 0.0f),
        bp(size_t(np * NR * s.k), 0.0f);
    for (int64_t k = 0; k < s.k; ++k) {
      for (int64_t i = 0; i < s.m; ++i)
        ap[size_t((i / MR) * s.k * MR + k * MR + i % MR)] = a[size_t(k * s.m + i)];
      for (int64_t j = 0; j < s.n; ++j)
        bp[size_t((j / NR) * s.k * NR + k * NR + j % NR)] = b[size_t(k * s.n + j)];
    }
    const int64_t ldc = s.n + 3;
    std::vector<float> c(size_t(s.m * ldc), 7.0f);
    kernels::matmulPanels(ap.data(), bp.data(), c.data(), s.k, s.m, s.n, ldc,
                          false);
    std::vector<float> c2 = c;
    kernels::matmulPanels(ap.data(), bp.data(), c2.data(), s.k, s.m, s.n, ldc,
                          true); // accumulates onto the first product
    std::vector<float> c3(size_t(s.m * s.n));
    matmulKernel(a.data(), b.data(), c3.data(), s.k, s.m, s.n);
    double worst = 0;
    int padTouched = 0;
    for (int64_t i = 0; i < s.m; ++i) {
      for (int64_t j = 0; j < s.n; ++j) {
        double ref = 0;
        for (int64_t k = 0; k < s.k; ++k)
          ref += double(a[size_t(k * s.m + i)]) * b[size_t(k * s.n + j)];
        worst = std::max(worst, std::fabs(c[size_t(i * ldc + j)] - ref));
        worst = std::max(worst, std::fabs(c2[size_t(i * ldc + j)] - 2 * ref));
        worst = std::max(worst, std::fabs(c3[size_t(i * s.n + j)] - ref));
      }
      for (int64_t j = s.n; j < ldc; ++j)
        padTouched += c[size_t(i * ldc + j)] != 7.0f;
    }
    CHECK(worst < 1e-4);
    CHECK(padTouched == 0);
  }
}

TEST_CASE("transposing DMA copies in blocks", "[kernels][dma]") {
  // [40, 70] in HBM -> SBUF [70 partitions, 40] (transposed) -> HBM.
  for (DType dt : {DType::F32, DType::BF16, DType::I64, DType::U8}) {
    INFO(dtypeName(dt));
    const int64_t eb = dtypeSize(dt);
    Builder b;
    uint32_t in = b.input("x", dt, {40, 70});
    uint32_t out = b.output("y", dt, {70, 40});
    b.dma(kQueueDma0, sbuf(dt, 0, 0, 70, {40}),
          hbm(in, dt, 0, {{1, 70}, {70, 40}}));
    b.dma(kQueueDma0, hbm(out, dt, 0, {{40, 70}, {1, 40}}),
          sbuf(dt, 0, 0, 70, {40}));
    std::vector<uint8_t> x(size_t(40 * 70 * eb)), y(x.size());
    for (size_t i = 0; i < x.size(); ++i)
      x[i] = uint8_t(i * 7 + i / 5);
    b.sequential();
    simulate(b.prog, trn2(), {x.data()}, {y.data()});
    int bad = 0;
    for (int64_t r = 0; r < 40; ++r)
      for (int64_t c = 0; c < 70; ++c)
        bad += std::memcmp(&y[size_t((c * 40 + r) * eb)],
                           &x[size_t((r * 70 + c) * eb)], size_t(eb)) != 0;
    CHECK(bad == 0);
  }
}

TEST_CASE("matmul into a PSUM view that is not row-contiguous",
          "[kernels][matmul]") {
  // dst: every other fp32 of a bank (inner stride 2): the generic path.
  const int64_t K = 8, M = 5, N = 24;
  Builder b;
  uint32_t ia = b.input("a", DType::F32, {K, M});
  uint32_t ib = b.input("b", DType::F32, {K, N});
  uint32_t oc = b.output("c", DType::F32, {M, N});
  b.dma(kQueueDma0, sbuf(DType::F32, 0, 0, K, {M}),
        hbm(ia, DType::F32, 0, {{M, K}, {1, M}}));
  b.dma(kQueueDma0, sbuf(DType::F32, 0, 1024, K, {N}),
        hbm(ib, DType::F32, 0, {{N, K}, {1, N}}));
  AccessPattern dst = psum(DType::F32, 0, 0, M, {N});
  dst.dims[1] = {2, N};
  for (int rep = 0; rep < 2; ++rep) {
    b.op(Opcode::Matmul, kQueueTensor, dst,
         {sbuf(DType::F32, 0, 0, K, {M}), sbuf(DType::F32, 0, 1024, K, {N})});
    b.last().accumulate = rep == 1;
  }
  b.op(Opcode::TensorCopy, kQueueVector, sbuf(DType::F32, 0, 4096, M, {N}),
       {dst});
  b.dma(kQueueDma0, hbm(oc, DType::F32, 0, {{N, M}, {1, N}}),
        sbuf(DType::F32, 0, 4096, M, {N}));
  std::vector<float> a(K * M), bm(K * N), c(M * N);
  for (size_t i = 0; i < a.size(); ++i)
    a[i] = float(i % 5) - 2;
  for (size_t i = 0; i < bm.size(); ++i)
    bm[i] = float(i % 7) * 0.5f - 1;
  b.sequential();
  simulate(b.prog, trn2(), {a.data(), bm.data()}, {c.data()});
  for (int64_t m = 0; m < M; ++m)
    for (int64_t n = 0; n < N; ++n) {
      float ref = 0;
      for (int64_t k = 0; k < K; ++k)
        ref += a[size_t(k * M + m)] * bm[size_t(k * N + n)];
      CHECK(c[size_t(m * N + n)] == Approx(2 * ref).margin(1e-5));
    }
}

TEST_CASE("elementwise fast paths: alignment, in place, overlap", "[kernels]") {
  const int64_t F = 300;
  std::vector<float> x(F);
  for (int64_t i = 0; i < F; ++i)
    x[size_t(i)] = float(i) * 0.01f - 1;
  // Runs `body` on a tile loaded at SBUF byte offset `at`; returns the tile
  // at `outAt` (F floats from offset outAt).
  auto run = [&](int64_t at, int64_t outAt,
                 const std::function<void(Builder &)> &body) {
    Builder b;
    uint32_t in = b.input("x", DType::F32, {1, F});
    uint32_t out = b.output("y", DType::F32, {1, F});
    b.dma(kQueueDma0, sbuf(DType::F32, 0, at, 1, {F}),
          hbm(in, DType::F32, 0, {{F, 1}, {1, F}}));
    body(b);
    b.dma(kQueueDma0, hbm(out, DType::F32, 0, {{F, 1}, {1, F}}),
          sbuf(DType::F32, 0, outAt, 1, {F}));
    std::vector<float> y(F);
    b.sequential();
    simulate(b.prog, trn2(), {x.data()}, {y.data()});
    return y;
  };
  auto act = [&](int64_t src, int64_t dst) {
    return [=](Builder &b) {
      b.op(Opcode::Activation, kQueueScalar, sbuf(DType::F32, 0, dst, 1, {F}),
           {sbuf(DType::F32, 0, src, 1, {F})});
      b.last().func = ActFunc::Exp;
    };
  };
  const std::vector<float> ref = run(0, 4096, act(0, 4096));
  for (int64_t i = 0; i < F; i += 37)
    CHECK(ref[size_t(i)] == Approx(std::exp(x[size_t(i)])).epsilon(1e-6));
  // Unaligned fp32 (byte offset 2): gathered, same numbers.
  CHECK(run(2, 4098, act(2, 4098)) == ref);
  // In place.
  CHECK(run(0, 0, act(0, 0)) == ref);
  // dst overlaps src shifted by one element: every source is read first.
  auto shifted = run(0, 4, act(0, 4));
  for (int64_t i = 1; i < F; ++i)
    CHECK(shifted[size_t(i - 1)] == ref[size_t(i - 1)]);
  // tensor_tensor in place on srcs[1].
  auto tt = run(0, 0, [&](Builder &b) {
    b.op(Opcode::TensorTensor, kQueueVector, sbuf(DType::F32, 0, 0, 1, {F}),
         {sbuf(DType::F32, 0, 0, 1, {F}), sbuf(DType::F32, 0, 0, 1, {F})});
    b.last().alu = AluOp::Mul;
  });
  for (int64_t i = 0; i < F; ++i)
    CHECK(tt[size_t(i)] == x[size_t(i)] * x[size_t(i)]);
}

TEST_CASE("recycled SBUF reads back as zeros (or poison) in the next run",
          "[kernels][memory]") {
  // Run 1 writes ones over a tile; run 2 only reads it.
  Builder w;
  w.op(Opcode::Memset, kQueueVector, sbuf(DType::F32, 0, 8192, 128, {64}), {});
  w.last().imm[0] = 1.0;
  w.op(Opcode::Memset, kQueueVector, psum(DType::F32, 0, 4096, 128, {64}), {});
  w.last().imm[0] = 1.0;
  Builder r;
  uint32_t out = r.output("y", DType::F32, {2, 128, 64});
  r.dma(kQueueDma0, hbm(out, DType::F32, 0, {{64, 128}, {1, 64}}),
        sbuf(DType::F32, 0, 8192, 128, {64}));
  r.op(Opcode::TensorCopy, kQueueVector, sbuf(DType::F32, 0, 0, 128, {64}),
       {psum(DType::F32, 0, 4096, 128, {64})});
  r.dma(kQueueDma0, hbm(out, DType::F32, 128 * 64, {{64, 128}, {1, 64}}),
        sbuf(DType::F32, 0, 0, 128, {64}));
  std::vector<float> y(2 * 128 * 64, 5.0f);
  auto allEqual = [&](float v) {
    for (float e : y)
      if (!(e == v || (std::isnan(v) && std::isnan(e))))
        return false;
    return true;
  };
  w.sequential();
  r.sequential();
  // r reads memory it never wrote, on purpose.
  RunOptions fresh, poison;
  fresh.checkHazards = poison.checkHazards = false;
  poison.poisonMemory = true;
  for (const char *t : {"trn2", "trn1", "trn2"}) {
    INFO(t);
    simulate(w.prog, *findTarget(t), {}, {});
    simulate(r.prog, *findTarget(t), {}, {y.data()}, fresh);
    CHECK(allEqual(0.0f));
    simulate(w.prog, *findTarget(t), {}, {});
    simulate(r.prog, *findTarget(t), {}, {y.data()}, poison);
    CHECK(allEqual(NAN));
    simulate(r.prog, *findTarget(t), {}, {y.data()}, fresh);
    CHECK(allEqual(0.0f));
  }
}

TEST_CASE("recycled SBUF: partial, strided and in-place writes",
          "[kernels][memory]") {
  // Run 1 fills bytes [0, 16 KiB) of every partition with 1.0f.
  Builder w;
  w.op(Opcode::Memset, kQueueVector, sbuf(DType::F32, 0, 0, 128, {4096}), {});
  w.last().imm[0] = 1.0;
  // Run 2, on the old data:
  Builder r;
  // (a) 100 floats at byte 1000: part of a granule.
  r.op(Opcode::Memset, kQueueVector, sbuf(DType::F32, 0, 1000, 128, {100}), {});
  r.last().imm[0] = 2.0;
  // (b) every other float of bytes [4096, 6144).
  AccessPattern every2 = sbuf(DType::F32, 0, 4096, 128, {256});
  every2.dims[1] = {2, 256};
  r.op(Opcode::Memset, kQueueVector, every2, {});
  r.last().imm[0] = 3.0;
  // (c) even partitions only, a whole granule [8192, 10240).
  AccessPattern even = sbuf(DType::F32, 0, 8192, 64, {512});
  even.dims[0] = {2, 64};
  r.op(Opcode::Memset, kQueueVector, even, {});
  r.last().imm[0] = 4.0;
  // (d) exp in place over old data [12288, 14336): reads a fresh run's memory.
  r.op(Opcode::Activation, kQueueScalar, sbuf(DType::F32, 0, 12288, 128, {512}),
       {sbuf(DType::F32, 0, 12288, 128, {512})});
  r.last().func = ActFunc::Exp;
  uint32_t out = r.output("y", DType::F32, {128, 4096});
  r.dma(kQueueDma0, hbm(out, DType::F32, 0, {{4096, 128}, {1, 4096}}),
        sbuf(DType::F32, 0, 0, 128, {4096}));

  for (bool poison : {false, true}) {
    INFO("poison " << poison);
    const float fresh = poison ? NAN : 0.0f;
    auto expect = [&](int64_t p, int64_t byte) -> float {
      if (byte >= 1000 && byte < 1400)
        return 2.0f;
      if (byte >= 4096 && byte < 6144)
        return (byte - 4096) % 8 == 0 ? 3.0f : fresh;
      if (byte >= 8192 && byte < 10240)
        return p % 2 == 0 ? 4.0f : fresh;
      if (byte >= 12288 && byte < 14336)
        return poison ? NAN : 1.0f; // exp(fresh)
      return fresh;
    };
    RunOptions o;
    o.poisonMemory = poison;
    o.checkHazards = false; // run 2 reads memory it never wrote, on purpose
    w.sequential();
    simulate(w.prog, trn2(), {}, {}, o); // same fill: lazily cleared blocks
    std::vector<float> y(128 * 4096, 5.0f);
    r.sequential();
    simulate(r.prog, trn2(), {}, {y.data()}, o);
    int bad = 0;
    for (int64_t p = 0; p < 128; ++p)
      for (int64_t i = 0; i < 4096; ++i) {
        const float e = expect(p, i * 4), v = y[size_t(p * 4096 + i)];
        bad += !(v == e || (std::isnan(e) && std::isnan(v)));
      }
    CHECK(bad == 0);
  }
}

// Tests of the functional simulator's fast paths that must give the same bits
// as the general paths they stand in for: exp without float underflow,
// order-free max / min, bit-copying select, tensor_tensor with a broadcast
// operand as tensor_scalar, direct bf16 -> fp32 copies, the conversions of
// the integer (double) path, bf16 matmul operands packed in one step, and
// Internal HBM buffers recycled between runs.
#include "runtime/simulator/Simulator.h"
#include "runtime/simulator/functional/Kernels.h"
#include "runtime/simulator/functional/Numerics.h"
#include "runtime/simulator/functional/VecMath.h"

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

bool sameBits(float a, float b) { return floatToBits(a) == floatToBits(b); }

/// The max / min reduction in the fixed order of Kernels.cpp's reduceLoop
/// (two interleaved accumulators of 8 lanes, a lane tree, then the tail),
/// with its NaN-propagating operation: the bits the kernel must return.
float fixedOrderExtremum(bool max, const float *a, int64_t n) {
  auto op = [max](float x, float y) {
    return ((max ? x > y : x < y) || x != x) ? x : y;
  };
  const float init = max ? -INFINITY : INFINITY;
  float acc0[8], acc1[8];
  std::fill(acc0, acc0 + 8, init);
  std::fill(acc1, acc1 + 8, init);
  int64_t i = 0;
  for (; i + 16 <= n; i += 16)
    for (int j = 0; j < 8; ++j) {
      acc0[j] = op(acc0[j], a[i + j]);
      acc1[j] = op(acc1[j], a[i + 8 + j]);
    }
  if (i + 8 <= n) {
    for (int j = 0; j < 8; ++j)
      acc0[j] = op(acc0[j], a[i + j]);
    i += 8;
  }
  for (int j = 0; j < 8; ++j)
    acc0[j] = op(acc0[j], acc1[j]);
  float r = op(op(op(acc0[0], acc0[1]), op(acc0[2], acc0[3])),
               op(op(acc0[4], acc0[5]), op(acc0[6], acc0[7])));
  for (; i < n; ++i)
    r = op(r, a[i]);
  return r;
}

uint16_t quietBf16(uint16_t h) {
  return (h & 0x7fff) > 0x7f80 ? uint16_t(h | 0x40) : h;
}

} // namespace

TEST_CASE("scaleByPow2 rounds underflowing products like the float product",
          "[kernels][fast]") {
  using vm::vf8;
  using vm::vi8;
  std::mt19937 rng(5);
  int bad = 0, underflows = 0;
  for (int it = 0; it < 200000; ++it) {
    vf8 y;
    vi8 e;
    vf8 s;
    for (int j = 0; j < 8; ++j) {
      // y in [2^-40, 2^2), e in [-126, 0]: many products below 2^-126.
      const uint32_t bits =
          ((uint32_t(rng()) % 43 + 87) << 23) | (uint32_t(rng()) & 0x7fffff);
      y[j] = bitsToFloat(bits);
      e[j] = -int32_t(rng() % 127);
      s[j] = bitsToFloat(uint32_t(e[j] + 127) << 23);
    }
    const vf8 r = vm::scaleByPow2(y, e, s);
    for (int j = 0; j < 8; ++j) {
      const float want = y[j] * s[j];
      underflows += std::fpclassify(want) != FP_NORMAL;
      bad += !sameBits(r[j], want);
    }
  }
  CHECK(underflows > 100000);
  CHECK(bad == 0);
}

TEST_CASE("exp-based activations are accurate where exp underflows",
          "[kernels][fast]") {
  // Long arrays run the vector loops; with arguments below the underflow
  // threshold they take the path that rounds in integer arithmetic.
  const int64_t n = 4099;
  std::vector<float> x(static_cast<size_t>(n)), y(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i)
    x[size_t(i)] = -110.0f + 30.0f * float(i) / float(n);
  x[7] = -INFINITY;
  x[8] = NAN;
  kernels::activation(ActFunc::Exp, x.data(), y.data(), n, 1.0f, 0.0f);
  for (int64_t i = 0; i < n; ++i) {
    const float v = x[size_t(i)];
    if (std::isnan(v)) {
      CHECK(std::isnan(y[size_t(i)]));
      continue;
    }
    const double ref = std::exp(double(v));
    // Subnormal results: within one step of the smallest subnormal.
    CHECK(std::fabs(double(y[size_t(i)]) - ref) <=
          std::max(1.5e-45, 1e-6 * ref));
  }
  // Sigmoid and silu of large negative arguments, gelu_tanh of large
  // positive ones: the same values as one at a time (the scalar loop).
  for (ActFunc f : {ActFunc::Sigmoid, ActFunc::Silu, ActFunc::GeluTanh,
                    ActFunc::Gelu, ActFunc::Erf, ActFunc::Softplus}) {
    INFO(actFuncName(f));
    std::vector<float> z(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i)
      z[size_t(i)] = (i % 2 ? -1.0f : 1.0f) * (float(i % 200) * 0.6f);
    kernels::activation(f, z.data(), y.data(), n, 1.0f, 0.0f);
    int far = 0;
    for (int64_t i = 0; i < n; ++i) {
      float one;
      kernels::activation(f, &z[size_t(i)], &one, 1, 1.0f, 0.0f);
      const double d = std::fabs(double(y[size_t(i)]) - double(one));
      far += !(d <= 1e-6 * std::fabs(double(one)) || d < 1e-37);
    }
    CHECK(far == 0);
  }
}

TEST_CASE("max / min reductions give the fixed-order bits", "[kernels][fast]") {
  std::mt19937 rng(9);
  std::normal_distribution<float> nd(0.0f, 3.0f);
  int bad = 0, cases = 0;
  for (int kind = 0; kind < 6; ++kind)
    for (int64_t n : {1, 7, 8, 9, 16, 31, 33, 64, 100, 1000, 2048, 2055}) {
      std::vector<float> a(static_cast<size_t>(n));
      for (auto &v : a)
        v = nd(rng);
      switch (kind) {
      case 1: // zeros of both signs are the extremum
        for (auto &v : a)
          v = (rng() % 2) ? 0.0f : -0.0f;
        break;
      case 2: // negative values and zeros: max is a zero
        for (auto &v : a)
          v = (rng() % 3) ? -std::fabs(v) : ((rng() % 2) ? 0.0f : -0.0f);
        break;
      case 3: // NaNs with different payloads
        for (int k = 0; k < 3; ++k)
          a[rng() % size_t(n)] = bitsToFloat(0x7fc00000u | (rng() & 0xffff));
        break;
      case 4: // infinities
        a[rng() % size_t(n)] = -INFINITY;
        a[rng() % size_t(n)] = INFINITY;
        break;
      case 5: // all -inf (masked rows)
        std::fill(a.begin(), a.end(), -INFINITY);
        break;
      default:
        break;
      }
      for (bool max : {true, false}) {
        const float got =
            kernels::reduce(max ? AluOp::Max : AluOp::Min, a.data(), n);
        bad += !sameBits(got, fixedOrderExtremum(max, a.data(), n));
        ++cases;
      }
    }
  CHECK(cases == 144);
  CHECK(bad == 0);
}

TEST_CASE("select copies bf16 and fp32 bits, quieting bf16 NaNs",
          "[kernels][fast]") {
  const int64_t F = 200;
  for (DType vt : {DType::BF16, DType::F32}) {
    INFO(dtypeName(vt));
    const int64_t eb = dtypeSize(vt);
    // mode 0: separate dst; 1: in place on srcs[1]; 2: dst overlaps srcs[2]
    // shifted by one element (the fp32 path).
    for (int mode = 0; mode < 3; ++mode) {
      INFO("mode " << mode);
      Builder b;
      uint32_t ic = b.input("c", DType::Bool, {2, F});
      uint32_t ia = b.input("a", vt, {2, F});
      uint32_t ib = b.input("b", vt, {2, F});
      uint32_t out = b.output("y", vt, {2, F});
      b.dma(kQueueDma0, sbuf(DType::Bool, 0, 0, 2, {F}),
            hbm(ic, DType::Bool, 0, {{F, 2}, {1, F}}));
      b.dma(kQueueDma0, sbuf(vt, 0, 1024, 2, {F}),
            hbm(ia, vt, 0, {{F, 2}, {1, F}}));
      b.dma(kQueueDma0, sbuf(vt, 0, 4096, 2, {F}),
            hbm(ib, vt, 0, {{F, 2}, {1, F}}));
      const int64_t dstAt = mode == 0 ? 8192 : mode == 1 ? 1024 : 4096 + eb;
      b.op(Opcode::Select, kQueueVector, sbuf(vt, 0, dstAt, 2, {F}),
           {sbuf(DType::Bool, 0, 0, 2, {F}), sbuf(vt, 0, 1024, 2, {F}),
            sbuf(vt, 0, 4096, 2, {F})});
      b.dma(kQueueDma0, hbm(out, vt, 0, {{F, 2}, {1, F}}),
            sbuf(vt, 0, dstAt, 2, {F}));
      std::vector<uint8_t> c(size_t(2 * F));
      std::vector<uint8_t> a(size_t(2 * F * eb)), bb(a.size()), y(a.size());
      std::mt19937 rng(uint32_t(mode) + 17);
      for (auto &v : c)
        v = uint8_t(rng() % 2);
      for (size_t i = 0; i < a.size(); ++i) {
        a[i] = uint8_t(rng());
        bb[i] = uint8_t(rng());
      }
      // Some NaNs (signaling and quiet) and signed zeros.
      const uint16_t specials16[] = {0x7f81, 0xff81, 0x7fc1, 0x8000, 0x7f80};
      const uint32_t specials32[] = {0x7f800001u, 0xffc00123u, 0x80000000u};
      for (int k = 0; k < 5; ++k) {
        if (eb == 2)
          std::memcpy(&a[size_t(k * 7) * 2], &specials16[k], 2);
        if (eb == 4 && k < 3)
          std::memcpy(&bb[size_t(k * 9) * 4], &specials32[k], 4);
      }
      b.sequential();
      simulate(b.prog, trn2(), {c.data(), a.data(), bb.data()}, {y.data()});
      int bad = 0;
      for (int64_t i = 0; i < 2 * F; ++i) {
        // Every mode reads a row before it writes it (mode 2 overlaps only
        // inside the row): the outputs are select(c, a, b) of the inputs.
        const uint8_t *pick = c[size_t(i)] ? &a[size_t(i * eb)]
                                           : &bb[size_t(i * eb)];
        if (eb == 2) {
          uint16_t want, got;
          std::memcpy(&want, pick, 2);
          want = quietBf16(want);
          std::memcpy(&got, &y[size_t(i * 2)], 2);
          bad += want != got;
        } else {
          bad += std::memcmp(pick, &y[size_t(i * 4)], 4) != 0;
        }
      }
      CHECK(bad == 0);
    }
  }
}

TEST_CASE("tensor_tensor with a broadcast operand on either side",
          "[kernels][fast]") {
  const int64_t P = 3;
  for (int64_t F : {5, 64, 300, 2100}) {
    for (AluOp op : {AluOp::Sub, AluOp::Div, AluOp::Pow, AluOp::Max,
                     AluOp::Mod, AluOp::Fmod, AluOp::Lt}) {
      for (int side = 0; side < 2; ++side) {
        INFO("F " << F << " op " << aluOpName(op) << " side " << side);
        Builder b;
        uint32_t ix = b.input("x", DType::F32, {P, F});
        uint32_t is = b.input("s", DType::BF16, {P, 1});
        uint32_t out = b.output("y", DType::F32, {P, F});
        b.dma(kQueueDma0, sbuf(DType::F32, 0, 0, P, {F}),
              hbm(ix, DType::F32, 0, {{F, P}, {1, F}}));
        b.dma(kQueueDma0, sbuf(DType::BF16, 0, 16384, P, {1}),
              hbm(is, DType::BF16, 0, {{1, P}, {1, 1}}));
        AccessPattern bc = sbuf(DType::BF16, 0, 16384, P, {1});
        bc.dims[1] = {0, F};
        std::vector<AccessPattern> srcs = {sbuf(DType::F32, 0, 0, P, {F}), bc};
        if (side == 0)
          std::swap(srcs[0], srcs[1]);
        b.op(Opcode::TensorTensor, kQueueVector,
             sbuf(DType::F32, 0, 32768, P, {F}), srcs);
        b.last().alu = op;
        b.dma(kQueueDma0, hbm(out, DType::F32, 0, {{F, P}, {1, F}}),
              sbuf(DType::F32, 0, 32768, P, {F}));
        std::vector<float> x(size_t(P * F)), y(x.size());
        std::vector<uint16_t> s = {floatToBf16(1.5f), floatToBf16(-0.75f),
                                   floatToBf16(NAN)};
        for (size_t i = 0; i < x.size(); ++i)
          x[i] = float(int(i % 23) - 11) * 0.37f;
        x[3] = NAN;
        b.sequential();
        simulate(b.prog, trn2(), {x.data(), s.data()}, {y.data()});
        const size_t nf = static_cast<size_t>(F);
        std::vector<float> xs(nf), ss(nf), want(nf);
        int bad = 0;
        for (int64_t p = 0; p < P; ++p) {
          for (int64_t i = 0; i < F; ++i) {
            xs[size_t(i)] = x[size_t(p * F + i)];
            ss[size_t(i)] = bf16ToFloat(s[size_t(p)]);
          }
          if (side == 0)
            kernels::tensorTensor(op, ss.data(), xs.data(), want.data(), F);
          else
            kernels::tensorTensor(op, xs.data(), ss.data(), want.data(), F);
          for (int64_t i = 0; i < F; ++i)
            bad += !sameBits(y[size_t(p * F + i)], want[size_t(i)]);
        }
        CHECK(bad == 0);
      }
    }
  }
}

TEST_CASE("bf16 -> fp32 tensor_copy, direct and overlapping",
          "[kernels][fast]") {
  const int64_t F = 3000;
  for (int64_t dstAt : {int64_t(16384), int64_t(0), int64_t(2), int64_t(-1)}) {
    INFO("dst at " << dstAt);
    Builder b;
    uint32_t in = b.input("x", DType::BF16, {1, F});
    uint32_t out = b.output("y", DType::F32, {1, F});
    // Source at byte 6000; dst at 16384 (disjoint), or over the source: the
    // result is that of converting the whole source first.
    const int64_t srcAt = 6000, at = dstAt < 0 ? srcAt - 3000 : srcAt + dstAt;
    b.dma(kQueueDma0, sbuf(DType::BF16, 0, srcAt, 1, {F}),
          hbm(in, DType::BF16, 0, {{F, 1}, {1, F}}));
    b.op(Opcode::TensorCopy, kQueueVector, sbuf(DType::F32, 0, at, 1, {F}),
         {sbuf(DType::BF16, 0, srcAt, 1, {F})});
    b.dma(kQueueDma0, hbm(out, DType::F32, 0, {{F, 1}, {1, F}}),
          sbuf(DType::F32, 0, at, 1, {F}));
    std::vector<uint16_t> x(static_cast<size_t>(F));
    for (int64_t i = 0; i < F; ++i)
      x[size_t(i)] = uint16_t(0x3f00 + i * 13);
    std::vector<float> y(static_cast<size_t>(F));
    b.sequential();
    simulate(b.prog, trn2(), {x.data()}, {y.data()});
    // Chunks of at most 2048 elements are converted before they are written.
    int bad = 0;
    std::vector<uint8_t> mem(65536, 0);
    std::memcpy(&mem[size_t(srcAt)], x.data(), size_t(F * 2));
    for (int64_t off = 0; off < F; off += 2048) {
      const int64_t n = std::min<int64_t>(2048, F - off);
      std::vector<float> tmp(static_cast<size_t>(n));
      for (int64_t i = 0; i < n; ++i) {
        uint16_t h;
        std::memcpy(&h, &mem[size_t(srcAt + (off + i) * 2)], 2);
        tmp[size_t(i)] = bf16ToFloat(h);
      }
      std::memcpy(&mem[size_t(at + off * 4)], tmp.data(), size_t(n * 4));
    }
    for (int64_t i = 0; i < F; ++i) {
      float want;
      std::memcpy(&want, &mem[size_t(at + i * 4)], 4);
      bad += !sameBits(y[size_t(i)], want);
    }
    CHECK(bad == 0);
  }
}

TEST_CASE("double-path conversion kernels match Numerics.h",
          "[kernels][fast]") {
  std::mt19937_64 rng(21);
  std::vector<int64_t> iv;
  for (int64_t v : {int64_t(0), int64_t(1), int64_t(-1), INT64_MAX, INT64_MIN,
                    (int64_t(1) << 53) + 1, -(int64_t(1) << 53) - 3})
    iv.push_back(v);
  for (int i = 0; i < 5000; ++i)
    iv.push_back(int64_t(rng()) >> (rng() % 64));
  std::vector<double> d(iv.size());
  kernels::i64ToF64(iv.data(), d.data(), int64_t(iv.size()));
  int bad = 0;
  for (size_t i = 0; i < iv.size(); ++i)
    bad += d[i] != double(iv[i]);
  CHECK(bad == 0);

  std::vector<double> dv = {0.0, -0.0, 0.5, -0.5, 1e300, -1e300, INFINITY,
                            -INFINITY, NAN, 9.2e18, -9.2e18, 9.19e18,
                            -9.19e18, 4503599627370497.0, -3.7};
  for (int i = 0; i < 5000; ++i)
    dv.push_back(double(int64_t(rng())) * std::ldexp(1.0, int(rng() % 40) - 60));
  std::vector<int64_t> o(dv.size());
  std::vector<uint8_t> ob(dv.size());
  kernels::f64ToI64(dv.data(), o.data(), int64_t(dv.size()));
  kernels::f64ToBool(dv.data(), ob.data(), int64_t(dv.size()));
  bad = 0;
  for (size_t i = 0; i < dv.size(); ++i) {
    bad += o[i] != toInt64(dv[i]);
    bad += ob[i] != uint8_t(dv[i] != 0.0);
  }
  CHECK(bad == 0);

  std::vector<uint8_t> u(256);
  for (size_t i = 0; i < u.size(); ++i)
    u[i] = uint8_t(i);
  std::vector<double> du(u.size());
  kernels::u8ToF64(u.data(), du.data(), int64_t(u.size()));
  bad = 0;
  for (size_t i = 0; i < u.size(); ++i)
    bad += du[i] != double(i);
  CHECK(bad == 0);
}

TEST_CASE("bf16 matmul operands packed in one step equal the general path",
          "[kernels][matmul][fast]") {
  // The same matmul with the stationary operand at an even byte offset (bf16
  // rows: packed by packBf16Panels) and at an odd one (gathered first).
  const int64_t K = 40, M = 19, N = 70;
  std::vector<float> results[2];
  for (int odd = 0; odd < 2; ++odd) {
    Builder b;
    uint32_t ia = b.input("a", DType::BF16, {K, M});
    uint32_t ib = b.input("b", DType::BF16, {K, N});
    uint32_t oc = b.output("c", DType::F32, {M, N});
    const int64_t aAt = 100 + odd;
    b.dma(kQueueDma0, sbuf(DType::BF16, 0, aAt, K, {M}),
          hbm(ia, DType::BF16, 0, {{M, K}, {1, M}}));
    b.dma(kQueueDma0, sbuf(DType::BF16, 0, 1024, K, {N}),
          hbm(ib, DType::BF16, 0, {{N, K}, {1, N}}));
    b.op(Opcode::Matmul, kQueueTensor, psum(DType::F32, 0, 0, M, {N}),
         {sbuf(DType::BF16, 0, aAt, K, {M}),
          sbuf(DType::BF16, 0, 1024, K, {N})});
    b.op(Opcode::TensorCopy, kQueueVector, sbuf(DType::F32, 0, 4096, M, {N}),
         {psum(DType::F32, 0, 0, M, {N})});
    b.dma(kQueueDma0, hbm(oc, DType::F32, 0, {{N, M}, {1, N}}),
          sbuf(DType::F32, 0, 4096, M, {N}));
    std::vector<uint16_t> a(size_t(K * M)), bm(size_t(K * N));
    for (size_t i = 0; i < a.size(); ++i)
      a[i] = floatToBf16(float(int(i % 9) - 4) * 0.25f);
    for (size_t i = 0; i < bm.size(); ++i)
      bm[i] = floatToBf16(float(int(i % 11) - 5) * 0.5f);
    results[odd].assign(size_t(M * N), 0.0f);
    b.sequential();
    simulate(b.prog, trn2(), {a.data(), bm.data()}, {results[odd].data()});
    // Small exact products and sums: exactly the naive result.
    int bad = 0;
    for (int64_t m = 0; m < M; ++m)
      for (int64_t n = 0; n < N; ++n) {
        float ref = 0;
        for (int64_t k = 0; k < K; ++k)
          ref += bf16ToFloat(a[size_t(k * M + m)]) *
                 bf16ToFloat(bm[size_t(k * N + n)]);
        bad += results[odd][size_t(m * N + n)] != ref;
      }
    CHECK(bad == 0);
  }
  CHECK(results[0] == results[1]);
}

TEST_CASE("recycled Internal HBM buffers read back as zeros (or poison)",
          "[memory][fast]") {
  const int64_t R = 64, C = 1024; // 256 KiB of fp32: recycled between runs
  // Run 1 writes 1.0f over all of an internal buffer.
  Builder w;
  uint32_t wi = w.buffer(BufferDecl::Kind::Internal, "t", DType::F32, {R, C});
  w.op(Opcode::Memset, kQueueVector, sbuf(DType::F32, 0, 0, R, {C}), {});
  w.last().imm[0] = 1.0;
  w.dma(kQueueDma0, hbm(wi, DType::F32, 0, {{C, R}, {1, C}}),
        sbuf(DType::F32, 0, 0, R, {C}));
  // Run 2, on a buffer of the same size: (a) a dense write of rows [8, 12)
  // starting mid-granule, (b) every other element of row 20, (c) a column
  // block; then everything is read back.
  Builder r;
  uint32_t ri = r.buffer(BufferDecl::Kind::Internal, "t", DType::F32, {R, C});
  uint32_t out = r.output("y", DType::F32, {R, C});
  r.op(Opcode::Memset, kQueueVector, sbuf(DType::F32, 0, 0, 4, {C}), {});
  r.last().imm[0] = 2.0;
  r.dma(kQueueDma0, hbm(ri, DType::F32, 8 * C + 100, {{C, 4}, {1, C}}),
        sbuf(DType::F32, 0, 0, 4, {C}));
  r.op(Opcode::Memset, kQueueVector, sbuf(DType::F32, 0, 8192, 1, {C / 2}), {});
  r.last().imm[0] = 3.0;
  r.dma(kQueueDma0, hbm(ri, DType::F32, 20 * C, {{2, C / 2}}),
        sbuf(DType::F32, 0, 8192, 1, {C / 2}));
  r.op(Opcode::Memset, kQueueVector, sbuf(DType::F32, 0, 16384, 16, {8}), {});
  r.last().imm[0] = 4.0;
  r.dma(kQueueDma0, hbm(ri, DType::F32, 40 * C + 500, {{C, 16}, {1, 8}}),
        sbuf(DType::F32, 0, 16384, 16, {8}));
  for (int64_t row = 0; row < R; row += 16) {
    r.dma(kQueueDma0, sbuf(DType::F32, 0, 32768, 16, {C}),
          hbm(ri, DType::F32, row * C, {{C, 16}, {1, C}}));
    r.dma(kQueueDma0, hbm(out, DType::F32, row * C, {{C, 16}, {1, C}}),
          sbuf(DType::F32, 0, 32768, 16, {C}));
  }
  for (bool poison : {false, true, false}) {
    INFO("poison " << poison);
    const float fresh = poison ? NAN : 0.0f;
    auto expect = [&](int64_t i) -> float {
      if (i >= 8 * C + 100 && i < 12 * C + 100)
        return 2.0f;
      if (i >= 20 * C && i < 21 * C)
        return (i - 20 * C) % 2 == 0 ? 3.0f : fresh;
      const int64_t row = i / C, col = i % C;
      if (row >= 40 && row < 56 && col >= 500 && col < 508)
        return 4.0f;
      return fresh;
    };
    RunOptions o;
    o.poisonMemory = poison;
    w.sequential();
    simulate(w.prog, trn2(), {}, {}, o);
    std::vector<float> y(size_t(R * C), 5.0f);
    r.sequential();
    simulate(r.prog, trn2(), {}, {y.data()}, o);
    int bad = 0;
    for (int64_t i = 0; i < R * C; ++i) {
      const float e = expect(i), v = y[size_t(i)];
      bad += !(v == e || (std::isnan(e) && std::isnan(v)));
    }
    CHECK(bad == 0);
  }
}

// Elementwise, reduction and conversion kernels (see Kernels.h).
#include "runtime/simulator/functional/Kernels.h"

#include "runtime/simulator/functional/ElementOps.h"
#include "runtime/simulator/functional/KernelsDetail.h"
#include "runtime/simulator/functional/VecMath.h"

#include <climits>
#include <cmath>
#include <cstring>

namespace neuron::runtime::kernels {

using vm::kLanes;
using vm::load8;
using vm::sel;
using vm::splat;
using vm::store8;
using vm::vf8;

namespace {

/// out[i] = f(in[i] * scale + bias), a vector V at a time, then the tail. A bias
/// of 0 is no bias: f(in[i] * scale), which keeps -0 (-0 + 0 would be +0).
template <class V, class F>
NEURON_AI void mapUnary(const float *in, float *out, int64_t n, float scale,
                        float bias, F f) {
  constexpr int lanes = int(sizeof(V) / sizeof(float));
  int64_t i = 0;
  if (bias == 0.0f) {
    for (; i + lanes <= n; i += lanes)
      vm::storeV(out + i, f(vm::loadV<V>(in + i) * scale));
    for (; i < n; ++i)
      out[i] = f(in[i] * scale);
    return;
  }
  for (; i + lanes <= n; i += lanes)
    vm::storeV(out + i, f(vm::loadV<V>(in + i) * scale + bias));
  for (; i < n; ++i)
    out[i] = f(in[i] * scale + bias);
}

/// mapUnary with `fast`, or with `safe` if an argument in[i] * scale + bias
/// of the vector loop lies outside [lo, hi]: `fast` and `safe` compute the
/// same bits, but outside [lo, hi] `fast` may have float operations that
/// underflow (slow on x86: see vm::scaleByPow2) and `safe` avoids them. The
/// scalar tail is the same either way.
template <class V, class Fast, class Safe>
NEURON_AI void mapUnaryGuarded(const float *in, float *out, int64_t n,
                               float scale, float bias, float lo, float hi,
                               Fast fast, Safe safe) {
  constexpr int lanes = int(sizeof(V) / sizeof(float));
  const int64_t body = n - n % lanes;
  bool inRange = true;
  if (body > 0) {
    // NaN inputs are skipped (x < y ? x : y keeps y): they never underflow.
    V mn = vm::loadV<V>(in), mx = mn, mn2 = mn, mx2 = mn;
    int64_t i = lanes;
    for (; i + 2 * lanes <= body; i += 2 * lanes) {
      const V x = vm::loadV<V>(in + i), y = vm::loadV<V>(in + i + lanes);
      mn = x < mn ? x : mn;
      mx = x > mx ? x : mx;
      mn2 = y < mn2 ? y : mn2;
      mx2 = y > mx2 ? y : mx2;
    }
    for (; i < body; i += lanes) {
      const V x = vm::loadV<V>(in + i);
      mn = x < mn ? x : mn;
      mx = x > mx ? x : mx;
    }
    mn = mn2 < mn ? mn2 : mn;
    mx = mx2 > mx ? mx2 : mx;
    float a = __builtin_inff(), b = -__builtin_inff();
    for (int j = 0; j < lanes; ++j) {
      a = mn[j] < a ? mn[j] : a;
      b = mx[j] > b ? mx[j] : b;
    }
    // u is monotonic in x: its range is that of the two ends (a margin in
    // lo and hi covers rounding).
    const float ua = a * scale + bias, ub = b * scale + bias;
    inRange = ua >= lo && ua <= hi && ub >= lo && ub <= hi;
    if (!(a <= b)) // all NaN
      inRange = true;
  }
  if (inRange)
    mapUnary<V>(in, out, n, scale, bias, fast);
  else
    mapUnary<V>(in, out, n, scale, bias, safe);
}

/// Scalar-only functions (libm): no vector form. A bias of 0 is no bias.
template <class F>
NEURON_AI void mapUnaryScalar(const float *in, float *out, int64_t n,
                              float scale, float bias, F f) {
  if (bias == 0.0f) {
    for (int64_t i = 0; i < n; ++i)
      out[i] = f(in[i] * scale);
    return;
  }
  for (int64_t i = 0; i < n; ++i)
    out[i] = f(in[i] * scale + bias);
}

/// mode 0: a[i] op b[i]; 1: a[i] op imm; 2: imm op a[i].
template <class Op>
NEURON_AI void mapBinary(const float *a, const float *b, float imm, int mode,
                         float *out, int64_t n, Op op) {
  int64_t i = 0;
  if (mode == 0) {
    for (; i + kLanes <= n; i += kLanes)
      store8(out + i, op(load8(a + i), load8(b + i)));
    for (; i < n; ++i)
      out[i] = op(a[i], b[i]);
  } else if (mode == 1) {
    const vf8 s = splat<vf8>(imm);
    for (; i + kLanes <= n; i += kLanes)
      store8(out + i, op(load8(a + i), s));
    for (; i < n; ++i)
      out[i] = op(a[i], imm);
  } else {
    const vf8 s = splat<vf8>(imm);
    for (; i + kLanes <= n; i += kLanes)
      store8(out + i, op(s, load8(a + i)));
    for (; i < n; ++i)
      out[i] = op(imm, a[i]);
  }
}

template <class Op>
NEURON_AI void mapBinaryScalar(const float *a, const float *b, float imm,
                               int mode, float *out, int64_t n, Op op) {
  for (int64_t i = 0; i < n; ++i) {
    const float x = mode == 2 ? imm : a[i];
    const float y = mode == 0 ? b[i] : mode == 1 ? imm : a[i];
    out[i] = op(x, y);
  }
}

#define NEURON_LAMBDA_AI __attribute__((always_inline))

template <class V> NEURON_AI V boolToFloat(decltype(V{} < V{}) m) {
  return sel(m, splat<V>(1.0f), splat<V>(0.0f));
}

NEURON_AI void binaryDispatch(AluOp op, const float *a, const float *b,
                              float imm, int mode, float *out, int64_t n) {
#define NEURON_BIN(expr)                                                      \
  return mapBinary(a, b, imm, mode, out, n,                                   \
                   [](auto x, auto y) NEURON_LAMBDA_AI {                       \
                     using V = decltype(x);                                   \
                     (void)sizeof(V);                                         \
                     return expr;                                             \
                   })
  switch (op) {
  case AluOp::Add:
    NEURON_BIN(x + y);
  case AluOp::Sub:
    NEURON_BIN(x - y);
  case AluOp::Mul:
    NEURON_BIN(x * y);
  case AluOp::Div:
    NEURON_BIN(x / y);
  case AluOp::Max: // NaN-propagating, as torch.maximum
    NEURON_BIN(sel((x > y) | (x != x), x, y));
  case AluOp::Min:
    NEURON_BIN(sel((x < y) | (x != x), x, y));
  case AluOp::Eq:
    NEURON_BIN(boolToFloat<V>(x == y));
  case AluOp::Ne:
    NEURON_BIN(boolToFloat<V>(x != y));
  case AluOp::Lt:
    NEURON_BIN(boolToFloat<V>(x < y));
  case AluOp::Le:
    NEURON_BIN(boolToFloat<V>(x <= y));
  case AluOp::Gt:
    NEURON_BIN(boolToFloat<V>(x > y));
  case AluOp::Ge:
    NEURON_BIN(boolToFloat<V>(x >= y));
  case AluOp::And: // logical on floats
    NEURON_BIN(boolToFloat<V>((x != 0.0f) & (y != 0.0f)));
  case AluOp::Or:
    NEURON_BIN(boolToFloat<V>((x != 0.0f) | (y != 0.0f)));
  case AluOp::Xor:
    NEURON_BIN(boolToFloat<V>((x != 0.0f) ^ (y != 0.0f)));
  case AluOp::Pow:
    return mapBinaryScalar(a, b, imm, mode, out, n,
                           [](float x, float y) { return std::pow(x, y); });
  case AluOp::Mod: // torch.remainder: the result takes the divisor's sign
    return mapBinaryScalar(a, b, imm, mode, out, n, [](float x, float y) {
      float r = std::fmod(x, y);
      return (r != 0 && ((r < 0) != (y < 0))) ? r + y : r;
    });
  case AluOp::Fmod: // C's fmod: the result takes the dividend's sign
    return mapBinaryScalar(a, b, imm, mode, out, n,
                           [](float x, float y) { return std::fmod(x, y); });
  case AluOp::Bypass:
  case AluOp::AbsMax:
  case AluOp::AbsMin: // activate2's (ElementOps.h)
    return withAluOp<float>(op, [&](auto f) { mapBinaryScalar(a, b, imm, mode, out, n, f); });
  }
#undef NEURON_BIN
}

template <class Op>
NEURON_AI float reduceLoop(const float *a, int64_t n, float init, Op op) {
  vf8 acc0 = splat<vf8>(init), acc1 = acc0;
  int64_t i = 0;
  for (; i + 2 * kLanes <= n; i += 2 * kLanes) {
    acc0 = op(acc0, load8(a + i));
    acc1 = op(acc1, load8(a + i + kLanes));
  }
  if (i + kLanes <= n) {
    acc0 = op(acc0, load8(a + i));
    i += kLanes;
  }
  acc0 = op(acc0, acc1);
  float r = op(op(op(acc0[0], acc0[1]), op(acc0[2], acc0[3])),
               op(op(acc0[4], acc0[5]), op(acc0[6], acc0[7])));
  for (; i < n; ++i)
    r = op(r, a[i]);
  return r;
}

/// Max (kMax) or min of a[0..n) in no particular order, ignoring NaNs,
/// with kAcc accumulators of V; `nan` tells whether a NaN was seen.
template <class V, int kAcc, bool kMax>
NEURON_AI float extremumAnyOrder(const float *a, int64_t n, bool &nan) {
  constexpr int lanes = int(sizeof(V) / sizeof(float));
  const float init = kMax ? -__builtin_inff() : __builtin_inff();
  auto pick = [](V x, V y) NEURON_LAMBDA_AI {
    if constexpr (kMax)
      return x > y ? x : y;
    else
      return x < y ? x : y;
  };
  V acc[kAcc];
  decltype(V{} != V{}) bad[kAcc];
  for (int j = 0; j < kAcc; ++j) {
    acc[j] = splat<V>(init);
    bad[j] = acc[j] != acc[j];
  }
  int64_t i = 0;
  for (; i + kAcc * lanes <= n; i += kAcc * lanes)
    for (int j = 0; j < kAcc; ++j) {
      const V x = vm::loadV<V>(a + i + j * lanes);
      acc[j] = pick(x, acc[j]);
      bad[j] |= x != x;
    }
  for (; i + lanes <= n; i += lanes) {
    const V x = vm::loadV<V>(a + i);
    acc[0] = pick(x, acc[0]);
    bad[0] |= x != x;
  }
  for (int j = 1; j < kAcc; ++j) {
    acc[0] = pick(acc[j], acc[0]);
    bad[0] |= bad[j];
  }
  float r = init;
  nan = false;
  for (int j = 0; j < lanes; ++j) {
    r = kMax ? (acc[0][j] > r ? acc[0][j] : r) : (acc[0][j] < r ? acc[0][j] : r);
    nan |= bad[0][j] != 0;
  }
  for (; i < n; ++i) {
    r = kMax ? (a[i] > r ? a[i] : r) : (a[i] < r ? a[i] : r);
    nan |= a[i] != a[i];
  }
  return r;
}

/// Max or min (NaN-propagating `op`, in the fixed order of reduceLoop). The
/// maximum (minimum) of values without NaN is one value whatever the order,
/// with the same bits, unless it is a zero (+0 and -0 compare equal): so the
/// order-free loop answers, except for a NaN or a zero.
template <class V, bool kMax, class Op>
NEURON_AI float reduceExtremum(const float *a, int64_t n, float init, Op op) {
  bool nan = false;
  const float r = extremumAnyOrder<V, 4, kMax>(a, n, nan);
  if (!nan && r != 0.0f)
    return r;
  return reduceLoop(a, n, init, op);
}

} // namespace

const char *isaName() {
#if NEURON_KERNEL_CLONES
  __builtin_cpu_init();
  if (__builtin_cpu_supports("x86-64-v4"))
    return "x86-64-v4";
  if (__builtin_cpu_supports("x86-64-v3"))
    return "x86-64-v3";
#endif
  return "baseline";
}

namespace {

/// The activation loops with vectors of type VW.
template <class VW>
NEURON_AI void activationBody(ActFunc f, const float *in, float *out,
                              int64_t n, float scale, float bias) {
  using namespace vm;
#define NEURON_ACT(expr)                                                      \
  return mapUnary<VW>(in, out, n, scale, bias, [](auto x) NEURON_LAMBDA_AI {  \
    using V = decltype(x);                                                    \
    (void)sizeof(V);                                                          \
    return expr;                                                              \
  })
#define NEURON_ACT_SCALAR(expr)                                               \
  return mapUnaryScalar(in, out, n, scale, bias, [](float x) { return expr; })
  // Functions of exp, with the argument range where exp cannot underflow.
#define NEURON_ACT_EXP(lo, hi, fn)                                            \
  return mapUnaryGuarded<VW>(                                                 \
      in, out, n, scale, bias, lo, hi,                                        \
      [](auto x) NEURON_LAMBDA_AI {                                           \
        constexpr bool kSafe = false;                                         \
        using V = decltype(x);                                                \
        (void)sizeof(V);                                                      \
        return fn;                                                            \
      },                                                                      \
      [](auto x) NEURON_LAMBDA_AI {                                           \
        constexpr bool kSafe = true;                                          \
        using V = decltype(x);                                                \
        (void)sizeof(V);                                                      \
        return fn;                                                            \
      })
  const float inf = __builtin_inff();
  switch (f) {
  case ActFunc::Identity:
    NEURON_ACT(x);
  case ActFunc::Relu: // NaN stays NaN, as torch.relu
    NEURON_ACT(sel(x < 0.0f, splat<V>(0.0f), x));
  case ActFunc::Exp:
    NEURON_ACT_EXP(-87.0f, inf, vexp<kSafe>(x));
  case ActFunc::Log:
    NEURON_ACT(vlog(x));
  case ActFunc::Tanh:
    NEURON_ACT(vtanh(x));
  case ActFunc::Sigmoid:
    NEURON_ACT_EXP(-87.0f, 87.0f, vsigmoid<kSafe>(x));
  case ActFunc::Sqrt:
    NEURON_ACT_SCALAR(std::sqrt(x));
  case ActFunc::Rsqrt:
    NEURON_ACT_SCALAR(1.0f / std::sqrt(x));
  case ActFunc::Erf:
    NEURON_ACT_EXP(-9.0f, 9.0f, verf<kSafe>(x));
  case ActFunc::Gelu:
    NEURON_ACT_EXP(-12.5f, 12.5f, vgelu<kSafe>(x));
  case ActFunc::GeluTanh:
    NEURON_ACT_EXP(-inf, 9.5f, vgeluTanh<kSafe>(x));
  case ActFunc::Silu:
    NEURON_ACT_EXP(-87.0f, 87.0f, x * vsigmoid<kSafe>(x));
  case ActFunc::Square:
    NEURON_ACT(x * x);
  case ActFunc::Abs:
    NEURON_ACT(vabs(x));
  case ActFunc::Neg:
    NEURON_ACT(-x);
  case ActFunc::Reciprocal:
    NEURON_ACT(1.0f / x);
  case ActFunc::Sin:
    NEURON_ACT_SCALAR(std::sin(x));
  case ActFunc::Cos:
    NEURON_ACT_SCALAR(std::cos(x));
  case ActFunc::Softplus:
    NEURON_ACT_EXP(-87.0f, inf, vsoftplus<kSafe>(x));
  case ActFunc::Arctan:
    NEURON_ACT_SCALAR(std::atan(x));
  }
#undef NEURON_ACT
#undef NEURON_ACT_SCALAR
#undef NEURON_ACT_EXP
}

// Transcendentals are compute bound: AVX-512 machines run them 16 wide.
// (C++ function versions: GCC builds the ifunc dispatcher.)
#if NEURON_KERNEL_CLONES
__attribute__((target("arch=x86-64-v4"))) void
activationImpl(ActFunc f, const float *in, float *out, int64_t n, float scale,
               float bias) {
  activationBody<vm::vf16>(f, in, out, n, scale, bias);
}
__attribute__((target("arch=x86-64-v3"))) void
activationImpl(ActFunc f, const float *in, float *out, int64_t n, float scale,
               float bias) {
  activationBody<vm::vf8>(f, in, out, n, scale, bias);
}
__attribute__((target("default"))) void
activationImpl(ActFunc f, const float *in, float *out, int64_t n, float scale,
               float bias) {
  activationBody<vm::vf8>(f, in, out, n, scale, bias);
}
#else
void activationImpl(ActFunc f, const float *in, float *out, int64_t n,
                    float scale, float bias) {
  activationBody<vm::vf8>(f, in, out, n, scale, bias);
}
#endif

} // namespace

void activation(ActFunc f, const float *in, float *out, int64_t n, float scale,
                float bias) {
  activationImpl(f, in, out, n, scale, bias);
}

NEURON_CLONES void tensorTensor(AluOp op, const float *a, const float *b,
                                float *out, int64_t n) {
  binaryDispatch(op, a, b, 0.0f, 0, out, n);
}

NEURON_CLONES void tensorScalar(AluOp op, const float *a, float imm,
                                bool reverse, float *out, int64_t n) {
  binaryDispatch(op, a, nullptr, imm, reverse ? 2 : 1, out, n);
}

NEURON_CLONES float reduce(AluOp op, const float *a, int64_t n) {
  switch (op) {
  case AluOp::Mul:
    return reduceLoop(a, n, 1.0f,
                      [](auto x, auto y) NEURON_LAMBDA_AI { return x * y; });
  case AluOp::Max:
    return reduceExtremum<vf8, true>(a, n, -__builtin_inff(),
                                     [](auto x, auto y) NEURON_LAMBDA_AI {
                                       return sel((x > y) | (x != x), x, y);
                                     });
  case AluOp::Min:
    return reduceExtremum<vf8, false>(a, n, __builtin_inff(),
                                      [](auto x, auto y) NEURON_LAMBDA_AI {
                                        return sel((x < y) | (x != x), x, y);
                                      });
  default:
    return reduceLoop(a, n, 0.0f,
                      [](auto x, auto y) NEURON_LAMBDA_AI { return x + y; });
  }
}

NEURON_CLONES void selectBf16(const uint8_t *cond, const uint16_t *a,
                              const uint16_t *b, uint16_t *out, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    const uint16_t v = cond[i] != 0 ? a[i] : b[i];
    out[i] = (v & 0x7fff) > 0x7f80 ? uint16_t(v | 0x40) : v;
  }
}

NEURON_CLONES void selectF32(const uint8_t *cond, const uint32_t *a,
                             const uint32_t *b, uint32_t *out, int64_t n) {
  for (int64_t i = 0; i < n; ++i)
    out[i] = cond[i] != 0 ? a[i] : b[i];
}

NEURON_CLONES void i64ToF64(const int64_t *in, double *out, int64_t n) {
  for (int64_t i = 0; i < n; ++i)
    out[i] = double(in[i]);
}

NEURON_CLONES void u8ToF64(const uint8_t *in, double *out, int64_t n) {
  for (int64_t i = 0; i < n; ++i)
    out[i] = double(in[i]);
}

NEURON_CLONES void f64ToI64(const double *in, int64_t *out, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    // toInt64 (Numerics.h) without branches: the conversion sees only
    // in-range values (out of range it is undefined in C++).
    const double v = in[i];
    const bool ok = v >= -0x1p63 && v < 0x1p63; // false for NaN
    const int64_t t = int64_t(ok ? v : 0.0);
    out[i] = ok ? t : INT64_MIN;
  }
}

NEURON_CLONES void f64ToBool(const double *in, uint8_t *out, int64_t n) {
  for (int64_t i = 0; i < n; ++i)
    out[i] = uint8_t(in[i] != 0.0);
}

NEURON_CLONES void bf16ToF32(const uint16_t *in, float *out, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    const uint32_t u = uint32_t(in[i]) << 16;
    std::memcpy(out + i, &u, 4);
  }
}

NEURON_CLONES void f32ToBf16(const float *in, uint16_t *out, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    uint32_t u;
    std::memcpy(&u, in + i, 4);
    const uint32_t rounded = (u + 0x7fffu + ((u >> 16) & 1)) >> 16;
    const uint32_t quiet = (u >> 16) | 0x40;
    out[i] = uint16_t((u & 0x7fffffffu) > 0x7f800000u ? quiet : rounded);
  }
}

namespace {

template <int W>
NEURON_AI void packBf16Rows(const uint8_t *base, int64_t rowStride,
                            int64_t rows, int64_t cols, float *out) {
  const int64_t full = cols / W, rest = cols - full * W;
  for (int64_t r = 0; r < rows; ++r) {
    const uint8_t *row = base + r * rowStride;
    for (int64_t p = 0; p < full; ++p) {
      float *dst = out + (p * rows + r) * W;
      const uint8_t *src = row + p * W * 2;
      for (int j = 0; j < W; ++j) {
        uint16_t h;
        std::memcpy(&h, src + 2 * j, 2);
        const uint32_t u = uint32_t(h) << 16;
        std::memcpy(dst + j, &u, 4);
      }
    }
    if (rest > 0) {
      float *dst = out + (full * rows + r) * W;
      const uint8_t *src = row + full * W * 2;
      for (int j = 0; j < W; ++j) {
        uint16_t h = 0;
        if (j < rest)
          std::memcpy(&h, src + 2 * j, 2);
        const uint32_t u = uint32_t(h) << 16;
        std::memcpy(dst + j, &u, 4);
      }
    }
  }
}

} // namespace

NEURON_CLONES void packBf16Panels(const uint8_t *base, int64_t rowStride,
                                  int64_t rows, int64_t cols, int width,
                                  float *out) {
  switch (width) {
  case kMatmulMR:
    return packBf16Rows<kMatmulMR>(base, rowStride, rows, cols, out);
  case kMatmulNR:
    return packBf16Rows<kMatmulNR>(base, rowStride, rows, cols, out);
  default:
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t j = 0; j < (cols + width - 1) / width * width; ++j) {
        uint16_t h = 0;
        if (j < cols)
          std::memcpy(&h, base + r * rowStride + 2 * j, 2);
        const uint32_t u = uint32_t(h) << 16;
        std::memcpy(out + ((j / width) * rows + r) * width + j % width, &u, 4);
      }
  }
}

} // namespace neuron::runtime::kernels

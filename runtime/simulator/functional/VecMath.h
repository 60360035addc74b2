// Branch-free float math for the functional simulator's hot loops.
//
// Every function is a template over V = float (one element) or a GCC/Clang
// vector of floats (vf8, vf16). The lanes of a vector execute the same IEEE
// operations as the scalar instantiation; only contraction into FMA (which
// Kernels.cpp allows, for speed) may differ between a loop's vector body and
// its scalar tail, or between the ISA variants of Kernels.h, in the last bit.
//
// Accuracy over all finite fp32 inputs, against double (test_kernels.cpp):
//   exp 1.0 ulp, log 0.8, tanh 1.3, sigmoid 2.6, silu 3.2, softplus 2.6,
//   erf 2.4, gelu 6.4 ulp everywhere (also in the negative tail, where
//   0.5 x (1 + erf(x / sqrt 2)) cancels; torch's float formula loses all
//   digits there); gelu_tanh 50 ulp for |x| <= 6 and 2e-5 relative beyond,
//   where the result is below 1e-9 and the rounding of its cubic argument
//   dominates. Special values follow torch: NaN propagates, exp under- and
//   overflows to 0 / inf with subnormal results, log(0) = -inf,
//   log(x < 0) = NaN.
#pragma once

#include <cstdint>
#include <cstring>

#if defined(__GNUC__)
#define NEURON_AI inline __attribute__((always_inline))
#else
#define NEURON_AI inline
#endif

namespace neuron::runtime::vm {

typedef float vf8 __attribute__((vector_size(32)));
typedef int32_t vi8 __attribute__((vector_size(32)));
typedef float vf16 __attribute__((vector_size(64)));
typedef int32_t vi16 __attribute__((vector_size(64)));
inline constexpr int kLanes = 8;

// ---- Overloads that make float and vf8 look alike -------------------------

NEURON_AI int32_t bitsOf(float x) {
  int32_t i;
  std::memcpy(&i, &x, 4);
  return i;
}
NEURON_AI float fromBits(int32_t i) {
  float x;
  std::memcpy(&x, &i, 4);
  return x;
}
NEURON_AI vi8 bitsOf(vf8 x) { return (vi8)x; }
NEURON_AI vf8 fromBits(vi8 i) { return (vf8)i; }
NEURON_AI vi16 bitsOf(vf16 x) { return (vi16)x; }
NEURON_AI vf16 fromBits(vi16 i) { return (vf16)i; }

NEURON_AI float sel(bool m, float a, float b) { return m ? a : b; }
NEURON_AI int32_t sel(bool m, int32_t a, int32_t b) { return m ? a : b; }
NEURON_AI vi8 sel(vi8 m, vi8 a, vi8 b) { return (a & m) | (b & ~m); }
NEURON_AI vf8 sel(vi8 m, vf8 a, vf8 b) {
  return fromBits(sel(m, bitsOf(a), bitsOf(b)));
}
NEURON_AI vi16 sel(vi16 m, vi16 a, vi16 b) { return (a & m) | (b & ~m); }
NEURON_AI vf16 sel(vi16 m, vf16 a, vf16 b) {
  return fromBits(sel(m, bitsOf(a), bitsOf(b)));
}

NEURON_AI float toFloat(int32_t i) { return float(i); }
NEURON_AI vf8 toFloat(vi8 i) { return __builtin_convertvector(i, vf8); }
NEURON_AI vf16 toFloat(vi16 i) { return __builtin_convertvector(i, vf16); }

/// {c, c, ...}. Fine for constants and outside hot loops; for a run-time
/// value inside a target_clones function, GCC 12 assembles this from
/// shuffles, so hot loops write `vector * scalar` instead.
template <class V> NEURON_AI V splat(float c) {
  if constexpr (sizeof(V) == sizeof(float))
    return c;
  else if constexpr (sizeof(V) == sizeof(vf8))
    return V{c, c, c, c, c, c, c, c};
  else
    return V{c, c, c, c, c, c, c, c, c, c, c, c, c, c, c, c};
}

/// Unaligned loads and stores of whole vectors.
template <class V> NEURON_AI V loadV(const float *p) {
  V v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
template <class V> NEURON_AI void storeV(float *p, V v) {
  std::memcpy(p, &v, sizeof v);
}

NEURON_AI vf8 load8(const float *p) {
  vf8 v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
NEURON_AI void store8(float *p, vf8 v) { std::memcpy(p, &v, sizeof v); }

// ---- Building blocks ------------------------------------------------------

/// Ordered max/min for clamping (a NaN `a` yields `b`).
template <class V> NEURON_AI V clampMax(V a, float hi) {
  return sel(a < hi, a, splat<V>(hi));
}
template <class V> NEURON_AI V clampMin(V a, float lo) {
  return sel(a > lo, a, splat<V>(lo));
}
template <class V> NEURON_AI V vabs(V x) {
  return fromBits(bitsOf(x) & 0x7fffffff);
}
/// |mag| with the sign of `s`.
template <class V> NEURON_AI V copySign(V mag, V s) {
  return fromBits((bitsOf(mag) & 0x7fffffff) |
                  (bitsOf(s) & int32_t(0x80000000u)));
}
/// NaN inputs pass through: the result of f(x) where x is not NaN, else x.
template <class V> NEURON_AI V keepNaN(V x, V r) { return sel(x != x, x, r); }

/// y * s for a positive normal y and a normal s = 2^e, rounded like the
/// IEEE product (to nearest, ties to even), without a float operation that
/// underflows: on x86 a float operation with a subnormal result takes a
/// microcode assist (~100x slower), which made exp of very negative arguments
/// (masked softmax scores) the slowest element function. Products that
/// underflow (subnormal or zero) are rounded in integer arithmetic; the
/// result has the bits of y * s either way.
template <class V, class I> NEURON_AI V scaleByPow2(V y, I e, V s) {
  const I yb = bitsOf(y);
  const I biased = ((yb >> 23) & 0xff) + e; // exponent field of the product
  const auto under = biased < 1;
  // Underflow: the 24-bit significand shifted right by 1 - biased, rounded
  // to nearest even (a carry into the exponent field is right).
  const I zero = biased * 0, one = zero + 1;
  const I sh = 1 - sel(biased < -30, zero - 30, biased); // 1 .. 31
  const I m = (yb & 0x7fffff) | 0x800000;
  const I sub = (m + ((one << (sh - 1)) - 1) + ((m >> sh) & 1)) >> sh;
  return sel(under, fromBits(sub), y * sel(under, splat<V>(1.0f), s));
}

// ---- exp ------------------------------------------------------------------

/// e^(x + lo) for |lo| much smaller than 1 (lo = 0: e^x). Cephes expf:
/// x = n ln2 + r, |r| <= ln2 / 2, e^r by a degree-7 polynomial, 2^n applied
/// in two steps so subnormal results round once. `lo` joins the argument
/// reduction, so x + lo needs not be representable. kSafe: vectors scale
/// with scaleByPow2 (same bits; faster when results underflow, slower when
/// none do); scalars always multiply.
template <bool kLo, bool kSafe, class V> NEURON_AI V vexpImpl(V x, V lo) {
  const V xc = clampMax(clampMin(x, -104.0f), 89.0f);
  const float kMagic = 12582912.0f; // 1.5 * 2^23: adds round to integer
  const V t = xc * 1.44269504088896341f + kMagic;
  const auto n = bitsOf(t) - bitsOf(kMagic); // round(x / ln2), |n| <= 150
  const V fn = t - kMagic;
  V r = xc - fn * 0.693359375f; // exact (Cody-Waite)
  if constexpr (kLo)
    r = r + lo;
  r = r - fn * -2.12194440e-4f;
  const V z = r * r;
  V p = 1.9875691500E-4f * r + 1.3981999507E-3f;
  p = p * r + 8.3334519073E-3f;
  p = p * r + 4.1665795894E-2f;
  p = p * r + 1.6666665459E-1f;
  p = p * r + 5.0000001201E-1f;
  p = p * z + r + 1.0f;
  const auto n1 = n >> 1, n2 = n - n1;
  const V s1 = fromBits((n1 + 127) << 23), s2 = fromBits((n2 + 127) << 23);
  if constexpr (kSafe && sizeof(V) > sizeof(float))
    return keepNaN(x, scaleByPow2(p * s1, n2, s2));
  else
    return keepNaN(x, p * s1 * s2);
}

template <bool kSafe = false, class V> NEURON_AI V vexpLo(V x, V lo) {
  return vexpImpl<true, kSafe>(x, lo);
}

/// e^x.
template <bool kSafe = false, class V> NEURON_AI V vexp(V x) {
  return vexpImpl<false, kSafe>(x, x);
}

// ---- log ------------------------------------------------------------------

/// ln x. Cephes logf: x = m 2^e with m in [sqrt(1/2), sqrt 2), ln m by a
/// degree-9 polynomial in m - 1.
template <class V> NEURON_AI V vlog(V x) {
  // Subnormal inputs: scale into the normal range first.
  const auto tiny = x < 1.17549435e-38f;
  const V xs = sel(tiny, x * 8388608.0f, x); // 2^23
  const auto ix = bitsOf(xs);
  auto e = ((ix >> 23) & 0xff) - 126;
  e = sel(tiny, e - 23, e);
  V m = fromBits((ix & 0x007fffff) | 0x3f000000); // [0.5, 1)
  const auto lowM = m < 0.707106781186547524f;
  e = sel(lowM, e - 1, e);
  m = sel(lowM, m + m - 1.0f, m - 1.0f);
  const V z = m * m;
  V y = 7.0376836292E-2f * m - 1.1514610310E-1f;
  y = y * m + 1.1676998740E-1f;
  y = y * m - 1.2420140846E-1f;
  y = y * m + 1.4249322787E-1f;
  y = y * m - 1.6668057665E-1f;
  y = y * m + 2.0000714765E-1f;
  y = y * m - 2.4999993993E-1f;
  y = y * m + 3.3333331174E-1f;
  y = y * m * z;
  const V fe = toFloat(e);
  y = y + fe * -2.12194440e-4f;
  y = y - 0.5f * z;
  V r = m + y;
  r = r + fe * 0.693359375f;
  const float inf = __builtin_inff(), nan = __builtin_nanf("");
  r = sel(x == inf, splat<V>(inf), r);
  r = sel(x == 0.0f, splat<V>(-inf), r);
  r = sel(x < 0.0f, splat<V>(nan), r);
  return keepNaN(x, r);
}

/// ln(1 + y), accurate for tiny y (Goldberg: log(u) * y / (u - 1), u = 1 + y).
template <class V> NEURON_AI V vlog1p(V y) {
  const V u = y + 1.0f;
  const V d = u - 1.0f;
  const V r = vlog(u) * (y / sel(d == 0.0f, splat<V>(1.0f), d));
  return sel(d == 0.0f, y, sel(u == __builtin_inff(), u, r));
}

// ---- tanh, sigmoid --------------------------------------------------------

/// tanh x. Cephes tanhf: odd polynomial below 0.625, else 1 - 2 / (e^2|x| + 1).
template <class V> NEURON_AI V vtanh(V x) {
  const V a = vabs(x);
  const V z = x * x;
  V p = -5.70498872745E-3f * z + 2.06390887954E-2f;
  p = p * z - 5.37397155531E-2f;
  p = p * z + 1.33314422036E-1f;
  p = p * z - 3.33332819422E-1f;
  const V small = p * z * x + x;
  const V big = copySign(1.0f - 2.0f / (vexp(a + a) + 1.0f), x);
  // Below 1e-4, tanh x rounds to x in fp32 (x^3 / 3 is under half an ulp): x itself, so -0
  // stays -0 (the polynomial adds +0 to it).
  return keepNaN(x, sel(a < 1e-4f, x, sel(a < 0.625f, small, big)));
}

/// 1 / (1 + e^-x), as e^x / (1 + e^x) for x < 0: no overflow, accurate
/// (not flushed to 0) down to the subnormal range.
template <bool kSafe = false, class V> NEURON_AI V vsigmoid(V x) {
  const V e = vexp<kSafe>(-vabs(x));
  const V r = 1.0f / (1.0f + e);
  return sel(x < 0.0f, e * r, r);
}

// ---- erf, erfc, gelu ------------------------------------------------------

/// erf(x) / x for |x| < 1, as a polynomial in x^2 (minimax, rel. err 1.2e-9).
template <class V> NEURON_AI V erfSmallOverX(V z) {
  V p = 7.854025225e-05f * z - 8.010247298e-04f;
  p = p * z + 5.188334456e-03f;
  p = p * z - 2.685381604e-02f;
  p = p * z + 1.128358527e-01f;
  p = p * z - 3.761262584e-01f;
  return p * z + 1.128379167e+00f;
}

/// erfc(a) for a >= 0 given a^2 = hi + lo exactly: e^(-hi - lo) * t P(t),
/// t = 1 / (1 + 0.4 a) (minimax, rel. err 1.8e-9 on [0, 10]).
template <bool kSafe = false, class V> NEURON_AI V erfcCore(V a, V hi, V lo) {
  a = clampMax(a, 10.5f); // erfc(10.5) underflows to 0
  const V t = 1.0f / (0.4f * a + 1.0f);
  V p = -1.837911986e-02f * t + 7.746676247e-02f;
  p = p * t - 7.535637078e-02f;
  p = p * t - 9.663044219e-02f;
  p = p * t + 1.706058849e-01f;
  p = p * t - 4.983899720e-02f;
  p = p * t + 1.740466507e-01f;
  p = p * t + 1.568033930e-01f;
  p = p * t + 2.101687986e-01f;
  p = p * t + 2.254271328e-01f;
  p = p * t + 2.256863056e-01f;
  p = p * t;
  return vexpLo<kSafe>(-hi, -lo) * p;
}

/// x^2 = hi + lo exactly (Dekker: hi = xh^2 for the top 12 bits xh of x).
template <class V> NEURON_AI void squareHiLo(V x, V &hi, V &lo) {
  const V xh = fromBits(bitsOf(x) & int32_t(0xfffff000u));
  hi = xh * xh;             // exact: 12-bit significands
  lo = (x - xh) * (x + xh); // x^2 - hi, |lo| <= x^2 / 1024
}

/// erfc(a) for a >= 0. e^(-a^2) does not round a^2, so large a loses no
/// accuracy.
template <bool kSafe = false, class V> NEURON_AI V erfcPos(V a) {
  V hi, lo;
  squareHiLo(clampMax(a, 10.5f), hi, lo);
  return erfcCore<kSafe>(a, hi, lo);
}

template <bool kSafe = false, class V> NEURON_AI V verf(V x) {
  const V a = vabs(x);
  const V small = x * erfSmallOverX(x * x);
  const V big = copySign(1.0f - erfcPos<kSafe>(a), x);
  return keepNaN(x, sel(a < 1.0f, small, big));
}

/// torch gelu (approximate='none'): x * Phi(x) = 0.5 x (1 + erf(x / sqrt 2)),
/// with 1 + erf(u) = 2 - erfc(u) for u > 0 and erfc(-u) below: no
/// cancellation in the negative tail, and one branch for all x. u^2 is taken
/// as x^2 / 2 from the exact square of x, so u's rounding does not enter.
template <bool kSafe = false, class V> NEURON_AI V vgelu(V x) {
  const V u = x * 0.707106781186547524f;
  V hi, lo;
  squareHiLo(clampMax(clampMin(x, -15.0f), 15.0f), hi, lo);
  const V e = erfcCore<kSafe>(vabs(u), 0.5f * hi, 0.5f * lo);
  return 0.5f * x * sel(u > 0.0f, 2.0f - e, e);
}

/// torch gelu (approximate='tanh'): 0.5 x (1 + tanh(y)) = x sigmoid(2 y),
/// y = sqrt(2 / pi) (x + 0.044715 x^3).
template <bool kSafe = false, class V> NEURON_AI V vgeluTanh(V x) {
  const V y = 0.79788456080286535588f * (x + 0.044715f * x * x * x);
  return x / (1.0f + vexp<kSafe>(-2.0f * y));
}

/// torch softplus (beta 1, threshold 20).
template <bool kSafe = false, class V> NEURON_AI V vsoftplus(V x) {
  return sel(x > 20.0f, x, vlog1p(vexp<kSafe>(x)));
}

} // namespace neuron::runtime::vm

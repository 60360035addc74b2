// Element functions of the engines (ALU ops, activations) as functors.
//
// T is the compute type: float for float operands (the engines compute in
// fp32), double when float and integer operands mix. Instructions whose
// operands are all integers compute exactly in int64 (withIntAluOp below).
// The dispatchers switch once per run of elements and hand a functor to the
// loop, so the inner loops have no per-element dispatch.
#pragma once

#include "runtime/program/Program.h"

#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

namespace neuron::runtime {

/// Calls `body(f)` with `f(a, b)` implementing `op` in type T (float or
/// double). And/Or/Xor are logical (non-zero is true). Mod follows
/// torch.remainder (the result takes the divisor's sign). Max and Min return
/// NaN if either operand is NaN, as torch.maximum / torch.minimum.
template <class T, class Body> void withAluOp(AluOp op, Body &&body) {
  switch (op) {
  case AluOp::Add:
    return body([](T a, T b) { return a + b; });
  case AluOp::Sub:
    return body([](T a, T b) { return a - b; });
  case AluOp::Mul:
    return body([](T a, T b) { return a * b; });
  case AluOp::Div:
    return body([](T a, T b) { return a / b; });
  case AluOp::Max: // NaN-propagating, as torch.maximum
    return body([](T a, T b) { return (a > b || a != a) ? a : b; });
  case AluOp::Min:
    return body([](T a, T b) { return (a < b || a != a) ? a : b; });
  case AluOp::Pow:
    return body([](T a, T b) { return T(std::pow(a, b)); });
  case AluOp::Eq:
    return body([](T a, T b) { return T(a == b); });
  case AluOp::Ne:
    return body([](T a, T b) { return T(a != b); });
  case AluOp::Lt:
    return body([](T a, T b) { return T(a < b); });
  case AluOp::Le:
    return body([](T a, T b) { return T(a <= b); });
  case AluOp::Gt:
    return body([](T a, T b) { return T(a > b); });
  case AluOp::Ge:
    return body([](T a, T b) { return T(a >= b); });
  case AluOp::And:
    return body([](T a, T b) { return T(a != 0 && b != 0); });
  case AluOp::Or:
    return body([](T a, T b) { return T(a != 0 || b != 0); });
  case AluOp::Xor:
    return body([](T a, T b) { return T((a != 0) != (b != 0)); });
  case AluOp::Mod:
    return body([](T a, T b) {
      T r = std::fmod(a, b);
      return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
    });
  case AluOp::Fmod:
    return body([](T a, T b) { return T(std::fmod(a, b)); });
  case AluOp::Bypass:
    return body([](T a, T) { return a; });
  case AluOp::AbsMax: // of the magnitudes, NaN-propagating
    return body([](T a, T b) {
      a = std::fabs(a), b = std::fabs(b);
      return (a > b || a != a) ? a : b;
    });
  case AluOp::AbsMin:
    return body([](T a, T b) {
      a = std::fabs(a), b = std::fabs(b);
      return (a < b || a != a) ? a : b;
    });
  }
}

// Two's-complement int64 arithmetic (as torch's integer tensors): through
// uint64, since signed overflow is undefined behaviour in C++.
inline int64_t wrapAdd(int64_t a, int64_t b) {
  return int64_t(uint64_t(a) + uint64_t(b));
}
inline int64_t wrapSub(int64_t a, int64_t b) {
  return int64_t(uint64_t(a) - uint64_t(b));
}
inline int64_t wrapMul(int64_t a, int64_t b) {
  return int64_t(uint64_t(a) * uint64_t(b));
}

/// x ** e in int64, wrapping, as torch.pow of integer tensors. A negative
/// exponent gives 1 / x truncated: 1 for x = 1, +-1 for x = -1, else 0.
inline int64_t intPow(int64_t x, int64_t e) {
  if (e < 0)
    return x == 1 ? 1 : x == -1 ? ((e & 1) ? -1 : 1) : 0;
  uint64_t r = 1, b = uint64_t(x);
  for (uint64_t k = uint64_t(e); k != 0; k >>= 1) {
    if (k & 1)
      r *= b;
    b *= b;
  }
  return int64_t(r);
}

/// Calls `body(f)` with `f(a, b)` implementing `op` exactly on int64 values,
/// for instructions whose operands and destination are all integers (i64,
/// i32, i8, u8, i1). Add, Sub, Mul, Pow wrap (two's complement) like torch.
/// Div truncates toward zero (torch.div(rounding_mode='trunc')) and Mod is
/// torch.remainder (floor: the result takes the divisor's sign); the caller
/// rejects a zero divisor before (torch raises ZeroDivisionError), and
/// INT64_MIN / -1 wraps to INT64_MIN. And/Or/Xor are bitwise, or logical
/// (non-zero is true) when `logical`: an i1 destination, as logical_and of
/// integer tensors; on 0/1 operands the two agree.
template <class Body> void withIntAluOp(AluOp op, bool logical, Body &&body) {
  using I = int64_t;
  switch (op) {
  case AluOp::Add:
    return body([](I a, I b) { return wrapAdd(a, b); });
  case AluOp::Sub:
    return body([](I a, I b) { return wrapSub(a, b); });
  case AluOp::Mul:
    return body([](I a, I b) { return wrapMul(a, b); });
  case AluOp::Div:
    return body([](I a, I b) { return b == -1 ? wrapSub(0, a) : a / b; });
  case AluOp::Max:
    return body([](I a, I b) { return a > b ? a : b; });
  case AluOp::Min:
    return body([](I a, I b) { return a < b ? a : b; });
  case AluOp::Pow:
    return body([](I a, I b) { return intPow(a, b); });
  case AluOp::Eq:
    return body([](I a, I b) { return I(a == b); });
  case AluOp::Ne:
    return body([](I a, I b) { return I(a != b); });
  case AluOp::Lt:
    return body([](I a, I b) { return I(a < b); });
  case AluOp::Le:
    return body([](I a, I b) { return I(a <= b); });
  case AluOp::Gt:
    return body([](I a, I b) { return I(a > b); });
  case AluOp::Ge:
    return body([](I a, I b) { return I(a >= b); });
  case AluOp::And:
    if (logical)
      return body([](I a, I b) { return I(a != 0 && b != 0); });
    return body([](I a, I b) { return a & b; });
  case AluOp::Or:
    if (logical)
      return body([](I a, I b) { return I(a != 0 || b != 0); });
    return body([](I a, I b) { return a | b; });
  case AluOp::Xor:
    if (logical)
      return body([](I a, I b) { return I((a != 0) != (b != 0)); });
    return body([](I a, I b) { return a ^ b; });
  case AluOp::Mod:
    return body([](I a, I b) {
      if (b == -1) // a % -1 overflows for INT64_MIN; the remainder is 0
        return I(0);
      const I r = a % b;
      return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
    });
  case AluOp::Fmod:
    return body([](I a, I b) { return b == -1 ? I(0) : I(a % b); });
  case AluOp::Bypass:
    return body([](I a, I) { return a; });
  case AluOp::AbsMax: // magnitudes, wrapping (|INT64_MIN| stays INT64_MIN)
    return body([](I a, I b) {
      a = a < 0 ? wrapSub(0, a) : a, b = b < 0 ? wrapSub(0, b) : b;
      return a > b ? a : b;
    });
  case AluOp::AbsMin:
    return body([](I a, I b) {
      a = a < 0 ? wrapSub(0, a) : a, b = b < 0 ? wrapSub(0, b) : b;
      return a < b ? a : b;
    });
  }
}

/// Whether `v` is an integer that int64 holds, i.e. an immediate that an
/// integer instruction can use exactly.
inline bool isExactInt64(double v) {
  return v >= -0x1p63 && v < 0x1p63 && v == double(int64_t(v));
}

/// The identity element of a reduction with `op` (add, mul, max, min) on
/// int64 values.
inline int64_t intReduceInit(AluOp op) {
  switch (op) {
  case AluOp::Mul:
    return 1;
  case AluOp::Max:
    return std::numeric_limits<int64_t>::min();
  case AluOp::Min:
    return std::numeric_limits<int64_t>::max();
  default:
    return 0;
  }
}

/// The identity element of a reduction with `op` (add, mul, max, min).
template <class T> T reduceInit(AluOp op) {
  switch (op) {
  case AluOp::Mul:
    return T(1);
  case AluOp::Max:
    return -std::numeric_limits<T>::infinity();
  case AluOp::Min:
    return std::numeric_limits<T>::infinity();
  default:
    return T(0);
  }
}

/// Calls `body(f)` with `f(x)` implementing activation function `fn` in type T.
template <class T, class Body> void withActFunc(ActFunc fn, Body &&body) {
  switch (fn) {
  case ActFunc::Identity:
    return body([](T x) { return x; });
  case ActFunc::Relu: // NaN stays NaN, as torch.relu
    return body([](T x) { return x < T(0) ? T(0) : x; });
  case ActFunc::Exp:
    return body([](T x) { return T(std::exp(x)); });
  case ActFunc::Log:
    return body([](T x) { return T(std::log(x)); });
  case ActFunc::Tanh:
    return body([](T x) { return T(std::tanh(x)); });
  case ActFunc::Sigmoid:
    return body([](T x) { return T(1) / (T(1) + T(std::exp(-x))); });
  case ActFunc::Sqrt:
    return body([](T x) { return T(std::sqrt(x)); });
  case ActFunc::Rsqrt:
    return body([](T x) { return T(1) / T(std::sqrt(x)); });
  case ActFunc::Erf:
    return body([](T x) { return T(std::erf(x)); });
  case ActFunc::Gelu: // x * Phi(x): torch gelu, approximate='none'
    return body([](T x) {
      return T(0.5) * x * (T(1) + T(std::erf(x * T(0.70710678118654752440))));
    });
  case ActFunc::GeluTanh: // torch gelu, approximate='tanh'
    return body([](T x) {
      const T k = T(0.79788456080286535588); // sqrt(2 / pi)
      return T(0.5) * x *
             (T(1) + T(std::tanh(k * (x + T(0.044715) * x * x * x))));
    });
  case ActFunc::Silu:
    return body([](T x) { return x / (T(1) + T(std::exp(-x))); });
  case ActFunc::Square:
    return body([](T x) { return x * x; });
  case ActFunc::Abs:
    return body([](T x) { return T(std::fabs(x)); });
  case ActFunc::Neg:
    return body([](T x) { return -x; });
  case ActFunc::Reciprocal:
    return body([](T x) { return T(1) / x; });
  case ActFunc::Sin:
    return body([](T x) { return T(std::sin(x)); });
  case ActFunc::Cos:
    return body([](T x) { return T(std::cos(x)); });
  case ActFunc::Softplus: // torch softplus, beta = 1, threshold = 20
    return body([](T x) { return x > T(20) ? x : T(std::log1p(std::exp(x))); });
  case ActFunc::Arctan:
    return body([](T x) { return T(std::atan(x)); });
  }
}

/// Whether activation `fn` is exact on int64 values (withIntActFunc).
inline bool isIntActFunc(ActFunc fn) {
  return fn == ActFunc::Identity || fn == ActFunc::Relu ||
         fn == ActFunc::Neg || fn == ActFunc::Abs || fn == ActFunc::Square;
}

/// Calls `body(f)` with `f(x)` implementing activation `fn` (isIntActFunc) on
/// int64 values, wrapping (abs and neg of INT64_MIN give INT64_MIN, as torch).
template <class Body> void withIntActFunc(ActFunc fn, Body &&body) {
  using I = int64_t;
  switch (fn) {
  case ActFunc::Relu:
    return body([](I x) { return x < 0 ? I(0) : x; });
  case ActFunc::Neg:
    return body([](I x) { return wrapSub(0, x); });
  case ActFunc::Abs:
    return body([](I x) { return x < 0 ? wrapSub(0, x) : x; });
  case ActFunc::Square:
    return body([](I x) { return wrapMul(x, x); });
  default:
    return body([](I x) { return x; });
  }
}

} // namespace neuron::runtime

// Element functions of the engines (ALU ops, activations) as functors.
//
// T is the compute type: float for float operands (the engines compute in
// fp32), double when an operand is an integer type (exact up to 2^53). The
// dispatchers switch once per run of elements and hand a functor to the loop,
// so the inner loops have no per-element dispatch.
#pragma once

#include "runtime/program/Program.h"

#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

namespace neuron::runtime {

/// Calls `body(f)` with `f(a, b)` implementing `op` in type T. Bitwise ops on
/// double (integer operands) act on the int64 values, on float they are
/// logical. Mod follows torch.remainder (the result takes the divisor's sign).
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
    if constexpr (std::is_same_v<T, double>)
      return body([](T a, T b) { return T(int64_t(a) & int64_t(b)); });
    else
      return body([](T a, T b) { return T(a != 0 && b != 0); });
  case AluOp::Or:
    if constexpr (std::is_same_v<T, double>)
      return body([](T a, T b) { return T(int64_t(a) | int64_t(b)); });
    else
      return body([](T a, T b) { return T(a != 0 || b != 0); });
  case AluOp::Xor:
    if constexpr (std::is_same_v<T, double>)
      return body([](T a, T b) { return T(int64_t(a) ^ int64_t(b)); });
    else
      return body([](T a, T b) { return T((a != 0) != (b != 0)); });
  case AluOp::Mod:
    return body([](T a, T b) {
      T r = std::fmod(a, b);
      return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
    });
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
  }
}

} // namespace neuron::runtime

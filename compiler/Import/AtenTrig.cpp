// Importers of inverse trigonometric and hyperbolic functions and a few elementwise
// relatives (atan, asin, acos, atan2, asinh, acosh, hypot, fmin, fmax, logical_xor): the
// Scalar engine's arctan, sqrt and log with Vector ALU ops, computed in fp32 and rounded
// once to the result dtype. NaN propagates as in eager; domain errors (asin(2)) give NaN.
#include "compiler/Import/AtenImporters.h"

#include <cmath>
#include <limits>

using namespace mlir;
namespace nt = neuron::ntorch;
using nt::BinaryFn;
using nt::UnaryFn;

namespace neuron::compiler::aten {
namespace {

constexpr double kPi = 3.14159265358979323846;
constexpr double kInf = std::numeric_limits<double>::infinity();

/// The fp32 builders of one node, every operand broadcast to the result's shape.
struct F32 {
  NodeContext &ctx;

  RankedTensorType type() const {
    return RankedTensorType::get(ctx.resultType().getShape(), ctx.b.getF32Type());
  }
  /// Argument i (a tensor or a number) in fp32, at the result's shape.
  Value operand(size_t i) const {
    Value v = ctx.castTo(ctx.tensorOrScalar(i, ctx.b.getF32Type()), ctx.b.getF32Type());
    if (v.getType() != type())
      v = ctx.b.create<nt::BroadcastOp>(ctx.loc, type(), v);
    return v;
  }
  /// A rank-0 fp32 constant (operands broadcast).
  Value c(double v) const { return ctx.scalar(ctx.b.getF32Type(), v); }
  Value add(Value a, Value b) const { return ctx.binary(BinaryFn::add, a, b); }
  Value sub(Value a, Value b) const { return ctx.binary(BinaryFn::sub, a, b); }
  Value mul(Value a, Value b) const { return ctx.binary(BinaryFn::mul, a, b); }
  Value div(Value a, Value b) const { return ctx.binary(BinaryFn::div, a, b); }
  Value addS(Value a, double b) const { return ctx.binaryScalar(BinaryFn::add, a, b); }
  Value mulS(Value a, double b) const { return ctx.binaryScalar(BinaryFn::mul, a, b); }
  Value cmpS(BinaryFn fn, Value a, double b) const { return ctx.binaryScalar(fn, a, b); }
  Value un(UnaryFn fn, Value a) const { return ctx.unary(fn, a); }
  Value pick(Value cond, Value a, Value b) const {
    return ctx.b.create<nt::SelectOp>(ctx.loc, type(), cond, a, b);
  }
  /// x < 0 or x is -0 (the sign bit of a number; false for NaN): 1 / x on the Vector
  /// engine (1 / -0 is -inf).
  Value negative(Value x) const {
    return ctx.binary(BinaryFn::Or, cmpS(BinaryFn::lt, x, 0.0),
                      cmpS(BinaryFn::lt, div(c(1.0), x), 0.0));
  }
  /// |v| with x's sign bit.
  Value withSignOf(Value v, Value x) const { return pick(negative(x), un(UnaryFn::neg, v), v); }

  /// The Scalar engine's arctan (+-pi/2 at +-inf); x itself at +-0 (exactly eager's).
  Value atan(Value x) const { return pick(cmpS(BinaryFn::eq, x, 0.0), x, un(UnaryFn::arctan, x)); }

  /// log(1 + t) accurate for small t: log(u) * t / (u - 1) with u = 1 + t rounded.
  Value log1p(Value t) const {
    Value u = addS(t, 1.0);
    Value ratio = div(mul(un(UnaryFn::log, u), t), addS(u, -1.0));
    return pick(cmpS(BinaryFn::eq, u, 1.0), t, ratio);
  }
  /// log(2a) where a is so large that asinh(a) and acosh(a) equal it in fp32.
  Value largeArcHyperbolic(Value a, Value v) const {
    return pick(cmpS(BinaryFn::gt, a, 268435456.0), addS(un(UnaryFn::log, a), std::log(2.0)), v);
  }

  Values result(Value y) const { return {ctx.castTo(y, ctx.resultType().getElementType())}; }
};

} // namespace

Values atanOp(NodeContext &ctx) {
  F32 f{ctx};
  return f.result(f.atan(f.operand(0)));
}

/// asin(x) = atan(x / sqrt((1 - x)(1 + x))): +-pi/2 at +-1, NaN outside [-1, 1].
Values asinOp(NodeContext &ctx) {
  F32 f{ctx};
  Value x = f.operand(0);
  Value root = f.un(UnaryFn::sqrt, f.mul(f.sub(f.c(1.0), x), f.addS(x, 1.0)));
  return f.result(f.atan(f.div(x, root)));
}

/// acos(x) = 2 atan(sqrt((1 - x) / (1 + x))): pi at -1, 0 at 1, NaN outside [-1, 1].
Values acosOp(NodeContext &ctx) {
  F32 f{ctx};
  Value x = f.operand(0);
  Value ratio = f.div(f.sub(f.c(1.0), x), f.addS(x, 1.0));
  return f.result(f.mulS(f.atan(f.un(UnaryFn::sqrt, ratio)), 2.0));
}

/// atan2(y, x): atan of min(|x|, |y|) / max(|x|, |y|) in [0, 1], reflected into the
/// octant, the quadrant and y's sign; equal magnitudes (both zero, both infinite) exact.
Values atan2Op(NodeContext &ctx) {
  F32 f{ctx};
  Value y = f.operand(0), x = f.operand(1);
  Value ay = f.un(UnaryFn::abs, y), ax = f.un(UnaryFn::abs, x);
  Value ratio = f.div(ctx.binary(BinaryFn::min, ax, ay), ctx.binary(BinaryFn::max, ax, ay));
  Value a = f.atan(ratio);
  Value equal = ctx.binary(BinaryFn::eq, ax, ay);
  a = f.pick(equal, f.pick(f.cmpS(BinaryFn::eq, ax, 0.0), f.c(0.0), f.c(kPi / 4)), a);
  a = f.pick(ctx.binary(BinaryFn::gt, ay, ax), f.sub(f.c(kPi / 2), a), a);
  a = f.pick(f.negative(x), f.sub(f.c(kPi), a), a);
  return f.result(f.withSignOf(a, y));
}

/// asinh(x) = log1p(a + a^2 / (1 + sqrt(1 + a^2))) with a = |x|, x's sign.
Values asinhOp(NodeContext &ctx) {
  F32 f{ctx};
  Value x = f.operand(0), a = f.un(UnaryFn::abs, x);
  Value square = f.mul(a, a);
  Value t = f.add(a, f.div(square, f.addS(f.un(UnaryFn::sqrt, f.addS(square, 1.0)), 1.0)));
  return f.result(f.withSignOf(f.largeArcHyperbolic(a, f.log1p(t)), x));
}

/// acosh(x) = log1p(e + sqrt(e (x + 1))) with e = x - 1: 0 at 1, NaN below 1.
Values acoshOp(NodeContext &ctx) {
  F32 f{ctx};
  Value x = f.operand(0), e = f.addS(x, -1.0);
  Value t = f.add(e, f.un(UnaryFn::sqrt, f.mul(e, f.addS(x, 1.0))));
  return f.result(f.largeArcHyperbolic(x, f.log1p(t)));
}

/// hypot(x, y) = m sqrt(1 + (n / m)^2) with m, n the larger and smaller magnitude; 0 when
/// both are 0, inf when either is infinite (even with a NaN), as C's hypot.
Values hypotOp(NodeContext &ctx) {
  F32 f{ctx};
  Value x = f.operand(0), y = f.operand(1);
  Value ax = f.un(UnaryFn::abs, x), ay = f.un(UnaryFn::abs, y);
  Value m = ctx.binary(BinaryFn::max, ax, ay), n = ctx.binary(BinaryFn::min, ax, ay);
  Value r = f.div(n, m);
  Value h = f.mul(m, f.un(UnaryFn::sqrt, f.addS(f.mul(r, r), 1.0)));
  h = f.pick(f.cmpS(BinaryFn::eq, m, 0.0), f.c(0.0), h);
  Value infinite = ctx.binary(BinaryFn::Or, f.cmpS(BinaryFn::eq, ax, kInf),
                              f.cmpS(BinaryFn::eq, ay, kInf));
  return f.result(f.pick(infinite, f.c(kInf), h));
}

/// fmin/fmax: min/max ignoring a NaN operand (NaN only when both are).
template <BinaryFn Fn> static Values nanIgnoring(NodeContext &ctx) {
  RankedTensorType rt = ctx.resultType();
  auto operand = [&](size_t i) {
    Value v = ctx.castTo(ctx.tensorOrScalar(i, rt.getElementType()), rt.getElementType());
    return v.getType() == rt ? v : ctx.b.create<nt::BroadcastOp>(ctx.loc, rt, v).getResult();
  };
  Value a = operand(0), b = operand(1);
  Value y = ctx.binary(Fn, a, b);
  if (!isa<FloatType>(rt.getElementType()))
    return {y};
  auto pick = [&](Value c, Value p, Value q) {
    return ctx.b.create<nt::SelectOp>(ctx.loc, rt, c, p, q).getResult();
  };
  y = pick(ctx.binary(BinaryFn::ne, b, b), a, y);
  return {pick(ctx.binary(BinaryFn::ne, a, a), b, y)};
}
Values fminOp(NodeContext &ctx) { return nanIgnoring<BinaryFn::min>(ctx); }
Values fmaxOp(NodeContext &ctx) { return nanIgnoring<BinaryFn::max>(ctx); }

/// logical_xor(a, b) = (a != 0) != (b != 0).
Values logicalXor(NodeContext &ctx) {
  auto truth = [&](size_t i) {
    Value v = ctx.tensorOrScalar(i, ctx.b.getF32Type());
    return ctx.binaryScalar(BinaryFn::ne, v, 0.0);
  };
  Value y = ctx.binary(BinaryFn::ne, truth(0), truth(1));
  if (y.getType() != ctx.resultType())
    y = ctx.b.create<nt::BroadcastOp>(ctx.loc, ctx.resultType(), y);
  return {y};
}

} // namespace neuron::compiler::aten

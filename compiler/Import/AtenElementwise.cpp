// Importers of elementwise ATen ops: arithmetic, comparisons, activations, where, clamp,
// rounding (trunc, floor, ceil, round), sign, integer division and remainders.
#include "compiler/Import/AtenImporters.h"
#include "runtime/program/JsonBrief.h"

#include <algorithm>
#include <cmath>
#include <limits>

using namespace mlir;
using neuron::ntorch::BinaryFn;
using neuron::ntorch::UnaryFn;
namespace nt = neuron::ntorch;

namespace neuron::compiler::aten {

static Type elementTypeOf(Value v) { return cast<RankedTensorType>(v.getType()).getElementType(); }

/// Element type for a scalar operand of a binary op: that of the tensor operand.
static Type scalarTypeFor(NodeContext &ctx, size_t tensorIndex) {
  return ctx.isTensorArg(tensorIndex) ? elementTypeOf(ctx.tensor(tensorIndex))
                                      : ctx.resultType().getElementType();
}

template <BinaryFn Fn> Values binary(NodeContext &ctx) {
  Value lhs = ctx.tensorOrScalar(0, scalarTypeFor(ctx, 1));
  Value rhs = ctx.tensorOrScalar(1, scalarTypeFor(ctx, 0));
  return {ctx.b.create<nt::BinaryOp>(ctx.loc, ctx.resultType(), Fn, lhs, rhs)};
}

template <BinaryFn Fn> Values binaryWithAlpha(NodeContext &ctx) {
  Value lhs = ctx.tensorOrScalar(0, scalarTypeFor(ctx, 1));
  Value rhs = ctx.tensorOrScalar(1, scalarTypeFor(ctx, 0));
  double alpha = ctx.number(2, "alpha", 1.0);
  if (alpha != 1.0)
    rhs = ctx.binaryScalar(BinaryFn::mul, rhs, alpha);
  return {ctx.b.create<nt::BinaryOp>(ctx.loc, ctx.resultType(), Fn, lhs, rhs)};
}

#define INSTANTIATE(F)                                                                             \
  template Values binary<BinaryFn::F>(NodeContext &);                                              \
  template Values binaryWithAlpha<BinaryFn::F>(NodeContext &);
INSTANTIATE(add)
INSTANTIATE(sub)
INSTANTIATE(mul)
INSTANTIATE(div)
INSTANTIATE(max)
INSTANTIATE(min)
INSTANTIATE(pow)
INSTANTIATE(eq)
INSTANTIATE(ne)
INSTANTIATE(lt)
INSTANTIATE(le)
INSTANTIATE(gt)
INSTANTIATE(ge)
INSTANTIATE(And)
INSTANTIATE(Or)
#undef INSTANTIATE

Values gelu(NodeContext &ctx) {
  std::string approximate = ctx.string(1, "approximate", "none");
  if (approximate != "none" && approximate != "tanh")
    throw ImportError("unknown gelu approximation '" + approximate + "'");
  UnaryFn fn = approximate == "tanh" ? UnaryFn::gelu_tanh : UnaryFn::gelu;
  return {ctx.b.create<nt::UnaryOp>(ctx.loc, ctx.resultType(), fn, ctx.tensor(0))};
}

Values toCopy(NodeContext &ctx) {
  return {ctx.castTo(ctx.tensor(0), ctx.resultType().getElementType())};
}

/// where(cond, a, b); a or b may be numbers.
Values where(NodeContext &ctx) {
  Type et = ctx.resultType().getElementType();
  Value a = ctx.castTo(ctx.tensorOrScalar(1, et), et);
  Value b = ctx.castTo(ctx.tensorOrScalar(2, et), et);
  return {ctx.b.create<nt::SelectOp>(ctx.loc, ctx.resultType(), ctx.tensor(0), a, b)};
}

/// clamp(x, min, max): max then min with the bounds that are given.
Values clamp(NodeContext &ctx) {
  Value x = ctx.tensor(0);
  Type et = elementTypeOf(x);
  for (auto [index, name, fn] : {std::tuple{1, "min", BinaryFn::max}, {2, "max", BinaryFn::min}}) {
    const nlohmann::json *bound = ctx.arg(index, name);
    if (!bound || bound->is_null())
      continue;
    x = ctx.binary(fn, x, ctx.castTo(ctx.tensorOrScalar(index, et), et));
  }
  return {x};
}

Values clampMin(NodeContext &ctx) {
  Value x = ctx.tensor(0);
  Type et = elementTypeOf(x);
  return {ctx.binary(BinaryFn::max, x, ctx.castTo(ctx.tensorOrScalar(1, et), et))};
}

Values clampMax(NodeContext &ctx) {
  Value x = ctx.tensor(0);
  Type et = elementTypeOf(x);
  return {ctx.binary(BinaryFn::min, x, ctx.castTo(ctx.tensorOrScalar(1, et), et))};
}

/// rsub(x, other, alpha) = other - alpha * x.
Values rsub(NodeContext &ctx) {
  Value x = ctx.tensor(0);
  double alpha = ctx.number(2, "alpha", 1.0);
  if (alpha != 1.0)
    x = ctx.binaryScalar(BinaryFn::mul, x, alpha);
  Value other = ctx.tensorOrScalar(1, elementTypeOf(x));
  return {ctx.b.create<nt::BinaryOp>(ctx.loc, ctx.resultType(), BinaryFn::sub, other, x)};
}

/// pow.Scalar(base, exponent tensor) = exp(exponent * log(base)).
Values powScalar(NodeContext &ctx) {
  double base = ctx.number(0, "self", 1.0);
  if (base <= 0.0)
    throw ImportError("pow with a non-positive scalar base is not supported");
  // In fp32, rounded once to the result type as eager does.
  Value e = ctx.castTo(ctx.tensor(1), ctx.b.getF32Type());
  Value y = ctx.unary(UnaryFn::exp, ctx.binaryScalar(BinaryFn::mul, e, std::log(base)));
  return {ctx.castTo(y, ctx.resultType().getElementType())};
}

/// prims.fma(a, b, c) = a * b + c.
Values fma(NodeContext &ctx) {
  Type et = ctx.resultType().getElementType();
  Value a = ctx.castTo(ctx.tensorOrScalar(0, et), et), b = ctx.castTo(ctx.tensorOrScalar(1, et), et);
  Value c = ctx.castTo(ctx.tensorOrScalar(2, et), et);
  Value product = ctx.binary(BinaryFn::mul, a, b);
  return {ctx.b.create<nt::BinaryOp>(ctx.loc, ctx.resultType(), BinaryFn::add, product, c)};
}

/// copy(self, src): src converted and broadcast to self's shape (values are immutable).
Values copy(NodeContext &ctx) {
  RankedTensorType rt = ctx.resultType();
  Value src = ctx.castTo(ctx.tensor(1), rt.getElementType());
  if (src.getType() == rt)
    return {src};
  return {ctx.b.create<nt::BroadcastOp>(ctx.loc, rt, src)};
}

Values hardtanh(NodeContext &ctx) {
  Value x = ctx.tensor(0);
  x = ctx.binaryScalar(BinaryFn::max, x, ctx.number(1, "min_val", -1.0));
  return {ctx.binaryScalar(BinaryFn::min, x, ctx.number(2, "max_val", 1.0))};
}

/// leaky_relu(x, slope) = max(x, slope * x) for 0 <= slope <= 1.
Values leakyRelu(NodeContext &ctx) {
  Value x = ctx.tensor(0);
  double slope = ctx.number(1, "negative_slope", 0.01);
  Value scaled = ctx.binaryScalar(BinaryFn::mul, x, slope);
  if (slope >= 0.0 && slope <= 1.0)
    return {ctx.binary(BinaryFn::max, x, scaled)};
  Value positive = ctx.binaryScalar(BinaryFn::gt, x, 0.0);
  return {ctx.b.create<nt::SelectOp>(ctx.loc, ctx.resultType(), positive, x, scaled)};
}


Values logicalNot(NodeContext &ctx) {
  return {ctx.binaryScalar(BinaryFn::eq, ctx.tensor(0), 0.0)};
}

// --- Rounding, sign and integer division ----------------------------------------------------

static bool isFloat(Value v) { return isa<FloatType>(elementTypeOf(v)); }

static Value selectOf(NodeContext &ctx, Value cond, Value a, Value b) {
  auto at = cast<RankedTensorType>(a.getType());
  auto ct = cast<RankedTensorType>(cond.getType()), bt = cast<RankedTensorType>(b.getType());
  // The broadcast shape of the three operands.
  int64_t rank = std::max({at.getRank(), ct.getRank(), bt.getRank()});
  SmallVector<int64_t> shape(rank, 1);
  for (RankedTensorType t : {at, ct, bt})
    for (int64_t i = 0; i < t.getRank(); ++i) {
      int64_t &s = shape[rank - t.getRank() + i];
      s = s == 1 ? t.getDimSize(i) : s;
    }
  return ctx.b.create<nt::SelectOp>(ctx.loc, RankedTensorType::get(shape, at.getElementType()),
                                    cond, a, b);
}

/// trunc of a float tensor: values below 2^23 in magnitude go through an int32 cast (which
/// truncates toward zero); larger ones, inf and NaN are already integral and stay. A zero
/// result takes x's sign (x * 0), as trunc(-0.3) is -0.0 in eager.
static Value truncFloat(NodeContext &ctx, Value x) {
  Type et = elementTypeOf(x);
  Value back = ctx.castTo(ctx.castTo(x, ctx.b.getI32Type()), et);
  Value zero = ctx.binaryScalar(BinaryFn::eq, back, 0.0);
  back = selectOf(ctx, zero, ctx.castTo(ctx.binaryScalar(BinaryFn::mul, x, 0.0), et), back);
  Value small = ctx.binaryScalar(BinaryFn::lt, ctx.unary(UnaryFn::abs, x), 8388608.0);
  return selectOf(ctx, small, back, x);
}

/// floor and ceil from trunc: one step down (up) where trunc moved x up (down). Selects,
/// not adds, so that a -0.0 from trunc stays -0.0.
static Value floorOrCeil(NodeContext &ctx, Value x, bool floor) {
  if (!isFloat(x))
    return x;
  Value t = truncFloat(ctx, x);
  Value moved = ctx.binary(floor ? BinaryFn::gt : BinaryFn::lt, t, x);
  Value step = ctx.castTo(ctx.binaryScalar(BinaryFn::add, t, floor ? -1.0 : 1.0), elementTypeOf(x));
  return selectOf(ctx, moved, step, t);
}

Values truncOp(NodeContext &ctx) {
  Value x = ctx.tensor(0);
  return {isFloat(x) ? truncFloat(ctx, x) : x};
}
Values floorOp(NodeContext &ctx) { return {floorOrCeil(ctx, ctx.tensor(0), true)}; }
Values ceilOp(NodeContext &ctx) { return {floorOrCeil(ctx, ctx.tensor(0), false)}; }

/// round(x), halves to even: trunc, then one step away from zero where the dropped
/// fraction is above one half, or exactly one half and trunc is odd. x - trunc(x) is exact;
/// NaN and inf fail every comparison and stay.
static Value roundHalfEven(NodeContext &ctx, Value x) {
  Type et = elementTypeOf(x);
  Value t = truncFloat(ctx, x);
  Value fraction = ctx.unary(UnaryFn::abs, ctx.binary(BinaryFn::sub, x, t));
  Value half = ctx.castTo(ctx.binaryScalar(BinaryFn::mul, t, 0.5), et);
  Value twiceHalf = ctx.binaryScalar(BinaryFn::mul, truncFloat(ctx, half), 2.0);
  Value odd = ctx.binaryScalar(BinaryFn::ne, ctx.binary(BinaryFn::sub, t, twiceHalf), 0.0);
  Value tie = ctx.binary(BinaryFn::And, ctx.binaryScalar(BinaryFn::eq, fraction, 0.5), odd);
  Value up = ctx.binary(BinaryFn::Or, ctx.binaryScalar(BinaryFn::gt, fraction, 0.5), tie);
  Value step = selectOf(ctx, ctx.binaryScalar(BinaryFn::lt, x, 0.0), ctx.scalar(et, -1.0),
                        ctx.scalar(et, 1.0));
  return selectOf(ctx, up, ctx.binary(BinaryFn::add, t, step), t);
}

Values roundOp(NodeContext &ctx) {
  Value x = ctx.tensor(0);
  return {isFloat(x) ? roundHalfEven(ctx, x) : x};
}

/// round(x, decimals=d) as eager computes it, in fp32 whatever the float type: with p the
/// float 10^|d|, round(x * p) / p for d >= 0 and round(x / p) * p for d < 0.
Values roundDecimals(NodeContext &ctx) {
  Value x = ctx.tensor(0);
  if (!isFloat(x))
    return {x};
  int64_t decimals = ctx.integer(1, "decimals", 0);
  if (decimals > 38 || decimals < -38)
    throw ImportError("round: decimals=" + std::to_string(decimals) +
                      " is beyond float's exponent range");
  Type et = elementTypeOf(x);
  Value wide = ctx.castTo(x, ctx.b.getF32Type());
  double power = double(float(std::pow(10.0, double(std::abs(decimals)))));
  BinaryFn into = decimals >= 0 ? BinaryFn::mul : BinaryFn::div;
  BinaryFn back = decimals >= 0 ? BinaryFn::div : BinaryFn::mul;
  Value scaled = roundHalfEven(ctx, ctx.binaryScalar(into, wide, power));
  return {ctx.castTo(ctx.binaryScalar(back, scaled, power), et)};
}

/// sign(x): 1, -1, or 0 (also for NaN and -0.0, as eager).
Values signOp(NodeContext &ctx) {
  Value x = ctx.tensor(0);
  Type et = elementTypeOf(x);
  if (et.isInteger(1))
    return {x};
  Value negative = selectOf(ctx, ctx.binaryScalar(BinaryFn::lt, x, 0.0), ctx.scalar(et, -1.0),
                            ctx.scalar(et, 0.0));
  return {selectOf(ctx, ctx.binaryScalar(BinaryFn::gt, x, 0.0), ctx.scalar(et, 1.0), negative)};
}

// --- Functions computed in fp32 and rounded once to the result dtype ---------------------

/// The op's first operand in fp32.
static Value operandF32(NodeContext &ctx) { return ctx.castTo(ctx.tensor(0), ctx.b.getF32Type()); }
/// A fp32 result rounded to the op's result dtype.
static Values resultOf(NodeContext &ctx, Value y) {
  return {ctx.castTo(y, ctx.resultType().getElementType())};
}

/// log1p(x) accurate for small x (Goldberg's trick): u = 1 + x rounded; x itself where u is 1
/// (tiny x and +-0 keep their value and sign, as eager), else log(u) * x / (u - 1); log(u) at
/// u = +inf (x = +inf), where the ratio would be inf / inf.
static Value log1pOf(NodeContext &ctx, Value x) {
  Value u = ctx.binaryScalar(BinaryFn::add, x, 1.0);
  Value ratio = ctx.binary(BinaryFn::div, ctx.binary(BinaryFn::mul, ctx.unary(UnaryFn::log, u), x),
                           ctx.binaryScalar(BinaryFn::sub, u, 1.0));
  Value inf = ctx.binaryScalar(BinaryFn::eq, u, std::numeric_limits<double>::infinity());
  return selectOf(ctx, ctx.binaryScalar(BinaryFn::eq, u, 1.0), x,
                  selectOf(ctx, inf, u, ratio));
}
Values log1p(NodeContext &ctx) { return resultOf(ctx, log1pOf(ctx, operandF32(ctx))); }

/// expm1(x) accurate for small x (Kahan's trick): u = e^x rounded; x itself where u is 1 (tiny
/// x and +-0, sign kept), (u - 1) * x / log(u) for |x| < 1/2 (where u - 1 cancels), u - 1
/// beyond (no cancellation there; the ratio would overflow or lose log(u) to a subnormal u).
static Value expm1Of(NodeContext &ctx, Value x) {
  Value u = ctx.unary(UnaryFn::exp, x);
  Value um1 = ctx.binaryScalar(BinaryFn::sub, u, 1.0);
  Value ratio = ctx.binary(BinaryFn::div, ctx.binary(BinaryFn::mul, um1, x),
                           ctx.unary(UnaryFn::log, u));
  Value near0 = ctx.binaryScalar(BinaryFn::lt, ctx.unary(UnaryFn::abs, x), 0.5);
  return selectOf(ctx, ctx.binaryScalar(BinaryFn::eq, u, 1.0), x,
                  selectOf(ctx, near0, ratio, um1));
}
Values expm1(NodeContext &ctx) { return resultOf(ctx, expm1Of(ctx, operandF32(ctx))); }

/// exp2(x) = pow(2, x).
Values exp2Op(NodeContext &ctx) {
  return resultOf(ctx, ctx.binary(BinaryFn::pow, ctx.scalar(ctx.b.getF32Type(), 2.0),
                                  operandF32(ctx)));
}

/// elu(x, alpha, scale, input_scale) = scale * (x > 0 ? x : alpha * (exp(input_scale * x) - 1)).
Values eluOp(NodeContext &ctx) {
  Value x = operandF32(ctx);
  double alpha = ctx.number(1, "alpha", 1.0), scale = ctx.number(2, "scale", 1.0);
  double inputScale = ctx.number(3, "input_scale", 1.0);
  Value expm1 = ctx.binaryScalar(
      BinaryFn::sub, ctx.unary(UnaryFn::exp, ctx.binaryScalar(BinaryFn::mul, x, inputScale)), 1.0);
  return resultOf(ctx, selectOf(ctx, ctx.binaryScalar(BinaryFn::gt, x, 0.0),
                                ctx.binaryScalar(BinaryFn::mul, x, scale),
                                ctx.binaryScalar(BinaryFn::mul, expm1, alpha * scale)));
}

/// erfc(x) = 1 - erf(x) (absolute error of fp32 erf; eager's relative accuracy for large
/// x, where erfc underflows toward 0, is not reproduced).
Values erfcOp(NodeContext &ctx) {
  return resultOf(ctx, ctx.binary(BinaryFn::sub, ctx.scalar(ctx.b.getF32Type(), 1.0),
                                  ctx.unary(UnaryFn::erf, operandF32(ctx))));
}

/// sinh(x) = (exp(x) - exp(-x)) / 2; cosh(x) = (exp(x) + exp(-x)) / 2.
template <BinaryFn Combine> static Value hyperbolic(NodeContext &ctx, Value x) {
  Value e = ctx.unary(UnaryFn::exp, x), f = ctx.unary(UnaryFn::exp, ctx.unary(UnaryFn::neg, x));
  return ctx.binaryScalar(BinaryFn::mul, ctx.binary(Combine, e, f), 0.5);
}
/// sinh: for |x| < 1, (m + m / (m + 1)) / 2 with m = expm1(x), accurate near 0 (x itself for
/// tiny x, -0 kept), where e^x - e^-x cancels; the exponentials beyond.
Values sinhOp(NodeContext &ctx) {
  Value x = operandF32(ctx);
  Value m = expm1Of(ctx, x);
  Value small = ctx.binaryScalar(
      BinaryFn::mul,
      ctx.binary(BinaryFn::add, m,
                 ctx.binary(BinaryFn::div, m, ctx.binaryScalar(BinaryFn::add, m, 1.0))),
      0.5);
  Value near0 = ctx.binaryScalar(BinaryFn::lt, ctx.unary(UnaryFn::abs, x), 1.0);
  return resultOf(ctx, selectOf(ctx, near0, small, hyperbolic<BinaryFn::sub>(ctx, x)));
}
Values coshOp(NodeContext &ctx) {
  return resultOf(ctx, hyperbolic<BinaryFn::add>(ctx, operandF32(ctx)));
}

/// tan(x) = sin(x) / cos(x).
Values tanOp(NodeContext &ctx) {
  Value x = operandF32(ctx);
  return resultOf(ctx, ctx.binary(BinaryFn::div, ctx.unary(UnaryFn::sin, x),
                                  ctx.unary(UnaryFn::cos, x)));
}

/// log2(x) = log(x) / ln 2; log10(x) = log(x) / ln 10.
Values log2Op(NodeContext &ctx) {
  return resultOf(ctx, ctx.binaryScalar(BinaryFn::mul, ctx.unary(UnaryFn::log, operandF32(ctx)),
                                        1.0 / std::log(2.0)));
}
Values log10Op(NodeContext &ctx) {
  return resultOf(ctx, ctx.binaryScalar(BinaryFn::mul, ctx.unary(UnaryFn::log, operandF32(ctx)),
                                        1.0 / std::log(10.0)));
}

/// atanh(x) = log((1 + x) / (1 - x)) / 2.
Values atanhOp(NodeContext &ctx) {
  Value x = operandF32(ctx);
  Value ratio = ctx.binary(BinaryFn::div, ctx.binaryScalar(BinaryFn::add, x, 1.0),
                           ctx.binary(BinaryFn::sub, ctx.scalar(ctx.b.getF32Type(), 1.0), x));
  return resultOf(ctx, ctx.binaryScalar(BinaryFn::mul, ctx.unary(UnaryFn::log, ratio), 0.5));
}

/// isnan(x) = x != x; integers are never NaN.
Values isNan(NodeContext &ctx) {
  Value x = ctx.tensor(0);
  if (!isFloat(x))
    return {ctx.splat(ctx.resultType(), 0.0)};
  return {ctx.binary(BinaryFn::ne, x, x)};
}

/// isinf(x) = |x| == inf; integers are never infinite.
Values isInf(NodeContext &ctx) {
  Value x = ctx.tensor(0);
  if (!isFloat(x))
    return {ctx.splat(ctx.resultType(), 0.0)};
  return {ctx.binaryScalar(BinaryFn::eq, ctx.unary(UnaryFn::abs, x),
                           std::numeric_limits<double>::infinity())};
}

/// copysign(a, b) = |a| with b's sign bit. b < 0 misses -0.0, whose reciprocal is -inf;
/// the sign bit of a NaN b is not visible to comparisons (read as positive).
Values copySign(NodeContext &ctx) {
  Type et = ctx.resultType().getElementType();
  Value a = ctx.castTo(ctx.tensorOrScalar(0, et), et);
  Value b = ctx.castTo(ctx.tensorOrScalar(1, et), et);
  Value negativeZero = ctx.binaryScalar(BinaryFn::lt, ctx.unary(UnaryFn::reciprocal, b), 0.0);
  Value negative = ctx.binary(BinaryFn::Or, ctx.binaryScalar(BinaryFn::lt, b, 0.0), negativeZero);
  Value magnitude = ctx.unary(UnaryFn::abs, a);
  // -|a| as a product on the ALU (-1 * 0 is -0; an activation's neg may round -0 to +0)
  Value negated = ctx.binaryScalar(BinaryFn::mul, magnitude, -1.0);
  Value y = selectOf(ctx, negative, negated, magnitude);
  if (cast<RankedTensorType>(y.getType()) != ctx.resultType())
    y = ctx.b.create<nt::BroadcastOp>(ctx.loc, ctx.resultType(), y);
  return {y};
}

/// Integer a / b rounded toward zero (the engines' integer division) and the remainder
/// a - q * b, which has a's sign (C's fmod).
static std::pair<Value, Value> intDivMod(NodeContext &ctx, Value a, Value b) {
  Value q = ctx.binary(BinaryFn::div, a, b);
  Value r = ctx.binary(BinaryFn::sub, a, ctx.binary(BinaryFn::mul, q, b));
  return {q, r};
}

/// Where a truncated quotient must go one down for floor rounding: a remainder that is
/// not zero and whose sign differs from the divisor's.
static Value floorFix(NodeContext &ctx, Value r, Value b) {
  Value differ = ctx.binary(BinaryFn::ne, ctx.binaryScalar(BinaryFn::lt, r, 0.0),
                            ctx.binaryScalar(BinaryFn::lt, b, 0.0));
  return ctx.binary(BinaryFn::And, ctx.binaryScalar(BinaryFn::ne, r, 0.0), differ);
}

/// Operands of an integer or float division, converted to the result's element type.
static std::pair<Value, Value> divOperands(NodeContext &ctx) {
  Type et = ctx.resultType().getElementType();
  return {ctx.castTo(ctx.tensorOrScalar(0, et), et), ctx.castTo(ctx.tensorOrScalar(1, et), et)};
}

static Value fitResult(NodeContext &ctx, Value y) {
  y = ctx.castTo(y, ctx.resultType().getElementType());
  if (cast<RankedTensorType>(y.getType()) != ctx.resultType())
    y = ctx.b.create<nt::BroadcastOp>(ctx.loc, ctx.resultType(), y);
  return y;
}

/// Operands of a float division or remainder in fp32, the precision eager computes them in
/// for every float type.
static std::pair<Value, Value> f32Operands(NodeContext &ctx) {
  Type et = ctx.resultType().getElementType();
  Type f32 = ctx.b.getF32Type();
  return {ctx.castTo(ctx.tensorOrScalar(0, et), f32), ctx.castTo(ctx.tensorOrScalar(1, et), f32)};
}

/// Floor division of floats as eager computes it: from the exact remainder m = fmod(a, b),
/// the quotient (a - m) / b, one down where m and b differ in sign, then floor, rounded up
/// where it was more than a half below; a zero quotient takes the sign of a / b, and a zero
/// divisor gives a / b (inf or NaN).
static Value floorDivFloat(NodeContext &ctx, Value a, Value b) {
  Value m = ctx.binary(BinaryFn::fmod, a, b);
  Value div = ctx.binary(BinaryFn::div, ctx.binary(BinaryFn::sub, a, m), b);
  div = selectOf(ctx, floorFix(ctx, m, b), ctx.binaryScalar(BinaryFn::sub, div, 1.0), div);
  Value floored = floorOrCeil(ctx, div, true);
  Value up = ctx.binaryScalar(BinaryFn::gt, ctx.binary(BinaryFn::sub, div, floored), 0.5);
  floored = selectOf(ctx, up, ctx.binaryScalar(BinaryFn::add, floored, 1.0), floored);
  Value quotient = ctx.binary(BinaryFn::div, a, b);
  Value signedZero = ctx.binaryScalar(BinaryFn::mul, quotient, 0.0);
  Value y = selectOf(ctx, ctx.binaryScalar(BinaryFn::eq, div, 0.0), signedZero, floored);
  return selectOf(ctx, ctx.binaryScalar(BinaryFn::eq, b, 0.0), quotient, y);
}

/// div.Tensor_mode(a, b, rounding_mode): None, 'trunc' or 'floor'; b may be a number.
Values divMode(NodeContext &ctx) {
  const nlohmann::json *modeArg = ctx.arg(2, "rounding_mode");
  std::string mode = modeArg && modeArg->is_string() ? modeArg->get<std::string>() : "";
  if (modeArg && !modeArg->is_null() && mode != "trunc" && mode != "floor")
    throw ImportError("unknown rounding_mode " + runtime::jsonBrief(*modeArg) +
                      " (None, 'trunc' or 'floor')");
  Type et = ctx.resultType().getElementType();
  if (isa<FloatType>(et)) {
    if (mode == "floor") {
      // Eager floors the quotient of two bf16/fp16 tensors with each step rounded to
      // their type, and the quotient by a Python scalar in fp32.
      auto [a, b] = ctx.isTensorArg(1) ? divOperands(ctx) : f32Operands(ctx);
      return {fitResult(ctx, floorDivFloat(ctx, a, b))};
    }
    // In fp32. For bf16/fp16, eager rounds the quotient of two tensors to the result type
    // before truncating it, but truncates the quotient by a Python scalar (kept fp32) in
    // fp32 and rounds after.
    Type f32 = ctx.b.getF32Type();
    Value a = ctx.castTo(ctx.tensorOrScalar(0, et), f32);
    Value b = ctx.castTo(ctx.tensorOrScalar(1, et), f32);
    Value q = ctx.binary(BinaryFn::div, a, b);
    if (ctx.isTensorArg(1))
      q = ctx.castTo(q, et);
    return {fitResult(ctx, mode == "trunc" ? truncFloat(ctx, q) : q)};
  }
  auto [a, b] = divOperands(ctx);
  if (mode.empty())
    throw ImportError("true division with an integer result type");
  auto [q, r] = intDivMod(ctx, a, b);
  if (mode == "floor")
    q = selectOf(ctx, floorFix(ctx, r, b), ctx.binaryScalar(BinaryFn::sub, q, 1.0), q);
  return {fitResult(ctx, q)};
}

/// remainder (the divisor's sign) and fmod (the dividend's sign): floats with the Vector
/// engine's exact remainder ops in fp32 (as eager computes them); integers from the
/// truncated quotient (exact also for INT64_MIN and a -1 divisor).
template <bool Floor> static Values remainderOf(NodeContext &ctx) {
  if (isa<FloatType>(ctx.resultType().getElementType())) {
    auto [a, b] = f32Operands(ctx);
    return {fitResult(ctx, ctx.binary(Floor ? BinaryFn::mod : BinaryFn::fmod, a, b))};
  }
  auto [a, b] = divOperands(ctx);
  auto [q, r] = intDivMod(ctx, a, b);
  (void)q;
  if (Floor)
    r = selectOf(ctx, floorFix(ctx, r, b), ctx.binary(BinaryFn::add, r, b), r);
  return {fitResult(ctx, r)};
}
Values remainderOp(NodeContext &ctx) { return remainderOf<true>(ctx); }
Values fmodOp(NodeContext &ctx) { return remainderOf<false>(ctx); }

} // namespace neuron::compiler::aten

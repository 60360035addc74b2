// Importers of elementwise ATen ops: arithmetic, comparisons, activations, where, clamp.
#include "compiler/Import/AtenImporters.h"

#include <cmath>

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

Values log1p(NodeContext &ctx) {
  return {ctx.unary(UnaryFn::log, ctx.binaryScalar(BinaryFn::add, ctx.tensor(0), 1.0))};
}

Values expm1(NodeContext &ctx) {
  return {ctx.binaryScalar(BinaryFn::sub, ctx.unary(UnaryFn::exp, ctx.tensor(0)), 1.0)};
}

Values logicalNot(NodeContext &ctx) {
  return {ctx.binaryScalar(BinaryFn::eq, ctx.tensor(0), 0.0)};
}

} // namespace neuron::compiler::aten

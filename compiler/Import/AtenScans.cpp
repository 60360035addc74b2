// Scans: cumsum, cumprod, cummax, cummin and logcumsumexp.
//
// Float cumsum and cumprod are ntorch.scan, the Vector engine's tensor_tensor_scan: one
// pass along each row, rounding as eager's sequential loop does (in fp32; eager's fp32
// cumsum on the CPU accumulates in double, so long fp32 sums differ by fp32 rounding). Few
// long rows are split into sub-rows that scan in parallel on more partitions and then add
// (multiply) the running total of the sub-rows before them. The others are log-step
// (Hillis-Steele) scans of whole-tensor ntorch ops along the scanned dim: for s = 1, 2, 4,
// ... < L, y = combine(y shifted right by s and filled with the identity, y). ceil(log2 L)
// steps of a slice, a pad and the combine, never one op per element. Each combine is
// associative, so the result is the sequential scan's up to rounding: logcumsumexp rounds
// in a different order than eager's loop (well within float tolerances); integer sums and
// products are exact, wrapping as in torch; cummax/cummin are exact.
#include "compiler/Import/AtenImporters.h"

#include <cmath>
#include <limits>

using namespace mlir;
using neuron::ntorch::BinaryFn;
using neuron::ntorch::UnaryFn;
namespace nt = neuron::ntorch;

namespace neuron::compiler::aten {
namespace {

RankedTensorType typeOf(Value v) { return cast<RankedTensorType>(v.getType()); }

/// A scanned tensor moved to [rows, L] (the scanned dim last) and back.
struct ScanLayout {
  SmallVector<int64_t> perm, movedShape;
  bool moved = false;

  static ScanLayout of(NodeContext &ctx, RankedTensorType t, int64_t d) {
    ScanLayout layout;
    for (int64_t i = 0; i < t.getRank(); ++i)
      if (i != d)
        layout.perm.push_back(i);
    layout.perm.push_back(d);
    layout.moved = d != t.getRank() - 1;
    for (int64_t i : layout.perm)
      layout.movedShape.push_back(t.getDimSize(i));
    return layout;
  }
  Value flatten(NodeContext &ctx, Value x) const {
    Value m = moved ? ctx.permute(x, perm) : x;
    int64_t length = movedShape.back();
    int64_t rows = typeOf(m).getNumElements() / std::max<int64_t>(length, 1);
    return ctx.reshape(m, {rows, length});
  }
  Value restore(NodeContext &ctx, Value flat) const {
    Value y = ctx.reshape(flat, movedShape);
    if (!moved)
      return y;
    SmallVector<int64_t> inverse(perm.size());
    for (size_t i = 0; i < perm.size(); ++i)
      inverse[perm[i]] = int64_t(i);
    return ctx.permute(y, inverse);
  }
};

/// y shifted right by s along the last dim of [rows, L], the first s columns `fill`.
Value shiftRight(NodeContext &ctx, Value y, int64_t s, double fill) {
  auto t = typeOf(y);
  int64_t rows = t.getDimSize(0), length = t.getDimSize(1);
  auto headType = RankedTensorType::get({rows, length - s}, t.getElementType());
  Value head = ctx.b.create<nt::SliceOp>(ctx.loc, headType, y, ArrayRef<int64_t>{0, 0},
                                         ArrayRef<int64_t>{1, 1});
  return ctx.b.create<nt::PadOp>(ctx.loc, t, head, ArrayRef<int64_t>{0, s},
                                 ArrayRef<int64_t>{0, 0}, APFloat(fill));
}

Value select(NodeContext &ctx, Value cond, Value a, Value b) {
  return ctx.b.create<nt::SelectOp>(ctx.loc, typeOf(a), cond, a, b);
}

/// The scanned dim (the op's argument 1) and the input cast to the result's element type.
int64_t scanDim(NodeContext &ctx, Value x) {
  int64_t rank = std::max<int64_t>(typeOf(x).getRank(), 1);
  return ctx.dim(ctx.integer(1, "dim", 0), rank);
}

bool isFloatValue(Value v) { return isa<FloatType>(typeOf(v).getElementType()); }

/// logaddexp(a, b) as eager's logcumsumexp combines: max + log1p(exp(min - max)) (that is,
/// max + softplus(min - max)), and max itself where both are the same infinity (whose
/// difference would be NaN). NaN propagates through max and min.
Value logAddExp(NodeContext &ctx, Value a, Value b) {
  Value hi = ctx.binary(BinaryFn::max, a, b), lo = ctx.binary(BinaryFn::min, a, b);
  Value sum = ctx.binary(BinaryFn::add, hi,
                         ctx.unary(UnaryFn::softplus, ctx.binary(BinaryFn::sub, lo, hi)));
  Value infinite = ctx.binaryScalar(BinaryFn::eq, ctx.unary(UnaryFn::abs, lo),
                                    std::numeric_limits<double>::infinity());
  Value same = ctx.binary(BinaryFn::And, ctx.binary(BinaryFn::eq, lo, hi), infinite);
  return select(ctx, same, hi, sum);
}

} // namespace

/// The input in the type the scan accumulates in: fp32 for bf16/fp16 (as eager's loop,
/// which rounds only its outputs), the result's type otherwise.
Value accumulated(NodeContext &ctx, Type resultElement) {
  Type accumulator = isa<FloatType>(resultElement) && resultElement.getIntOrFloatBitWidth() < 32
                         ? ctx.b.getF32Type()
                         : resultElement;
  return ctx.castTo(ctx.castTo(ctx.tensor(0), resultElement), accumulator);
}

/// Integer cumsum along the last dim of [rows, L], exactly (int64 adds wrap as in torch): a
/// log-step scan, y += y shifted right by s zero-filled, for s = 1, 2, 4, ... < L.
Value integerScan(NodeContext &ctx, Value flat) {
  Value y = flat;
  for (int64_t s = 1; s < typeOf(flat).getDimSize(1); s *= 2)
    y = ctx.binary(BinaryFn::add, y, shiftRight(ctx, y, s, 0.0));
  return y;
}

namespace {

/// Sub-rows a row of `length` splits into when `rows` rows leave partitions idle: the largest
/// divisor of the length up to partitions / rows that keeps sub-rows of at least 64 elements
/// (1: no split). A row on one partition scans one element after another (2 cycles each).
int64_t scanSplit(int64_t rows, int64_t length) {
  constexpr int64_t kPartitions = 128, kMinSubRow = 64;
  if (rows * 2 > kPartitions)
    return 1;
  for (int64_t k = std::min(kPartitions / rows, length / kMinSubRow); k >= 2; --k)
    if (length % k == 0)
      return k;
  return 1;
}

/// A float scan (`fn` add or mul) along the last dim of [rows, L] (any float type), in fp32,
/// rounded to `resultElement` once.
Value floatScan(NodeContext &ctx, Value flat, BinaryFn fn, Type resultElement) {
  auto t = typeOf(flat);
  int64_t rows = t.getDimSize(0), length = t.getDimSize(1);
  auto scan = [&](Value x, Type element) {
    auto type = RankedTensorType::get(typeOf(x).getShape(), element);
    return ctx.b.create<nt::ScanOp>(ctx.loc, type, fn, x);
  };
  int64_t k = scanSplit(rows, length);
  if (k == 1)
    return scan(flat, resultElement);
  int64_t sub = length / k;
  Type f32 = ctx.b.getF32Type();
  Value partial = scan(ctx.reshape(flat, {rows * k, sub}), f32);
  auto lastType = RankedTensorType::get({rows * k, 1}, f32);
  Value last = ctx.b.create<nt::SliceOp>(ctx.loc, lastType, partial,
                                         ArrayRef<int64_t>{0, sub - 1}, ArrayRef<int64_t>{1, 1});
  // The total of the sub-rows before each: an exclusive scan of the sub-row totals (the
  // identity first: -0 for a sum, which keeps every value, -0 too; 1 for a product).
  Value before = shiftRight(ctx, scan(ctx.reshape(last, {rows, k}), f32), 1,
                            fn == BinaryFn::add ? -0.0 : 1.0);
  Value y = ctx.binary(fn, ctx.reshape(before, {rows, k, 1}), ctx.reshape(partial, {rows, k, sub}));
  return ctx.castTo(ctx.reshape(y, {rows, length}), resultElement);
}

} // namespace

/// cumsum(x, dim, dtype=None): floats as a scan in fp32 (rounded to the result type at the
/// end, as eager's loop), integers exactly by a log-step scan.
Values cumsum(NodeContext &ctx) {
  Type result = ctx.resultType().getElementType();
  Value x = ctx.castTo(ctx.tensor(0), result);
  if (typeOf(x).getRank() == 0)
    return {x};
  ScanLayout layout = ScanLayout::of(ctx, typeOf(x), scanDim(ctx, x));
  Value flat = layout.flatten(ctx, x);
  Value y = isFloatValue(flat) ? floatScan(ctx, flat, BinaryFn::add, result)
                               : integerScan(ctx, flat);
  return {layout.restore(ctx, y)};
}

/// cumprod(x, dim, dtype=None): floats as a scan in fp32, integers by a log-step scan of
/// products.
Values cumprod(NodeContext &ctx) {
  Type result = ctx.resultType().getElementType();
  if (isa<FloatType>(result)) {
    Value x = ctx.castTo(ctx.tensor(0), result);
    if (typeOf(x).getRank() == 0)
      return {x};
    ScanLayout layout = ScanLayout::of(ctx, typeOf(x), scanDim(ctx, x));
    return {layout.restore(ctx, floatScan(ctx, layout.flatten(ctx, x), BinaryFn::mul, result))};
  }
  Value x = accumulated(ctx, result);
  if (typeOf(x).getRank() == 0)
    return {ctx.castTo(x, result)};
  ScanLayout layout = ScanLayout::of(ctx, typeOf(x), scanDim(ctx, x));
  Value y = layout.flatten(ctx, x);
  for (int64_t s = 1; s < layout.movedShape.back(); s *= 2)
    y = ctx.binary(BinaryFn::mul, shiftRight(ctx, y, s, 1.0), y);
  return {ctx.castTo(layout.restore(ctx, y), result)};
}

/// logcumsumexp(x, dim): a log-step scan of logaddexp.
Values logcumsumexp(NodeContext &ctx) {
  RankedTensorType resultType = ctx.resultType();
  if (!isa<FloatType>(resultType.getElementType()))
    throw ImportError("logcumsumexp of an integer tensor (torch requires a float one)");
  Value x = accumulated(ctx, resultType.getElementType());
  if (typeOf(x).getRank() == 0)
    return {ctx.castTo(x, resultType.getElementType())};
  ScanLayout layout = ScanLayout::of(ctx, typeOf(x), scanDim(ctx, x));
  Value y = layout.flatten(ctx, x);
  for (int64_t s = 1; s < layout.movedShape.back(); s *= 2)
    y = logAddExp(ctx, shiftRight(ctx, y, s, -std::numeric_limits<double>::infinity()), y);
  return {ctx.castTo(layout.restore(ctx, y), resultType.getElementType())};
}

/// cummax / cummin(x, dim) -> (values, indices): a log-step scan of (value, index) pairs.
/// Eager's loop takes a new element where it is NaN or (the running value is not NaN and)
/// it is >= (<=) the running value: the later of equal values, and the last NaN once one is
/// seen. Combining an earlier segment's pair a with a later one's b by the same rule is
/// associative (a max in the order where NaN is top and ties go to the later index). The
/// shifted-in columns, which have no earlier element, carry index -1 and lose to any pair.
template <bool Max> static Values cumExtreme(NodeContext &ctx) {
  Value x = ctx.tensor(0);
  RankedTensorType indexType = ctx.resultType(1);
  if (typeOf(x).getRank() == 0)
    return {x, ctx.splat(indexType, 0.0)};
  ScanLayout layout = ScanLayout::of(ctx, typeOf(x), scanDim(ctx, x));
  Value value = layout.flatten(ctx, x);
  auto flatType = typeOf(value);
  int64_t rows = flatType.getDimSize(0), length = flatType.getDimSize(1);
  ctx.requireExpandable(length, "cummax/cummin positions");
  Type indexElement = indexType.getElementType();
  auto positionsType = RankedTensorType::get({1, length}, indexElement);
  SmallVector<APInt> positions;
  for (int64_t i = 0; i < length; ++i)
    positions.push_back(APInt(indexElement.getIntOrFloatBitWidth(), uint64_t(i), true));
  Value index = ctx.b.create<nt::ConstantOp>(
      ctx.loc, positionsType,
      cast<ElementsAttr>(DenseElementsAttr::get(positionsType, positions)));
  index = ctx.b.create<nt::BroadcastOp>(
      ctx.loc, RankedTensorType::get({rows, length}, indexElement), index);
  bool isFloat = isFloatValue(value);
  for (int64_t s = 1; s < length; s *= 2) {
    Value earlier = shiftRight(ctx, value, s, 0.0);
    Value earlierIndex = shiftRight(ctx, index, s, -1.0);
    Value later = ctx.binary(Max ? BinaryFn::ge : BinaryFn::le, value, earlier);
    if (isFloat) {
      Value laterNaN = ctx.binary(BinaryFn::ne, value, value);
      Value earlierNumber = ctx.binary(BinaryFn::eq, earlier, earlier);
      later = ctx.binary(BinaryFn::Or, laterNaN, ctx.binary(BinaryFn::And, earlierNumber, later));
    }
    later = ctx.binary(BinaryFn::Or, later, ctx.binaryScalar(BinaryFn::lt, earlierIndex, 0.0));
    value = select(ctx, later, value, earlier);
    index = select(ctx, later, index, earlierIndex);
  }
  return {layout.restore(ctx, value), layout.restore(ctx, index)};
}
Values cummax(NodeContext &ctx) { return cumExtreme<true>(ctx); }
Values cummin(NodeContext &ctx) { return cumExtreme<false>(ctx); }

} // namespace neuron::compiler::aten

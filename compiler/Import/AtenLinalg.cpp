// Importers of ATen linear algebra: mm, bmm, addmm, convolution, cumsum (as a matmul).
#include "compiler/Import/AtenImporters.h"

using namespace mlir;
using neuron::ntorch::BinaryFn;
namespace nt = neuron::ntorch;

namespace neuron::compiler::aten {

static RankedTensorType typeOf(Value v) { return cast<RankedTensorType>(v.getType()); }

Values mm(NodeContext &ctx) {
  return {ctx.b.create<nt::MatmulOp>(ctx.loc, ctx.resultType(), ctx.tensor(0), ctx.tensor(1),
                                     false, false)};
}

Values bmm(NodeContext &ctx) { return mm(ctx); }

/// addmm(bias, a, b, beta, alpha) = beta * bias + alpha * (a @ b).
Values addmm(NodeContext &ctx) {
  Value product = ctx.b.create<nt::MatmulOp>(ctx.loc, ctx.resultType(), ctx.tensor(1),
                                             ctx.tensor(2), false, false);
  Value bias = ctx.tensor(0);
  double alpha = ctx.number(4, "alpha", 1.0), beta = ctx.number(3, "beta", 1.0);
  if (alpha != 1.0)
    product = ctx.binaryScalar(BinaryFn::mul, product, alpha);
  if (beta != 1.0)
    bias = ctx.binaryScalar(BinaryFn::mul, bias, beta);
  return {ctx.b.create<nt::BinaryOp>(ctx.loc, ctx.resultType(), BinaryFn::add, bias, product)};
}

/// convolution(x, w, bias, stride, padding, dilation, transposed, output_padding, groups):
/// 2-D, not transposed; the bias is a broadcast add over [C, 1, 1].
Values convolution(NodeContext &ctx) {
  Value x = ctx.tensor(0), w = ctx.tensor(1);
  if (typeOf(x).getRank() != 4)
    throw ImportError("only 2-D convolutions (NCHW input) are supported, got rank " +
                      std::to_string(typeOf(x).getRank()));
  if (ctx.integer(6, "transposed", 0))
    throw ImportError("transposed convolutions are not supported");
  ctx.requireRank(w, 4, "the weight (OIHW)");
  SmallVector<int64_t> stride = ctx.intPair(3, "stride", {1, 1}),
                       padding = ctx.intPair(4, "padding", {0, 0}),
                       dilation = ctx.intPair(5, "dilation", {1, 1});
  int64_t groups = ctx.integer(8, "groups", 1);
  for (int i = 0; i < 2; ++i)
    if (stride[i] < 1 || dilation[i] < 1 || padding[i] < 0)
      throw ImportError("convolution needs positive stride and dilation and non-negative padding");
  if (groups < 1)
    throw ImportError("convolution needs groups >= 1, got " + std::to_string(groups));
  RankedTensorType resultType = ctx.resultType();
  if (resultType.getRank() != 4)
    throw ImportError("the result of a 2-D convolution must have rank 4, got rank " +
                      std::to_string(resultType.getRank()));
  Value y = ctx.b.create<nt::Conv2dOp>(ctx.loc, resultType, x, w, stride, padding, dilation, groups);
  if (ctx.hasArg(2, "bias") && ctx.isTensorArg(2)) {
    Value bias = ctx.reshape(ctx.tensor(2), {resultType.getDimSize(1), 1, 1});
    y = ctx.binary(BinaryFn::add, y, bias);
  }
  return {y};
}

/// Integer cumsum along the last dim of [rows, L], exactly (int64 adds wrap as in torch): a
/// log-step scan, y += y shifted right by s zero-filled, for s = 1, 2, 4, ... < L.
Value integerScan(NodeContext &ctx, Value flat) {
  auto t = typeOf(flat);
  int64_t rows = t.getDimSize(0), length = t.getDimSize(1);
  Value y = flat;
  for (int64_t s = 1; s < length; s *= 2) {
    auto headType = RankedTensorType::get({rows, length - s}, t.getElementType());
    Value head = ctx.b.create<nt::SliceOp>(ctx.loc, headType, y, ArrayRef<int64_t>{0, 0},
                                           ArrayRef<int64_t>{1, 1});
    Value shifted = ctx.b.create<nt::PadOp>(ctx.loc, t, head, ArrayRef<int64_t>{0, s},
                                            ArrayRef<int64_t>{0, 0}, APFloat(0.0));
    y = ctx.binary(BinaryFn::add, y, shifted);
  }
  return y;
}

/// Float cumsum along the last dim of [rows, L] = a matmul with an upper-triangular matrix of
/// ones, on the Tensor engine: [rows, L] @ U[L, L].
static Value floatScan(NodeContext &ctx, Value flat) {
  auto t = typeOf(flat);
  int64_t rows = t.getDimSize(0), length = t.getDimSize(1);
  ctx.requireExpandable(length > kMaxExpandedElements ? length : length * length,
                        "cumsum over " + std::to_string(length) + " elements");
  auto uType = RankedTensorType::get({length, length}, t.getElementType());
  SmallVector<APFloat> ones;
  auto &sem = cast<FloatType>(t.getElementType()).getFloatSemantics();
  for (int64_t i = 0; i < length; ++i)
    for (int64_t j = 0; j < length; ++j)
      ones.push_back(APFloat(sem, i <= j ? 1 : 0));
  Value upper = ctx.b.create<nt::ConstantOp>(
      ctx.loc, uType, cast<ElementsAttr>(DenseElementsAttr::get(uType, ones)));
  return ctx.b.create<nt::MatmulOp>(
      ctx.loc, RankedTensorType::get({rows, length}, t.getElementType()), flat, upper, false,
      false);
}

/// cumsum along a dim: moved to the last dim, flattened to [rows, L], scanned.
Values cumsum(NodeContext &ctx) {
  Value x = ctx.tensor(0);
  RankedTensorType resultType = ctx.resultType();
  x = ctx.castTo(x, resultType.getElementType());
  auto t = typeOf(x);
  int64_t rank = std::max<int64_t>(t.getRank(), 1);
  int64_t d = ctx.dim(ctx.integer(1, "dim", 0), rank);
  if (t.getRank() == 0)
    return {x};
  SmallVector<int64_t> perm;
  for (int64_t i = 0; i < rank; ++i)
    if (i != d)
      perm.push_back(i);
  perm.push_back(d);
  bool moved = d != rank - 1;
  Value moved_x = moved ? ctx.permute(x, perm) : x;
  auto mt = typeOf(moved_x);
  int64_t length = t.getDimSize(d), rows = mt.getNumElements() / std::max<int64_t>(length, 1);
  Value flat = ctx.reshape(moved_x, {rows, length});
  Value scanned = isa<FloatType>(t.getElementType()) ? floatScan(ctx, flat) : integerScan(ctx, flat);
  Value y = ctx.reshape(scanned, mt.getShape());
  if (moved) {
    SmallVector<int64_t> inverse(rank);
    for (int64_t i = 0; i < rank; ++i)
      inverse[perm[i]] = i;
    y = ctx.permute(y, inverse);
  }
  return {y};
}

} // namespace neuron::compiler::aten

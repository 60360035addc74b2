// Importers of ATen linear algebra: mm, bmm, addmm, cumsum (as a matmul), _trilinear.
#include "compiler/Import/AtenImporters.h"

using namespace mlir;
using neuron::ntorch::BinaryFn;
using neuron::ntorch::ReduceFn;
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

/// _trilinear(i1, i2, i3, expand1, expand2, expand3, sumdim, unroll_dim) (nn.functional.
/// bilinear): each input with size-1 dims inserted at its expand dims, the three multiplied
/// with broadcasting and summed over sumdim, in fp32.
Values trilinear(NodeContext &ctx) {
  Type f32 = ctx.b.getF32Type();
  Value product;
  int64_t rank = -1;
  for (size_t k = 0; k < 3; ++k) {
    Value x = ctx.tensor(k);
    SmallVector<int64_t> expand = ctx.intList(3 + k, "expand");
    auto t = typeOf(x);
    int64_t r = t.getRank() + (int64_t)expand.size();
    if (rank >= 0 && r != rank)
      throw ImportError("_trilinear: the inputs expand to ranks " + std::to_string(rank) +
                        " and " + std::to_string(r));
    rank = r;
    SmallVector<bool> inserted(r, false);
    for (int64_t d : expand) {
      int64_t n = ctx.dim(d, r);
      if (inserted[n])
        throw ImportError("_trilinear: expand dim " + std::to_string(d) + " repeats");
      inserted[n] = true;
    }
    SmallVector<int64_t> shape;
    for (int64_t d = 0, src = 0; d < r; ++d)
      shape.push_back(inserted[d] ? 1 : t.getDimSize(src++));
    x = ctx.castTo(ctx.reshape(x, shape), f32);
    product = product ? ctx.binary(BinaryFn::mul, product, x) : x;
  }
  SmallVector<int64_t> dims;
  for (int64_t d : ctx.intList(6, "sumdim"))
    dims.push_back(ctx.dim(d, rank));
  llvm::sort(dims);
  if (std::adjacent_find(dims.begin(), dims.end()) != dims.end())
    throw ImportError("_trilinear: a sum dim repeats");
  Value y = dims.empty() ? product : ctx.reduce(ReduceFn::sum, product, dims, false);
  RankedTensorType resultType = ctx.resultType();
  if (typeOf(y).getShape() != resultType.getShape())
    throw ImportError("_trilinear: the result has the shape of " +
                      std::to_string(typeOf(y).getNumElements()) +
                      " elements the graph does not record");
  return {ctx.castTo(y, resultType.getElementType())};
}

} // namespace neuron::compiler::aten

// Importers of ATen reductions and normalizations: sum, mean, var, prod, vector norms,
// softmax, layer, group and batch norm. Softmax and the norms expand into reduce /
// elementwise ntorch ops.
#include "compiler/Import/AtenImporters.h"

#include <cmath>

using namespace mlir;
using neuron::ntorch::BinaryFn;
using neuron::ntorch::ReduceFn;
using neuron::ntorch::UnaryFn;
namespace nt = neuron::ntorch;

namespace neuron::compiler::aten {

static RankedTensorType typeOf(Value v) { return cast<RankedTensorType>(v.getType()); }

/// The dims argument at `i` (missing, null or [] = every dim).
static SmallVector<int64_t> reduceDims(NodeContext &ctx, Value x, size_t i, const char *name) {
  const nlohmann::json *a = ctx.arg(i, name);
  SmallVector<int64_t> dims;
  if (a && !a->is_null())
    dims = ctx.intList(i, name);
  if (dims.empty())
    dims = llvm::to_vector(llvm::seq<int64_t>(0, typeOf(x).getRank()));
  for (int64_t &d : dims)
    d = ctx.dim(d, typeOf(x).getRank());
  return dims;
}

static int64_t numReduced(Value x, ArrayRef<int64_t> dims) {
  int64_t n = 1;
  if (typeOf(x).getRank() == 0)
    return n; // dim 0 of a 0-d tensor is the tensor itself
  for (int64_t d : dims)
    n *= typeOf(x).getDimSize(d);
  return n;
}

/// Float inputs reduce in their own type; others (bool, int) in the result type.
static Value input(NodeContext &ctx) {
  return ctx.castTo(ctx.tensor(0), ctx.resultType().getElementType());
}

/// Normalizations compute in fp32 like PyTorch's CPU kernels do for bf16/fp16.
static Value toF32(NodeContext &ctx, Value x) {
  Type et = typeOf(x).getElementType();
  return (et.isBF16() || et.isF16()) ? ctx.castTo(x, ctx.b.getF32Type()) : x;
}

template <ReduceFn Fn> static Values reduceOp(NodeContext &ctx) {
  Value x = input(ctx);
  return {ctx.reduce(Fn, x, reduceDims(ctx, x, 1, "dim"), ctx.integer(2, "keepdim", 0))};
}

Values sum(NodeContext &ctx) { return reduceOp<ReduceFn::sum>(ctx); }
Values amax(NodeContext &ctx) { return reduceOp<ReduceFn::max>(ctx); }
Values amin(NodeContext &ctx) { return reduceOp<ReduceFn::min>(ctx); }
Values any(NodeContext &ctx) {
  Value x = ctx.tensor(0);
  if (!typeOf(x).getElementType().isInteger(1))
    x = ctx.binaryScalar(BinaryFn::ne, x, 0.0);
  return {ctx.reduce(ReduceFn::max, x, reduceDims(ctx, x, 1, "dim"), ctx.integer(2, "keepdim", 0))};
}

/// The index of the first maximum (fn = max) or minimum (fn = min) along `dim`, as eager
/// computes it: the first NaN when there is one (max and min propagate NaN, and
/// NaN != NaN), else the first x equal to the extremum: min over those positions.
static Value argExtremeAlong(NodeContext &ctx, ReduceFn fn, Value x, int64_t dim,
                             bool keepdim) {
  auto t = typeOf(x);
  int64_t n = t.getDimSize(dim);
  ctx.requireExpandable(n, "argmax over " + std::to_string(n) + " positions");
  SmallVector<int64_t> posShape(t.getRank(), 1);
  posShape[dim] = n;
  auto posType = RankedTensorType::get(posShape, ctx.b.getF32Type());
  SmallVector<APFloat> values;
  for (int64_t i = 0; i < n; ++i)
    values.push_back(APFloat((float)i));
  Value positions = ctx.b.create<nt::ConstantOp>(
      ctx.loc, posType, cast<ElementsAttr>(DenseElementsAttr::get(posType, values)));
  Value m = ctx.reduce(fn, x, {dim}, true);
  Value hit = ctx.binary(BinaryFn::eq, x, m);
  if (isa<FloatType>(t.getElementType()))
    hit = ctx.binary(BinaryFn::Or, hit, ctx.binary(BinaryFn::ne, x, x));
  Value cand = ctx.b.create<nt::SelectOp>(
      ctx.loc, RankedTensorType::get(t.getShape(), ctx.b.getF32Type()), hit, positions,
      ctx.scalar(ctx.b.getF32Type(), 3.0e38));
  return ctx.reduce(ReduceFn::min, cand, {dim}, keepdim);
}

/// A 0-d tensor as [1], so that it has a dim to take the argmax along.
static Value atLeast1d(NodeContext &ctx, Value x) {
  return typeOf(x).getRank() == 0 ? ctx.reshape(x, {1}) : x;
}

template <ReduceFn Fn> static Values argExtreme(NodeContext &ctx) {
  Value x = ctx.tensor(0);
  const nlohmann::json *d = ctx.arg(1, "dim");
  bool keepdim = ctx.integer(2, "keepdim", 0);
  Value idx;
  if (!d || d->is_null()) {
    Value flat = ctx.reshape(x, {typeOf(x).getNumElements()});
    idx = argExtremeAlong(ctx, Fn, flat, 0, false);
  } else {
    int64_t dim = ctx.dim(ctx.integer(1, "dim", 0), typeOf(x).getRank());
    idx = argExtremeAlong(ctx, Fn, atLeast1d(ctx, x), dim, keepdim);
  }
  idx = ctx.reshape(idx, ctx.resultType().getShape());
  return {ctx.castTo(idx, ctx.resultType().getElementType())};
}

Values argmax(NodeContext &ctx) { return argExtreme<ReduceFn::max>(ctx); }
Values argmin(NodeContext &ctx) { return argExtreme<ReduceFn::min>(ctx); }

/// max.dim / min.dim(x, dim, keepdim) -> (values, indices).
template <ReduceFn Fn> static Values extremeDim(NodeContext &ctx) {
  Value x = ctx.tensor(0);
  int64_t d = ctx.dim(ctx.integer(1, "dim", 0), typeOf(x).getRank());
  bool keepdim = ctx.integer(2, "keepdim", 0);
  Value values = ctx.reduce(Fn, x, {d}, keepdim);
  Value idx = ctx.reshape(argExtremeAlong(ctx, Fn, atLeast1d(ctx, x), d, keepdim),
                          ctx.resultType(1).getShape());
  return {ctx.reshape(values, ctx.resultType(0).getShape()),
          ctx.castTo(idx, ctx.resultType(1).getElementType())};
}

Values maxDim(NodeContext &ctx) { return extremeDim<ReduceFn::max>(ctx); }
Values minDim(NodeContext &ctx) { return extremeDim<ReduceFn::min>(ctx); }

/// mean(x, dims) of the reduction's input `x`, in fp32 for fp16 and bf16 (eager's acc_type:
/// a sum past the half type's range still gives a finite mean), in `x`'s type.
static Value meanOf(NodeContext &ctx, Value x, ArrayRef<int64_t> dims, bool keepdim) {
  Value s = ctx.reduce(ReduceFn::sum, toF32(ctx, x), dims, keepdim);
  Value m = ctx.binaryScalar(BinaryFn::mul, s, 1.0 / numReduced(x, dims));
  return ctx.castTo(m, typeOf(x).getElementType());
}

/// The mean of `x` (fp32) over dims, kept as size 1, relative to each set's first element:
/// x0 + mean(x - x0), finite where the sum overflows (eager's var and var_mean use
/// Welford's algorithm in double).
static Value shiftedMean(NodeContext &ctx, Value x, ArrayRef<int64_t> dims) {
  auto t = typeOf(x);
  if (t.getRank() == 0 || numReduced(x, dims) == 0)
    return meanOf(ctx, x, dims, true);
  SmallVector<int64_t> shape(t.getShape()), zeros(t.getRank(), 0), ones(t.getRank(), 1);
  for (int64_t d : dims)
    shape[d] = 1;
  Value first = ctx.b.create<nt::SliceOp>(
      ctx.loc, RankedTensorType::get(shape, t.getElementType()), x, zeros, ones);
  Value s = ctx.reduce(ReduceFn::sum, ctx.binary(BinaryFn::sub, x, first), dims, true);
  return ctx.binary(BinaryFn::add, first,
                    ctx.binaryScalar(BinaryFn::mul, s, 1.0 / numReduced(x, dims)));
}

Values mean(NodeContext &ctx) {
  Value x = input(ctx);
  return {meanOf(ctx, x, reduceDims(ctx, x, 1, "dim"), ctx.integer(2, "keepdim", 0))};
}

/// var(x, dims, correction, keepdim) = sum((x - mean)^2) / (n - correction), in fp32 for
/// fp16 and bf16 as eager computes it.
Values var(NodeContext &ctx) {
  Value x = input(ctx);
  Type et = typeOf(x).getElementType();
  x = toF32(ctx, x);
  SmallVector<int64_t> dims = reduceDims(ctx, x, 1, "dim");
  int64_t n = numReduced(x, dims);
  double correction = ctx.number(2, "correction", 1.0);
  Value d = ctx.binary(BinaryFn::sub, x, shiftedMean(ctx, x, dims));
  Value s = ctx.reduce(ReduceFn::sum, ctx.binary(BinaryFn::mul, d, d), dims,
                       ctx.integer(3, "keepdim", 0));
  return {ctx.castTo(ctx.binaryScalar(BinaryFn::mul, s, 1.0 / std::max(n - correction, 0.0)),
                     et)};
}

/// var_mean(x, dims, correction, keepdim) -> (var, mean).
Values varMean(NodeContext &ctx) {
  Value variance = var(ctx).front();
  Value x = input(ctx);
  Value m = ctx.castTo(shiftedMean(ctx, toF32(ctx, x), reduceDims(ctx, x, 1, "dim")),
                       typeOf(x).getElementType());
  return {ctx.reshape(variance, ctx.resultType(0).getShape()),
          ctx.reshape(m, ctx.resultType(1).getShape())};
}

/// softmax(x) = exp(x - max) / sum(exp(x - max)) along one dim.
Values softmax(NodeContext &ctx) {
  Value x = toF32(ctx, ctx.tensor(0));
  int64_t d = ctx.dim(ctx.integer(1, "dim", -1), typeOf(x).getRank());
  Value m = ctx.reduce(ReduceFn::max, x, {d}, true);
  Value e = ctx.unary(UnaryFn::exp, ctx.binary(BinaryFn::sub, x, m));
  Value s = ctx.reduce(ReduceFn::sum, e, {d}, true);
  Value y = ctx.binary(BinaryFn::mul, e, ctx.unary(UnaryFn::reciprocal, s));
  return {ctx.castTo(y, ctx.resultType().getElementType())};
}

/// log_softmax(x) = x - max - log(sum(exp(x - max))).
Values logSoftmax(NodeContext &ctx) {
  Value x = toF32(ctx, ctx.tensor(0));
  int64_t d = ctx.dim(ctx.integer(1, "dim", -1), typeOf(x).getRank());
  Value m = ctx.reduce(ReduceFn::max, x, {d}, true);
  Value shifted = ctx.binary(BinaryFn::sub, x, m);
  Value s = ctx.reduce(ReduceFn::sum, ctx.unary(UnaryFn::exp, shifted), {d}, true);
  Value y = ctx.binary(BinaryFn::sub, shifted, ctx.unary(UnaryFn::log, s));
  return {ctx.castTo(y, ctx.resultType().getElementType())};
}

/// native_layer_norm(x, shape, w, b, eps) -> (y, mean, rstd).
Values layerNorm(NodeContext &ctx) {
  Value x = toF32(ctx, ctx.tensor(0));
  int64_t rank = typeOf(x).getRank();
  int64_t normalized = ctx.intList(1, "normalized_shape").size();
  if (normalized > rank)
    throw ImportError("layer norm over " + std::to_string(normalized) +
                      " dims of a tensor of rank " + std::to_string(rank));
  SmallVector<int64_t> dims = llvm::to_vector(llvm::seq<int64_t>(rank - normalized, rank));
  int64_t n = numReduced(x, dims);
  double eps = ctx.number(4, "eps", 1e-5);
  Value mu = ctx.binaryScalar(BinaryFn::mul, ctx.reduce(ReduceFn::sum, x, dims, true), 1.0 / n);
  Value xc = ctx.binary(BinaryFn::sub, x, mu);
  Value var = ctx.binaryScalar(BinaryFn::mul,
                               ctx.reduce(ReduceFn::sum, ctx.binary(BinaryFn::mul, xc, xc), dims, true),
                               1.0 / n);
  Value rstd = ctx.unary(UnaryFn::rsqrt, ctx.binaryScalar(BinaryFn::add, var, eps));
  Value y = ctx.binary(BinaryFn::mul, xc, rstd);
  if (ctx.isTensorArg(2))
    y = ctx.binary(BinaryFn::mul, y, ctx.tensor(2));
  if (ctx.isTensorArg(3))
    y = ctx.binary(BinaryFn::add, y, ctx.tensor(3));
  Type mt = ctx.resultType(1).getElementType();
  return {ctx.castTo(y, ctx.resultType(0).getElementType()),
          ctx.castTo(ctx.reshape(mu, ctx.resultType(1).getShape()), mt),
          ctx.castTo(ctx.reshape(rstd, ctx.resultType(2).getShape()), mt)};
}

/// Batch norm with given statistics: y = (x - mean[c]) * (rsqrt(var[c] + eps) * w[c]) + b[c]
/// (arguments x, w, b, mean, var at 0-4, eps at `epsIndex`); the saved mean and rstd are
/// empty [0] tensors as in eager.
Values batchNormWithStats(NodeContext &ctx, size_t epsIndex) {
  Value x = toF32(ctx, ctx.tensor(0));
  ctx.requireRankAtLeast(x, 2, "batch norm's input (N, C, ...)");
  int64_t rank = typeOf(x).getRank(), channels = typeOf(x).getDimSize(1);
  SmallVector<int64_t> shape(rank - 1, 1);
  shape[0] = channels;
  auto perChannel = [&](size_t i) { return toF32(ctx, ctx.reshape(ctx.tensor(i), shape)); };
  double eps = ctx.number(epsIndex, "eps", 1e-5);
  Value scale = ctx.unary(UnaryFn::rsqrt, ctx.binaryScalar(BinaryFn::add, perChannel(4), eps));
  if (ctx.isTensorArg(1))
    scale = ctx.binary(BinaryFn::mul, scale, perChannel(1));
  Value y = ctx.binary(BinaryFn::mul, ctx.binary(BinaryFn::sub, x, perChannel(3)), scale);
  if (ctx.isTensorArg(2))
    y = ctx.binary(BinaryFn::add, y, perChannel(2));
  Values results = {ctx.castTo(y, ctx.resultType(0).getElementType()), Value(), Value()};
  for (size_t i = 1; i < 3; ++i)
    if (ctx.hasResult(i)) {
      if (ctx.resultType(i).getNumElements() != 0)
        throw ImportError("batch norm with given statistics saves an empty mean and rstd; the "
                          "graph records " +
                          std::to_string(ctx.resultType(i).getNumElements()) + " elements");
      results[i] = ctx.splat(ctx.resultType(i), 0.0);
    }
  return results;
}

/// _native_batch_norm_legit_no_training(x, w, b, mean, var, momentum, eps).
Values batchNormInference(NodeContext &ctx) { return batchNormWithStats(ctx, 6); }

/// native_group_norm(x, w, b, N, C, HxW, groups, eps) -> (y, mean, rstd): statistics over
/// each group of C / groups channels and all their positions, as x viewed as [N, groups, -].
Values groupNorm(NodeContext &ctx) {
  Value x = toF32(ctx, ctx.tensor(0));
  ctx.requireRankAtLeast(x, 2, "group norm's input (N, C, ...)");
  auto t = typeOf(x);
  int64_t n = t.getDimSize(0), c = t.getDimSize(1);
  int64_t hw = t.getNumElements() / std::max<int64_t>(n * c, 1);
  int64_t groups = ctx.integer(6, "group", 1);
  if (ctx.integer(3, "N", n) != n || ctx.integer(4, "C", c) != c || ctx.integer(5, "HxW", hw) != hw)
    throw ImportError("group norm's N, C, HxW arguments do not match its input");
  if (groups <= 0 || c % groups)
    throw ImportError("group norm's " + std::to_string(c) + " channels do not split into " +
                      std::to_string(groups) + " groups");
  int64_t perGroup = c / groups * hw;
  double eps = ctx.number(7, "eps", 1e-5);
  Value xg = ctx.reshape(x, {n, groups, perGroup});
  double scale = 1.0 / std::max<int64_t>(perGroup, 1);
  Value mu = ctx.binaryScalar(BinaryFn::mul, ctx.reduce(ReduceFn::sum, xg, {2}, true), scale);
  Value xc = ctx.binary(BinaryFn::sub, xg, mu);
  Value squares = ctx.reduce(ReduceFn::sum, ctx.binary(BinaryFn::mul, xc, xc), {2}, true);
  Value var = ctx.binaryScalar(BinaryFn::mul, squares, scale);
  Value rstd = ctx.unary(UnaryFn::rsqrt, ctx.binaryScalar(BinaryFn::add, var, eps));
  Value y = ctx.reshape(ctx.binary(BinaryFn::mul, xc, rstd), {n, c, hw});
  auto perChannel = [&](size_t i) { return toF32(ctx, ctx.reshape(ctx.tensor(i), {c, 1})); };
  if (ctx.isTensorArg(1))
    y = ctx.binary(BinaryFn::mul, y, perChannel(1));
  if (ctx.isTensorArg(2))
    y = ctx.binary(BinaryFn::add, y, perChannel(2));
  Type mt = ctx.resultType(1).getElementType();
  return {ctx.castTo(ctx.reshape(y, t.getShape()), ctx.resultType(0).getElementType()),
          ctx.castTo(ctx.reshape(mu, ctx.resultType(1).getShape()), mt),
          ctx.castTo(ctx.reshape(rstd, ctx.resultType(2).getShape()), mt)};
}

/// Elements [start, start + size) of `dim`.
static Value sliceAlong(NodeContext &ctx, Value x, int64_t dim, int64_t start, int64_t size) {
  auto t = typeOf(x);
  SmallVector<int64_t> offsets(t.getRank(), 0), strides(t.getRank(), 1), shape(t.getShape());
  offsets[dim] = start;
  shape[dim] = size;
  return ctx.b.create<nt::SliceOp>(ctx.loc, RankedTensorType::get(shape, t.getElementType()), x,
                                   offsets, strides);
}

/// The product along `dim` (kept as size 1) as a tree of elementwise products: the first
/// half times the second, the odd last element carried, until one element is left.
static Value productAlong(NodeContext &ctx, Value x, int64_t dim) {
  int64_t n = typeOf(x).getDimSize(dim);
  if (n == 0) {
    SmallVector<int64_t> shape(typeOf(x).getShape());
    shape[dim] = 1;
    return ctx.splat(RankedTensorType::get(shape, typeOf(x).getElementType()), 1.0);
  }
  while (n > 1) {
    int64_t half = n / 2;
    Value m = ctx.binary(BinaryFn::mul, sliceAlong(ctx, x, dim, 0, half),
                         sliceAlong(ctx, x, dim, half, half));
    if (n % 2) {
      Value last = sliceAlong(ctx, x, dim, 2 * half, 1);
      SmallVector<int64_t> shape(typeOf(m).getShape());
      shape[dim] += 1;
      auto joined = RankedTensorType::get(shape, typeOf(m).getElementType());
      m = ctx.b.create<nt::ConcatOp>(ctx.loc, joined, ValueRange{m, last}, dim);
    }
    x = m;
    n = half + n % 2;
  }
  return x;
}

/// prod.dim_int(x, dim, keepdim, dtype) and prod.default(x, dtype): integers exactly
/// (wrapping as eager), floats in fp32 in a tree order.
Values prod(NodeContext &ctx) {
  Type et = ctx.resultType().getElementType();
  Value x = ctx.castTo(ctx.tensor(0), et);
  x = toF32(ctx, x);
  auto t = typeOf(x);
  Value y;
  if (ctx.hasArg(1, "dim") && ctx.arg(1, "dim")->is_number_integer()) { // prod.dim_int
    int64_t dim = ctx.dim(ctx.integer(1, "dim", 0), t.getRank());
    y = t.getRank() == 0 ? x : productAlong(ctx, x, dim);
  } else {
    y = productAlong(ctx, ctx.reshape(x, {t.getNumElements()}), 0);
  }
  return {ctx.castTo(ctx.reshape(y, ctx.resultType().getShape()), et)};
}

/// linalg_vector_norm(x, ord, dim, keepdim, dtype) in fp32: ord 2 sqrt(sum x^2), 1 sum |x|,
/// inf max |x|, -inf min |x|, 0 count of non-zeros, other p (sum |x|^p)^(1/p).
Values vectorNorm(NodeContext &ctx) {
  Type et = ctx.resultType().getElementType();
  if (!isa<FloatType>(et))
    throw ImportError("linalg_vector_norm needs a floating-point result type");
  Value x = toF32(ctx, ctx.castTo(ctx.tensor(0), et));
  double ord = ctx.number(1, "ord", 2.0);
  SmallVector<int64_t> dims = reduceDims(ctx, x, 2, "dim");
  bool keepdim = ctx.integer(3, "keepdim", 0);
  if (std::isnan(ord))
    throw ImportError("linalg_vector_norm with ord NaN");
  auto abs = [&] { return ctx.unary(UnaryFn::abs, x); };
  Value y;
  if (ord == 2.0) {
    Value squares = ctx.reduce(ReduceFn::sum, ctx.binary(BinaryFn::mul, x, x), dims, keepdim);
    y = ctx.unary(UnaryFn::sqrt, squares);
  } else if (ord == 1.0) {
    y = ctx.reduce(ReduceFn::sum, abs(), dims, keepdim);
  } else if (std::isinf(ord)) {
    y = ctx.reduce(ord > 0 ? ReduceFn::max : ReduceFn::min, abs(), dims, keepdim);
  } else if (ord == 0.0) {
    Value nonzero = ctx.castTo(ctx.binaryScalar(BinaryFn::ne, x, 0.0), typeOf(x).getElementType());
    y = ctx.reduce(ReduceFn::sum, nonzero, dims, keepdim);
  } else {
    Value s = ctx.reduce(ReduceFn::sum, ctx.binaryScalar(BinaryFn::pow, abs(), ord), dims, keepdim);
    y = ctx.binaryScalar(BinaryFn::pow, s, 1.0 / ord);
  }
  return {ctx.castTo(ctx.reshape(y, ctx.resultType().getShape()), et)};
}

} // namespace neuron::compiler::aten

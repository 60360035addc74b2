// Importers of ATen views, data movement, gathers and tensor factories.
#include "compiler/Import/AtenImporters.h"

#include <limits>

using namespace mlir;
namespace nt = neuron::ntorch;

namespace neuron::compiler::aten {

static RankedTensorType typeOf(Value v) { return cast<RankedTensorType>(v.getType()); }

Values permute(NodeContext &ctx) {
  Value in = ctx.tensor(0);
  int64_t rank = typeOf(in).getRank();
  SmallVector<int64_t> dims;
  for (int64_t d : ctx.intList(1, "dims"))
    dims.push_back(ctx.dim(d, rank));
  return {ctx.permute(in, dims)};
}

Values transpose(NodeContext &ctx) {
  Value in = ctx.tensor(0);
  int64_t rank = typeOf(in).getRank();
  if (rank < 2)
    return {in};
  SmallVector<int64_t> dims = llvm::to_vector(llvm::seq<int64_t>(0, rank));
  std::swap(dims[ctx.dim(ctx.integer(1, "dim0", 0), rank)],
            dims[ctx.dim(ctx.integer(2, "dim1", 1), rank)]);
  return {ctx.permute(in, dims)};
}

Values t(NodeContext &ctx) {
  Value in = ctx.tensor(0);
  return {typeOf(in).getRank() < 2 ? in : ctx.permute(in, {1, 0})};
}

/// view, reshape, squeeze, unsqueeze, flatten: the result type says it all.
Values reshape(NodeContext &ctx) { return {ctx.reshape(ctx.tensor(0), ctx.resultType().getShape())}; }

Values expand(NodeContext &ctx) {
  Value in = ctx.tensor(0);
  if (in.getType() == ctx.resultType())
    return {in};
  return {ctx.b.create<nt::BroadcastOp>(ctx.loc, ctx.resultType(), in)};
}

/// clone, alias, detach: values are immutable here.
Values identity(NodeContext &ctx) { return {ctx.tensor(0)}; }

/// A window of `x` along `dim` starting at `start` with `step`, of the result's size.
static Value window(NodeContext &ctx, Value x, int64_t dim, int64_t start, int64_t step,
                    int64_t size) {
  auto t = typeOf(x);
  SmallVector<int64_t> offsets(t.getRank(), 0), strides(t.getRank(), 1);
  SmallVector<int64_t> shape(t.getShape());
  offsets[dim] = start;
  strides[dim] = step;
  shape[dim] = size;
  return ctx.b.create<nt::SliceOp>(ctx.loc, RankedTensorType::get(shape, t.getElementType()), x,
                                   offsets, strides);
}

/// slice.Tensor(x, dim, start, end, step) with Python's clamping of start and end.
Values slice(NodeContext &ctx) {
  Value x = ctx.tensor(0);
  ctx.requireRankAtLeast(x, 1, "slice's input");
  ctx.requireRank(x, ctx.resultType().getRank(), "slice's input (rank of the result)");
  auto t = typeOf(x);
  int64_t dim = ctx.dim(ctx.integer(1, "dim", 0), t.getRank()), n = t.getDimSize(dim);
  int64_t start = ctx.integer(2, "start", 0), step = ctx.integer(4, "step", 1);
  if (step < 1)
    throw ImportError("slice step must be positive, got " + std::to_string(step));
  if (start < 0)
    start += n;
  start = std::clamp<int64_t>(start, 0, n);
  int64_t size = ctx.resultType().getDimSize(dim);
  if (size == 0)
    start = 0;
  return {window(ctx, x, dim, start, step, size)};
}

/// select.int(x, dim, index): a window of one, without the dim.
Values select(NodeContext &ctx) {
  Value x = ctx.tensor(0);
  ctx.requireRankAtLeast(x, 1, "select's input");
  auto t = typeOf(x);
  int64_t dim = ctx.dim(ctx.integer(1, "dim", 0), t.getRank());
  int64_t index = ctx.integer(2, "index", 0);
  if (index < 0)
    index += t.getDimSize(dim);
  if (index < 0 || index >= t.getDimSize(dim))
    throw ImportError("index " + std::to_string(ctx.integer(2, "index", 0)) +
                      " is out of range for dim " + std::to_string(dim) + " of size " +
                      std::to_string(t.getDimSize(dim)));
  return {ctx.reshape(window(ctx, x, dim, index, 1, 1), ctx.resultType().getShape())};
}

static Values splitInto(NodeContext &ctx, Value x, int64_t dim) {
  Values parts;
  int64_t start = 0;
  ctx.requireRankAtLeast(x, 1, "split's input");
  for (size_t i = 0; i < ctx.numResults(); ++i) {
    if (ctx.resultType(i).getRank() != typeOf(x).getRank())
      throw ImportError("output " + std::to_string(i) + " must have the input's rank " +
                        std::to_string(typeOf(x).getRank()));
    int64_t size = ctx.resultType(i).getDimSize(dim);
    parts.push_back(window(ctx, x, dim, start, 1, size));
    start += size;
  }
  return parts;
}

Values splitWithSizes(NodeContext &ctx) {
  Value x = ctx.tensor(0);
  return splitInto(ctx, x, ctx.dim(ctx.integer(2, "dim", 0), typeOf(x).getRank()));
}

Values split(NodeContext &ctx) { return splitWithSizes(ctx); }

Values cat(NodeContext &ctx) {
  RankedTensorType rt = ctx.resultType();
  SmallVector<Value> inputs;
  for (Value v : ctx.tensorList(0, "tensors"))
    if (typeOf(v).getNumElements() > 0) // torch.cat skips empty tensors
      inputs.push_back(ctx.castTo(v, rt.getElementType()));
  int64_t dim = ctx.dim(ctx.integer(1, "dim", 0), rt.getRank());
  if (inputs.empty()) // every input is empty: so is the result (else verification says so)
    return {ctx.splat(rt, 0.0)};
  if (inputs.size() == 1)
    return {inputs[0]};
  return {ctx.b.create<nt::ConcatOp>(ctx.loc, rt, inputs, dim)};
}

/// constant_pad_nd(x, pad, value): pad lists (before, after) from the last dim back.
Values constantPad(NodeContext &ctx) {
  Value x = ctx.tensor(0);
  int64_t rank = typeOf(x).getRank();
  SmallVector<int64_t> pad = ctx.intList(1, "pad"), low(rank, 0), high(rank, 0);
  if (pad.size() % 2 || (int64_t)pad.size() > 2 * rank)
    throw ImportError("pad has " + std::to_string(pad.size()) +
                      " entries; it needs two per padded dim, at most " + std::to_string(2 * rank));
  for (size_t i = 0; i + 1 < pad.size(); i += 2) {
    int64_t d = rank - 1 - i / 2;
    if (pad[i] < 0 || pad[i + 1] < 0)
      throw ImportError("negative padding (cropping) is not supported");
    low[d] = pad[i];
    high[d] = pad[i + 1];
  }
  return {ctx.b.create<nt::PadOp>(ctx.loc, ctx.resultType(), x, low, high,
                                  llvm::APFloat(ctx.number(2, "value", 0.0)))};
}

Values embedding(NodeContext &ctx) {
  return {ctx.b.create<nt::GatherRowsOp>(ctx.loc, ctx.resultType(), ctx.tensor(0), ctx.tensor(1))};
}

/// index_select(x, dim, index): gather rows of x viewed as [size(dim), rest].
Values indexSelect(NodeContext &ctx) {
  Value x = ctx.tensor(0), index = ctx.tensor(2);
  if (typeOf(x).getRank() == 0) { // a 0-d input is a 1-element vector here
    ctx.dim(ctx.integer(1, "dim", 0), 0);
    if (typeOf(index).getNumElements() != 1)
      throw ImportError("index_select of a 0-d input takes one index, got " +
                        std::to_string(typeOf(index).getNumElements()));
    Value y = ctx.b.create<nt::GatherRowsOp>(
        ctx.loc, RankedTensorType::get({typeOf(index).getNumElements(), 1}, typeOf(x).getElementType()),
        ctx.reshape(x, {1, 1}), ctx.reshape(index, {typeOf(index).getNumElements()}));
    return {ctx.reshape(y, ctx.resultType().getShape())};
  }
  auto t = typeOf(x);
  int64_t rank = t.getRank(), dim = ctx.dim(ctx.integer(1, "dim", 0), rank);
  SmallVector<int64_t> perm = {dim};
  for (int64_t i = 0; i < rank; ++i)
    if (i != dim)
      perm.push_back(i);
  Value moved = dim == 0 ? x : ctx.permute(x, perm);
  auto mt = typeOf(moved);
  int64_t rows = std::max<int64_t>(t.getDimSize(dim), 1);
  Value table = ctx.reshape(moved, {t.getDimSize(dim), mt.getNumElements() / rows});
  int64_t n = typeOf(index).getNumElements();
  Value flatIndex = ctx.reshape(index, {n});
  Value rowsOut = ctx.b.create<nt::GatherRowsOp>(
      ctx.loc, RankedTensorType::get({n, mt.getNumElements() / rows}, t.getElementType()), table,
      flatIndex);
  SmallVector<int64_t> shape(mt.getShape());
  shape[0] = n;
  Value y = ctx.reshape(rowsOut, shape);
  if (dim == 0)
    return {y};
  SmallVector<int64_t> inverse(rank);
  for (int64_t i = 0; i < rank; ++i)
    inverse[perm[i]] = i;
  return {ctx.permute(y, inverse)};
}

static SmallVector<int64_t> inversePerm(ArrayRef<int64_t> perm) {
  SmallVector<int64_t> inv(perm.size());
  for (size_t i = 0; i < perm.size(); ++i)
    inv[perm[i]] = i;
  return inv;
}

/// arange(start, end, step) folds to a constant: shapes are static.
Values arange(NodeContext &ctx) {
  RankedTensorType rt = ctx.resultType();
  ctx.requireExpandable(rt.getNumElements(), "arange");
  bool onlyEnd = !ctx.hasArg(1) || !ctx.arg(1)->is_number();
  double start = onlyEnd ? 0.0 : ctx.number(0, "start", 0.0);
  double step = onlyEnd ? 1.0 : ctx.number(2, "step", 1.0);
  Type et = rt.getElementType();
  Attribute attr;
  if (auto ft = dyn_cast<FloatType>(et)) {
    SmallVector<APFloat> values;
    for (int64_t i = 0; i < rt.getNumElements(); ++i) {
      APFloat f(start + i * step);
      bool lost;
      f.convert(ft.getFloatSemantics(), APFloat::rmNearestTiesToEven, &lost);
      values.push_back(f);
    }
    attr = DenseElementsAttr::get(rt, values);
  } else {
    SmallVector<APInt> values;
    for (int64_t i = 0; i < rt.getNumElements(); ++i)
      values.push_back(APInt(et.getIntOrFloatBitWidth(), (int64_t)(start + i * step), true));
    attr = DenseElementsAttr::get(rt, values);
  }
  return {ctx.b.create<nt::ConstantOp>(ctx.loc, rt, cast<ElementsAttr>(attr))};
}

Values full(NodeContext &ctx) { return {ctx.splat(ctx.resultType(), ctx.number(1, "fill_value", 0))}; }
Values fullLike(NodeContext &ctx) { return full(ctx); }
Values scalarTensor(NodeContext &ctx) { return {ctx.splat(ctx.resultType(), ctx.number(0, "s", 0))}; }
Values fillScalar(NodeContext &ctx) {
  return {ctx.splat(ctx.resultType(), ctx.number(1, "value", 0))};
}
/// empty's contents are undefined: zeros are as good as any, and cost one constant.
Values empty(NodeContext &ctx) { return {ctx.splat(ctx.resultType(), 0.0)}; }

/// The product of `sizes`.
static int64_t product(ArrayRef<int64_t> sizes) {
  int64_t n = 1;
  for (int64_t s : sizes)
    n *= s;
  return n;
}

/// flip(x, dims): the flipped dims moved to the front and flattened are reversed as a
/// whole (reversing each of them reverses their flattened index), by a gather of
/// constant row indices.
Values flip(NodeContext &ctx) {
  Value x = ctx.tensor(0);
  auto t = typeOf(x);
  int64_t rank = t.getRank();
  SmallVector<int64_t> perm;
  SmallVector<bool> seen(std::max<int64_t>(rank, 1), false);
  for (int64_t d : ctx.intList(1, "dims")) {
    int64_t n = ctx.dim(d, rank);
    if (seen[n])
      throw ImportError("flip's dims list dim " + std::to_string(d) + " twice");
    seen[n] = true;
    if (rank > 0 && t.getDimSize(n) > 1)
      perm.push_back(n);
  }
  if (perm.empty() || t.getNumElements() == 0)
    return {x};
  int64_t flipped = perm.size();
  for (int64_t d = 0; d < rank; ++d)
    if (!llvm::is_contained(ArrayRef<int64_t>(perm).take_front(flipped), d))
      perm.push_back(d);
  Value moved = ctx.permute(x, perm);
  auto mt = typeOf(moved);
  int64_t n = product(mt.getShape().take_front(flipped));
  ctx.requireExpandable(n, "flip's row positions");
  auto indexType = RankedTensorType::get({n}, ctx.b.getI64Type());
  SmallVector<APInt> reversed;
  for (int64_t i = 0; i < n; ++i)
    reversed.push_back(APInt(64, n - 1 - i, true));
  Value index = ctx.b.create<nt::ConstantOp>(
      ctx.loc, indexType, cast<ElementsAttr>(DenseElementsAttr::get(indexType, reversed)));
  int64_t rest = mt.getNumElements() / n;
  Value rows = ctx.b.create<nt::GatherRowsOp>(
      ctx.loc, RankedTensorType::get({n, rest}, t.getElementType()), ctx.reshape(moved, {n, rest}),
      index);
  return {ctx.permute(ctx.reshape(rows, mt.getShape()), inversePerm(perm))};
}

/// repeat(x, repeats): x viewed as [1, s0, 1, s1, ...] (leading 1s for extra repeats),
/// broadcast to [r0, s0, r1, s1, ...] and flattened pairwise: DMA only.
Values repeat(NodeContext &ctx) {
  Value x = ctx.tensor(0);
  auto t = typeOf(x);
  SmallVector<int64_t> repeats = ctx.intList(1, "repeats");
  if ((int64_t)repeats.size() < t.getRank())
    throw ImportError("repeat has " + std::to_string(repeats.size()) +
                      " repeats for a tensor of rank " + std::to_string(t.getRank()) +
                      "; it needs at least one per dim");
  SmallVector<int64_t> sizes(repeats.size() - t.getRank(), 1);
  llvm::append_range(sizes, t.getShape());
  SmallVector<int64_t> pairs, spread, result;
  for (auto [r, s] : llvm::zip(repeats, sizes)) {
    if (r < 0)
      throw ImportError("repeat count " + std::to_string(r) + " is negative");
    pairs.append({1, s});
    spread.append({r, s});
    result.push_back(r * s);
  }
  if (product(result) == 0)
    return {ctx.splat(ctx.resultType(), 0.0)};
  Value spreadValue = ctx.reshape(x, pairs);
  if (pairs != spread)
    spreadValue = ctx.b.create<nt::BroadcastOp>(
        ctx.loc, RankedTensorType::get(spread, t.getElementType()), spreadValue);
  return {ctx.reshape(spreadValue, result)};
}

/// diagonal(x, offset, dim1, dim2): dim1 and dim2 moved last and flattened; the diagonal
/// is a window with stride (size of dim2) + 1 from the offset's first element.
Values diagonal(NodeContext &ctx) {
  Value x = ctx.tensor(0);
  ctx.requireRankAtLeast(x, 2, "diagonal's input");
  auto t = typeOf(x);
  int64_t rank = t.getRank(), offset = ctx.integer(1, "offset", 0);
  int64_t d1 = ctx.dim(ctx.integer(2, "dim1", 0), rank);
  int64_t d2 = ctx.dim(ctx.integer(3, "dim2", 1), rank);
  if (d1 == d2)
    throw ImportError("diagonal's dim1 and dim2 are both " + std::to_string(d1));
  int64_t rows = t.getDimSize(d1), cols = t.getDimSize(d2);
  int64_t length = std::max<int64_t>(
      0, std::min(rows + std::min<int64_t>(offset, 0), cols - std::max<int64_t>(offset, 0)));
  if (length == 0 || t.getNumElements() == 0)
    return {ctx.splat(ctx.resultType(), 0.0)};
  SmallVector<int64_t> perm;
  for (int64_t d = 0; d < rank; ++d)
    if (d != d1 && d != d2)
      perm.push_back(d);
  perm.append({d1, d2});
  Value moved = ctx.permute(x, perm);
  SmallVector<int64_t> flat(typeOf(moved).getShape().drop_back(2));
  flat.push_back(rows * cols);
  int64_t start = offset >= 0 ? offset : -offset * cols;
  return {window(ctx, ctx.reshape(moved, flat), rank - 2, start, cols + 1, length)};
}

/// index.Tensor(x, [i0, i1, ...]): x[i0, i1, ...] with integer index tensors on the leading
/// dims, broadcast together: a gather of rows of x viewed as [n0 * n1 * ..., rest] at the
/// linear index. Negative indices wrap; with several indices each is bounds-checked on its
/// own (boundsCheckedZeros), since a linear index in range can hide one that is not.
Values indexTensor(NodeContext &ctx) {
  Value x = ctx.tensor(0);
  const nlohmann::json *list = ctx.arg(1, "indices");
  if (!list || !list->is_array() || list->empty())
    throw ImportError("index.Tensor needs a non-empty list of index tensors");
  IndexedRows r = indexedRows(ctx, x, ctx.optionalTensorList(1, "indices"), "index.Tensor");
  if (r.first < 0)
    return {x}; // every dim skipped: x itself
  int64_t first = r.first, k = r.k, rank = typeOf(x).getRank();
  Value linear = r.linear;
  x = r.moved;
  auto t = typeOf(x);
  int64_t rows = product(t.getShape().take_front(k));
  int64_t rest = rows ? t.getNumElements() / rows : 0;
  SmallVector<int64_t> gathered(typeOf(linear).getShape());
  gathered.push_back(rest);
  Value y = ctx.b.create<nt::GatherRowsOp>(
      ctx.loc, RankedTensorType::get(gathered, t.getElementType()), ctx.reshape(x, {rows, rest}),
      linear);
  if (first == 0)
    return {ctx.reshape(y, ctx.resultType().getShape())};
  // y is [index dims..., dims before the run..., dims after it...]: put the index dims
  // after the `first` leading dims.
  SmallVector<int64_t> shape(typeOf(linear).getShape());
  int64_t m = shape.size();
  for (int64_t d = k; d < rank; ++d)
    shape.push_back(t.getDimSize(d));
  y = ctx.reshape(y, shape);
  SmallVector<int64_t> back;
  for (int64_t d = 0; d < first; ++d)
    back.push_back(m + d);
  for (int64_t d = 0; d < m; ++d)
    back.push_back(d);
  for (int64_t d = m + first; d < (int64_t)shape.size(); ++d)
    back.push_back(d);
  return {ctx.reshape(ctx.permute(y, back), ctx.resultType().getShape())};
}

} // namespace neuron::compiler::aten

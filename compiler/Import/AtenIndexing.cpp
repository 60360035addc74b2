// Importers of indexed writes as indirect DMA scatters (ntorch.scatter_rows): index_put
// (index_fill, index_copy, max_unpool and _unsafe_masked_index_put_accumulate reach it
// through their decompositions), scatter, scatter_add, scatter_reduce, index_reduce, put,
// and embedding_bag with its backward. Their cost grows with the number of written rows,
// not with the size of the indexed dim.
//
// Duplicate indices: a write without reduction keeps the last of them in index order
// (row-major order of the index tensor), as eager's CPU kernels do; a reduction (add,
// mul, max, min) combines them in that order, the add of a float sum included.
// Positions are checked on the device (the DMA raises on a row outside its table):
// index_put and put wrap negative indices as eager does; scatter, scatter_reduce and
// index_reduce do not, and a negative index is an error there, as in eager.
#include "compiler/Import/AtenImporters.h"

#include <limits>
#include <optional>

using namespace mlir;
namespace nt = neuron::ntorch;

namespace neuron::compiler::aten {

static RankedTensorType typeOf(Value v) { return cast<RankedTensorType>(v.getType()); }

static int64_t product(ArrayRef<int64_t> sizes) {
  int64_t n = 1;
  for (int64_t s : sizes)
    n *= s;
  return n;
}

static SmallVector<int64_t> inverse(ArrayRef<int64_t> perm) {
  SmallVector<int64_t> inv(perm.size());
  for (size_t i = 0; i < perm.size(); ++i)
    inv[perm[i]] = i;
  return inv;
}

Value boundsCheckedZeros(NodeContext &ctx, Value index, int64_t positions, Type elementType) {
  auto it = typeOf(index);
  int64_t n = it.getNumElements();
  Value table = ctx.splat(RankedTensorType::get({positions, 1}, elementType), 0.0);
  Value rows = ctx.b.create<nt::GatherRowsOp>(
      ctx.loc, RankedTensorType::get({n, 1}, elementType), table, ctx.reshape(index, {n}));
  SmallVector<int64_t> shape(it.getShape());
  shape.push_back(1);
  return ctx.reshape(rows, shape);
}

/// `table` [rows, width] with rows `idx` [n] written from `values` [n, width], or
/// combined with `reduce`.
static Value scatterRows(NodeContext &ctx, Value table, Value idx, Value values,
                         std::optional<AluOp> reduce) {
  AluOpAttr attr = reduce ? AluOpAttr::get(ctx.b.getContext(), *reduce) : AluOpAttr();
  return ctx.b.create<nt::ScatterRowsOp>(ctx.loc, table.getType(), table, idx, values, attr);
}

/// `v` broadcast to `shape` (numpy rules; extra leading dims of size 1 dropped).
static Value broadcastTo(NodeContext &ctx, Value v, ArrayRef<int64_t> shape, const char *what) {
  auto t = typeOf(v);
  SmallVector<int64_t> vs(t.getShape());
  while ((int64_t)vs.size() > (int64_t)shape.size() && vs.front() == 1)
    vs.erase(vs.begin());
  if (vs.size() > shape.size())
    throw ImportError(std::string(what) + " of shape " + std::to_string(t.getRank()) +
                      "-D does not broadcast to the indexed shape");
  SmallVector<int64_t> padded(shape.size() - vs.size(), 1);
  llvm::append_range(padded, vs);
  for (size_t i = 0; i < shape.size(); ++i)
    if (padded[i] != shape[i] && padded[i] != 1)
      throw ImportError(std::string(what) + " does not broadcast to the indexed shape (dim " +
                        std::to_string(i) + ": " + std::to_string(padded[i]) + " vs " +
                        std::to_string(shape[i]) + ")");
  Value r = ctx.reshape(v, padded);
  if (ArrayRef<int64_t>(padded) == shape)
    return r;
  return ctx.b.create<nt::BroadcastOp>(ctx.loc, RankedTensorType::get(shape, t.getElementType()),
                                       r);
}

IndexedRows indexedRows(NodeContext &ctx, Value x, ArrayRef<Value> all, const std::string &op) {
  IndexedRows r;
  if ((int64_t)all.size() > typeOf(x).getRank())
    throw ImportError(op + " with " + std::to_string(all.size()) +
                      " indices for a tensor of rank " + std::to_string(typeOf(x).getRank()));
  // Skipped dims (None: x[:, i]) around one run of indexed dims [first, first + k).
  for (auto [j, v] : llvm::enumerate(all)) {
    if (!v)
      continue;
    if (r.first >= 0 && int64_t(j) != r.first + r.k)
      throw ImportError(op + " with indexed dims separated by a skipped dim is not supported");
    if (r.first < 0)
      r.first = j;
    ++r.k;
  }
  if (r.first < 0)
    return r;
  int64_t rank = typeOf(x).getRank();
  for (int64_t d = r.first; d < r.first + r.k; ++d)
    r.toFront.push_back(d);
  for (int64_t d = 0; d < rank; ++d)
    if (d < r.first || d >= r.first + r.k)
      r.toFront.push_back(d);
  r.moved = r.first > 0 ? ctx.permute(x, r.toFront) : x;
  auto t = typeOf(r.moved);
  Type i64 = ctx.b.getI64Type();
  for (int64_t j = 0; j < r.k; ++j) {
    Value index = all[r.first + j];
    Type et = typeOf(index).getElementType();
    if (et.isInteger(1))
      throw ImportError(op + " with a boolean mask is not supported (its result shape "
                             "depends on the data)");
    if (!isa<IntegerType>(et))
      throw ImportError(op + "'s index " + std::to_string(r.first + j) +
                        " must be an integer tensor");
    int64_t n = t.getDimSize(j);
    Value v = ctx.castTo(index, i64);
    Value wrapped = ctx.binaryScalar(ntorch::BinaryFn::add, v, (double)n);
    Value negative = ctx.binaryScalar(ntorch::BinaryFn::lt, v, 0.0);
    v = ctx.b.create<nt::SelectOp>(ctx.loc, typeOf(v), negative, wrapped, v);
    // A linear index in range can hide one that is not: check each on its own.
    if (r.k > 1)
      v = ctx.binary(ntorch::BinaryFn::add, v,
                     ctx.reshape(boundsCheckedZeros(ctx, v, n, i64), typeOf(v).getShape()));
    r.linear = r.linear ? ctx.binary(ntorch::BinaryFn::add,
                                     ctx.binaryScalar(ntorch::BinaryFn::mul, r.linear, (double)n),
                                     v)
                        : v;
  }
  return r;
}

/// index_put(self, indices, values, accumulate): self[indices] = values (+= with
/// accumulate), the indexed dims moved to the front and flattened into table rows.
Values indexPut(NodeContext &ctx) {
  Value self = ctx.tensor(0), values = ctx.tensor(2);
  bool accumulate = ctx.integer(3, "accumulate", 0);
  const nlohmann::json *list = ctx.arg(1, "indices");
  if (!list || !list->is_array() || list->empty())
    throw ImportError("index_put needs a non-empty list of index tensors");
  auto st = typeOf(self);
  Type et = st.getElementType();
  values = ctx.castTo(values, et);
  IndexedRows r = indexedRows(ctx, self, ctx.optionalTensorList(1, "indices"), "index_put");
  if (r.first < 0) { // every dim skipped: all of self
    Value v = broadcastTo(ctx, values, st.getShape(), "index_put's values");
    return {accumulate ? ctx.binary(ntorch::BinaryFn::add, self, v) : v};
  }
  auto mt = typeOf(r.moved);
  int64_t rows = product(mt.getShape().take_front(r.k));
  int64_t width = rows ? mt.getNumElements() / rows : 0;
  SmallVector<int64_t> b(typeOf(r.linear).getShape());
  int64_t n = product(b), m = b.size();
  if (n == 0 || mt.getNumElements() == 0)
    return {self};
  // values broadcast to eager's shape of self[indices]: the index dims where the run was.
  SmallVector<int64_t> shape(st.getShape().take_front(r.first));
  llvm::append_range(shape, b);
  llvm::append_range(shape, st.getShape().drop_front(r.first + r.k));
  Value v = broadcastTo(ctx, values, shape, "index_put's values");
  if (r.first > 0) {
    SmallVector<int64_t> perm;
    for (int64_t d = 0; d < m; ++d)
      perm.push_back(r.first + d);
    for (int64_t d = 0; d < (int64_t)shape.size(); ++d)
      if (d < r.first || d >= r.first + m)
        perm.push_back(d);
    v = ctx.permute(v, perm);
  }
  Value out = scatterRows(ctx, ctx.reshape(r.moved, {rows, width}), ctx.reshape(r.linear, {n}),
                          ctx.reshape(v, {n, width}),
                          accumulate ? std::optional<AluOp>(AluOp::add) : std::nullopt);
  out = ctx.reshape(out, mt.getShape());
  return {r.first > 0 ? ctx.permute(out, inverse(r.toFront)) : out};
}

/// put(self, index, source, accumulate): self.flatten()[index] = source (wrapping
/// negative indices).
Values put(NodeContext &ctx) {
  Value self = ctx.tensor(0), index = ctx.tensor(1), source = ctx.tensor(2);
  bool accumulate = ctx.integer(3, "accumulate", 0);
  auto st = typeOf(self);
  if (!isa<IntegerType>(typeOf(index).getElementType()) ||
      typeOf(index).getElementType().isInteger(1))
    throw ImportError("put's index must be an integer tensor");
  int64_t numel = st.getNumElements(), n = typeOf(index).getNumElements();
  if (typeOf(source).getNumElements() != n)
    throw ImportError("put has " + std::to_string(n) + " indices but " +
                      std::to_string(typeOf(source).getNumElements()) + " source elements");
  if (n == 0)
    return {self};
  Value v = ctx.reshape(ctx.castTo(index, ctx.b.getI64Type()), {n});
  Value negative = ctx.binaryScalar(ntorch::BinaryFn::lt, v, 0.0);
  v = ctx.b.create<nt::SelectOp>(ctx.loc, typeOf(v), negative,
                                 ctx.binaryScalar(ntorch::BinaryFn::add, v, (double)numel), v);
  Value out = scatterRows(ctx, ctx.reshape(self, {numel, 1}), v,
                          ctx.reshape(ctx.castTo(source, st.getElementType()), {n, 1}),
                          accumulate ? std::optional<AluOp>(AluOp::add) : std::nullopt);
  return {ctx.reshape(out, st.getShape())};
}

/// How a reduce string of scatter_reduce / index_reduce / scatter.reduce combines.
enum class Reduce { sum, prod, mean, amax, amin };

static Reduce parseReduce(const std::string &s, const std::string &op) {
  if (s == "sum" || s == "add")
    return Reduce::sum;
  if (s == "prod" || s == "multiply")
    return Reduce::prod;
  if (s == "mean")
    return Reduce::mean;
  if (s == "amax")
    return Reduce::amax;
  if (s == "amin")
    return Reduce::amin;
  throw ImportError(op + " with reduce='" + s + "' is not supported");
}

/// `table` [R, W] with rows `idx` [n] reduced with `values` [n, W] as scatter_reduce and
/// index_reduce do: include_self=False first sets the written rows to the reduction's
/// identity; mean divides by the count of values (plus one with self) per row.
static Value reduceRows(NodeContext &ctx, Value table, Value idx, Value values, Reduce reduce,
                        bool includeSelf, const std::string &op) {
  auto tt = typeOf(table);
  Type et = tt.getElementType();
  int64_t n = typeOf(idx).getNumElements(), width = tt.getDimSize(1);
  bool isFloat = isa<FloatType>(et);
  if (reduce == Reduce::mean && !isFloat)
    throw ImportError(op + " with reduce='mean' on integers (a floor division) is not "
                           "supported");
  double inf = std::numeric_limits<double>::infinity();
  double lowest = -inf, highest = inf;
  if (!isFloat) {
    unsigned bits = et.getIntOrFloatBitWidth();
    bool isUnsigned = et.isUnsignedInteger() || bits == 1;
    lowest = isUnsigned ? 0.0 : -std::ldexp(1.0, bits - 1);
    highest = isUnsigned ? std::ldexp(1.0, bits) - 1 : std::ldexp(1.0, bits - 1) - 1;
  }
  AluOp alu = AluOp::add;
  double identity = 0.0;
  switch (reduce) {
  case Reduce::sum:
  case Reduce::mean:
    break;
  case Reduce::prod:
    alu = AluOp::mul;
    identity = 1.0;
    break;
  case Reduce::amax:
    alu = AluOp::max;
    identity = lowest;
    break;
  case Reduce::amin:
    alu = AluOp::min;
    identity = highest;
    break;
  }
  auto rowsOf = [&](double value) {
    return ctx.splat(RankedTensorType::get({n, width}, et), value);
  };
  Value base = includeSelf ? table : scatterRows(ctx, table, idx, rowsOf(identity), std::nullopt);
  Value out = scatterRows(ctx, base, idx, values, alu);
  if (reduce != Reduce::mean)
    return out;
  Value start = ctx.splat(tt, includeSelf ? 1.0 : 0.0);
  Value count = scatterRows(ctx, start, idx, rowsOf(1.0), AluOp::add);
  count = ctx.binary(ntorch::BinaryFn::max, count, ctx.scalar(et, 1.0));
  return ctx.binary(ntorch::BinaryFn::div, out, count);
}

/// The positions in `self` (flattened) that `index` (self's rank, no larger outside
/// `dim`) points at along `dim`: index[i...] replaces coordinate `dim` of i.... Each index
/// is bounds-checked against size(dim) (a negative one is an error, as in eager).
static Value scatterPositions(NodeContext &ctx, Value self, Value index, int64_t dim,
                              const std::string &op) {
  auto st = typeOf(self), it = typeOf(index);
  if (!isa<IntegerType>(it.getElementType()) || it.getElementType().isInteger(1))
    throw ImportError(op + "'s index must be an integer tensor");
  if (it.getRank() != st.getRank())
    throw ImportError(op + "'s index has rank " + std::to_string(it.getRank()) +
                      ", the input " + std::to_string(st.getRank()));
  for (int64_t d = 0; d < st.getRank(); ++d)
    if (d != dim && it.getDimSize(d) > st.getDimSize(d))
      throw ImportError(op + "'s index is larger than the input in dim " + std::to_string(d));
  int64_t n = it.getNumElements(), rank = st.getRank();
  ctx.requireExpandable(n, op + "'s positions");
  SmallVector<int64_t> strides(rank, 1);
  for (int64_t d = rank - 2; d >= 0; --d)
    strides[d] = strides[d + 1] * st.getDimSize(d + 1);
  // The index elements' own coordinates outside `dim`, linearized in self: a constant.
  Type i64 = ctx.b.getI64Type();
  auto baseType = RankedTensorType::get({n}, i64);
  SmallVector<APInt> base;
  SmallVector<int64_t> coord(rank, 0);
  for (int64_t i = 0; i < n; ++i) {
    int64_t lin = 0;
    for (int64_t d = 0; d < rank; ++d)
      if (d != dim)
        lin += coord[d] * strides[d];
    base.push_back(APInt(64, lin, true));
    for (int64_t d = rank - 1; d >= 0; --d) {
      if (++coord[d] < it.getDimSize(d))
        break;
      coord[d] = 0;
    }
  }
  Value v = ctx.reshape(ctx.castTo(index, i64), {n});
  v = ctx.binary(ntorch::BinaryFn::add, v,
                 ctx.reshape(boundsCheckedZeros(ctx, v, st.getDimSize(dim), i64), {n}));
  Value constant = ctx.b.create<nt::ConstantOp>(
      ctx.loc, baseType, cast<ElementsAttr>(DenseElementsAttr::get(baseType, base)));
  return ctx.binary(ntorch::BinaryFn::add, constant,
                    ctx.binaryScalar(ntorch::BinaryFn::mul, v, (double)strides[dim]));
}

/// The first index.shape elements of src (a window from 0).
static Value srcWindow(NodeContext &ctx, Value src, ArrayRef<int64_t> shape, const std::string &op) {
  auto t = typeOf(src);
  if (t.getShape() == shape)
    return src;
  if (t.getRank() != (int64_t)shape.size())
    throw ImportError(op + "'s src must have the index's rank");
  for (size_t d = 0; d < shape.size(); ++d)
    if (t.getDimSize(d) < shape[d])
      throw ImportError(op + "'s src is smaller than its index in dim " + std::to_string(d));
  SmallVector<int64_t> zeros(shape.size(), 0), ones(shape.size(), 1);
  return ctx.b.create<nt::SliceOp>(ctx.loc, RankedTensorType::get(shape, t.getElementType()), src,
                                   zeros, ones);
}

/// scatter / scatter_add / scatter_reduce: self with the elements index points at
/// written (or reduced) from src (or the scalar value), one element per table row.
static Value scatterAlong(NodeContext &ctx, const std::string &op, Value self, int64_t dimArg,
                          Value index, Value src, std::optional<double> value,
                          std::optional<Reduce> reduce, bool includeSelf) {
  auto st = typeOf(self);
  Type et = st.getElementType();
  SmallVector<int64_t> shape(st.getShape());
  if (st.getRank() == 0) {
    self = ctx.reshape(self, {1});
    index = ctx.reshape(index, {1});
    if (src)
      src = ctx.reshape(src, {1});
  }
  int64_t dim = ctx.dim(dimArg, typeOf(self).getRank());
  auto it = typeOf(index);
  int64_t n = it.getNumElements(), numel = st.getNumElements();
  if (n == 0)
    return ctx.reshape(self, shape);
  Value positions = scatterPositions(ctx, self, index, dim, op);
  Value values = src ? ctx.reshape(ctx.castTo(srcWindow(ctx, src, it.getShape(), op), et), {n, 1})
                     : ctx.splat(RankedTensorType::get({n, 1}, et), *value);
  Value table = ctx.reshape(self, {numel, 1});
  Value out = reduce ? reduceRows(ctx, table, positions, values, *reduce, includeSelf, op)
                     : scatterRows(ctx, table, positions, values, std::nullopt);
  return ctx.reshape(out, shape);
}

Values scatterSrc(NodeContext &ctx) {
  return {scatterAlong(ctx, "scatter", ctx.tensor(0), ctx.integer(1, "dim", 0), ctx.tensor(2),
                       ctx.tensor(3), std::nullopt, std::nullopt, true)};
}

Values scatterValue(NodeContext &ctx) {
  return {scatterAlong(ctx, "scatter", ctx.tensor(0), ctx.integer(1, "dim", 0), ctx.tensor(2),
                       Value(), ctx.number(3, "value", 0.0), std::nullopt, true)};
}

/// scatter.reduce / scatter.value_reduce: reduce is "add" or "multiply".
Values scatterReduceOld(NodeContext &ctx) {
  bool isValue = !ctx.isTensorArg(3);
  Reduce r = parseReduce(ctx.string(4, "reduce", ""), "scatter");
  if (r != Reduce::sum && r != Reduce::prod)
    throw ImportError("scatter's reduce must be 'add' or 'multiply'");
  return {scatterAlong(ctx, "scatter", ctx.tensor(0), ctx.integer(1, "dim", 0), ctx.tensor(2),
                       isValue ? Value() : ctx.tensor(3),
                       isValue ? std::optional<double>(ctx.number(3, "value", 0.0))
                               : std::nullopt,
                       r, true)};
}

Values scatterAdd(NodeContext &ctx) {
  return {scatterAlong(ctx, "scatter_add", ctx.tensor(0), ctx.integer(1, "dim", 0),
                       ctx.tensor(2), ctx.tensor(3), std::nullopt, Reduce::sum, true)};
}

Values scatterReduceTwo(NodeContext &ctx) {
  return {scatterAlong(ctx, "scatter_reduce", ctx.tensor(0), ctx.integer(1, "dim", 0),
                       ctx.tensor(2), ctx.tensor(3), std::nullopt,
                       parseReduce(ctx.string(4, "reduce", ""), "scatter_reduce"),
                       ctx.integer(5, "include_self", 1) != 0)};
}

/// index_reduce(self, dim, index, source, reduce, include_self): rows index[i] of self
/// along dim reduced with source's rows, dim moved to the front.
Values indexReduce(NodeContext &ctx) {
  Value self = ctx.tensor(0), index = ctx.tensor(2), source = ctx.tensor(3);
  auto st = typeOf(self);
  SmallVector<int64_t> shape(st.getShape());
  Reduce r = parseReduce(ctx.string(4, "reduce", ""), "index_reduce");
  if (r == Reduce::sum)
    throw ImportError("index_reduce's reduce must be prod, mean, amax or amin");
  bool includeSelf = ctx.integer(5, "include_self", 1) != 0;
  if (!isa<IntegerType>(typeOf(index).getElementType()) || typeOf(index).getRank() > 1)
    throw ImportError("index_reduce's index must be a rank-1 integer tensor");
  if (st.getRank() == 0) {
    self = ctx.reshape(self, {1});
    source = ctx.reshape(source, {typeOf(source).getNumElements()});
  }
  int64_t rank = typeOf(self).getRank(), dim = ctx.dim(ctx.integer(1, "dim", 0), rank);
  int64_t n = typeOf(index).getNumElements();
  if (n == 0 || st.getNumElements() == 0)
    return {ctx.reshape(self, shape)};
  SmallVector<int64_t> perm = {dim};
  for (int64_t d = 0; d < rank; ++d)
    if (d != dim)
      perm.push_back(d);
  Value moved = dim ? ctx.permute(self, perm) : self;
  if (typeOf(source).getRank() != rank)
    throw ImportError("index_reduce's source must have the input's rank");
  Value src = dim ? ctx.permute(source, perm) : source;
  auto mt = typeOf(moved);
  int64_t rows = mt.getDimSize(0), width = mt.getNumElements() / rows;
  if (typeOf(src).getNumElements() != n * width)
    throw ImportError("index_reduce's source does not have one row per index");
  Value out = reduceRows(ctx, ctx.reshape(moved, {rows, width}),
                         ctx.reshape(ctx.castTo(index, ctx.b.getI64Type()), {n}),
                         ctx.reshape(ctx.castTo(src, st.getElementType()), {n, width}), r,
                         includeSelf, "index_reduce");
  out = ctx.reshape(out, mt.getShape());
  if (dim)
    out = ctx.permute(out, inverse(perm));
  return {ctx.reshape(out, shape)};
}

} // namespace neuron::compiler::aten

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

#include <cmath>
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

/// index_put with one bool/uint8 mask over the leading dims (x[mask] = v) whose values
/// are the same for every selected element (v broadcasts to the dims after the mask, so it
/// does not depend on the mask's count): a select, or an add of the masked values.
static Value maskedPut(NodeContext &ctx, Value self, ArrayRef<Value> all, Value values,
                       bool accumulate) {
  const char *unsupported = "a bool or uint8 index tensor is a mask in torch (boolean "
                            "indexing); index_put supports one mask over the leading dims "
                            "with values the same for every selected element (no values "
                            "per selected position); index with int64 positions instead";
  auto st = typeOf(self);
  if (all.size() != 1 || !all[0])
    throw ImportError(unsupported);
  auto mt = typeOf(all[0]);
  int64_t m = mt.getRank();
  if (m > st.getRank() || mt.getShape() != st.getShape().take_front(m))
    throw ImportError("index_put's mask of shape rank " + std::to_string(m) +
                      " does not match the input's leading dims");
  ArrayRef<int64_t> rest = st.getShape().drop_front(m);
  auto vt = typeOf(values);
  // Dims of values beyond the trailing shape must be 1 (else they count selected rows).
  for (int64_t d = 0; d + (int64_t)rest.size() < vt.getRank(); ++d)
    if (vt.getDimSize(d) != 1)
      throw ImportError(unsupported);
  SmallVector<int64_t> restShape(rest);
  Value v = broadcastTo(ctx, values, restShape, "index_put's values");
  SmallVector<int64_t> ones(m, 1);
  llvm::append_range(ones, rest);
  v = broadcastTo(ctx, ctx.reshape(v, ones), st.getShape(), "index_put's values");
  SmallVector<int64_t> maskShape(mt.getShape());
  maskShape.append(rest.size(), 1);
  Value mask = ctx.reshape(ctx.binaryScalar(ntorch::BinaryFn::ne, all[0], 0.0), maskShape);
  if (accumulate)
    v = ctx.binary(ntorch::BinaryFn::add, self, v);
  return ctx.b.create<nt::SelectOp>(ctx.loc, st, mask, v, self);
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
  SmallVector<Value> all = ctx.optionalTensorList(1, "indices");
  for (Value v : all)
    if (v && (typeOf(v).getElementType().isInteger(1) ||
              typeOf(v).getElementType().isUnsignedInteger(8)))
      return {maskedPut(ctx, self, all, values, accumulate)};
  IndexedRows r = indexedRows(ctx, self, all, "index_put");
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
  auto rowsType = RankedTensorType::get({n, width}, et);
  auto rowsOf = [&](double value) { return ctx.splat(rowsType, value); };
  // The lowest (highest) value of the dtype: -inf (inf), or the integer's exact extreme.
  auto extreme = [&](bool high) -> Value {
    if (isFloat)
      return rowsOf(high ? std::numeric_limits<double>::infinity()
                         : -std::numeric_limits<double>::infinity());
    unsigned bits = et.getIntOrFloatBitWidth();
    bool isUnsigned = et.isUnsignedInteger() || bits == 1;
    APInt v = isUnsigned ? (high ? APInt::getMaxValue(bits) : APInt::getMinValue(bits))
                         : (high ? APInt::getSignedMaxValue(bits)
                                 : APInt::getSignedMinValue(bits));
    return ctx.b.create<nt::ConstantOp>(
        ctx.loc, rowsType, cast<ElementsAttr>(DenseElementsAttr::get(rowsType, v)));
  };
  AluOp alu = AluOp::add;
  Value identity;
  switch (reduce) {
  case Reduce::sum:
  case Reduce::mean:
    identity = rowsOf(0.0);
    break;
  case Reduce::prod:
    alu = AluOp::mul;
    identity = rowsOf(1.0);
    break;
  case Reduce::amax:
    alu = AluOp::max;
    identity = extreme(false);
    break;
  case Reduce::amin:
    alu = AluOp::min;
    identity = extreme(true);
    break;
  }
  Value base = includeSelf ? table : scatterRows(ctx, table, idx, identity, std::nullopt);
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

/// gather(x, dim, index): out[i...] = x[i... with coordinate dim = index[i...]], as an
/// indirect DMA gather of single elements from x flattened, at scatter's positions (index
/// bounds-checked, smaller than x outside dim allowed): its cost grows with the gathered
/// elements, not with size(dim).
Values gather(NodeContext &ctx) {
  Value x = ctx.tensor(0), index = ctx.tensor(2);
  auto xt = typeOf(x), it = typeOf(index);
  if (xt.getRank() == 0) {
    x = ctx.reshape(x, {1});
    index = ctx.reshape(index, {1});
  }
  int64_t dim = ctx.dim(ctx.integer(1, "dim", 0), typeOf(x).getRank());
  int64_t n = it.getNumElements();
  if (n == 0)
    return {ctx.splat(RankedTensorType::get(it.getShape(), xt.getElementType()), 0.0)};
  Value positions = scatterPositions(ctx, x, index, dim, "gather");
  Value table = ctx.reshape(x, {xt.getNumElements(), 1});
  Value picked = ctx.b.create<nt::GatherRowsOp>(
      ctx.loc, RankedTensorType::get({n, 1}, xt.getElementType()), table, positions);
  return {ctx.reshape(picked, it.getShape())};
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

Value scatterAddAlong(NodeContext &ctx, const std::string &op, Value self, int64_t dim,
                      Value index, Value src) {
  return scatterAlong(ctx, op, self, dim, index, src, std::nullopt, Reduce::sum, true);
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

/// [0, 1, ..., n-1] as an i64 constant of `shape` (n elements).
static Value iota(NodeContext &ctx, ArrayRef<int64_t> shape) {
  auto type = RankedTensorType::get(shape, ctx.b.getI64Type());
  SmallVector<APInt> values;
  for (int64_t i = 0; i < type.getNumElements(); ++i)
    values.push_back(APInt(64, i, true));
  return ctx.b.create<nt::ConstantOp>(ctx.loc, type,
                                      cast<ElementsAttr>(DenseElementsAttr::get(type, values)));
}

/// The bag of each of the n indices of an embedding bag: the number of bag starts
/// offsets[1..bags) at or before it (compares on Vector, n x bags).
static Value bagOfIndex(NodeContext &ctx, Value offsets, int64_t n, int64_t bags) {
  Type i64 = ctx.b.getI64Type();
  if (bags <= 1)
    return ctx.splat(RankedTensorType::get({n}, i64), 0.0);
  Value o = ctx.reshape(ctx.castTo(offsets, i64), {typeOf(offsets).getNumElements()});
  Value starts = ctx.b.create<nt::SliceOp>(ctx.loc, RankedTensorType::get({bags - 1}, i64), o,
                                           SmallVector<int64_t>{1}, SmallVector<int64_t>{1});
  Value le = ctx.binary(ntorch::BinaryFn::le, ctx.reshape(starts, {1, bags - 1}),
                        iota(ctx, {n, 1}));
  return ctx.reduce(ntorch::ReduceFn::sum, ctx.castTo(le, i64), {1}, false);
}

/// Whether each index is not padding_idx ([n, 1] i1), or null without padding.
static Value notPadding(NodeContext &ctx, Value idx, int64_t paddingIdx) {
  if (paddingIdx < 0)
    return Value();
  int64_t n = typeOf(idx).getNumElements();
  return ctx.reshape(ctx.binaryScalar(ntorch::BinaryFn::ne, idx, (double)paddingIdx), {n, 1});
}

/// The inputs shared by the embedding bag importers.
struct Bag {
  Value idx, bag; // [n] i64
  int64_t n = 0, bags = 0;
  int64_t mode = 0; // 0 sum, 1 mean, 2 max
};

static Bag bagInputs(NodeContext &ctx, Value indices, Value offsets, int64_t bags, int64_t mode,
                     const std::string &op) {
  Bag b;
  if (!isa<IntegerType>(typeOf(indices).getElementType()) ||
      !isa<IntegerType>(typeOf(offsets).getElementType()))
    throw ImportError(op + "'s indices and offsets must be integer tensors");
  if (typeOf(indices).getRank() != 1)
    throw ImportError(op + "'s indices must be rank 1 (with offsets), got rank " +
                      std::to_string(typeOf(indices).getRank()));
  if (mode < 0 || mode > 2)
    throw ImportError(op + " with mode " + std::to_string(mode) + " (sum 0, mean 1, max 2)");
  b.n = typeOf(indices).getNumElements();
  b.bags = bags;
  b.mode = mode;
  b.idx = ctx.reshape(ctx.castTo(indices, ctx.b.getI64Type()), {b.n});
  b.bag = bagOfIndex(ctx, offsets, b.n, bags);
  return b;
}

/// _embedding_bag / _embedding_bag_forward_only(weight, indices, offsets,
/// scale_grad_by_freq, mode, sparse, per_sample_weights, include_last_offset, padding_idx)
/// -> (output, offset2bag, bag_size, max_indices): rows gathered, then scatter-added
/// (sum, mean) or scatter-maxed (max) into their bags by indirect DMA. max_indices is the
/// lowest weight row holding a bag's maximum (eager keeps the first in index order; they
/// differ only where two rows tie), 0 for an empty bag as in eager. bag_size counts the
/// indices of each bag (zeros in sum mode, as eager's).
Values embeddingBag(NodeContext &ctx) {
  Value weight = ctx.tensor(0);
  ctx.requireRank(weight, 2, "embedding_bag's weight");
  auto wt = typeOf(weight);
  // bf16/f16 tables gather, scale and accumulate in fp32 and round once, as eager does.
  Type storage = wt.getElementType(), i64 = ctx.b.getI64Type();
  Type et = isa<FloatType>(storage) ? Type(ctx.b.getF32Type()) : storage;
  int64_t width = wt.getDimSize(1), mode = ctx.integer(4, "mode", 0);
  int64_t bags = ctx.resultType(0).getDimSize(0);
  Bag b = bagInputs(ctx, ctx.tensor(1), ctx.tensor(2), bags, mode, "embedding_bag");
  bool hasWeights = ctx.isTensorArg(6);
  if (hasWeights && mode != 0)
    throw ImportError("embedding_bag's per_sample_weights need mode='sum'");
  int64_t paddingIdx = ctx.hasArg(8, "padding_idx") ? ctx.integer(8, "padding_idx", -1) : -1;
  int64_t n = b.n;
  Value valid = notPadding(ctx, b.idx, paddingIdx);
  Value rows = ctx.castTo(ctx.b.create<nt::GatherRowsOp>(
                             ctx.loc, RankedTensorType::get({n, width}, storage), weight, b.idx),
                         et);
  if (hasWeights)
    rows = ctx.binary(ntorch::BinaryFn::mul, rows,
                      ctx.reshape(ctx.castTo(ctx.tensor(6), et), {n, 1}));
  auto outType = RankedTensorType::get({bags, width}, et);
  Value ones = valid ? ctx.castTo(valid, et) : ctx.splat(RankedTensorType::get({n, 1}, et), 1.0);
  Value count = scatterRows(ctx, ctx.splat(RankedTensorType::get({bags, 1}, et), 0.0), b.bag,
                            ones, AluOp::add);
  Value nonEmpty = ctx.binaryScalar(ntorch::BinaryFn::gt, count, 0.0);
  Value out, maxIndices;
  double inf = std::numeric_limits<double>::infinity();
  if (mode == 2) {
    Value candidates = valid ? ctx.b.create<nt::SelectOp>(
                                   ctx.loc, typeOf(rows), valid, rows,
                                   ctx.splat(RankedTensorType::get({n, width}, et), -inf))
                             : rows;
    out = scatterRows(ctx, ctx.splat(outType, -inf), b.bag, candidates, AluOp::max);
    out = ctx.b.create<nt::SelectOp>(ctx.loc, outType, nonEmpty, out, ctx.splat(outType, 0.0));
    Value best = ctx.b.create<nt::GatherRowsOp>(ctx.loc, typeOf(rows), out, b.bag);
    Value hit = ctx.binary(ntorch::BinaryFn::eq, candidates, best);
    double none = (double)wt.getDimSize(0);
    auto it = RankedTensorType::get({n, width}, i64);
    Value rowIds = ctx.b.create<nt::BroadcastOp>(ctx.loc, it, ctx.reshape(b.idx, {n, 1}));
    Value picked = ctx.b.create<nt::SelectOp>(ctx.loc, it, hit, rowIds, ctx.splat(it, none));
    auto mt = RankedTensorType::get({bags, width}, i64);
    Value lowest = scatterRows(ctx, ctx.splat(mt, none), b.bag, picked, AluOp::min);
    Value found = ctx.binary(ntorch::BinaryFn::lt, lowest, ctx.scalar(i64, none));
    maxIndices = ctx.b.create<nt::SelectOp>(ctx.loc, mt, found, lowest, ctx.splat(mt, 0.0));
  } else {
    Value summed = valid ? ctx.b.create<nt::SelectOp>(
                               ctx.loc, typeOf(rows), valid, rows,
                               ctx.splat(RankedTensorType::get({n, width}, et), 0.0))
                         : rows;
    out = scatterRows(ctx, ctx.splat(outType, 0.0), b.bag, summed, AluOp::add);
    if (mode == 1)
      out = ctx.binary(ntorch::BinaryFn::div, out,
                       ctx.binary(ntorch::BinaryFn::max, count, ctx.scalar(et, 1.0)));
  }
  Values results = {ctx.castTo(out, storage)};
  // offset2bag, bag_size, max_indices in the shapes the graph gives them (the
  // backward importer reads them as produced here).
  auto like = [&](size_t i, Value v) {
    RankedTensorType rt = ctx.resultType(i);
    if (v && typeOf(v).getNumElements() == rt.getNumElements())
      return ctx.reshape(ctx.castTo(v, rt.getElementType()), rt.getShape());
    return ctx.splat(rt, 0.0);
  };
  results.push_back(like(1, b.bag));
  results.push_back(like(2, mode == 0 ? Value() : ctx.reshape(count, {bags})));
  results.push_back(like(3, maxIndices));
  return results;
}

/// The dense gradient of an embedding bag's weight: the bags' gradient rows gathered per
/// index (scaled for mean and by per_sample_weights) and scatter-added into the weight's
/// rows; for max, each element's gradient added at the row of its maximum (none for an
/// empty bag, whose bag_size is 0). Arguments
/// from position `first` on: offset2bag, bag_size, maximum_indices, num_weights,
/// scale_grad_by_freq, mode, [sparse if `hasSparse`], per_sample_weights, padding_idx.
/// The bag of each index: offset2bag as the forward produced it, or from the offsets where
/// it is empty (eager's sum mode returns none; `offsetsArg` < 0: no offsets to use).
static Value offset2bag(NodeContext &ctx, size_t arg, int offsetsArg, int64_t n, int64_t bags) {
  Value given = ctx.tensor(arg);
  if (typeOf(given).getNumElements() == n)
    return ctx.reshape(ctx.castTo(given, ctx.b.getI64Type()), {n});
  if (offsetsArg < 0)
    throw ImportError("embedding_bag backward needs offset2bag of one bag per index, got " +
                      std::to_string(typeOf(given).getNumElements()) + " for " +
                      std::to_string(n) + " indices");
  return bagOfIndex(ctx, ctx.tensor(offsetsArg), n, bags);
}

static Value bagBackward(NodeContext &ctx, size_t first, bool hasSparse) {
  Value grad = ctx.tensor(0), indices = ctx.tensor(1);
  ctx.requireRank(grad, 2, "embedding_bag backward's grad");
  auto gt = typeOf(grad);
  Type et = gt.getElementType(), i64 = ctx.b.getI64Type();
  int64_t bags = gt.getDimSize(0), width = gt.getDimSize(1);
  int64_t numWeights = ctx.integer(first + 3, "num_weights", 0);
  int64_t mode = ctx.integer(first + 5, "mode", 0);
  if (ctx.integer(first + 4, "scale_grad_by_freq", 0))
    throw ImportError("embedding_bag backward with scale_grad_by_freq=True is not supported");
  size_t next = first + 6;
  if (hasSparse && ctx.integer(next++, "sparse", 0))
    throw ImportError("embedding_bag backward with sparse=True is not supported");
  size_t pswArg = next, padArg = next + 1;
  int64_t paddingIdx =
      ctx.hasArg(padArg, "padding_idx") ? ctx.integer(padArg, "padding_idx", -1) : -1;
  int64_t n = typeOf(indices).getNumElements();
  auto resultType = RankedTensorType::get({numWeights, width}, et);
  if (mode == 2) {
    Value maxIndices = ctx.tensor(first + 2);
    if (typeOf(maxIndices).getNumElements() != bags * width)
      throw ImportError("embedding_bag backward (max) needs max_indices of [bags, width]");
    Value mi = ctx.reshape(ctx.castTo(maxIndices, i64), {bags, width});
    int64_t cells = numWeights * width;
    Value lin = ctx.binary(ntorch::BinaryFn::add,
                           ctx.binaryScalar(ntorch::BinaryFn::mul, mi, (double)width),
                           iota(ctx, {1, width}));
    Value none = ctx.splat(typeOf(lin), (double)cells); // an empty bag: a spare row
    Value sizes = ctx.reshape(ctx.castTo(ctx.tensor(first + 1), i64), {bags, 1});
    Value valid = ctx.binary(ntorch::BinaryFn::And,
                             ctx.binaryScalar(ntorch::BinaryFn::gt, sizes, 0.0),
                             ctx.binaryScalar(ntorch::BinaryFn::ge, mi, 0.0));
    lin = ctx.b.create<nt::SelectOp>(ctx.loc, typeOf(lin), valid, lin, none);
    Value table = ctx.splat(RankedTensorType::get({cells + 1, 1}, et), 0.0);
    Value sums = scatterRows(ctx, table, ctx.reshape(lin, {bags * width}),
                             ctx.reshape(grad, {bags * width, 1}), AluOp::add);
    Value kept = ctx.b.create<nt::SliceOp>(ctx.loc, RankedTensorType::get({cells, 1}, et), sums,
                                           SmallVector<int64_t>{0, 0},
                                           SmallVector<int64_t>{1, 1});
    return ctx.reshape(kept, {numWeights, width});
  }
  Value idx = ctx.reshape(ctx.castTo(indices, i64), {n});
  Value bag = offset2bag(ctx, first, hasSparse ? 2 : -1, n, bags);
  Value rows = ctx.b.create<nt::GatherRowsOp>(ctx.loc, RankedTensorType::get({n, width}, et),
                                              grad, bag);
  if (mode == 1) {
    Value sizes = ctx.reshape(ctx.castTo(ctx.tensor(first + 1), et), {bags, 1});
    Value size = ctx.b.create<nt::GatherRowsOp>(ctx.loc, RankedTensorType::get({n, 1}, et),
                                                sizes, bag);
    rows = ctx.binary(ntorch::BinaryFn::div, rows,
                      ctx.binary(ntorch::BinaryFn::max, size, ctx.scalar(et, 1.0)));
  }
  if (ctx.isTensorArg(pswArg))
    rows = ctx.binary(ntorch::BinaryFn::mul, rows,
                      ctx.reshape(ctx.castTo(ctx.tensor(pswArg), et), {n, 1}));
  if (Value valid = notPadding(ctx, idx, paddingIdx))
    rows = ctx.b.create<nt::SelectOp>(ctx.loc, typeOf(rows), valid, rows,
                                      ctx.splat(typeOf(rows), 0.0));
  return scatterRows(ctx, ctx.splat(resultType, 0.0), idx, rows, AluOp::add);
}

/// _embedding_bag_dense_backward(grad, indices, offset2bag, bag_size, maximum_indices,
/// num_weights, scale_grad_by_freq, mode, per_sample_weights, padding_idx).
Values embeddingBagDenseBackward(NodeContext &ctx) { return {bagBackward(ctx, 2, false)}; }

/// _embedding_bag_backward(grad, indices, offsets, offset2bag, bag_size, maximum_indices,
/// num_weights, scale_grad_by_freq, mode, sparse, per_sample_weights, padding_idx).
Values embeddingBagBackward(NodeContext &ctx) { return {bagBackward(ctx, 3, true)}; }

/// _embedding_bag_per_sample_weights_backward(grad, weight, indices, offsets, offset2bag,
/// mode, padding_idx): per index, the dot product of its bag's gradient and its weight row.
Values embeddingBagPerSampleWeightsBackward(NodeContext &ctx) {
  Value grad = ctx.tensor(0), weight = ctx.tensor(1), indices = ctx.tensor(2);
  ctx.requireRank(grad, 2, "embedding_bag backward's grad");
  ctx.requireRank(weight, 2, "embedding_bag's weight");
  if (ctx.integer(5, "mode", 0) != 0)
    throw ImportError("embedding_bag's per_sample_weights need mode='sum'");
  Type et = typeOf(grad).getElementType(), i64 = ctx.b.getI64Type();
  int64_t n = typeOf(indices).getNumElements(), width = typeOf(grad).getDimSize(1);
  Value idx = ctx.reshape(ctx.castTo(indices, i64), {n});
  Value bag = offset2bag(ctx, 4, 3, n, typeOf(grad).getDimSize(0));
  auto rowsType = RankedTensorType::get({n, width}, et);
  Value g = ctx.b.create<nt::GatherRowsOp>(ctx.loc, rowsType, grad, bag);
  Value w = ctx.b.create<nt::GatherRowsOp>(ctx.loc, rowsType, ctx.castTo(weight, et), idx);
  Value dot = ctx.reduce(ntorch::ReduceFn::sum, ctx.binary(ntorch::BinaryFn::mul, g, w), {1},
                         true);
  int64_t paddingIdx = ctx.hasArg(6, "padding_idx") ? ctx.integer(6, "padding_idx", -1) : -1;
  if (Value valid = notPadding(ctx, idx, paddingIdx))
    dot = ctx.b.create<nt::SelectOp>(ctx.loc, typeOf(dot), valid, dot,
                                     ctx.splat(typeOf(dot), 0.0));
  return {ctx.reshape(dot, ctx.resultType().getShape())};
}

/// masked_scatter(self, mask, source): self where mask is false; where it is true, the
/// source's elements in order: the k-th true position reads source element k (k from an
/// exact integer prefix sum of the mask), through an indirect DMA gather that checks k is
/// inside the source (eager raises when the source is too short).
Values maskedScatter(NodeContext &ctx) {
  Value self = ctx.tensor(0), mask = ctx.tensor(1), source = ctx.tensor(2);
  auto st = typeOf(self);
  Type et = st.getElementType(), i64 = ctx.b.getI64Type();
  int64_t n = st.getNumElements(), sources = typeOf(source).getNumElements();
  if (!typeOf(mask).getElementType().isInteger(1))
    throw ImportError("masked_scatter's mask must be a bool tensor");
  if (n == 0)
    return {self};
  Value m = ctx.reshape(broadcastTo(ctx, mask, st.getShape(), "masked_scatter's mask"), {n});
  Value k = ctx.binaryScalar(ntorch::BinaryFn::sub,
                             integerScan(ctx, ctx.reshape(ctx.castTo(m, i64), {1, n})), 1.0);
  k = ctx.reshape(k, {n});
  auto idxType = RankedTensorType::get({n}, i64);
  // Checked positions: k where the mask is true (k < sources), 0 elsewhere; with no
  // source elements, a true position reads row 1 of a 1-row table: an error.
  Value check = ctx.b.create<nt::SelectOp>(ctx.loc, idxType, m,
                                           sources ? k : ctx.splat(idxType, 1.0),
                                           ctx.splat(idxType, 0.0));
  int64_t rows = std::max<int64_t>(sources, 1);
  check = ctx.binary(ntorch::BinaryFn::add, check,
                     ctx.reshape(boundsCheckedZeros(ctx, check, rows, i64), {n}));
  Value table = sources ? ctx.reshape(ctx.castTo(source, et), {sources, 1})
                        : ctx.splat(RankedTensorType::get({1, 1}, et), 0.0);
  Value picked = ctx.b.create<nt::GatherRowsOp>(ctx.loc, RankedTensorType::get({n, 1}, et),
                                                table, check);
  Value y = ctx.b.create<nt::SelectOp>(ctx.loc, RankedTensorType::get({n}, et), m,
                                       ctx.reshape(picked, {n}), ctx.reshape(self, {n}));
  return {ctx.reshape(y, st.getShape())};
}

/// histc(x, bins, min, max): eager's linear bin selection in x's dtype, bin =
/// trunc((x - min) * bins / (max - min)), the last bin closed; elements outside [min, max]
/// (and NaN) are not counted. min == max takes the data's extremes (then +-1 if equal).
/// The counts are an indirect DMA scatter-add of ones, out-of-range elements into a spare
/// bin that is cut off.
Values histc(NodeContext &ctx) {
  Value x = ctx.tensor(0);
  auto xt = typeOf(x);
  Type et = xt.getElementType();
  if (!isa<FloatType>(et))
    throw ImportError("histc takes a floating-point input");
  int64_t bins = ctx.integer(1, "bins", 100), n = xt.getNumElements();
  if (bins <= 0)
    throw ImportError("histc needs bins > 0, got " + std::to_string(bins));
  double lo = ctx.number(2, "min", 0.0), hi = ctx.number(3, "max", 0.0);
  auto histType = RankedTensorType::get({bins}, et);
  if (!(lo <= hi) || std::isinf(lo) || std::isinf(hi))
    throw ImportError("histc's range [" + std::to_string(lo) + ", " + std::to_string(hi) +
                      "] is not a finite range with min <= max");
  if (n == 0)
    return {ctx.splat(histType, 0.0)};
  Value flat = ctx.reshape(x, {n});
  Value left, right;
  if (lo == hi) { // the data's extremes (data-dependent: on the device)
    left = ctx.reduce(ntorch::ReduceFn::min, flat, {0}, false);
    right = ctx.reduce(ntorch::ReduceFn::max, flat, {0}, false);
    Value same = ctx.binary(ntorch::BinaryFn::eq, left, right);
    left = ctx.b.create<nt::SelectOp>(ctx.loc, typeOf(left), same,
                                      ctx.binaryScalar(ntorch::BinaryFn::sub, left, 1.0), left);
    right = ctx.b.create<nt::SelectOp>(
        ctx.loc, typeOf(right), same, ctx.binaryScalar(ntorch::BinaryFn::add, right, 1.0), right);
  } else {
    left = ctx.scalar(et, lo);
    right = ctx.scalar(et, hi);
  }
  Value inside = ctx.binary(ntorch::BinaryFn::And, ctx.binary(ntorch::BinaryFn::ge, flat, left),
                            ctx.binary(ntorch::BinaryFn::le, flat, right));
  // Each step rounded to x's dtype, as eager's arithmetic in it (a bf16 step is computed in
  // fp32 and rounded: explicit casts, since fused steps keep fp32 in between).
  Type f32 = ctx.b.getF32Type();
  auto rounded = [&](Value v) { return et == f32 ? v : ctx.castTo(ctx.castTo(v, et), f32); };
  Value fx = ctx.castTo(flat, f32), fl = ctx.castTo(left, f32), fr = ctx.castTo(right, f32);
  Value scaled = rounded(ctx.binary(
      ntorch::BinaryFn::div,
      rounded(ctx.binaryScalar(ntorch::BinaryFn::mul,
                               rounded(ctx.binary(ntorch::BinaryFn::sub, fx, fl)), (double)bins)),
      rounded(ctx.binary(ntorch::BinaryFn::sub, fr, fl))));
  Type i64 = ctx.b.getI64Type();
  auto idxType = RankedTensorType::get({n}, i64);
  Value bin = ctx.castTo(ctx.b.create<nt::SelectOp>(ctx.loc, typeOf(scaled), inside, scaled,
                                                    ctx.splat(typeOf(scaled), 0.0)),
                         i64);
  bin = ctx.binary(ntorch::BinaryFn::min, bin, ctx.scalar(i64, (double)(bins - 1)));
  bin = ctx.b.create<nt::SelectOp>(ctx.loc, idxType, inside, bin,
                                   ctx.splat(idxType, (double)bins));
  // Counted in fp32 and rounded once (eager counts in x's dtype per thread, then sums the
  // threads' counts: a bf16 bin above 256 depends on its thread count there).
  Value counts = scatterRows(ctx, ctx.splat(RankedTensorType::get({bins + 1, 1}, f32), 0.0), bin,
                             ctx.splat(RankedTensorType::get({n, 1}, f32), 1.0), AluOp::add);
  Value kept = ctx.b.create<nt::SliceOp>(ctx.loc, RankedTensorType::get({bins, 1}, f32), counts,
                                         SmallVector<int64_t>{0, 0}, SmallVector<int64_t>{1, 1});
  return {ctx.castTo(ctx.reshape(kept, {bins}), et)};
}

/// The insertion points of `values` in the sorted last dim of `boundaries`: the count of
/// boundaries b with !(b >= v) (left) or !(b > v) (right), as eager's binary search
/// decides (a NaN value goes past every boundary). Compares on Vector, values x boundaries
/// per row (not a binary search: the cost grows with the boundaries).
static Value insertionPoints(NodeContext &ctx, Value boundaries, Value values, bool right,
                             const std::string &op) {
  auto bt = typeOf(boundaries), vt = typeOf(values);
  RankedTensorType rt = ctx.resultType();
  if (bt.getRank() == 0)
    throw ImportError(op + "'s boundaries must have at least one dim");
  if (bt.getRank() > 1 && (vt.getRank() != bt.getRank() ||
                           vt.getShape().drop_back() != bt.getShape().drop_back()))
    throw ImportError(op + "'s boundaries and values must agree in all dims but the last");
  int64_t b = bt.getShape().back();
  Type ct = bt.getElementType();
  if (isa<FloatType>(vt.getElementType()) && !isa<FloatType>(ct))
    ct = vt.getElementType();
  Value v = ctx.castTo(values, ct), s = ctx.castTo(boundaries, ct);
  SmallVector<int64_t> vShape(vt.getShape()), sShape(bt.getShape());
  vShape.push_back(1);
  if (bt.getRank() > 1)
    sShape.insert(sShape.end() - 1, 1); // [..., 1, B] against [..., M, 1]
  Value before = ctx.binary(right ? ntorch::BinaryFn::gt : ntorch::BinaryFn::ge,
                            ctx.reshape(s, sShape), ctx.reshape(v, vShape));
  Value counted = ctx.castTo(ctx.binaryScalar(ntorch::BinaryFn::eq, before, 0.0),
                             ctx.b.getI64Type());
  Value count = b ? ctx.reduce(ntorch::ReduceFn::sum, counted, {typeOf(counted).getRank() - 1},
                               false)
                  : ctx.splat(RankedTensorType::get(vt.getShape(), ctx.b.getI64Type()), 0.0);
  return ctx.reshape(ctx.castTo(count, rt.getElementType()), rt.getShape());
}

/// searchsorted.Tensor(sorted_sequence, self, out_int32, right, side, sorter).
Values searchsorted(NodeContext &ctx) {
  if (ctx.isTensorArg(5))
    throw ImportError("searchsorted with a sorter is not supported");
  bool right = ctx.integer(3, "right", 0) != 0;
  std::string side = ctx.string(4, "side", "");
  if (!side.empty())
    right = side == "right";
  return {insertionPoints(ctx, ctx.tensor(0), ctx.tensor(1), right, "searchsorted")};
}

/// bucketize.Tensor(self, boundaries, out_int32, right): 1-D boundaries.
Values bucketize(NodeContext &ctx) {
  Value boundaries = ctx.tensor(1);
  if (typeOf(boundaries).getRank() != 1)
    throw ImportError("bucketize's boundaries must be 1-D");
  return {insertionPoints(ctx, boundaries, ctx.tensor(0), ctx.integer(3, "right", 0) != 0,
                          "bucketize")};
}

} // namespace neuron::compiler::aten

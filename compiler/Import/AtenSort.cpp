// Sorting ops (sort, topk, kthvalue, median, nanmedian) as a bitonic sorting network of
// whole-tensor ntorch ops along the sorted dim: O(log^2 n) ops, never one per element.
//
// The sorted dim is moved innermost and flattened to [rows, n], padded to N = 2^m. Every
// element gets a total-order key (v, k): v a NaN-free value that sorts ascending, k an i32
// tie-breaker (its position, shifted by +-N for NaN). Keys are distinct, so the network
// gives the stable order: ties keep input order, NaN is the largest (last ascending, first
// descending), as PyTorch's stable sort. Each compare-exchange stage is: a reshape to
// [rows, M, 2j], the two halves sliced, "B before A" computed, the direction flipped where
// the bitonic block is descending (xor with a constant mask), four selects, two concats.
#include "compiler/Import/AtenImporters.h"

#include <cmath>
#include <limits>

using namespace mlir;
using neuron::ntorch::BinaryFn;
using neuron::ntorch::ReduceFn;
namespace nt = neuron::ntorch;

namespace neuron::compiler::aten {
namespace {

/// The longest padded dim the network is built for: 2^16 elements (136 stages).
constexpr int64_t kMaxSortLength = int64_t(1) << 16;

RankedTensorType typeOf(Value v) { return cast<RankedTensorType>(v.getType()); }

SmallVector<int64_t> broadcastShape(ArrayRef<Value> values) {
  int64_t rank = 0;
  for (Value v : values)
    rank = std::max(rank, typeOf(v).getRank());
  SmallVector<int64_t> shape(rank, 1);
  for (Value v : values) {
    auto t = typeOf(v);
    for (int64_t i = 0; i < t.getRank(); ++i) {
      int64_t &s = shape[rank - t.getRank() + i];
      s = s == 1 ? t.getDimSize(i) : s;
    }
  }
  return shape;
}

Value select(NodeContext &ctx, Value cond, Value a, Value b) {
  auto type = RankedTensorType::get(broadcastShape({cond, a, b}), typeOf(a).getElementType());
  return ctx.b.create<nt::SelectOp>(ctx.loc, type, cond, a, b);
}

Value sliceLast(NodeContext &ctx, Value x, int64_t offset, int64_t size) {
  auto t = typeOf(x);
  SmallVector<int64_t> shape(t.getShape()), offsets(t.getRank(), 0), strides(t.getRank(), 1);
  shape.back() = size;
  offsets.back() = offset;
  return ctx.b.create<nt::SliceOp>(ctx.loc, RankedTensorType::get(shape, t.getElementType()), x,
                                   offsets, strides);
}

Value concatLast(NodeContext &ctx, Value a, Value b) {
  auto ta = typeOf(a);
  SmallVector<int64_t> shape(ta.getShape());
  shape.back() += typeOf(b).getShape().back();
  return ctx.b.create<nt::ConcatOp>(ctx.loc, RankedTensorType::get(shape, ta.getElementType()),
                                    ValueRange{a, b}, ta.getRank() - 1);
}

Value intConstant(NodeContext &ctx, ArrayRef<int64_t> shape, Type et,
                  llvm::function_ref<APInt(int64_t)> at) {
  auto type = RankedTensorType::get(shape, et);
  int64_t n = type.getNumElements();
  SmallVector<APInt> values;
  for (int64_t i = 0; i < n; ++i)
    values.push_back(at(i));
  return ctx.b.create<nt::ConstantOp>(ctx.loc, type,
                                      cast<ElementsAttr>(DenseElementsAttr::get(type, values)));
}

/// Positions 0..n-1 (plus `shift`) as an i32 [n].
Value positions(NodeContext &ctx, int64_t n, int64_t shift) {
  return intConstant(ctx, {n}, ctx.b.getI32Type(),
                     [&](int64_t i) { return APInt(32, i + shift, true); });
}

/// The op's dim (moved innermost) and the permutation there and back.
struct Moved {
  Value x;                          // [outer..., n]
  SmallVector<int64_t> perm, back;  // to and from the moved layout
};

Moved moveInnermost(NodeContext &ctx, Value x, int64_t d) {
  int64_t rank = typeOf(x).getRank();
  Moved m;
  for (int64_t i = 0; i < rank; ++i)
    if (i != d)
      m.perm.push_back(i);
  m.perm.push_back(d);
  m.back.resize(rank);
  for (int64_t i = 0; i < rank; ++i)
    m.back[m.perm[i]] = i;
  m.x = d == rank - 1 ? x : ctx.permute(x, m.perm);
  return m;
}

Value moveBack(NodeContext &ctx, const Moved &m, Value y) {
  return m.perm.back() == int64_t(m.perm.size()) - 1 ? y : ctx.permute(y, m.back);
}

struct SortedRows {
  Value values;  // [rows, n], the input's element type
  Value indices; // [rows, n] i64
};

/// One compare-exchange stage of the bitonic network on keys (v, k) of [rows, N]: pairs at
/// distance j in blocks of `size` (ascending where position & size == 0).
void stage(NodeContext &ctx, Value &v, Value &k, int64_t size, int64_t j) {
  auto t = typeOf(v);
  int64_t rows = t.getDimSize(0), n = t.getDimSize(1), m = n / (2 * j);
  Value v3 = ctx.reshape(v, {rows, m, 2 * j}), k3 = ctx.reshape(k, {rows, m, 2 * j});
  Value va = sliceLast(ctx, v3, 0, j), vb = sliceLast(ctx, v3, j, j);
  Value ka = sliceLast(ctx, k3, 0, j), kb = sliceLast(ctx, k3, j, j);
  // B before A in ascending order of (v, k).
  Value less = ctx.binary(BinaryFn::lt, vb, va);
  Value tie = ctx.binary(BinaryFn::eq, vb, va);
  Value before = ctx.binary(BinaryFn::lt, kb, ka);
  Value swap = ctx.binary(BinaryFn::Or, less, ctx.binary(BinaryFn::And, tie, before));
  if (size < n) { // descending blocks: exchange where A is before B (keys are distinct)
    Value descending = intConstant(ctx, {m, j}, ctx.b.getI1Type(), [&](int64_t i) {
      int64_t position = (i / j) * 2 * j + i % j;
      return APInt(1, (position & size) != 0);
    });
    swap = ctx.binary(BinaryFn::ne, swap, descending);
  }
  Value va2 = select(ctx, swap, vb, va), vb2 = select(ctx, swap, va, vb);
  Value ka2 = select(ctx, swap, kb, ka), kb2 = select(ctx, swap, ka, kb);
  v = ctx.reshape(concatLast(ctx, va2, vb2), {rows, n});
  k = ctx.reshape(concatLast(ctx, ka2, kb2), {rows, n});
}

/// The first `keep` keys (a power of two below N) of each row of (v, k) [rows, N], ascending:
/// blocks of `keep` sorted (alternately ascending and descending), then rounds that halve the
/// data: a half-cleaner keeps the smaller of each pair across two neighbouring blocks (the
/// `keep` smallest of both, bitonic) and a bitonic merge sorts them again.
void firstKeys(NodeContext &ctx, Value &v, Value &k, int64_t keep) {
  int64_t rows = typeOf(v).getDimSize(0);
  for (int64_t size = 2; size <= keep; size *= 2)
    for (int64_t j = size / 2; j >= 1; j /= 2)
      stage(ctx, v, k, size, j);
  for (int64_t length = typeOf(v).getDimSize(1); length > keep; length /= 2) {
    int64_t m = length / (2 * keep);
    Value v3 = ctx.reshape(v, {rows, m, 2 * keep}), k3 = ctx.reshape(k, {rows, m, 2 * keep});
    Value va = sliceLast(ctx, v3, 0, keep), vb = sliceLast(ctx, v3, keep, keep);
    Value ka = sliceLast(ctx, k3, 0, keep), kb = sliceLast(ctx, k3, keep, keep);
    Value less = ctx.binary(BinaryFn::lt, vb, va);
    Value tie = ctx.binary(BinaryFn::eq, vb, va);
    Value before = ctx.binary(BinaryFn::lt, kb, ka);
    Value swap = ctx.binary(BinaryFn::Or, less, ctx.binary(BinaryFn::And, tie, before));
    v = ctx.reshape(select(ctx, swap, vb, va), {rows, length / 2});
    k = ctx.reshape(select(ctx, swap, kb, ka), {rows, length / 2});
    for (int64_t j = keep / 2; j >= 1; j /= 2)
      stage(ctx, v, k, keep, j);
  }
}

/// Sorts each row of x [rows, n] (stable, NaN largest); only the first `keep` of each row
/// when keep < n (a partial network: topk, kthvalue).
SortedRows sortRows(NodeContext &ctx, Value x, bool descending, const std::string &op,
                    int64_t keep) {
  auto t = typeOf(x);
  int64_t rows = t.getDimSize(0), n = t.getDimSize(1);
  Type et = t.getElementType();
  auto i64 = ctx.b.getI64Type(), i32 = ctx.b.getI32Type();
  if (n <= 1)
    return {x, ctx.splat(RankedTensorType::get({rows, n}, i64), 0)};
  int64_t padded = 1;
  while (padded < n)
    padded *= 2;
  if (padded > kMaxSortLength)
    throw ImportError(op + " along a dim of " + std::to_string(n) +
                      " elements: the sorting network would pad it to " + std::to_string(padded) +
                      ", more than the " + std::to_string(kMaxSortLength) + " it is built for");
  bool isFloat = isa<FloatType>(et);
  auto rowsType = [&](int64_t cols, Type type) {
    return RankedTensorType::get({rows, cols}, type);
  };
  Value v, k;
  if (isFloat) {
    // Pads sort last: NaN ascending (beside real NaNs, after them by position), -inf
    // descending (after real -inf by position).
    double fill = descending ? -std::numeric_limits<double>::infinity()
                             : std::numeric_limits<double>::quiet_NaN();
    Value xp = padded > n ? concatLast(ctx, x, ctx.splat(rowsType(padded - n, et), fill)) : x;
    Value nan = ctx.binary(BinaryFn::ne, xp, xp);
    Value base = descending ? ctx.binary(BinaryFn::mul, xp, ctx.scalar(et, -1.0)) : xp;
    // NaN: the largest key ascending; the smallest descending (before x = +inf by k < 0).
    double inf = std::numeric_limits<double>::infinity();
    v = select(ctx, nan, ctx.scalar(et, descending ? -inf : inf), base);
    Value plain = positions(ctx, padded, 0);
    Value shifted = positions(ctx, padded, descending ? -padded : padded);
    k = select(ctx, nan, shifted, plain);
  } else {
    // Integers compare exactly in i64 (int64) or i32 (narrower, bool); descending sorts
    // ~x = -1 - x ascending (no overflow). Pads are the largest key, after ties by position.
    Type kt = et.getIntOrFloatBitWidth() == 64 ? i64 : i32;
    Value xi = ctx.castTo(x, kt);
    if (descending)
      xi = ctx.binary(BinaryFn::sub, ctx.scalar(kt, -1.0), xi);
    unsigned width = kt.getIntOrFloatBitWidth();
    if (padded > n) {
      auto padType = rowsType(padded - n, kt);
      auto largest = DenseElementsAttr::get(padType, APInt::getSignedMaxValue(width)); // splat
      xi = concatLast(ctx, xi, ctx.b.create<nt::ConstantOp>(ctx.loc, padType,
                                                            cast<ElementsAttr>(largest)));
    }
    v = xi;
    k = ctx.b.create<nt::BroadcastOp>(ctx.loc, rowsType(padded, i32), positions(ctx, padded, 0));
  }
  int64_t kept = 1;
  while (kept < keep)
    kept *= 2;
  if (keep > 0 && kept < padded) {
    firstKeys(ctx, v, k, kept);
  } else {
    keep = n;
    for (int64_t size = 2; size <= padded; size *= 2)
      for (int64_t j = size / 2; j >= 1; j /= 2)
        stage(ctx, v, k, size, j);
  }
  if (typeOf(v).getDimSize(1) > keep) {
    v = sliceLast(ctx, v, 0, keep);
    k = sliceLast(ctx, k, 0, keep);
  }
  if (isFloat) {
    Value below = ctx.binary(BinaryFn::lt, k, ctx.scalar(i32, 0));
    Value above = ctx.binary(BinaryFn::ge, k, ctx.scalar(i32, (double)padded));
    Value nan = ctx.binary(BinaryFn::Or, below, above);
    Value values = descending ? ctx.binary(BinaryFn::mul, v, ctx.scalar(et, -1.0)) : v;
    values = select(ctx, nan, ctx.scalar(et, std::numeric_limits<double>::quiet_NaN()), values);
    Value shift = ctx.scalar(i32, descending ? -(double)padded : (double)padded);
    Value idx = select(ctx, nan, ctx.binary(BinaryFn::sub, k, shift), k);
    return {values, ctx.castTo(idx, i64)};
  }
  Type kt = typeOf(v).getElementType();
  Value values = descending ? ctx.binary(BinaryFn::sub, ctx.scalar(kt, -1.0), v) : v;
  if (et.isInteger(1))
    values = ctx.binary(BinaryFn::ne, values, ctx.scalar(kt, 0.0));
  return {ctx.castTo(values, et), ctx.castTo(k, i64)};
}

/// The sort of x along d, in the moved layout [outer..., n].
struct SortedDim {
  Moved moved;
  Value values, indices; // [outer..., n]
};

SortedDim sortDim(NodeContext &ctx, Value x, int64_t d, bool descending, const std::string &op,
                  int64_t keep = -1) {
  SortedDim s;
  s.moved = moveInnermost(ctx, x, d);
  auto mt = typeOf(s.moved.x);
  int64_t n = mt.getShape().back(), rows = mt.getNumElements() / std::max<int64_t>(n, 1);
  SortedRows r = sortRows(ctx, ctx.reshape(s.moved.x, {rows, n}), descending, op,
                          keep < 0 ? n : keep);
  SmallVector<int64_t> shape(mt.getShape());
  shape.back() = typeOf(r.values).getDimSize(1);
  s.values = ctx.reshape(r.values, shape);
  s.indices = ctx.reshape(r.indices, shape);
  return s;
}

Value atLeast1d(NodeContext &ctx, Value x) {
  return typeOf(x).getRank() == 0 ? ctx.reshape(x, {1}) : x;
}

/// Values and indices of the sorted positions [offset, offset + size), moved back to the
/// op's layout and shaped as its results (keepdim or not).
Values window(NodeContext &ctx, const SortedDim &s, int64_t offset, int64_t size) {
  Values out;
  Value parts[2] = {s.values, s.indices};
  for (int i = 0; i < 2; ++i) {
    if (!ctx.hasResult(i)) {
      out.push_back(Value());
      continue;
    }
    bool whole = offset == 0 && size == typeOf(parts[i]).getShape().back();
    Value y = moveBack(ctx, s.moved, whole ? parts[i] : sliceLast(ctx, parts[i], offset, size));
    out.push_back(ctx.reshape(y, ctx.resultType(i).getShape()));
  }
  return out;
}

Values sortWith(NodeContext &ctx, int64_t dim, bool descending, const std::string &op) {
  Value x = atLeast1d(ctx, ctx.tensor(0));
  SortedDim s = sortDim(ctx, x, ctx.dim(dim, typeOf(x).getRank()), descending, op);
  return window(ctx, s, 0, typeOf(s.values).getShape().back());
}

/// The lower median (position (n-1)/2 ascending) along the last dim of s; NaN and the first
/// NaN's position where a row has one (eager's median propagates NaN).
Values medianOf(NodeContext &ctx, const SortedDim &s, bool withIndices) {
  int64_t n = typeOf(s.values).getShape().back();
  if (n == 0)
    throw ImportError("median of an empty dim");
  Value v = sliceLast(ctx, s.values, (n - 1) / 2, 1);
  Value i = sliceLast(ctx, s.indices, (n - 1) / 2, 1);
  Type et = typeOf(v).getElementType();
  if (isa<FloatType>(et)) {
    Value last = sliceLast(ctx, s.values, n - 1, 1); // NaN sorts last
    Value hasNan = ctx.binary(BinaryFn::ne, last, last);
    v = select(ctx, hasNan, ctx.scalar(et, std::numeric_limits<double>::quiet_NaN()), v);
    if (!withIndices)
      return {v, Value()};
    Value nan = ctx.binary(BinaryFn::ne, s.values, s.values);
    Value firstNan = ctx.reduce(
        ReduceFn::min, select(ctx, nan, s.indices, ctx.scalar(ctx.b.getI64Type(), (double)n)),
        {-1}, true);
    i = select(ctx, hasNan, firstNan, i);
  }
  return {v, i};
}

/// The median of the non-NaN values: position (count - 1) / 2 of the ascending sort (NaN
/// sorts last), picked by a one-hot compare; NaN (index 0) where a row is all NaN.
Values nanMedianOf(NodeContext &ctx, const SortedDim &s, bool withIndices) {
  Type et = typeOf(s.values).getElementType();
  if (!isa<FloatType>(et))
    return medianOf(ctx, s, withIndices);
  int64_t n = typeOf(s.values).getShape().back();
  auto i32 = ctx.b.getI32Type();
  Value count = ctx.reduce(ReduceFn::sum,
                           ctx.castTo(ctx.binary(BinaryFn::eq, s.values, s.values), i32), {-1},
                           true);
  // position p is the median iff 2p + 1 == count or 2p + 2 == count
  Value odd = intConstant(ctx, {n}, i32, [](int64_t p) { return APInt(32, 2 * p + 1); });
  Value even = intConstant(ctx, {n}, i32, [](int64_t p) { return APInt(32, 2 * p + 2); });
  Value hitOdd = ctx.binary(BinaryFn::eq, odd, count);
  Value hitEven = ctx.binary(BinaryFn::eq, even, count);
  Value hit = ctx.binary(BinaryFn::Or, hitOdd, hitEven);
  double inf = std::numeric_limits<double>::infinity();
  Value v = ctx.reduce(ReduceFn::max, select(ctx, hit, s.values, ctx.scalar(et, -inf)), {-1},
                       true);
  Value none = ctx.binary(BinaryFn::eq, count, ctx.scalar(i32, 0.0));
  v = select(ctx, none, ctx.scalar(et, std::numeric_limits<double>::quiet_NaN()), v);
  if (!withIndices)
    return {v, Value()};
  Value i = ctx.reduce(ReduceFn::max,
                       select(ctx, hit, s.indices, ctx.scalar(ctx.b.getI64Type(), 0.0)), {-1},
                       true);
  return {v, i};
}

/// A median over all elements: a single row.
template <bool IgnoreNan> Values medianAll(NodeContext &ctx, const std::string &op) {
  Value x = ctx.tensor(0);
  Value flat = ctx.reshape(x, {typeOf(x).getNumElements()});
  SortedDim s = sortDim(ctx, flat, 0, false, op);
  Values r = IgnoreNan ? nanMedianOf(ctx, s, false) : medianOf(ctx, s, false);
  return {ctx.reshape(r[0], ctx.resultType(0).getShape())};
}

template <bool IgnoreNan> Values medianAlong(NodeContext &ctx, const std::string &op) {
  Value x = atLeast1d(ctx, ctx.tensor(0));
  int64_t d = ctx.dim(ctx.integer(1, "dim", 0), typeOf(x).getRank());
  SortedDim s = sortDim(ctx, x, d, false, op);
  Values r = IgnoreNan ? nanMedianOf(ctx, s, ctx.hasResult(1)) : medianOf(ctx, s, ctx.hasResult(1));
  Values out;
  for (int i = 0; i < 2; ++i)
    out.push_back(ctx.hasResult(i) ? ctx.reshape(moveBack(ctx, s.moved, r[i]),
                                                  ctx.resultType(i).getShape())
                                   : Value());
  return out;
}

/// The run starts of the sorted rows [rows, n]: the position itself where it differs from
/// its left neighbour (NaN equals NaN), a prefix max of them (log-step scan), so that the
/// count of a run so far is position - start + 1.
Value runCounts(NodeContext &ctx, Value sorted, Value iota) {
  auto t = typeOf(sorted);
  int64_t rows = t.getDimSize(0), n = t.getDimSize(1);
  auto i32 = ctx.b.getI32Type();
  Value right = sliceLast(ctx, sorted, 1, n - 1), left = sliceLast(ctx, sorted, 0, n - 1);
  Value same = ctx.binary(BinaryFn::eq, right, left);
  if (isa<FloatType>(t.getElementType())) {
    Value rightNan = ctx.binary(BinaryFn::ne, right, right);
    Value leftNan = ctx.binary(BinaryFn::ne, left, left);
    same = ctx.binary(BinaryFn::Or, same, ctx.binary(BinaryFn::And, rightNan, leftNan));
  }
  Value tail = select(ctx, same, ctx.scalar(i32, 0.0), sliceLast(ctx, iota, 1, n - 1));
  auto rowType = RankedTensorType::get({rows, n}, i32);
  Value start = ctx.b.create<nt::PadOp>(ctx.loc, rowType, tail, ArrayRef<int64_t>{0, 1},
                                        ArrayRef<int64_t>{0, 0}, APFloat(0.0));
  for (int64_t s = 1; s < n; s *= 2) {
    Value shifted = ctx.b.create<nt::PadOp>(ctx.loc, rowType, sliceLast(ctx, start, 0, n - s),
                                            ArrayRef<int64_t>{0, s}, ArrayRef<int64_t>{0, 0},
                                            APFloat(0.0));
    start = ctx.binary(BinaryFn::max, start, shifted);
  }
  Value sinceStart = ctx.binary(BinaryFn::sub, iota, start);
  return ctx.binary(BinaryFn::add, sinceStart, ctx.scalar(i32, 1.0));
}

} // namespace

/// mode(x, dim=-1, keepdim=False): the most frequent value (the smallest of equally frequent
/// ones) and its last position, from the ascending sort: run lengths by a prefix-max scan of
/// run starts, the first position with the longest run (its end), picked by one-hot selects.
Values mode(NodeContext &ctx) {
  Value x = atLeast1d(ctx, ctx.tensor(0));
  int64_t d = ctx.dim(ctx.integer(1, "dim", -1), typeOf(x).getRank());
  SortedDim s = sortDim(ctx, x, d, false, "mode");
  auto mt = typeOf(s.values);
  int64_t n = mt.getShape().back(), rows = mt.getNumElements() / std::max<int64_t>(n, 1);
  if (n == 0)
    throw ImportError("mode of an empty dim");
  auto i32 = ctx.b.getI32Type(), i64 = ctx.b.getI64Type();
  Type et = mt.getElementType();
  Value sv = ctx.reshape(s.values, {rows, n}), si = ctx.reshape(s.indices, {rows, n});
  Value iota = ctx.b.create<nt::BroadcastOp>(ctx.loc, RankedTensorType::get({rows, n}, i32),
                                             positions(ctx, n, 0));
  Value count =
      n > 1 ? runCounts(ctx, sv, iota) : ctx.splat(RankedTensorType::get({rows, n}, i32), 1);
  Value best = ctx.reduce(ReduceFn::max, count, {1}, true);
  Value longest = ctx.binary(BinaryFn::eq, count, best);
  Value at = ctx.reduce(ReduceFn::min, select(ctx, longest, iota, ctx.scalar(i32, (double)n)),
                        {1}, true);
  Value hit = ctx.binary(BinaryFn::eq, iota, at);
  // Picked by a max over one hit: floats among -inf (NaN and -0.0 kept), integers as int64.
  Value value;
  if (isa<FloatType>(et)) {
    Value lowest = ctx.scalar(et, -std::numeric_limits<double>::infinity());
    value = ctx.reduce(ReduceFn::max, select(ctx, hit, sv, lowest), {1}, true);
  } else {
    Value wide = select(ctx, hit, ctx.castTo(sv, i64), ctx.scalar(i64, -0x1p63));
    value = ctx.castTo(ctx.reduce(ReduceFn::max, wide, {1}, true), et);
  }
  Value index = ctx.reduce(ReduceFn::max, select(ctx, hit, si, ctx.scalar(i64, -1.0)), {1}, true);
  SmallVector<int64_t> kept(mt.getShape());
  kept.back() = 1;
  Values out;
  Value parts[2] = {value, index};
  for (int i = 0; i < 2; ++i) {
    Value y = moveBack(ctx, s.moved, ctx.reshape(parts[i], kept));
    out.push_back(ctx.hasResult(i) ? ctx.reshape(y, ctx.resultType(i).getShape()) : Value());
  }
  return out;
}

/// sort(x, dim=-1, descending=False) -> (values, indices).
Values sort(NodeContext &ctx) {
  return sortWith(ctx, ctx.integer(1, "dim", -1), ctx.integer(2, "descending", 0), "sort");
}

/// sort.stable(x, *, stable, dim=-1, descending=False): every sort here is stable.
Values sortStable(NodeContext &ctx) {
  return sortWith(ctx, ctx.integer(2, "dim", -1), ctx.integer(3, "descending", 0), "sort");
}

/// topk(x, k, dim=-1, largest=True, sorted=True): the first k of a partial network (blocks of
/// K = 2^ceil(log2 k) sorted, then log2(N/K) rounds of half-cleaner + merge on halving data);
/// sorted=False gives them sorted too.
Values topk(NodeContext &ctx) {
  Value x = atLeast1d(ctx, ctx.tensor(0));
  int64_t k = ctx.integer(1, "k", -1);
  int64_t d = ctx.dim(ctx.integer(2, "dim", -1), typeOf(x).getRank());
  bool largest = ctx.integer(3, "largest", 1);
  int64_t n = typeOf(x).getDimSize(d);
  if (k < 0 || k > n)
    throw ImportError("topk's k = " + std::to_string(k) + " is outside [0, " +
                      std::to_string(n) + "]");
  SortedDim s = sortDim(ctx, x, d, largest, "topk", k);
  return window(ctx, s, 0, k);
}

/// kthvalue(x, k, dim=-1, keepdim=False): position k-1 of the ascending first k (as topk).
Values kthvalue(NodeContext &ctx) {
  Value x = atLeast1d(ctx, ctx.tensor(0));
  int64_t k = ctx.integer(1, "k", -1);
  int64_t d = ctx.dim(ctx.integer(2, "dim", -1), typeOf(x).getRank());
  int64_t n = typeOf(x).getDimSize(d);
  if (k < 1 || k > n)
    throw ImportError("kthvalue's k = " + std::to_string(k) + " is outside [1, " +
                      std::to_string(n) + "]");
  SortedDim s = sortDim(ctx, x, d, false, "kthvalue", k);
  return window(ctx, s, k - 1, 1);
}

Values median(NodeContext &ctx) { return medianAll<false>(ctx, "median"); }
Values medianDim(NodeContext &ctx) { return medianAlong<false>(ctx, "median"); }
Values nanmedian(NodeContext &ctx) { return medianAll<true>(ctx, "nanmedian"); }
Values nanmedianDim(NodeContext &ctx) { return medianAlong<true>(ctx, "nanmedian"); }

} // namespace neuron::compiler::aten

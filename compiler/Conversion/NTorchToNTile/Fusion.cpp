// Lowering of ntorch.fusion: a loop nest over tiles (RowTiling); in each, the tiles of
// the operands are loaded once, the body runs on SBUF tiles (row values are [P, 1] tiles
// that broadcast along the free dimension), and only the results are stored.
#include "compiler/Conversion/NTorchToNTile/RowTiling.h"
#include "dialects/NTorch/IR/NTorchOps.h"

#include "mlir/IR/Matchers.h"
#include "llvm/ADT/SmallPtrSet.h"
#include "llvm/ADT/TypeSwitch.h"

#include <cmath>
#include <map>
#include <tuple>

using namespace mlir;
using neuron::ntile::MemSpace;

namespace neuron::compiler {

/// Row blocks a fused reduction emits per loop iteration.
static constexpr int64_t kInterleavedBlocks = 2;

static RankedTensorType tensorType(Value v) { return cast<RankedTensorType>(v.getType()); }
static bool isFloatCast(Operation *op);

namespace {
/// Lowers one fusion; the members describe the tile being emitted.
class FusionLowering {
public:
  FusionLowering(TileEmitter &e, ntorch::FusionOp op) : e(e), op(op), loc(op.getLoc()) {}
  /// The iteration shape and tile size; fails on a fusion the lowering cannot tile.
  LogicalResult analyze();
  /// The result buffers and the tiling (after analyze).
  void createBuffers();
  /// Emits the body for rows `block` x cols [c0, c0+fc); `preset` gives tiles for some
  /// block arguments (a matmul epilogue passes its result tile).
  LogicalResult emitTile(const RowBlock &block, const Offset &c0, int64_t fc,
                         const DenseMap<Value, Value> &preset);
  const RowTiling &getTiling() const { return *tiling; }
  LogicalResult run();
  /// Emits whole-row blocks together, each instruction for every block in turn.
  LogicalResult emitGroup(ArrayRef<RowBlock> blocks);
  ArrayRef<int64_t> iterationShape() const { return shape; }
  bool hasReduce() const { return reduces; }
  int64_t maxFree() const { return free; }

private:
  Value tileFor(Value v);
  /// Stores the yielded values of the block just emitted (in a row-packed group, those
  /// written into a packed tile are left for the group's packed stores, `deferred`).
  void storeResults(const RowBlock &rowBlock, llvm::SmallPtrSetImpl<Value> *deferred = nullptr);
  Value newTile(int64_t free, Type elementType) {
    return e.allocTile(loc, rows, free, elementType, MemSpace::sbuf);
  }
  static int64_t freeOf(Value tile) { return cast<MemRefType>(tile.getType()).getDimSize(1); }
  bool isRow(Value v) {
    auto t = tensorType(v);
    return !shape.empty() && shape.back() != 1 && t.getRank() >= 1 && t.getShape().back() == 1 &&
           (t.getRank() == (int64_t)shape.size());
  }
  LogicalResult emit(Operation &o);
  /// Finds the mean / variance pattern of a row: m = sum(x) * (1/n), d = x - m,
  /// v = sum(d * d) * (1/n) (the reshapes of the sums to [..., 1] aside), which lowers to
  /// bn_stats over chunks of at most 512 columns and one bn_aggr instead of two reductions
  /// and a pass over the squared deviation. d itself stays (its other uses read it).
  void matchMeanVariance();
  /// Emits bn_stats / bn_aggr for the pattern at reduce `r`: m and v become the two
  /// columns of the bn_aggr tile.
  void emitMeanVariance(ntorch::ReduceOp r);
  struct MeanVariance {
    Value x, mean, variance;
  };
  DenseMap<Operation *, MeanVariance> meanVariance; // at the first sum
  /// Values of the elementwise tail of a row (the affine step of a norm: x * weight + bias
  /// with bf16 / fp16 weight and bias, then a cast to that type) that are written in the
  /// operands' low precision, so that the engines' tensor_tensor reads only low-precision
  /// tiles (trn2's Vector engine runs those 2x, every engine in one pass instead of two).
  DenseMap<Value, Type> narrowed;
  void matchLowPrecisionTail();
  llvm::SmallPtrSet<Operation *, 8> coveredByStats; // computed by bn_stats / bn_aggr
  /// Columns [first, first + count) of a tile (or of a view of one).
  Value columnsOf(Value tile, int64_t first, int64_t count);
  /// Rows per partition of a row-packed reduction (1: none): rows of contiguous operands
  /// narrower than the DMA's efficient descriptor size go several to a partition, enough
  /// for one descriptor of at least that size, within the SBUF budget of fused rows, and
  /// few enough for two groups or more.
  int64_t packFactor();
  /// The tile for the result of `o` (free size `free`, element type `type`): the tile of
  /// one of `inputs` when `o` is that value's last use and it was computed in the body
  /// (engines read and write a tile in place), else a new one.
  Value resultTile(Operation &o, ValueRange inputs, int64_t free, Type type);
  /// Whether `o` is the last reader of v's tile: every user of v, and of the reshapes of
  /// v that share its tile, comes before `o` in the body.
  bool usedLastBy(Value v, Operation &o);

  TileEmitter &e;
  ntorch::FusionOp op;
  Location loc;
  SmallVector<int64_t> shape, rowShape; // iteration shape and its [..., 1] form
  std::optional<RowTiling> tiling;       // operands: inputs, then results
  const RowBlock *block = nullptr;
  Offset col0;
  int64_t rows = 0, cols = 0;
  bool reduces = false;
  int64_t free = 0;
  int64_t rowBytes = 0; // SBUF bytes per partition of a block's tiles (wide fused rows)
  SmallVector<Value> buffers;
  DenseMap<Value, Value> tiles;
  llvm::SmallPtrSet<Value, 8> shared; // values whose tile is another value's too
  /// A full value not computed yet: full * (scale [* scaleTile]) + bias [* biasTile], with
  /// per-partition [P, 1] tiles. Its consumer computes it (an activation's scale and
  /// bias); any other use materializes it with an identity activation.
  struct RowAffine {
    Value full, scaleTile, biasTile;
    double scale = 1.0, bias = 0.0;
    Type type;
  };
  DenseMap<Value, RowAffine> pending;
  /// Emits fn(x * scale + bias) of a pending value into a new tile of `type` (the slot's
  /// view of a packed result tile when `result` is stored from one).
  Value applyPending(const RowAffine &a, ActFunc fn, Type type, Value result = Value());
  /// Row-packed groups (RowTiling::emitGroups): rows per partition (1: not packed).
  int64_t pack = 1;
  /// The slot being emitted in a row-packed group, else -1.
  int64_t slot = -1;
  /// Per group: tiles of block arguments that every block of the group reads whole (a
  /// packed tile of contiguous rows, or an operand the same in every row), and the packed
  /// tiles of yielded values stored with one DMA after the group.
  DenseMap<Value, Value> groupInputs;
  DenseMap<Value, Value> packedOut;
  /// Columns [slot * cols, slot * cols + cols) of a packed tile: the current slot's rows.
  Value slotView(Value packed);
  /// The tile an op writes `result` into when it is stored from the slot's view of a packed
  /// tile (the value yielded, or the float cast of it that shares its tile), else null.
  Value packedResultTile(Value result, int64_t free, Type type);
  DenseMap<Value, Value> constantBuffers;
};
} // namespace

/// The tile of a body value. Block arguments load on first use; splat constants
/// that must be tiles broadcast from a one-element buffer. (Loads that are the same in
/// every iteration leave the loops in neuron-hoist-invariant-loads.)
Value FusionLowering::columnsOf(Value tile, int64_t first, int64_t count) {
  auto type = cast<MemRefType>(tile.getType());
  int64_t width = type.getDimSize(1);
  if (first == 0 && count == width)
    return tile;
  return e.b.create<ntile::ViewOp>(
      loc, ntile::getBufferType({type.getDimSize(0), count}, type.getElementType(), MemSpace::sbuf),
      tile, e.pattern(Offset(first), {{width, type.getDimSize(0)}, {1, count}}));
}

/// The value a row sum is used as: its only user reshape's result (a reduce without
/// keepdim, reshaped to [..., 1]), or itself.
static Value throughReshape(Value v, SmallVectorImpl<Operation *> &ops) {
  if (v.hasOneUse())
    if (auto r = dyn_cast<ntorch::ReshapeOp>(*v.user_begin())) {
      ops.push_back(r);
      return r.getResult();
    }
  return v;
}

/// `v` * (1 / n) with a splat 1 / n (as the importer's mean writes it), if v's only use.
static ntorch::BinaryOp meanOf(Value v, int64_t n) {
  if (!v.hasOneUse())
    return {};
  auto mul = dyn_cast<ntorch::BinaryOp>(*v.user_begin());
  if (!mul || mul.getFn() != ntorch::BinaryFn::mul)
    return {};
  std::optional<double> c = splatValue(mul.getLhs() == v ? mul.getRhs() : mul.getLhs());
  if (!c || std::abs(*c * double(n) - 1.0) > 1e-6)
    return {};
  return mul;
}

void FusionLowering::matchMeanVariance() {
  Block &body = op.getBody().front();
  int64_t n = shape.back();
  auto isF32 = [](Value v) { return tensorType(v).getElementType().isF32(); };
  auto rowSum = [&](Operation &o) -> ntorch::ReduceOp {
    auto r = dyn_cast<ntorch::ReduceOp>(o);
    if (!r || r.getFn() != ntorch::ReduceFn::sum)
      return {};
    auto in = tensorType(r.getInput());
    if (in.getShape() != ArrayRef<int64_t>(shape) || r.getDims().size() != 1 ||
        r.getDims()[0] != in.getRank() - 1 || !isa<FloatType>(in.getElementType()))
      return {};
    return r;
  };
  for (Operation &o : body.without_terminator()) {
    ntorch::ReduceOp r = rowSum(o);
    if (!r || n < 2)
      continue;
    SmallVector<Operation *> covered;
    Value x = r.getInput();
    ntorch::BinaryOp mean = meanOf(throughReshape(r.getResult(), covered), n);
    if (!mean || !isF32(mean) || !isRow(mean.getResult()))
      continue;
    // d = x - m, and d * d summed (its only use) into the variance.
    ntorch::BinaryOp variance;
    for (Operation *user : mean->getUsers()) {
      auto d = dyn_cast<ntorch::BinaryOp>(user);
      if (!d || d.getFn() != ntorch::BinaryFn::sub || d.getLhs() != x || d.getRhs() != mean)
        continue;
      for (Operation *dUser : d->getUsers()) {
        auto sq = dyn_cast<ntorch::BinaryOp>(dUser);
        if (!sq || sq.getFn() != ntorch::BinaryFn::mul || sq.getLhs() != d.getResult() ||
            sq.getRhs() != d.getResult() || !sq->hasOneUse())
          continue;
        ntorch::ReduceOp r2 = rowSum(**sq->user_begin());
        if (!r2)
          continue;
        SmallVector<Operation *> more = {sq, r2};
        ntorch::BinaryOp v = meanOf(throughReshape(r2.getResult(), more), n);
        if (v && isF32(v) && isRow(v.getResult())) {
          variance = v;
          covered.append(more);
          break;
        }
      }
      if (variance)
        break;
    }
    if (!variance)
      continue;
    covered.append({mean, variance});
    meanVariance[r] = {x, mean.getResult(), variance.getResult()};
    coveredByStats.insert(covered.begin(), covered.end());
  }
}

void FusionLowering::matchLowPrecisionTail() {
  Block &body = op.getBody().front();
  auto lowPrecision = [](Type t) { return t.isBF16() || t.isF16(); };
  for (Value y : cast<ntorch::YieldOp>(body.getTerminator()).getValues()) {
    auto c = y.getDefiningOp<ntorch::CastOp>();
    if (!c || !isFloatCast(c) || !lowPrecision(tensorType(c).getElementType()))
      continue;
    Type low = tensorType(c).getElementType();
    Value v = c.getInput();
    // v = u <op> w, w a low-precision operand of the fusion: v is written in `low`, and so
    // is u if it is the same kind of step, or the one value that feeds the tail.
    while (v.hasOneUse() && tensorType(v).getShape() == ArrayRef<int64_t>(shape)) {
      auto bo = v.getDefiningOp<ntorch::BinaryOp>();
      if (!bo || !llvm::is_contained({ntorch::BinaryFn::add, ntorch::BinaryFn::sub,
                                      ntorch::BinaryFn::mul},
                                     bo.getFn()))
        break;
      auto lowArg = [&](Value w) {
        return isa<BlockArgument>(w) && tensorType(w).getElementType() == low && !isRow(w);
      };
      Value u = lowArg(bo.getRhs()) ? bo.getLhs() : lowArg(bo.getLhs()) ? bo.getRhs() : Value();
      if (!u || isRow(u) || !isa<FloatType>(tensorType(u).getElementType()))
        break;
      narrowed[v] = low;
      if (!u.hasOneUse() || isa<BlockArgument>(u))
        break;
      auto next = u.getDefiningOp<ntorch::BinaryOp>();
      bool step = next && (lowArg(next.getLhs()) || lowArg(next.getRhs()));
      if (!step) {
        narrowed[u] = low; // the tail's input (a normalized row, pending until here)
        break;
      }
      v = u;
    }
  }
}

void FusionLowering::emitMeanVariance(ntorch::ReduceOp r) {
  const MeanVariance &mv = meanVariance.lookup(r);
  Value in = tileFor(mv.x);
  int64_t n = freeOf(in), fmax = 512; // bn_stats_fmax
  int64_t chunks = (n + fmax - 1) / fmax, chunk = (n + chunks - 1) / chunks;
  Type f32 = e.b.getF32Type();
  Value stats = newTile(6 * chunks, f32);
  for (int64_t c = 0; c < chunks; ++c) {
    int64_t first = c * chunk, count = std::min(chunk, n - first);
    e.b.create<ntile::BnStatsOp>(loc, columnsOf(in, first, count), columnsOf(stats, 6 * c, 6));
  }
  Value aggregate = newTile(2, f32);
  e.b.create<ntile::BnAggrOp>(loc, stats, aggregate);
  tiles[mv.mean] = columnsOf(aggregate, 0, 1);
  tiles[mv.variance] = columnsOf(aggregate, 1, 1);
  // The two columns are one tile: neither is overwritten in place.
  shared.insert(mv.mean);
  shared.insert(mv.variance);
}

Value FusionLowering::slotView(Value packed) {
  auto type = cast<MemRefType>(packed.getType());
  int64_t width = type.getDimSize(1);
  return e.b.create<ntile::ViewOp>(
      loc, ntile::getBufferType({type.getDimSize(0), cols}, type.getElementType(), MemSpace::sbuf),
      packed, e.pattern(Offset(slot * cols), {{width, type.getDimSize(0)}, {1, cols}}));
}

Value FusionLowering::packedResultTile(Value result, int64_t free, Type type) {
  if (slot < 0 || !result || free != cols)
    return Value();
  Value stored = result;
  if (!packedOut.count(stored) && result.hasOneUse() && isa<ntorch::CastOp>(*result.user_begin()))
    stored = result.user_begin()->getResult(0);
  Value packed = packedOut.lookup(stored);
  if (!packed || tiles.count(stored) ||
      cast<MemRefType>(packed.getType()).getElementType() != type)
    return Value();
  return slotView(packed);
}

Value FusionLowering::applyPending(const RowAffine &a, ActFunc fn, Type type, Value result) {
  Value in = tileFor(a.full);
  Value out = packedResultTile(result, freeOf(in), type);
  if (!out)
    out = newTile(freeOf(in), type);
  e.b.create<ntile::ActivationOp>(loc, fn, in, out, APFloat(a.scale), APFloat(a.bias),
                                  a.scaleTile, a.biasTile, Value());
  return out;
}

Value FusionLowering::tileFor(Value v) {
  if (Value t = tiles.lookup(v))
    return t;
  if (auto it = pending.find(v); it != pending.end()) {
    RowAffine a = it->second;
    pending.erase(it);
    Type type = a.type;
    if (auto n = narrowed.find(v); n != narrowed.end())
      type = n->second;
    Value t = applyPending(a, ActFunc::identity, type, v);
    tiles[v] = t;
    return t;
  }
  RankedTensorType vt = tensorType(v);
  bool row = isRow(v);
  int64_t free = row ? 1 : cols;
  Offset firstColumn = row ? Offset(0) : col0;
  if (auto arg = dyn_cast<BlockArgument>(v); arg && !row && cols == shape.back()) {
    // Whole rows of an operand that every block of a group reads whole: loaded once per
    // group (contiguous rows of a row-packed group: pack rows per partition, one DMA).
    ArrayRef<int64_t> strides = tiling->strides(arg.getArgNumber());
    bool rowInvariant = llvm::all_of(strides.drop_back(), [](int64_t s) { return s == 0; });
    bool packed = slot >= 0 && packedContiguous(strides, cols);
    if (rowInvariant || packed) {
      Value whole = groupInputs.lookup(v);
      if (!whole) {
        Value source = e.buffer(op.getInputs()[arg.getArgNumber()]);
        if (packed) {
          whole = e.allocTile(loc, rows, pack * cols, vt.getElementType(), MemSpace::sbuf);
          loadPacked(e, loc, source, 0, strides, *block, cols, whole);
        } else {
          whole = newTile(cols, vt.getElementType());
          loadBlock(e, loc, source, 0, strides, *block, 0, cols, whole);
        }
        groupInputs[v] = whole;
      }
      Value t = packed ? slotView(whole) : whole;
      shared.insert(v);
      tiles[v] = t;
      return t;
    }
  }
  Value tile = newTile(free, vt.getElementType());
  if (auto arg = dyn_cast<BlockArgument>(v)) {
    loadBlock(e, loc, e.buffer(op.getInputs()[arg.getArgNumber()]), 0,
              tiling->strides(arg.getArgNumber()), *block, firstColumn, free, tile);
  } else {
    Value source = constantBuffers.lookup(v);
    if (!source) {
      auto attr = cast<DenseElementsAttr>(v.getDefiningOp<ntorch::ConstantOp>().getValue());
      auto one = RankedTensorType::get({1}, vt.getElementType());
      source = e.constant(loc, DenseElementsAttr::get(one, attr.getSplatValue<Attribute>()));
      constantBuffers[v] = source;
    }
    SmallVector<int64_t> zeros(block->count.size() + 1, 0);
    loadBlock(e, loc, source, 0, zeros, *block, 0, free, tile);
  }
  tiles[v] = tile;
  return tile;
}

Value FusionLowering::resultTile(Operation &o, ValueRange inputs, int64_t free, Type type) {
  if (Value packed = packedResultTile(o.getResult(0), free, type))
    return packed;
  for (Value in : inputs) {
    Operation *def = in.getDefiningOp();
    Value tile = tiles.lookup(in);
    if (!def || isa<ntorch::ConstantOp, ntorch::ReshapeOp>(def) || !tile || shared.contains(in) ||
        freeOf(tile) != free || cast<MemRefType>(tile.getType()).getElementType() != type)
      continue;
    if (usedLastBy(in, o))
      return tile;
  }
  return newTile(free, type);
}

bool FusionLowering::usedLastBy(Value v, Operation &o) {
  // A reshape's result is the same tile: its users read that tile too (a yielded reshape
  // is stored after the body, so it is never before o).
  return llvm::all_of(v.getUsers(), [&](Operation *user) {
    if (user == &o)
      return true;
    if (!user->isBeforeInBlock(&o))
      return false;
    auto reshape = dyn_cast<ntorch::ReshapeOp>(user);
    return !reshape || usedLastBy(reshape.getResult(), o);
  });
}

/// A float -> float cast.
static bool isFloatCast(Operation *op) {
  auto c = dyn_cast_or_null<ntorch::CastOp>(op);
  return c && isa<FloatType>(tensorType(c.getInput()).getElementType()) &&
         isa<FloatType>(tensorType(c.getResult()).getElementType());
}

LogicalResult FusionLowering::emit(Operation &o) {
  OpBuilder &b = e.b;
  // Engines compute in fp32 and convert on the write: a result whose only use is a float
  // cast is written in the cast's type (rounded once, as the cast would), and the cast
  // is that tile.
  auto resultType = [&](Operation &x) {
    Value r = x.getResult(0);
    if (auto it = narrowed.find(r); it != narrowed.end())
      return it->second;
    if (!isa<ntorch::CastOp>(x) && r.hasOneUse() && isFloatCast(*r.user_begin()))
      return tensorType(r.user_begin()->getResult(0)).getElementType();
    return tensorType(r).getElementType();
  };
  if (coveredByStats.contains(&o))
    return success(); // the mean and variance come from bn_aggr
  if (auto r = dyn_cast<ntorch::ReduceOp>(o); r && meanVariance.count(r)) {
    emitMeanVariance(r);
    return success();
  }
  return llvm::TypeSwitch<Operation *, LogicalResult>(&o)
      .Case([&](ntorch::ConstantOp) { return success(); }) // materialized on use
      .Case([&](ntorch::UnaryOp u) {
        if (auto it = pending.find(u.getInput());
            it != pending.end() && isa<FloatType>(resultType(o))) {
          tiles[u] = applyPending(it->second, toActFunc(u.getFn()), resultType(o), u);
          return success();
        }
        Value in = tileFor(u.getInput());
        Value out = resultTile(o, u.getInput(), freeOf(in), resultType(o));
        b.create<ntile::ActivationOp>(loc, toActFunc(u.getFn()), in, out, APFloat(1.0),
                                      APFloat(0.0));
        tiles[u] = out;
        return success();
      })
      .Case([&](ntorch::BinaryOp bo) {
        AluOp alu = toAluOp(bo.getFn());
        std::optional<double> l = splatValue(bo.getLhs()), r = splatValue(bo.getRhs());
        if (l || r) {
          Value operand = r ? bo.getLhs() : bo.getRhs();
          Value t = tileFor(operand);
          Value out = resultTile(o, operand, freeOf(t), resultType(o));
          b.create<ntile::TensorScalarOp>(loc, alu, t, APFloat(r ? *r : *l), out, /*reverse=*/!r);
          tiles[bo] = out;
          return success();
        }
        if (bo.getLhs() == bo.getRhs() && alu == AluOp::mul &&
            isa<FloatType>(tensorType(bo.getLhs()).getElementType())) {
          // x * x: the Scalar engine's square, one input stream.
          if (auto it = pending.find(bo.getLhs()); it != pending.end()) {
            tiles[bo] = applyPending(it->second, ActFunc::square, resultType(o), bo);
            return success();
          }
          Value in = tileFor(bo.getLhs());
          Value out = resultTile(o, bo.getLhs(), freeOf(in), resultType(o));
          b.create<ntile::ActivationOp>(loc, ActFunc::square, in, out, APFloat(1.0),
                                        APFloat(0.0));
          tiles[bo] = out;
          return success();
        }
        // A full value plus or minus a row value, and such a value times a row value, stay
        // pending: their consumer applies them as an activation's per-partition bias and
        // scale ((x - m) * r = x * r + (-m * r), with one [P, 1] product).
        auto isFloatValue = [](Value v) {
          return isa<FloatType>(tensorType(v).getElementType());
        };
        bool lhsRow = isRow(bo.getLhs()), rhsRow = isRow(bo.getRhs());
        if (isFloatValue(bo.getLhs()) && isFloatValue(bo.getRhs()) &&
            isa<FloatType>(resultType(o)) && !isRow(bo.getResult()) && lhsRow != rhsRow) {
          Value full = lhsRow ? bo.getRhs() : bo.getLhs(), row = lhsRow ? bo.getLhs() : bo.getRhs();
          auto base = pending.find(full);
          // A row value can have a full tile (a select with a splat broadcasts it).
          Value rowTile = tileFor(row);
          bool perPartition = freeOf(rowTile) == 1;
          if ((alu == AluOp::add || alu == AluOp::sub) && base == pending.end() && perPartition) {
            RowAffine a;
            a.full = full;
            a.biasTile = rowTile;
            a.bias = alu == AluOp::sub && !lhsRow ? -1.0 : 1.0;
            a.scale = alu == AluOp::sub && lhsRow ? -1.0 : 1.0;
            a.type = resultType(o);
            (void)tileFor(full);
            shared.insert(full); // read when the pending value is applied: not in place
            shared.insert(row);
            pending[bo] = a;
            return success();
          }
          if (alu == AluOp::mul && base != pending.end() && !base->second.scaleTile &&
              perPartition) {
            RowAffine a = base->second;
            Value r = rowTile;
            a.scaleTile = r;
            shared.insert(row);
            if (a.biasTile) {
              Value product = newTile(1, e.b.getF32Type());
              b.create<ntile::TensorTensorOp>(loc, AluOp::mul, a.biasTile, r, product);
              a.biasTile = product;
            } else if (a.bias != 0.0) {
              Value product = newTile(1, e.b.getF32Type());
              b.create<ntile::TensorScalarOp>(loc, AluOp::mul, r, APFloat(a.bias), product,
                                              /*reverse=*/false);
              a.biasTile = product;
              a.bias = 1.0;
            }
            a.type = resultType(o);
            pending[bo] = a;
            return success();
          }
        }
        Value lt = tileFor(bo.getLhs()), rt = tileFor(bo.getRhs());
        Value out = resultTile(o, {bo.getLhs(), bo.getRhs()}, std::max(freeOf(lt), freeOf(rt)),
                               resultType(o));
        b.create<ntile::TensorTensorOp>(loc, alu, lt, rt, out);
        tiles[bo] = out;
        return success();
      })
      .Case([&](ntorch::CastOp c) {
        Value in = tileFor(c.getInput());
        Type to = resultType(o);
        // Written through by its producer (above), or a widening float cast: engines
        // read any float type and convert exactly, so readers use the source tile.
        Type from = cast<MemRefType>(in.getType()).getElementType();
        if (isFloatCast(c) && (from == to || (isa<FloatType>(from) &&
                                              cast<FloatType>(from).getWidth() <
                                                  cast<FloatType>(to).getWidth() &&
                                              to.isF32()))) {
          tiles[c] = in;
          shared.insert(c);
          shared.insert(c.getInput());
          return success();
        }
        Value out = newTile(freeOf(in), to);
        b.create<ntile::CopyOp>(loc, in, out);
        tiles[c] = out;
        return success();
      })
      .Case([&](ntorch::SelectOp s) {
        Value c = tileFor(s.getCondition()), t = tileFor(s.getLhs()), f = tileFor(s.getRhs());
        Value out = newTile(std::max({freeOf(c), freeOf(t), freeOf(f)}), resultType(o));
        b.create<ntile::SelectOp>(loc, c, t, f, out);
        tiles[s] = out;
        return success();
      })
      .Case([&](ntorch::ReduceOp r) {
        Value in = tileFor(r.getInput());
        Value out = newTile(1, resultType(o));
        b.create<ntile::ReduceOp>(loc, toAluOp(r.getFn()), in, out);
        tiles[r] = out;
        return success();
      })
      .Case([&](ntorch::ReshapeOp rs) {
        tiles[rs] = tileFor(rs.getInput());
        return success();
      })
      .Default([&](Operation *x) { return x->emitOpError("cannot be lowered inside a fusion"); });
}

int64_t FusionLowering::packFactor() {
  if (!tiling->packable())
    return 1;
  int64_t columns = shape.back(), narrowest = 0;
  for (auto [i, in] : llvm::enumerate(op.getInputs())) {
    if (tensorType(in).getShape() != ArrayRef<int64_t>(shape) ||
        !packedContiguous(tiling->strides(i), columns))
      continue;
    int64_t bytes = columns * ntile::getElementBytes(tensorType(in).getElementType());
    narrowest = narrowest ? std::min(narrowest, bytes) : bytes;
  }
  if (narrowest == 0 || double(narrowest) >= e.target.dmaDescriptorMinBytes)
    return 1;
  int64_t k = (int64_t)std::ceil(e.target.dmaDescriptorMinBytes / double(narrowest));
  SmallVector<Operation *> ops;
  for (Operation &o : op.getBody().front().without_terminator())
    ops.push_back(&o);
  int64_t sbufRow = std::max<int64_t>(1, ntorch::fusedRowBytes(ops, columns));
  // At least two packed groups: a loop, whose iterations overlap one group's DMAs with
  // another's compute (and that a logical core of two cores splits).
  k = std::min({k, ntorch::kFusedRowBudgetBytes / sbufRow,
                tiling->tiledRows() / (2 * e.target.partitions)});
  return k > 1 ? k : 1;
}

LogicalResult FusionLowering::analyze() {
  Block &body = op.getBody().front();
  int64_t widest = 1;
  // The iteration shape is the numpy broadcast of every value in the body.
  auto consider = [&](Value v) {
    auto t = tensorType(v);
    widest = std::max(widest, ntile::getElementBytes(t.getElementType()));
    ArrayRef<int64_t> s = t.getShape();
    SmallVector<int64_t> merged(std::max(shape.size(), s.size()), 1);
    for (size_t i = 0; i < merged.size(); ++i) {
      int64_t a = i < merged.size() - shape.size() ? 1 : shape[i - (merged.size() - shape.size())];
      int64_t b = i < merged.size() - s.size() ? 1 : s[i - (merged.size() - s.size())];
      merged[i] = a == 1 ? b : a;
    }
    shape = merged;
  };
  for (Value arg : body.getArguments())
    consider(arg);
  for (Operation &o : body.without_terminator()) {
    reduces |= isa<ntorch::ReduceOp>(o);
    // Row values (reduced, then reshaped) have the iteration shape's leading dims only.
    if (isa<ntorch::ReduceOp, ntorch::ReshapeOp>(o))
      continue;
    for (Value r : o.getResults())
      consider(r);
  }
  if (shape.empty())
    shape.push_back(1);
  rowShape = shape;
  rowShape.back() = 1;
  free = reduces ? shape.back() : e.maxTileFree(widest);
  if (reduces) {
    matchMeanVariance();
    matchLowPrecisionTail();
  }
  if (reduces && shape.back() > ntorch::kFusedRowAlwaysFits) {
    SmallVector<Operation *> ops;
    for (Operation &o : body.without_terminator())
      ops.push_back(&o);
    rowBytes = ntorch::fusedRowBytes(ops, shape.back());
    if (rowBytes > ntorch::kFusedRowBudgetBytes)
      return op.emitOpError("fuses a reduction over rows of ")
             << shape.back() << " elements whose tiles take " << rowBytes
             << " bytes per partition, more than " << ntorch::kFusedRowBudgetBytes;
  }
  return success();
}

void FusionLowering::createBuffers() {
  for (Value r : op.getResults())
    buffers.push_back(e.createResultBuffer(r, loc));
  SmallVector<SmallVector<int64_t>> strides;
  for (Value in : op.getInputs())
    strides.push_back(broadcastStrides(tensorType(in).getShape(), shape));
  for (Value r : op.getResults()) {
    bool row = tensorType(r).getShape() != ArrayRef<int64_t>(shape);
    SmallVector<int64_t> st = contiguousStrides(row ? rowShape : shape);
    if (row)
      st.back() = 0;
    strides.push_back(st);
  }
  tiling.emplace(shape, strides, e.target.partitions);
}

LogicalResult FusionLowering::emitTile(const RowBlock &rowBlock, const Offset &c0, int64_t fc,
                                       const DenseMap<Value, Value> &preset) {
  Block &body = op.getBody().front();
  block = &rowBlock;
  rows = rowBlock.rows(), col0 = c0, cols = fc;
  tiles = preset;
  shared.clear();
  pending.clear();
  groupInputs.clear();
  packedOut.clear();
  slot = -1;
  for (Operation &o : body.without_terminator())
    if (failed(emit(o)))
      return failure();
  storeResults(rowBlock);
  return success();
}

LogicalResult FusionLowering::emitGroup(ArrayRef<RowBlock> blocks) {
  Block &body = op.getBody().front();
  size_t n = blocks.size();
  SmallVector<DenseMap<Value, Value>> groupTiles(n);
  SmallVector<llvm::SmallPtrSet<Value, 8>> groupShared(n);
  SmallVector<DenseMap<Value, RowAffine>> groupPending(n);
  tiles.clear();
  shared.clear();
  pending.clear();
  groupInputs.clear();
  packedOut.clear();
  col0 = Offset(0), cols = shape.back();
  bool packed = n > 1 && blocks[0].packed() > 1;
  size_t numInputs = op.getInputs().size();
  auto yielded = cast<ntorch::YieldOp>(body.getTerminator()).getValues();
  if (packed) {
    // Yielded full values of contiguous rows are written into one tile for the group,
    // each slot into its columns, and stored with one DMA.
    rows = blocks[0].rows();
    for (auto [i, v, buffer] : llvm::enumerate(yielded, buffers)) {
      if (tensorType(v).getShape() != ArrayRef<int64_t>(shape) || isa<BlockArgument>(v) ||
          packedOut.count(v) || !packedContiguous(tiling->strides(numInputs + i), cols))
        continue;
      packedOut[v] = e.allocTile(loc, rows, pack * cols,
                                 cast<MemRefType>(buffer.getType()).getElementType(),
                                 MemSpace::sbuf);
    }
  }
  // The state of block j is swapped in while its instructions are emitted.
  auto swapState = [&](size_t j) {
    std::swap(tiles, groupTiles[j]);
    std::swap(shared, groupShared[j]);
    std::swap(pending, groupPending[j]);
  };
  auto within = [&](size_t j, function_ref<LogicalResult()> fn) {
    block = &blocks[j];
    rows = blocks[j].rows();
    slot = packed ? int64_t(j) : -1;
    swapState(j);
    LogicalResult result = fn();
    swapState(j);
    slot = -1;
    return result;
  };
  // An add or sub that feeds only the activation right after it stays next to it in each
  // block: the two fold into one instruction (ntile canonicalization).
  SmallVector<Operation *> segment;
  auto flush = [&]() -> LogicalResult {
    for (size_t j = 0; j < n; ++j)
      for (Operation *o : segment)
        if (failed(within(j, [&] { return emit(*o); })))
          return failure();
    segment.clear();
    return success();
  };
  for (Operation &o : body.without_terminator()) {
    segment.push_back(&o);
    Operation *next = o.getNextNode();
    bool feedsNext = isa<ntorch::BinaryOp>(o) && isa<ntorch::UnaryOp>(next) &&
                     o.getResult(0).hasOneUse() && *o.getResult(0).user_begin() == next;
    if (!feedsNext && failed(flush()))
      return failure();
  }
  if (failed(flush()))
    return failure();
  SmallVector<llvm::SmallPtrSet<Value, 4>> deferred(n);
  for (size_t j = 0; j < n; ++j)
    (void)within(j, [&] {
      storeResults(blocks[j], &deferred[j]);
      return success();
    });
  for (auto [i, v, buffer] : llvm::enumerate(yielded, buffers)) {
    Value whole = packedOut.lookup(v);
    if (!whole)
      continue;
    ArrayRef<int64_t> strides = tiling->strides(numInputs + i);
    if (llvm::all_of(deferred, [&](auto &d) { return d.contains(v); })) {
      storePacked(e, loc, whole, buffer, strides, blocks[0], cols);
      continue;
    }
    for (size_t j = 0; j < n; ++j) // some slot wrote its own tile: each slot on its own
      if (deferred[j].contains(v)) {
        slot = j;
        storeBlock(e, loc, slotView(whole), buffer, strides, blocks[j], Offset(0), cols);
      }
    slot = -1;
  }
  return success();
}

void FusionLowering::storeResults(const RowBlock &rowBlock,
                                  llvm::SmallPtrSetImpl<Value> *deferred) {
  Block &body = op.getBody().front();
  auto yield = cast<ntorch::YieldOp>(body.getTerminator());
  size_t numInputs = op.getInputs().size();
  for (auto [i, v, buffer] : llvm::enumerate(yield.getValues(), buffers)) {
    Value tile = tileFor(v);
    if (Value whole = packedOut.lookup(v); whole && deferred) {
      auto view = tile.getDefiningOp<ntile::ViewOp>();
      if (view && view.getSource() == whole) {
        deferred->insert(v);
        continue;
      }
    }
    Type stored = cast<MemRefType>(buffer.getType()).getElementType();
    if (cast<MemRefType>(tile.getType()).getElementType() != stored) {
      // A widened value read from its narrower tile: DMAs do not convert.
      Value converted = newTile(freeOf(tile), stored);
      e.b.create<ntile::CopyOp>(loc, tile, converted);
      tile = converted;
    }
    bool rowTile = freeOf(tile) == 1 && cols != 1;
    storeBlock(e, loc, tile, buffer, tiling->strides(numInputs + i), rowBlock,
               rowTile ? Offset(0) : col0, rowTile ? 1 : cols);
  }
}

LogicalResult FusionLowering::run() {
  if (failed(analyze()))
    return failure();
  createBuffers();
  LogicalResult status = success();
  if (reduces) {
    // A reduction's blocks are dependence chains across engines (reduce, then use the
    // row value): two blocks per iteration, interleaved, keep the engines overlapped.
    // (one block per iteration where two blocks' whole rows would not fit)
    int64_t group = kInterleavedBlocks * rowBytes <= ntorch::kFusedRowBudgetBytes
                        ? kInterleavedBlocks
                        : 1;
    pack = packFactor();
    tiling->emitGroups(
        e, loc, group,
        [&](ArrayRef<RowBlock> blocks) {
          if (succeeded(status))
            status = emitGroup(blocks);
        },
        pack);
    return status;
  }
  tiling->emit(e, loc, free,
               [&](const RowBlock &rowBlock, const Offset &c0, int64_t fc) {
                 if (succeeded(status))
                   status = emitTile(rowBlock, c0, fc, DenseMap<Value, Value>());
               });
  return status;
}

std::optional<MatmulEpilogue> matchMatmulEpilogue(TileEmitter &e, ntorch::MatmulOp matmul) {
  Value result = matmul.getResult();
  if (!result.hasOneUse())
    return std::nullopt;
  OpOperand &use = *result.use_begin();
  auto fusion = dyn_cast<ntorch::FusionOp>(use.getOwner());
  if (!fusion || !fusion.isMatmulEpilogue())
    return std::nullopt;
  auto lowering = std::make_shared<FusionLowering>(e, fusion);
  if (failed(lowering->analyze()))
    return std::nullopt;
  lowering->createBuffers();
  Value arg = fusion.getBody().front().getArgument(use.getOperandNumber());
  e.markLowered(fusion);
  MatmulEpilogue epilogue;
  epilogue.emit = [lowering, arg](ArrayRef<Offset> first, ArrayRef<int64_t> count,
                                  const Offset &col0, int64_t cols, Value tile) {
    DenseMap<Value, Value> preset;
    preset[arg] = tile;
    RowBlock block = lowering->getTiling().blockOf(first, count);
    return lowering->emitTile(block, col0, cols, preset);
  };
  epilogue.elementType = tensorType(arg).getElementType();
  return epilogue;
}

LogicalResult lowerFusion(TileEmitter &e, Operation *op) {
  auto fusion = dyn_cast<ntorch::FusionOp>(op);
  if (!fusion)
    return failure();
  return FusionLowering(e, fusion).run();
}

} // namespace neuron::compiler

// Lowering of ntorch.fusion: a loop nest over tiles (RowTiling); in each, the tiles of
// the operands are loaded once, the body runs on SBUF tiles (row values are [P, 1] tiles
// that broadcast along the free dimension), and only the results are stored.
#include "compiler/Conversion/NTorchToNTile/RowTiling.h"
#include "dialects/NTorch/IR/NTorchOps.h"

#include "mlir/IR/Matchers.h"
#include "llvm/ADT/SmallPtrSet.h"
#include "llvm/ADT/TypeSwitch.h"

#include <map>
#include <tuple>

using namespace mlir;
using neuron::ntile::MemSpace;

namespace neuron::compiler {

/// Row blocks a fused reduction emits per loop iteration.
static constexpr int64_t kInterleavedBlocks = 2;

static RankedTensorType tensorType(Value v) { return cast<RankedTensorType>(v.getType()); }

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
  /// Stores the yielded values of the block just emitted.
  void storeResults(const RowBlock &rowBlock);
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
  /// Emits fn(x * scale + bias) of a pending value into a new tile of `type`.
  Value applyPending(const RowAffine &a, ActFunc fn, Type type);
  DenseMap<Value, Value> constantBuffers;
};
} // namespace

/// The tile of a body value. Block arguments load on first use; splat constants
/// that must be tiles broadcast from a one-element buffer. (Loads that are the same in
/// every iteration leave the loops in neuron-hoist-invariant-loads.)
Value FusionLowering::applyPending(const RowAffine &a, ActFunc fn, Type type) {
  Value in = tileFor(a.full);
  Value out = newTile(freeOf(in), type);
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
    Value t = applyPending(a, ActFunc::identity, a.type);
    tiles[v] = t;
    return t;
  }
  RankedTensorType vt = tensorType(v);
  bool row = isRow(v);
  int64_t free = row ? 1 : cols;
  Offset firstColumn = row ? Offset(0) : col0;
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
    if (!isa<ntorch::CastOp>(x) && r.hasOneUse() && isFloatCast(*r.user_begin()))
      return tensorType(r.user_begin()->getResult(0)).getElementType();
    return tensorType(r).getElementType();
  };
  return llvm::TypeSwitch<Operation *, LogicalResult>(&o)
      .Case([&](ntorch::ConstantOp) { return success(); }) // materialized on use
      .Case([&](ntorch::UnaryOp u) {
        if (auto it = pending.find(u.getInput());
            it != pending.end() && isa<FloatType>(resultType(o))) {
          tiles[u] = applyPending(it->second, toActFunc(u.getFn()), resultType(o));
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
            tiles[bo] = applyPending(it->second, ActFunc::square, resultType(o));
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
  col0 = Offset(0), cols = shape.back();
  // The state of block j is swapped in while its instructions are emitted.
  auto swapState = [&](size_t j) {
    std::swap(tiles, groupTiles[j]);
    std::swap(shared, groupShared[j]);
    std::swap(pending, groupPending[j]);
  };
  auto within = [&](size_t j, function_ref<LogicalResult()> fn) {
    block = &blocks[j];
    rows = blocks[j].rows();
    swapState(j);
    LogicalResult result = fn();
    swapState(j);
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
  for (size_t j = 0; j < n; ++j)
    (void)within(j, [&] {
      storeResults(blocks[j]);
      return success();
    });
  return success();
}

void FusionLowering::storeResults(const RowBlock &rowBlock) {
  Block &body = op.getBody().front();
  auto yield = cast<ntorch::YieldOp>(body.getTerminator());
  size_t numInputs = op.getInputs().size();
  for (auto [i, v, buffer] : llvm::enumerate(yield.getValues(), buffers)) {
    Value tile = tileFor(v);
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
    tiling->emitGroups(e, loc, group, [&](ArrayRef<RowBlock> blocks) {
      if (succeeded(status))
        status = emitGroup(blocks);
    });
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

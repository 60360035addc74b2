// Lowering of ntorch.fusion: each tile of the operands is loaded once, the body runs on
// SBUF tiles (row values are [P, 1] tiles that broadcast along the free dimension), and
// only the results are stored.
#include "compiler/Conversion/NTorchToNTile/TileEmitter.h"
#include "dialects/NTorch/IR/NTorchOps.h"

#include "mlir/IR/Matchers.h"
#include "llvm/ADT/TypeSwitch.h"

#include <map>
#include <tuple>

using namespace mlir;
using neuron::ntile::MemSpace;

namespace neuron::compiler {

static RankedTensorType tensorType(Value v) { return cast<RankedTensorType>(v.getType()); }

namespace {
/// Lowers one fusion; the members describe the tile being emitted.
class FusionLowering {
public:
  FusionLowering(TileEmitter &e, ntorch::FusionOp op) : e(e), op(op), loc(op.getLoc()) {}
  /// The iteration shape and tile size; fails on a fusion the lowering cannot tile.
  LogicalResult analyze();
  /// The result buffers (after analyze).
  void createBuffers();
  /// Emits the body for rows [r0, r0+pr) x cols [c0, c0+fc); `preset` gives tiles
  /// for some block arguments (a matmul epilogue passes its result tile).
  LogicalResult emitTile(int64_t r0, int64_t pr, int64_t c0, int64_t fc,
                         const DenseMap<Value, Value> &preset);
  LogicalResult run();
  ArrayRef<int64_t> iterationShape() const { return shape; }
  bool hasReduce() const { return reduces; }
  int64_t maxFree() const { return free; }

private:
  Value tileFor(Value v);
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

  TileEmitter &e;
  ntorch::FusionOp op;
  Location loc;
  SmallVector<int64_t> shape, rowShape; // iteration shape and its [..., 1] form
  int64_t row0 = 0, rows = 0, col0 = 0, cols = 0;
  bool reduces = false;
  int64_t free = 0;
  SmallVector<Value> buffers;
  DenseMap<Value, Value> tiles;
  DenseMap<Value, Value> constantBuffers;
  /// Tiles of operands that are the same for every row block (a LayerNorm weight
  /// broadcast over rows), by (value, rows, first column, columns): loaded once.
  std::map<std::tuple<void *, int64_t, int64_t, int64_t>, Value> invariant;
};
} // namespace

/// The tile of a body value. Block arguments load on first use; splat constants
/// that must be tiles broadcast from a one-element buffer.
Value FusionLowering::tileFor(Value v) {
  if (Value t = tiles.lookup(v))
    return t;
  RankedTensorType vt = tensorType(v);
  bool row = isRow(v);
  ArrayRef<int64_t> view = row ? ArrayRef<int64_t>(rowShape) : ArrayRef<int64_t>(shape);
  Value source;
  SmallVector<int64_t> strides;
  int64_t free = row ? 1 : cols;
  auto key = std::make_tuple(v.getAsOpaquePointer(), rows, row ? 0 : col0, free);
  if (Value t = invariant[key]) {
    tiles[v] = t;
    return t;
  }
  bool rowInvariant = false;
  if (auto arg = dyn_cast<BlockArgument>(v)) {
    source = e.buffer(op.getInputs()[arg.getArgNumber()]);
    strides = broadcastStrides(vt.getShape(), view);
    rowInvariant = llvm::all_of(ArrayRef<int64_t>(strides).drop_back(), [](int64_t s) { return s == 0; });
  } else {
    source = constantBuffers.lookup(v);
    if (!source) {
      auto attr = cast<DenseElementsAttr>(v.getDefiningOp<ntorch::ConstantOp>().getValue());
      auto one = RankedTensorType::get({1}, vt.getElementType());
      source = e.b.create<ntile::ConstantOp>(
          loc, ntile::getBufferType({1}, vt.getElementType(), MemSpace::hbm),
          cast<ElementsAttr>(DenseElementsAttr::get(one, attr.getSplatValue<Attribute>())));
      constantBuffers[v] = source;
    }
    strides.assign(view.size(), 0);
    rowInvariant = true;
  }
  Value tile = newTile(free, vt.getElementType());
  e.loadRows(loc, source, 0, strides, view, row0, rows, row ? 0 : col0, free, tile);
  tiles[v] = tile;
  if (rowInvariant)
    invariant[key] = tile;
  return tile;
}

LogicalResult FusionLowering::emit(Operation &o) {
  OpBuilder &b = e.b;
  auto resultType = [&](Operation &x) { return tensorType(x.getResult(0)).getElementType(); };
  return llvm::TypeSwitch<Operation *, LogicalResult>(&o)
      .Case([&](ntorch::ConstantOp) { return success(); }) // materialized on use
      .Case([&](ntorch::UnaryOp u) {
        Value in = tileFor(u.getInput());
        Value out = newTile(freeOf(in), resultType(o));
        b.create<ntile::ActivationOp>(loc, toActFunc(u.getFn()), in, out, APFloat(1.0),
                                      APFloat(0.0));
        tiles[u] = out;
        return success();
      })
      .Case([&](ntorch::BinaryOp bo) {
        AluOp alu = toAluOp(bo.getFn());
        std::optional<double> l = splatValue(bo.getLhs()), r = splatValue(bo.getRhs());
        if (l || r) {
          Value t = tileFor(r ? bo.getLhs() : bo.getRhs());
          Value out = newTile(freeOf(t), resultType(o));
          b.create<ntile::TensorScalarOp>(loc, alu, t, APFloat(r ? *r : *l), out, /*reverse=*/!r);
          tiles[bo] = out;
          return success();
        }
        Value lt = tileFor(bo.getLhs()), rt = tileFor(bo.getRhs());
        Value out = newTile(std::max(freeOf(lt), freeOf(rt)), resultType(o));
        b.create<ntile::TensorTensorOp>(loc, alu, lt, rt, out);
        tiles[bo] = out;
        return success();
      })
      .Case([&](ntorch::CastOp c) {
        Value in = tileFor(c.getInput());
        Value out = newTile(freeOf(in), resultType(o));
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
  if (reduces && shape.back() > e.maxTileFree(4) * 2)
    return op.emitOpError("fuses a reduction over rows of ") << shape.back()
                                                              << " elements, more than a tile";
  return success();
}

void FusionLowering::createBuffers() {
  for (Value r : op.getResults())
    buffers.push_back(e.createResultBuffer(r, loc));
}

LogicalResult FusionLowering::emitTile(int64_t r0, int64_t pr, int64_t c0, int64_t fc,
                                       const DenseMap<Value, Value> &preset) {
  Block &body = op.getBody().front();
  row0 = r0, rows = pr, col0 = c0, cols = fc;
  tiles = preset;
  for (Operation &o : body.without_terminator())
    if (failed(emit(o)))
      return failure();
  auto yield = cast<ntorch::YieldOp>(body.getTerminator());
  for (auto [v, buffer] : llvm::zip(yield.getValues(), buffers)) {
    Value tile = tileFor(v);
    if (freeOf(tile) == 1 && cols != 1) {
      if (c0 == 0)
        e.storeRows(loc, tile, buffer, rowShape, r0, pr, 0, 1);
    } else {
      e.storeRows(loc, tile, buffer, shape, r0, pr, c0, fc);
    }
  }
  return success();
}

LogicalResult FusionLowering::run() {
  if (failed(analyze()))
    return failure();
  createBuffers();
  LogicalResult status = success();
  e.forEachTile(shape, free, [&](int64_t r0, int64_t pr, int64_t c0, int64_t fc) {
    if (succeeded(status))
      status = emitTile(r0, pr, c0, fc, {});
  });
  return status;
}

std::optional<MatmulEpilogue> matchMatmulEpilogue(TileEmitter &e, ntorch::MatmulOp matmul) {
  Value result = matmul.getResult();
  if (!result.hasOneUse())
    return std::nullopt;
  OpOperand &use = *result.use_begin();
  auto fusion = dyn_cast<ntorch::FusionOp>(use.getOwner());
  if (!fusion || fusion->getBlock() != matmul->getBlock())
    return std::nullopt;
  // The fusion's other operands must exist when the matmul runs.
  for (Value in : fusion.getInputs()) {
    if (in == result)
      continue;
    Operation *def = in.getDefiningOp();
    if (def && !def->isBeforeInBlock(matmul))
      return std::nullopt;
  }
  auto lowering = std::make_shared<FusionLowering>(e, fusion);
  auto resultShape = cast<RankedTensorType>(result.getType()).getShape();
  if (failed(lowering->analyze()) || lowering->iterationShape() != resultShape ||
      (lowering->hasReduce() && resultShape.back() > e.target.matmulMaxN))
    return std::nullopt;
  lowering->createBuffers();
  Value arg = fusion.getBody().front().getArgument(use.getOperandNumber());
  e.markLowered(fusion);
  MatmulEpilogue epilogue;
  epilogue.emit = [lowering, arg](int64_t row0, int64_t rows, int64_t col0, int64_t cols,
                                  Value tile) {
    DenseMap<Value, Value> preset;
    preset[arg] = tile;
    return lowering->emitTile(row0, rows, col0, cols, preset);
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

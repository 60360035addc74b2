// Tiling of elementwise ops: unary -> Scalar-engine activation, binary -> Vector-engine
// tensor_tensor (tensor_scalar when one side is a constant), cast -> Vector-engine copy.
#include "compiler/Conversion/NTorchToNTile/RowTiling.h"
#include "dialects/NTorch/IR/NTorchOps.h"

#include "mlir/IR/Matchers.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using neuron::ntile::MemSpace;

namespace neuron::compiler {

static RankedTensorType tensorType(Value v) { return cast<RankedTensorType>(v.getType()); }

/// Emits `result = compute(inputs)` as a loop nest over tiles: each input is loaded
/// (broadcast through its access pattern) into an SBUF tile, `compute` writes the result
/// tile, which is stored to the result's HBM buffer. With `rowOperands` (compute ops that
/// broadcast a [P, 1] operand along the row), an input that is the same along the columns
/// loads one value per partition: a DMA broadcast along the row would move one element per
/// descriptor.
static void emitTiled(TileEmitter &e, Location loc, ArrayRef<Value> inputs, Value result,
                      const std::function<void(ArrayRef<Value>, Value)> &compute,
                      bool rowOperands = false) {
  RankedTensorType rt = tensorType(result);
  Value out = e.createResultBuffer(result, loc);
  int64_t widest = ntile::getElementBytes(rt.getElementType());
  SmallVector<SmallVector<int64_t>> strides;
  for (Value in : inputs) {
    widest = std::max(widest, ntile::getElementBytes(tensorType(in).getElementType()));
    strides.push_back(broadcastStrides(tensorType(in).getShape(), rt.getShape()));
  }
  strides.push_back(contiguousStrides(rt.getShape()));
  RowTiling tiling(rt.getShape(), strides, e.target.partitions);
  tiling.emit(e, loc, e.maxTileFree(widest),
              [&](const RowBlock &block, const Offset &col0, int64_t cols) {
                int64_t rows = block.rows();
                SmallVector<Value> tiles;
                for (auto [i, in] : llvm::enumerate(inputs)) {
                  bool row = rowOperands && cols > 1 && tiling.strides(i).back() == 0;
                  Value tile = e.allocTile(loc, rows, row ? 1 : cols,
                                           tensorType(in).getElementType(), MemSpace::sbuf);
                  loadBlock(e, loc, e.buffer(in), 0, tiling.strides(i), block,
                            row ? Offset(0) : col0, row ? 1 : cols, tile);
                  tiles.push_back(tile);
                }
                Value outTile = e.allocTile(loc, rows, cols, rt.getElementType(), MemSpace::sbuf);
                compute(tiles, outTile);
                storeBlock(e, loc, outTile, out, tiling.strides(inputs.size()), block, col0, cols);
              });
}

static LogicalResult lowerUnary(TileEmitter &e, ntorch::UnaryOp op) {
  ActFunc fn = toActFunc(op.getFn());
  emitTiled(e, op.getLoc(), {op.getInput()}, op.getResult(), [&](ArrayRef<Value> in, Value out) {
    e.b.create<ntile::ActivationOp>(op.getLoc(), fn, in[0], out, APFloat(1.0), APFloat(0.0));
  });
  return success();
}

static LogicalResult lowerBinary(TileEmitter &e, ntorch::BinaryOp op) {
  AluOp alu = toAluOp(op.getFn());
  Location loc = op.getLoc();
  auto resultShape = tensorType(op.getResult()).getShape();
  // A constant operand that the other operand covers becomes an immediate.
  for (bool lhsConst : {false, true}) {
    Value c = lhsConst ? op.getLhs() : op.getRhs();
    Value t = lhsConst ? op.getRhs() : op.getLhs();
    std::optional<double> value = splatValue(c);
    if (!value || tensorType(t).getShape() != resultShape)
      continue;
    emitTiled(e, loc, {t}, op.getResult(), [&](ArrayRef<Value> in, Value out) {
      e.b.create<ntile::TensorScalarOp>(loc, alu, in[0], APFloat(*value), out,
                                        lhsConst);
    });
    return success();
  }
  emitTiled(e, loc, {op.getLhs(), op.getRhs()}, op.getResult(),
            [&](ArrayRef<Value> in, Value out) {
              e.b.create<ntile::TensorTensorOp>(loc, alu, in[0], in[1], out);
            },
            /*rowOperands=*/true);
  return success();
}

static LogicalResult lowerCast(TileEmitter &e, ntorch::CastOp op) {
  emitTiled(e, op.getLoc(), {op.getInput()}, op.getResult(), [&](ArrayRef<Value> in, Value out) {
    e.b.create<ntile::CopyOp>(op.getLoc(), in[0], out);
  });
  return success();
}

static LogicalResult lowerSelect(TileEmitter &e, ntorch::SelectOp op) {
  emitTiled(e, op.getLoc(), {op.getCondition(), op.getLhs(), op.getRhs()}, op.getResult(),
            [&](ArrayRef<Value> in, Value out) {
              e.b.create<ntile::SelectOp>(op.getLoc(), in[0], in[1], in[2], out);
            },
            /*rowOperands=*/true);
  return success();
}

LogicalResult lowerElementwise(TileEmitter &e, Operation *op) {
  return llvm::TypeSwitch<Operation *, LogicalResult>(op)
      .Case([&](ntorch::UnaryOp u) { return lowerUnary(e, u); })
      .Case([&](ntorch::BinaryOp b) { return lowerBinary(e, b); })
      .Case([&](ntorch::CastOp c) { return lowerCast(e, c); })
      .Case([&](ntorch::SelectOp s) { return lowerSelect(e, s); })
      .Default([](Operation *) { return failure(); });
}

} // namespace neuron::compiler

// Lowering of data movement: reshape aliases HBM, permute and broadcast copy through
// DMA access patterns (a permute that moves the innermost dim goes through SBUF and the PE
// array's transpose: Transpose.cpp), constants become constant HBM buffers, collectives run on the
// collective engine from HBM to HBM.
#include "compiler/Conversion/NTorchToNTile/TileEmitter.h"
#include "dialects/NTorch/IR/NTorchOps.h"

#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using neuron::ntile::MemSpace;

namespace neuron::compiler {

static RankedTensorType tensorType(Value v) { return cast<RankedTensorType>(v.getType()); }

static MemRefType hbmType(RankedTensorType t) {
  return ntile::getBufferType(t.getShape(), t.getElementType(), MemSpace::hbm);
}

static LogicalResult lowerSlice(TileEmitter &e, ntorch::SliceOp op) {
  auto in = tensorType(op.getInput()), res = tensorType(op.getResult());
  SmallVector<int64_t> inStrides = contiguousStrides(in.getShape()), strides;
  int64_t offset = 0;
  for (int64_t d = 0; d < in.getRank(); ++d) {
    offset += op.getOffsets()[d] * inStrides[d];
    strides.push_back(op.getStrides()[d] * inStrides[d]);
  }
  Value out = e.createResultBuffer(op.getResult(), op.getLoc());
  if (res.getNumElements() > 0)
    e.copyStrided(op.getLoc(), e.buffer(op.getInput()), offset, strides, out, res.getShape());
  return success();
}

/// Zero-fill, then a strided copy of the input into the window.
static LogicalResult lowerScatterWindow(TileEmitter &e, ntorch::ScatterWindowOp op) {
  auto in = tensorType(op.getInput()), res = tensorType(op.getResult());
  Location loc = op.getLoc();
  SmallVector<int64_t> outStrides = contiguousStrides(res.getShape()), strides;
  Value out = e.createResultBuffer(op.getResult(), loc);
  SmallVector<int64_t> zero(res.getRank(), 0);
  e.fillPadded(loc, out, zero, out, zero, SmallVector<int64_t>(res.getShape()), 0.0);
  int64_t offset = 0;
  for (int64_t d = 0; d < res.getRank(); ++d) {
    offset += op.getOffsets()[d] * outStrides[d];
    strides.push_back(op.getStrides()[d] * outStrides[d]);
  }
  if (in.getNumElements() > 0)
    e.copyStrided(loc, e.buffer(op.getInput()), 0, contiguousStrides(in.getShape()), out, offset,
                  strides, in.getShape());
  return success();
}

/// One strided read of the input's elements.
static LogicalResult lowerAsStrided(TileEmitter &e, ntorch::AsStridedOp op) {
  auto res = tensorType(op.getResult());
  Value out = e.createResultBuffer(op.getResult(), op.getLoc());
  if (res.getNumElements() > 0)
    e.copyStrided(op.getLoc(), e.buffer(op.getInput()), op.getOffset(), op.getStrides(), out,
                  res.getShape());
  return success();
}

/// A copy of the input, then a strided copy of src into the window.
static LogicalResult lowerInsertStrided(TileEmitter &e, ntorch::InsertStridedOp op) {
  auto in = tensorType(op.getInput()), src = tensorType(op.getSrc());
  Location loc = op.getLoc();
  Value out = e.createResultBuffer(op.getResult(), loc);
  if (in.getNumElements() > 0)
    e.copyStrided(loc, e.buffer(op.getInput()), 0, contiguousStrides(in.getShape()), out,
                  in.getShape());
  if (src.getNumElements() > 0)
    e.copyStrided(loc, e.buffer(op.getSrc()), 0, contiguousStrides(src.getShape()), out,
                  op.getOffset(), op.getStrides(), src.getShape());
  return success();
}

static LogicalResult lowerConcat(TileEmitter &e, ntorch::ConcatOp op) {
  auto res = tensorType(op.getResult());
  SmallVector<int64_t> outStrides = contiguousStrides(res.getShape());
  Value out = e.createResultBuffer(op.getResult(), op.getLoc());
  int64_t start = 0, dim = op.getDim();
  for (Value v : op.getInputs()) {
    auto t = tensorType(v);
    if (t.getNumElements() > 0)
      e.copyStrided(op.getLoc(), e.buffer(v), 0, contiguousStrides(t.getShape()), out,
                    start * outStrides[dim], outStrides, t.getShape());
    start += t.getDimSize(dim);
  }
  return success();
}

static LogicalResult lowerPad(TileEmitter &e, ntorch::PadOp op) {
  Value out = e.createResultBuffer(op.getResult(), op.getLoc());
  e.fillPadded(op.getLoc(), e.buffer(op.getInput()), tensorType(op.getInput()).getShape(), out,
               op.getLow(), op.getHigh(), op.getValue().convertToDouble());
  return success();
}

/// Rows of the table by index, 128 indices at a time (a loop), through an indirect DMA.
static LogicalResult lowerGatherRows(TileEmitter &e, ntorch::GatherRowsOp op) {
  auto table = tensorType(op.getTable()), idx = tensorType(op.getIndices());
  Location loc = op.getLoc();
  int64_t n = idx.getNumElements(), width = table.getDimSize(1);
  Value out = e.createResultBuffer(op.getResult(), loc);
  int64_t maxFree = e.maxTileFree(ntile::getElementBytes(table.getElementType()));
  int64_t P = e.target.partitions;
  e.tiled(loc, n, P, [&](const Offset &block, int64_t pr) {
    Offset r0 = block * P;
    Value ids = e.allocTile(loc, pr, 1, idx.getElementType(), MemSpace::sbuf);
    e.dma(loc, e.buffer(op.getIndices()), e.pattern(r0, {{1, pr}, {1, 1}}), ids,
          e.pattern(0, {{1, pr}, {1, 1}}));
    for (int64_t c0 = 0; c0 < width; c0 += maxFree) {
      int64_t fc = std::min(maxFree, width - c0);
      Value tile = e.allocTile(loc, pr, fc, table.getElementType(), MemSpace::sbuf);
      e.b.create<ntile::GatherOp>(loc, e.buffer(op.getTable()), ids, c0, tile);
      e.dma(loc, tile, e.pattern(0, {{fc, pr}, {1, fc}}), out,
            e.pattern(r0 * width + c0, {{width, pr}, {1, fc}}));
    }
  });
  return success();
}

/// The input copied, then the rows of values written (or combined) at their indices,
/// 128 at a time in index order, through indirect DMA scatters: DMAs alone, one
/// descriptor per row, whatever the number of table rows.
static LogicalResult lowerScatterRows(TileEmitter &e, ntorch::ScatterRowsOp op) {
  auto in = tensorType(op.getInput()), idx = tensorType(op.getIndices());
  Location loc = op.getLoc();
  int64_t n = idx.getNumElements(), width = in.getDimSize(1);
  Value out = e.createResultBuffer(op.getResult(), loc);
  if (in.getNumElements() > 0)
    e.copyStrided(loc, e.buffer(op.getInput()), 0, contiguousStrides(in.getShape()), out,
                  in.getShape());
  if (n == 0 || width == 0)
    return success();
  int64_t maxFree = e.maxTileFree(ntile::getElementBytes(in.getElementType()));
  int64_t P = e.target.partitions;
  e.tiled(loc, n, P, [&](const Offset &block, int64_t pr) {
    Offset r0 = block * P;
    Value ids = e.allocTile(loc, pr, 1, idx.getElementType(), MemSpace::sbuf);
    e.dma(loc, e.buffer(op.getIndices()), e.pattern(r0, {{1, pr}, {1, 1}}), ids,
          e.pattern(0, {{1, pr}, {1, 1}}));
    for (int64_t c0 = 0; c0 < width; c0 += maxFree) {
      int64_t fc = std::min(maxFree, width - c0);
      Value tile = e.allocTile(loc, pr, fc, in.getElementType(), MemSpace::sbuf);
      e.dma(loc, e.buffer(op.getValues()), e.pattern(r0 * width + c0, {{width, pr}, {1, fc}}),
            tile, e.pattern(0, {{fc, pr}, {1, fc}}));
      e.b.create<ntile::ScatterOp>(loc, tile, out, ids, c0, op.getAccumulateAttr());
    }
  });
  return success();
}

/// Tiles of the GpSimd engine's generator stored row by row: a loop over full blocks of
/// 128 rows of `width`, then the last rows and the last partial row. Each ntile.random
/// (instruction) gets its own stream, 16 per ntorch op.
static LogicalResult lowerRandom(TileEmitter &e, ntorch::RandomOp op) {
  auto res = tensorType(op.getResult());
  Location loc = op.getLoc();
  Type et = res.getElementType();
  int64_t n = res.getNumElements();
  int64_t width = std::min(n, e.maxTileFree(ntile::getElementBytes(et)));
  Value out = e.createResultBuffer(op.getResult(), loc);
  if (n == 0)
    return success();
  int64_t rows = n / width, rest = n % width, stream = op.getStream() * 16;
  auto fill = [&](const Offset &at, int64_t partitions, int64_t free) {
    Value tile = e.allocTile(loc, partitions, free, et, MemSpace::sbuf);
    e.b.create<ntile::RandomOp>(loc, stream++, tile);
    e.dma(loc, tile, e.pattern(0, {{free, partitions}, {1, free}}), out,
          e.pattern(at, {{free, partitions}, {1, free}}));
  };
  e.tiled(loc, rows, e.target.partitions, [&](const Offset &block, int64_t pr) {
    fill(block * (e.target.partitions * width), pr, width);
  });
  if (rest > 0)
    fill(Offset(rows * width), 1, rest);
  return success();
}

/// One instruction of the collective engine, HBM to HBM.
static LogicalResult lowerCollective(TileEmitter &e, ntorch::CollectiveOp op) {
  Value out = e.createResultBuffer(op.getResult(), op.getLoc());
  e.b.create<ntile::CollectiveOp>(op.getLoc(), op.getKindAttr(), op.getReduceAttr(),
                                  op.getGroupAttr(), op.getGroupSizeAttr(),
                                  e.buffer(op.getInput()), out);
  return success();
}

LogicalResult lowerDataMovement(TileEmitter &e, Operation *op) {
  return llvm::TypeSwitch<Operation *, LogicalResult>(op)
      .Case([&](ntorch::ConstantOp c) {
        auto t = tensorType(c.getResult());
        e.setBuffer(c.getResult(), e.b.create<ntile::ConstantOp>(c.getLoc(), hbmType(t),
                                                                 c.getValue()));
        return success();
      })
      .Case([&](ntorch::ReshapeOp r) {
        // HBM tensors are contiguous, so a reshape is the same bytes.
        e.setBuffer(r.getResult(),
                    e.b.create<ntile::ReinterpretOp>(r.getLoc(), hbmType(tensorType(r.getResult())),
                                                     e.buffer(r.getInput())));
        return success();
      })
      .Case([&](ntorch::PermuteOp p) {
        if (lowerTransposingPermute(e, p))
          return success();
        auto in = tensorType(p.getInput()), res = tensorType(p.getResult());
        SmallVector<int64_t> inStrides = contiguousStrides(in.getShape()), strides;
        for (int64_t d : p.getDims())
          strides.push_back(inStrides[d]);
        Value out = e.createResultBuffer(p.getResult(), p.getLoc());
        e.copyStrided(p.getLoc(), e.buffer(p.getInput()), 0, strides, out, res.getShape());
        return success();
      })
      .Case([&](ntorch::BroadcastOp b) {
        auto in = tensorType(b.getInput()), res = tensorType(b.getResult());
        Value out = e.createResultBuffer(b.getResult(), b.getLoc());
        e.copyStrided(b.getLoc(), e.buffer(b.getInput()), 0,
                      broadcastStrides(in.getShape(), res.getShape()), out, res.getShape());
        return success();
      })
      .Case([&](ntorch::SliceOp s) { return lowerSlice(e, s); })
      .Case([&](ntorch::ConcatOp c) { return lowerConcat(e, c); })
      .Case([&](ntorch::ScatterWindowOp w) { return lowerScatterWindow(e, w); })
      .Case([&](ntorch::AsStridedOp a) { return lowerAsStrided(e, a); })
      .Case([&](ntorch::InsertStridedOp i) { return lowerInsertStrided(e, i); })
      .Case([&](ntorch::PadOp p) { return lowerPad(e, p); })
      .Case([&](ntorch::GatherRowsOp g) { return lowerGatherRows(e, g); })
      .Case([&](ntorch::ScatterRowsOp s) { return lowerScatterRows(e, s); })
      .Case([&](ntorch::CollectiveOp c) { return lowerCollective(e, c); })
      .Case([&](ntorch::RandomOp r) { return lowerRandom(e, r); })
      .Default([](Operation *) { return failure(); });
}

} // namespace neuron::compiler

// Tiling of reductions over trailing dims: rows on partitions, reduced elements on the
// free dimension, one Vector-engine reduce per chunk and an elementwise combine of chunks.
#include "compiler/Conversion/NTorchToNTile/TileEmitter.h"
#include "dialects/NTorch/IR/NTorchOps.h"

using namespace mlir;
using neuron::ntile::MemSpace;

namespace neuron::compiler {

LogicalResult lowerReduction(TileEmitter &e, Operation *operation) {
  auto op = dyn_cast<ntorch::ReduceOp>(operation);
  if (!op)
    return failure();
  auto in = cast<RankedTensorType>(op.getInput().getType());
  auto res = cast<RankedTensorType>(op.getType());
  int64_t n = op.getDims().size(), rank = in.getRank();
  for (auto [i, d] : llvm::enumerate(op.getDims()))
    if (d != rank - n + (int64_t)i || op.getKeepdim())
      return op.emitOpError("reduces non-trailing dims; run canonicalize first");
  int64_t reduced = 1;
  for (int64_t d = rank - n; d < rank; ++d)
    reduced *= in.getDimSize(d);
  int64_t rows = in.getNumElements() / std::max<int64_t>(reduced, 1);
  Location loc = op.getLoc();
  Value source = e.buffer(op.getInput());
  Value out = e.createResultBuffer(op.getResult(), loc);
  AluOp alu = toAluOp(op.getFn());
  // Partial results accumulate in fp32 (as PyTorch accumulates half types).
  Type accType = isa<FloatType>(res.getElementType()) ? (Type)e.b.getF32Type() : res.getElementType();
  int64_t maxFree = e.maxTileFree(std::max<int64_t>(ntile::getElementBytes(in.getElementType()), 4));
  SmallVector<int64_t> shape2d = {rows, reduced};
  for (int64_t r0 = 0; r0 < rows; r0 += e.target.partitions) {
    int64_t pr = std::min<int64_t>(e.target.partitions, rows - r0);
    Value acc;
    for (int64_t c0 = 0; c0 < reduced; c0 += maxFree) {
      int64_t fc = std::min(maxFree, reduced - c0);
      Value tile = e.allocTile(loc, pr, fc, in.getElementType(), MemSpace::sbuf);
      e.loadRows(loc, source, 0, contiguousStrides(shape2d), shape2d, r0, pr, c0, fc, tile);
      Value partial = e.allocTile(loc, pr, 1, accType, MemSpace::sbuf);
      e.b.create<ntile::ReduceOp>(loc, alu, tile, partial);
      if (acc) {
        Value sum = e.allocTile(loc, pr, 1, accType, MemSpace::sbuf);
        e.b.create<ntile::TensorTensorOp>(loc, alu, acc, partial, sum);
        partial = sum;
      }
      acc = partial;
    }
    if (reduced == 0)
      return op.emitOpError("reduces an empty dimension");
    Value result = acc;
    if (accType != res.getElementType()) {
      result = e.allocTile(loc, pr, 1, res.getElementType(), MemSpace::sbuf);
      e.b.create<ntile::CopyOp>(loc, acc, result);
    }
    e.storeRows(loc, result, out, {rows, 1}, r0, pr, 0, 1);
  }
  return success();
}

} // namespace neuron::compiler

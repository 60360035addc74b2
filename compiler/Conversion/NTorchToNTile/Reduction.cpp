// Tiling of reductions over trailing dims: rows on partitions, reduced elements on the
// free dimension, one Vector-engine reduce per chunk and an elementwise combine of chunks
// into an accumulator tile, as loops over row blocks and chunks.
#include "compiler/Conversion/NTorchToNTile/RowTiling.h"
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
  if (reduced == 0)
    return op.emitOpError("reduces an empty dimension");
  // Rows are the kept dims (merged when contiguous); one reduced row is contiguous.
  SmallVector<int64_t> shape(in.getShape().take_front(rank - n));
  shape.push_back(reduced);
  SmallVector<int64_t> inStrides = contiguousStrides(shape), outStrides = inStrides;
  for (int64_t &s : outStrides)
    s /= reduced;
  outStrides.back() = 0;
  RowTiling tiling(shape, {inStrides, outStrides}, e.target.partitions);
  // Rows only: the chunks of a row are the inner loop, accumulated below.
  tiling.emit(e, loc, reduced,
              [&](const RowBlock &block, const Offset &, int64_t) {
    int64_t pr = block.rows();
    auto reduceChunk = [&](const Offset &chunk, int64_t fc) {
      Value tile = e.allocTile(loc, pr, fc, in.getElementType(), MemSpace::sbuf);
      loadBlock(e, loc, source, 0, tiling.strides(0), block, chunk * maxFree, fc, tile);
      Value partial = e.allocTile(loc, pr, 1, accType, MemSpace::sbuf);
      e.b.create<ntile::ReduceOp>(loc, alu, tile, partial);
      return partial;
    };
    // The first chunk starts the accumulator; the others combine into it.
    Value acc = reduceChunk(0, std::min(maxFree, reduced));
    int64_t full = reduced / maxFree;
    e.loop(loc, full - 1, [&](const Offset &iv) {
      e.b.create<ntile::TensorTensorOp>(loc, alu, acc, reduceChunk(iv + Offset(1), maxFree), acc);
    });
    if (full >= 1 && reduced % maxFree)
      e.b.create<ntile::TensorTensorOp>(loc, alu, acc, reduceChunk(full, reduced % maxFree), acc);
    Value result = acc;
    if (accType != res.getElementType()) {
      result = e.allocTile(loc, pr, 1, res.getElementType(), MemSpace::sbuf);
      e.b.create<ntile::CopyOp>(loc, acc, result);
    }
    storeBlock(e, loc, result, out, tiling.strides(1), block, 0, 1);
  });
  return success();
}

} // namespace neuron::compiler

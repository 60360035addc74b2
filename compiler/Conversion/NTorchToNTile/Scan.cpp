// Tiling of ntorch.scan: rows on partitions, the scanned dim on the free dimension, one
// Vector-engine tensor_tensor_scan per chunk of a row, in fp32. Each chunk's scan starts one
// column early, on a column that gives back the scan so far (the carry, kept in the fp32
// tile of ones the scan multiplies by; eager's initial value before the first chunk), so the running
// value continues exactly where the previous chunk stopped: eager's sequential loop, one
// rounding per element.
#include "compiler/Conversion/NTorchToNTile/RowTiling.h"
#include "dialects/NTorch/IR/NTorchOps.h"

using namespace mlir;
using neuron::ntile::MemSpace;

namespace neuron::compiler {

LogicalResult lowerScan(TileEmitter &e, Operation *operation) {
  auto op = dyn_cast<ntorch::ScanOp>(operation);
  if (!op)
    return failure();
  auto in = cast<RankedTensorType>(op.getInput().getType());
  Type resultType = cast<RankedTensorType>(op.getType()).getElementType();
  Type inType = in.getElementType(), f32 = e.b.getF32Type();
  const int64_t rows = in.getDimSize(0), length = in.getDimSize(1);
  Location loc = op.getLoc();
  Value source = e.buffer(op.getInput());
  Value out = e.createResultBuffer(op.getResult(), loc);
  if (rows == 0 || length == 0)
    return success();
  const bool sum = op.getFn() == ntorch::BinaryFn::add;
  // A chunk and its leading column fill one fp32 tile.
  const int64_t chunk = std::min(length, e.maxTileFree(4) - 1);
  SmallVector<int64_t> shape = {rows, length};
  SmallVector<int64_t> strides = contiguousStrides(shape);
  RowTiling tiling(shape, {strides, strides}, e.target.partitions);
  auto splat = [&](Type type, double v) {
    auto t = RankedTensorType::get({1}, type);
    APFloat value(v);
    bool lost;
    value.convert(cast<FloatType>(type).getFloatSemantics(), APFloat::rmNearestTiesToEven, &lost);
    return e.constant(loc, DenseElementsAttr::get(t, value));
  };
  // The running value starts as eager's loop starts it: +0 for a sum (so -0 + ... gives +0,
  // as 0 + x does), 1 for a product.
  Value identity = splat(f32, sum ? 0.0 : 1.0), ones = splat(f32, 1.0);
  // The input tile's leading column, which the scan combines with the carry to give it back:
  // -0 for a sum (carry * 1 + -0), 1 for a product (1 * 1 * carry).
  Value lead = splat(inType, sum ? -0.0 : 1.0);
  auto columns = [&](Value tile, int64_t first, int64_t count) -> Value {
    auto type = cast<MemRefType>(tile.getType());
    int64_t width = type.getDimSize(1);
    if (first == 0 && count == width)
      return tile;
    return e.b.create<ntile::ViewOp>(
        loc, ntile::getBufferType({type.getDimSize(0), count}, type.getElementType(), MemSpace::sbuf),
        tile, e.pattern(Offset(first), {{width, type.getDimSize(0)}, {1, count}}));
  };
  tiling.emit(e, loc, length, [&](const RowBlock &block, const Offset &, int64_t) {
    const int64_t pr = block.rows();
    SmallVector<int64_t> broadcast(block.count.size() + 1, 0);
    // Ones, with the scan so far in column 0 (the identity before the first chunk).
    Value carrier = e.allocTile(loc, pr, chunk + 1, f32, MemSpace::sbuf);
    loadBlock(e, loc, ones, 0, broadcast, block, 0, chunk + 1, carrier);
    loadBlock(e, loc, identity, 0, broadcast, block, 0, 1, columns(carrier, 0, 1));
    e.tiled(loc, length, chunk, [&](const Offset &index, int64_t size) {
      Value x = e.allocTile(loc, pr, size + 1, inType, MemSpace::sbuf);
      loadBlock(e, loc, lead, 0, broadcast, block, 0, 1, columns(x, 0, 1));
      loadBlock(e, loc, source, 0, tiling.strides(0), block, index * chunk, size,
                columns(x, 1, size));
      Value y = e.allocTile(loc, pr, size + 1, f32, MemSpace::sbuf);
      Value c = columns(carrier, 0, size + 1);
      // A sum: y[i] = c[i] * y[i - 1] + x[i]; a product: y[i] = x[i] * y[i - 1] * c[i]. The
      // initial value 1 and column 0 give y[0] = the carry in both.
      if (sum)
        e.b.create<ntile::TensorTensorScanOp>(loc, AluOp::mul, AluOp::add, c, x, APFloat(1.0), Value(), y);
      else
        e.b.create<ntile::TensorTensorScanOp>(loc, AluOp::mul, AluOp::mul, x, c, APFloat(1.0), Value(), y);
      e.b.create<ntile::CopyOp>(loc, columns(y, size, 1), columns(carrier, 0, 1));
      Value result = columns(y, 1, size);
      if (resultType != f32) {
        Value rounded = e.allocTile(loc, pr, size, resultType, MemSpace::sbuf);
        e.b.create<ntile::CopyOp>(loc, result, rounded);
        result = rounded;
      }
      storeBlock(e, loc, result, out, tiling.strides(1), block, index * chunk, size);
    });
  });
  return success();
}

} // namespace neuron::compiler

// Tiling helpers: HBM buffers for tensors, tile allocation and DMA access patterns.
#include "compiler/Conversion/NTorchToNTile/TileEmitter.h"

#include "compiler/Conversion/NTorchToNTile/RowTiling.h"

#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/Matchers.h"
#include "llvm/Support/ErrorHandling.h"

using namespace mlir;
using neuron::ntile::MemSpace;

namespace neuron::compiler {

/// Bytes per partition of one elementwise tile: big enough to amortize the fixed
/// cost of an instruction, small enough to keep several tiles in flight.
static constexpr int64_t kTileBytesPerPartition = 8192;
/// Elements per partition of one HBM -> HBM copy chunk.
static constexpr int64_t kCopyChunk = 16384;
/// Bytes per partition row of a contiguous copy with short rows, flattened (HARDWARE.md:
/// DMA descriptors of 2 KiB or more approach the queue's bandwidth).
static constexpr int64_t kFlatCopyRowBytes = 2048;

std::optional<double> splatValue(Value v) {
  DenseElementsAttr attr;
  if (!matchPattern(v, m_Constant(&attr)) || !attr.isSplat())
    return std::nullopt;
  Type et = attr.getElementType();
  if (isa<FloatType>(et))
    return attr.getSplatValue<APFloat>().convertToDouble();
  if (et.isInteger(1))
    return attr.getSplatValue<bool>() ? 1.0 : 0.0;
  // An immediate carries the value: ui8 200 is 200 (zero-extended), i8 200 is -56.
  APInt value = attr.getSplatValue<APInt>();
  return et.isUnsignedInteger() ? (double)value.getZExtValue() : (double)value.getSExtValue();
}

// Every ntorch function names an engine function of the same name (IsaOperands.def); a new
// ntorch function without one stops here rather than lowering to the wrong instruction.
ActFunc toActFunc(ntorch::UnaryFn fn) {
  if (std::optional<ActFunc> a = symbolizeActFunc(ntorch::stringifyUnaryFn(fn)))
    return *a;
  llvm::report_fatal_error(llvm::Twine("ntorch unary function ") + ntorch::stringifyUnaryFn(fn) +
                           " has no Scalar-engine function (runtime/program/IsaOperands.def)");
}

AluOp toAluOp(ntorch::BinaryFn fn) {
  if (std::optional<AluOp> a = symbolizeAluOp(ntorch::stringifyBinaryFn(fn)))
    return *a;
  llvm::report_fatal_error(llvm::Twine("ntorch binary function ") +
                           ntorch::stringifyBinaryFn(fn) +
                           " has no ALU op (runtime/program/IsaOperands.def)");
}

AluOp toAluOp(ntorch::ReduceFn fn) {
  switch (fn) {
  case ntorch::ReduceFn::sum:
    return AluOp::add;
  case ntorch::ReduceFn::max:
    return AluOp::max;
  case ntorch::ReduceFn::min:
    return AluOp::min;
  }
  llvm_unreachable("unknown reduction");
}

SmallVector<int64_t> contiguousStrides(ArrayRef<int64_t> shape) {
  SmallVector<int64_t> strides(shape.size(), 1);
  for (int64_t i = (int64_t)shape.size() - 2; i >= 0; --i)
    strides[i] = strides[i + 1] * shape[i + 1];
  return strides;
}

SmallVector<int64_t> broadcastStrides(ArrayRef<int64_t> from, ArrayRef<int64_t> to) {
  SmallVector<int64_t> fromStrides = contiguousStrides(from);
  SmallVector<int64_t> strides(to.size(), 0);
  size_t lead = to.size() - from.size();
  for (size_t i = 0; i < from.size(); ++i)
    strides[lead + i] = (from[i] == 1 && to[lead + i] != 1) ? 0 : fromStrides[i];
  return strides;
}

/// Shapes of rank 0 are tiled as [1].
static SmallVector<int64_t> atLeast1D(ArrayRef<int64_t> shape) {
  return shape.empty() ? SmallVector<int64_t>{1} : SmallVector<int64_t>(shape);
}

Value TileEmitter::createResultBuffer(Value tensor, Location loc) {
  if (Value out = state.outputs.lookup(tensor)) {
    state.buffers[tensor] = out;
    return out;
  }
  auto type = cast<RankedTensorType>(tensor.getType());
  Value buf = b.create<memref::AllocOp>(
      loc, ntile::getBufferType(type.getShape(), type.getElementType(), MemSpace::hbm));
  state.buffers[tensor] = buf;
  return buf;
}

Value TileEmitter::allocTile(Location loc, int64_t partitions, int64_t free, Type elementType,
                             MemSpace space) {
  return b.create<memref::AllocOp>(loc,
                                   ntile::getBufferType({partitions, free}, elementType, space));
}

ntile::AccessPatternAttr TileEmitter::pattern(const Offset &offset, ArrayRef<Dim> dims) {
  SmallVector<int64_t> flat;
  for (Dim d : dims)
    flat.append({d.size > 1 ? d.stride : 1, d.size});
  SmallVector<int64_t> terms;
  for (size_t i = 0; i < offset.terms.size(); i += 3)
    if (offset.terms[i + 1] != 0)
      terms.append({offset.terms[i], offset.terms[i + 1], offset.terms[i + 2]});
  return ntile::AccessPatternAttr::get(b.getContext(), offset.base, flat, terms);
}

void TileEmitter::loop(Location loc, int64_t count, function_ref<void(const Offset &)> body,
                       bool keepSingle) {
  if (count <= 0)
    return;
  if (count == 1 && !keepSingle) {
    body(Offset(0));
    return;
  }
  auto op = b.create<ntile::LoopOp>(loc, count);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(&op.getBody().front());
  Offset iv;
  iv.terms = {loopDepth, 1, 0};
  ++loopDepth;
  body(iv);
  --loopDepth;
}

void TileEmitter::accumulateOver(
    Location loc, ArrayRef<std::pair<int64_t, int64_t>> dims,
    function_ref<void(ArrayRef<Offset>, ArrayRef<int64_t>, bool)> fn, bool peelFirst) {
  SmallVector<Offset> index(dims.size());
  SmallVector<int64_t> size(dims.size());
  std::function<void(size_t, bool)> nest = [&](size_t d, bool first) {
    if (d == dims.size()) {
      fn(index, size, first);
      return;
    }
    auto [extent, tile] = dims[d];
    int64_t full = extent / tile, rest = extent % tile;
    auto at = [&](const Offset &i, int64_t n, bool f) {
      index[d] = i;
      size[d] = n;
      nest(d + 1, f);
    };
    if (first) { // peel index 0 off the loop
      at(Offset(0), full ? tile : rest, true);
      loop(loc, full - 1, [&](const Offset &iv) { at(iv + Offset(1), tile, false); });
      if (full && rest)
        at(Offset(full), rest, false);
      return;
    }
    loop(loc, full, [&](const Offset &iv) { at(iv, tile, false); });
    if (rest)
      at(Offset(full), rest, false);
  };
  nest(0, peelFirst);
}

void TileEmitter::tiled(Location loc, int64_t extent, int64_t tile,
                        function_ref<void(const Offset &, int64_t)> fn) {
  if (extent <= 0)
    return; // an empty tensor: nothing to move or compute
  assert(tile > 0 && "a tile of a non-empty extent has elements");
  int64_t full = extent / tile;
  if (full > 0)
    loop(loc, full, [&](const Offset &iv) { fn(iv, tile); });
  if (extent % tile)
    fn(Offset(full), extent % tile);
}

ntile::DmaOp TileEmitter::dma(Location loc, Value source, ntile::AccessPatternAttr sourceAp,
                              Value target, ntile::AccessPatternAttr targetAp) {
  return b.create<ntile::DmaOp>(loc, source, sourceAp, target, targetAp);
}

int64_t TileEmitter::maxTileFree(int64_t bytes) const { return kTileBytesPerPartition / bytes; }

void TileEmitter::copyStrided(Location loc, Value source, int64_t sourceOffset,
                              ArrayRef<int64_t> strides, Value target, ArrayRef<int64_t> shape) {
  copyStrided(loc, source, sourceOffset, strides, target, 0,
              contiguousStrides(atLeast1D(shape)), shape);
}

void TileEmitter::copyStrided(Location loc, Value source, int64_t sourceOffset,
                              ArrayRef<int64_t> sourceStrides, Value target, int64_t targetOffset,
                              ArrayRef<int64_t> targetStrides, ArrayRef<int64_t> shape) {
  auto norm = [](ArrayRef<int64_t> st) {
    return st.empty() ? SmallVector<int64_t>{0} : SmallVector<int64_t>(st);
  };
  // A copy of contiguous bytes whose rows are short (such as [N, 1]) is the same bytes as
  // rows of 2 KiB: copied that way, each DMA moves 128 such rows, not 128 short ones.
  int64_t numel = 1;
  for (int64_t d : shape)
    numel *= d;
  int64_t bytes = ntile::getElementBytes(cast<MemRefType>(target.getType()).getElementType());
  int64_t row = std::max<int64_t>(512, kFlatCopyRowBytes / bytes);
  auto contiguous = [&](ArrayRef<int64_t> st) {
    SmallVector<int64_t> want = contiguousStrides(atLeast1D(shape));
    SmallVector<int64_t> have = norm(st);
    for (size_t d = 0; d < want.size(); ++d)
      if (atLeast1D(shape)[d] > 1 && have[d] != want[d])
        return false;
    return true;
  };
  if (!shape.empty() && shape.back() < row && numel >= row * this->target.partitions &&
      contiguous(sourceStrides) && contiguous(targetStrides)) {
    int64_t rows = numel / row, rest = numel % row;
    copyStrided(loc, source, sourceOffset, {row, 1}, target, targetOffset, {row, 1},
                {rows, row});
    if (rest > 0)
      copyStrided(loc, source, sourceOffset + rows * row, {1}, target,
                  targetOffset + rows * row, {1}, {rest});
    return;
  }
  RowTiling tiling(atLeast1D(shape), {norm(sourceStrides), norm(targetStrides)}, this->target.partitions);
  tiling.emit(*this, loc, kCopyChunk,
              [&](const RowBlock &block, const Offset &col0, int64_t cols) {
                copyBlock(*this, loc, source, sourceOffset, tiling.strides(0), target,
                          targetOffset, tiling.strides(1), block, col0, cols);
              });
}

Value TileEmitter::constant(Location loc, DenseElementsAttr value) {
  OpBuilder::InsertionGuard guard(b);
  Operation *outermost = b.getInsertionBlock()->getParentOp();
  while (isa<ntile::LoopOp>(outermost))
    outermost = outermost->getParentOp();
  if (b.getInsertionBlock()->getParentOp() != outermost) {
    Operation *loop = b.getInsertionBlock()->getParentOp();
    while (loop->getParentOp() != outermost)
      loop = loop->getParentOp();
    b.setInsertionPoint(loop);
  }
  auto type = cast<ShapedType>(value.getType());
  return b.create<ntile::ConstantOp>(
      loc, ntile::getBufferType(type.getShape(), type.getElementType(), MemSpace::hbm),
      cast<ElementsAttr>(value));
}

Value TileEmitter::allocHbm(Location loc, RankedTensorType type) {
  return b.create<memref::AllocOp>(
      loc, ntile::getBufferType(type.getShape(), type.getElementType(), MemSpace::hbm));
}

void TileEmitter::fillPadded(Location loc, Value source, ArrayRef<int64_t> shape, Value target,
                             ArrayRef<int64_t> low, ArrayRef<int64_t> high, double value) {
  Type et = cast<MemRefType>(target.getType()).getElementType();
  SmallVector<int64_t> outShape;
  for (size_t d = 0; d < shape.size(); ++d)
    outShape.push_back(shape[d] + low[d] + high[d]);
  SmallVector<int64_t> outStrides = contiguousStrides(outShape);
  auto oneType = RankedTensorType::get({1}, et);
  Value fill = b.create<ntile::ConstantOp>(loc, ntile::getBufferType({1}, et, MemSpace::hbm),
                                           cast<ElementsAttr>(ntorch::splatAttr(oneType, value)));
  copyStrided(loc, fill, 0, SmallVector<int64_t>(outShape.size(), 0), target, 0, outStrides,
              outShape);
  int64_t offset = 0, elements = 1;
  for (size_t d = 0; d < shape.size(); ++d) {
    offset += low[d] * outStrides[d];
    elements *= shape[d];
  }
  if (elements > 0)
    copyStrided(loc, source, 0, contiguousStrides(shape), target, offset, outStrides, shape);
}

} // namespace neuron::compiler

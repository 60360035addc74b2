// Tiling helpers: HBM buffers for tensors, tile allocation and DMA access patterns.
#include "compiler/Conversion/NTorchToNTile/TileEmitter.h"

#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/Matchers.h"

using namespace mlir;
using neuron::ntile::MemSpace;

namespace neuron::compiler {

/// Bytes per partition of one elementwise tile: big enough to amortize the fixed
/// cost of an instruction, small enough to keep several tiles in flight.
static constexpr int64_t kTileBytesPerPartition = 8192;
/// Elements per partition of one HBM -> HBM copy chunk.
static constexpr int64_t kCopyChunk = 16384;

std::optional<double> splatValue(Value v) {
  DenseElementsAttr attr;
  if (!matchPattern(v, m_Constant(&attr)) || !attr.isSplat())
    return std::nullopt;
  Type et = attr.getElementType();
  if (isa<FloatType>(et))
    return attr.getSplatValue<APFloat>().convertToDouble();
  if (et.isInteger(1))
    return attr.getSplatValue<bool>() ? 1.0 : 0.0;
  return (double)attr.getSplatValue<APInt>().getSExtValue();
}

ActFunc toActFunc(ntorch::UnaryFn fn) { return *symbolizeActFunc(ntorch::stringifyUnaryFn(fn)); }

AluOp toAluOp(ntorch::BinaryFn fn) { return *symbolizeAluOp(ntorch::stringifyBinaryFn(fn)); }

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
  if (Value out = outputs.lookup(tensor)) {
    buffers[tensor] = out;
    return out;
  }
  auto type = cast<RankedTensorType>(tensor.getType());
  Value buf = b.create<memref::AllocOp>(
      loc, ntile::getBufferType(type.getShape(), type.getElementType(), MemSpace::hbm));
  buffers[tensor] = buf;
  return buf;
}

Value TileEmitter::allocTile(Location loc, int64_t partitions, int64_t free, Type elementType,
                             MemSpace space) {
  return b.create<memref::AllocOp>(loc,
                                   ntile::getBufferType({partitions, free}, elementType, space));
}

ntile::AccessPatternAttr TileEmitter::pattern(int64_t offset, ArrayRef<Dim> dims) {
  SmallVector<int64_t> flat;
  for (Dim d : dims)
    flat.append({d.size > 1 ? d.stride : 1, d.size});
  return ntile::AccessPatternAttr::get(b.getContext(), offset, flat);
}

void TileEmitter::dma(Location loc, Value source, ntile::AccessPatternAttr sourceAp, Value target,
                      ntile::AccessPatternAttr targetAp) {
  b.create<ntile::DmaOp>(loc, source, sourceAp, target, targetAp);
}

int64_t TileEmitter::maxTileFree(int64_t bytes) const { return kTileBytesPerPartition / bytes; }

void TileEmitter::forEachTile(ArrayRef<int64_t> shape, int64_t maxFree,
                              const std::function<void(int64_t, int64_t, int64_t, int64_t)> &fn) {
  SmallVector<int64_t> s = atLeast1D(shape);
  int64_t cols = s.back(), rows = 1;
  for (size_t i = 0; i + 1 < s.size(); ++i)
    rows *= s[i];
  int64_t partitions = target.partitions;
  for (int64_t r = 0; r < rows; r += partitions)
    for (int64_t c = 0; c < cols; c += maxFree)
      fn(r, std::min(partitions, rows - r), c, std::min(maxFree, cols - c));
}

/// Element offsets (through `strides`) of rows [row0, row0 + rows) of `shape`
/// viewed as [rows, last dim].
static SmallVector<int64_t> rowOffsets(ArrayRef<int64_t> shape, ArrayRef<int64_t> strides,
                                       int64_t row0, int64_t rows) {
  SmallVector<int64_t> offsets;
  for (int64_t r = row0; r < row0 + rows; ++r) {
    int64_t rest = r, off = 0;
    for (int64_t d = (int64_t)shape.size() - 2; d >= 0; --d) {
      off += (rest % shape[d]) * strides[d];
      rest /= shape[d];
    }
    offsets.push_back(off);
  }
  return offsets;
}

/// Splits offsets into maximal runs with a constant step: fn(first index, length, step).
static void forEachRun(ArrayRef<int64_t> offsets,
                       const std::function<void(int64_t, int64_t, int64_t)> &fn) {
  size_t i = 0;
  while (i < offsets.size()) {
    size_t j = i + 1;
    int64_t step = j < offsets.size() ? offsets[j] - offsets[i] : 1;
    while (j < offsets.size() && offsets[j] - offsets[j - 1] == step)
      ++j;
    fn(i, j - i, step);
    i = j;
  }
}

void TileEmitter::loadRows(Location loc, Value source, int64_t sourceOffset,
                           ArrayRef<int64_t> strides, ArrayRef<int64_t> shape, int64_t row0,
                           int64_t rows, int64_t col0, int64_t cols, Value tile) {
  SmallVector<int64_t> s = atLeast1D(shape);
  SmallVector<int64_t> st = strides.empty() ? SmallVector<int64_t>{0} : SmallVector<int64_t>(strides);
  int64_t colStride = st.back();
  forEachRun(rowOffsets(s, st, row0, rows), [&](int64_t first, int64_t len, int64_t step) {
    int64_t off = sourceOffset + rowOffsets(s, st, row0 + first, 1)[0] + col0 * colStride;
    dma(loc, source, pattern(off, {{step, len}, {colStride, cols}}), tile,
        pattern(first * cols, {{cols, len}, {1, cols}}));
  });
}

void TileEmitter::storeRows(Location loc, Value tile, Value target, ArrayRef<int64_t> shape,
                            int64_t row0, int64_t rows, int64_t col0, int64_t cols) {
  int64_t width = atLeast1D(shape).back();
  dma(loc, tile, pattern(0, {{cols, rows}, {1, cols}}), target,
      pattern(row0 * width + col0, {{width, rows}, {1, cols}}));
}

void TileEmitter::copyStrided(Location loc, Value source, int64_t sourceOffset,
                              ArrayRef<int64_t> strides, Value target, ArrayRef<int64_t> shape) {
  copyStrided(loc, source, sourceOffset, strides, target, 0,
              contiguousStrides(atLeast1D(shape)), shape);
}

void TileEmitter::copyStrided(Location loc, Value source, int64_t sourceOffset,
                              ArrayRef<int64_t> sourceStrides, Value target, int64_t targetOffset,
                              ArrayRef<int64_t> targetStrides, ArrayRef<int64_t> shape) {
  SmallVector<int64_t> s = atLeast1D(shape);
  auto norm = [](ArrayRef<int64_t> st) {
    return st.empty() ? SmallVector<int64_t>{0} : SmallVector<int64_t>(st);
  };
  SmallVector<int64_t> ss = norm(sourceStrides), ts = norm(targetStrides);
  forEachTile(s, kCopyChunk, [&](int64_t row0, int64_t rows, int64_t col0, int64_t cols) {
    SmallVector<int64_t> so = rowOffsets(s, ss, row0, rows), to = rowOffsets(s, ts, row0, rows);
    // Runs of rows evenly spaced in both views.
    size_t i = 0;
    while (i < so.size()) {
      size_t j = i + 1;
      int64_t sStep = j < so.size() ? so[j] - so[i] : 1, tStep = j < to.size() ? to[j] - to[i] : 1;
      while (j < so.size() && so[j] - so[j - 1] == sStep && to[j] - to[j - 1] == tStep)
        ++j;
      int64_t len = j - i;
      dma(loc, source, pattern(sourceOffset + so[i] + col0 * ss.back(), {{sStep, len}, {ss.back(), cols}}),
          target, pattern(targetOffset + to[i] + col0 * ts.back(), {{tStep, len}, {ts.back(), cols}}));
      i = j;
    }
  });
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

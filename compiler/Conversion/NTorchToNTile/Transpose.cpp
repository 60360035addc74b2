// Permutes that move the innermost dim, through SBUF and the PE array's transpose.
//
// A permute whose output's innermost dim is strided in its input would, as one strided DMA,
// move one element per descriptor (a few percent of the DMA bandwidth: runtime/HARDWARE.md,
// the efficiency curve). For every index of the other dims it is a 2-D transpose: rows of
// the input load contiguously into SBUF, nc_transpose turns 128 x 128 blocks into PSUM, a
// copy places each block into output rows, which store contiguously. Blocks of C x C
// elements (C: 2 KiB of elements, the run length that approaches a DMA queue's peak) keep
// both the loads and the stores in long runs.
#include "compiler/Conversion/NTorchToNTile/TileEmitter.h"
#include "dialects/NTorch/IR/NTorchOps.h"

using namespace mlir;
using neuron::ntile::MemSpace;

namespace neuron::compiler {

namespace {
/// Bytes of one contiguous run of a block's loads and stores.
constexpr int64_t kRunBytes = 2048;
/// PSUM tiles the transposes of a block rotate over.
constexpr int64_t kPsumTiles = 4;
} // namespace

bool lowerTransposingPermute(TileEmitter &e, ntorch::PermuteOp op) {
  auto in = cast<RankedTensorType>(op.getInput().getType());
  auto res = cast<RankedTensorType>(op.getResult().getType());
  const int64_t rank = in.getRank();
  Type et = in.getElementType();
  const int64_t bytes = ntile::getElementBytes(et);
  // The PE array moves float bits of 2 and 4 bytes (bit-exact).
  if (rank < 2 || !isa<FloatType>(et) || (bytes != 2 && bytes != 4))
    return false;
  SmallVector<int64_t> inStrides = contiguousStrides(in.getShape());
  SmallVector<int64_t> outStrides = contiguousStrides(res.getShape());
  SmallVector<int64_t> source; // input stride of each output dim
  for (int64_t d : op.getDims())
    source.push_back(inStrides[d]);
  const int64_t b = rank - 1;
  int64_t a = -1;
  for (int64_t k = 0; k < rank; ++k)
    if (op.getDims()[k] == rank - 1)
      a = k;
  ArrayRef<int64_t> shape = res.getShape();
  if (a == b || shape[a] < 2 || shape[b] < 2)
    return false;
  Location loc = op.getLoc();
  Value src = e.buffer(op.getInput());
  Value dst = e.createResultBuffer(op.getResult(), loc);
  const int64_t P = e.target.partitions;
  const int64_t C = std::max<int64_t>(P, kRunBytes / bytes / P * P);
  const int64_t rowStride = source[b]; // input elements between the output's innermost
  const int64_t outRow = outStrides[a]; // output elements between rows of the 2-D problem
  SmallVector<int64_t> batch;
  for (int64_t k = 0; k < rank; ++k)
    if (k != a && k != b && shape[k] > 1)
      batch.push_back(k);
  auto view = [&](Value tile, const Offset &column, int64_t rows, int64_t cols) -> Value {
    auto t = cast<MemRefType>(tile.getType());
    if (rows == t.getDimSize(0) && cols == t.getDimSize(1))
      return tile;
    return e.b.create<ntile::ViewOp>(
        loc, ntile::getBufferType({rows, cols}, et, *ntile::getMemSpace(t)), tile,
        e.pattern(column, {{t.getDimSize(1), rows}, {1, cols}}));
  };
  // One 2-D transpose: out[j][i] = in[i][j], i along the output's innermost dim.
  auto transpose2d = [&](const Offset &srcBase, const Offset &dstBase) {
    e.tiled(loc, shape[b], C, [&](const Offset &iBlock, int64_t ic) {
      e.tiled(loc, shape[a], C, [&](const Offset &jBlock, int64_t jc) {
        Offset i0 = iBlock * C, j0 = jBlock * C;
        SmallVector<Value> loads, outs;
        for (int64_t s = 0; s * P < ic; ++s) {
          int64_t pi = std::min(P, ic - s * P);
          Value tile = e.allocTile(loc, pi, jc, et, MemSpace::sbuf);
          e.dma(loc, src, e.pattern(srcBase + i0 * rowStride + Offset(s * P * rowStride) + j0,
                                    {{rowStride, pi}, {1, jc}}),
                tile, e.pattern(0, {{jc, pi}, {1, jc}}));
          loads.push_back(tile);
        }
        for (int64_t t = 0; t * P < jc; ++t)
          outs.push_back(e.allocTile(loc, std::min(P, jc - t * P), ic, et, MemSpace::sbuf));
        // A few PSUM tiles in rotation (a block's transposes would not fit PSUM at once).
        SmallVector<Value> psum;
        for (int64_t q = 0; q < kPsumTiles; ++q)
          psum.push_back(e.allocTile(loc, P, P, et, MemSpace::psum));
        int64_t next = 0;
        for (auto [s, tile] : llvm::enumerate(loads)) {
          int64_t pi = cast<MemRefType>(tile.getType()).getDimSize(0);
          for (auto [t, out] : llvm::enumerate(outs)) {
            int64_t pj = cast<MemRefType>(out.getType()).getDimSize(0);
            Value block = view(tile, Offset(int64_t(t) * P), pi, pj);
            Value transposed = view(psum[next++ % kPsumTiles], Offset(0), pj, pi);
            e.b.create<ntile::TransposeOp>(loc, block, transposed);
            e.b.create<ntile::CopyOp>(loc, transposed, view(out, Offset(int64_t(s) * P), pj, pi));
          }
        }
        for (auto [t, out] : llvm::enumerate(outs)) {
          int64_t pj = cast<MemRefType>(out.getType()).getDimSize(0);
          e.dma(loc, out, e.pattern(0, {{ic, pj}, {1, ic}}), dst,
                e.pattern(dstBase + j0 * outRow + Offset(int64_t(t) * P * outRow) + i0,
                          {{outRow, pj}, {1, ic}}));
        }
      });
    });
  };
  // Loops over the other dims, outermost first.
  std::function<void(size_t, const Offset &, const Offset &)> nest =
      [&](size_t level, const Offset &srcBase, const Offset &dstBase) {
        if (level == batch.size())
          return transpose2d(srcBase, dstBase);
        int64_t k = batch[level];
        e.loop(loc, shape[k], [&](const Offset &iv) {
          nest(level + 1, srcBase + iv * source[k], dstBase + iv * outStrides[k]);
        });
      };
  nest(0, Offset(0), Offset(0));
  return true;
}

} // namespace neuron::compiler

// The neuron-dma-transpose pass: transposing HBM loads become dma_transpose where the target
// has it (see Passes.td).
#include "compiler/Transforms/DmaTranspose.h"
#include "compiler/Passes.h"
#include "dialects/NIsa/IR/NIsaOps.h"
#include "runtime/program/Isa.h"
#include "runtime/program/Target.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/SmallVector.h"

using namespace mlir;
using neuron::ntile::MemSpace;

namespace neuron::compiler {
#define GEN_PASS_DEF_NEURONDMATRANSPOSE
#include "compiler/Passes.h.inc"

namespace {

/// Most dma_transposes one load becomes (a batch over its middle dims).
constexpr int64_t kMaxPieces = 64;

/// One dma_transpose of a transposing load: its SBUF dst and its [rows, cols] source.
struct Piece {
  nisa::AccessPatternAttr dst, src;
};

/// The dma_transposes that replace `copy`, if it is an HBM -> SBUF load of 2- or 4-byte
/// elements into [P, ..., F] (contiguous rows) from `base + p + ... + stride * f` with a stride
/// above 1: each index of the middle dims is one transpose of the source's [F rows, P cols]
/// (rows a stride apart, cols consecutive) into dst's [P, F]. Empty if it is not such a load.
SmallVector<Piece> transposePieces(nisa::DmaCopyOp copy) {
  nisa::AccessPatternAttr src = copy.getSrc(), dst = copy.getDst();
  const size_t rank = src.getRank();
  if (src.getSpace() != MemSpace::hbm || dst.getSpace() != MemSpace::sbuf || rank < 2 ||
      dst.getRank() != rank)
    return {};
  unsigned bits = src.getElementType().getIntOrFloatBitWidth();
  if (bits != 16 && bits != 32)
    return {};
  const int64_t eb = bits / 8, inner = rank - 1;
  if (dst.getStride(inner) != 1 || dst.getSize(inner) < 2 || dst.getSize(0) < 2 ||
      src.getStride(0) != 1 || src.getStride(inner) <= 1)
    return {};
  int64_t pieces = 1;
  for (size_t k = 0; k < rank; ++k) {
    if (src.getSize(k) != dst.getSize(k))
      return {};
    if (k > 0 && k < inner)
      pieces *= src.getSize(k);
  }
  if (pieces > kMaxPieces)
    return {};
  SmallVector<Piece> out;
  SmallVector<int64_t> index(rank, 0);
  for (int64_t n = 0; n < pieces; ++n) {
    int64_t srcOffset = src.getOffset(), dstOffset = dst.getOffset();
    for (size_t k = 1; k < inner; ++k) {
      srcOffset += index[k] * src.getStride(k);
      dstOffset += index[k] * dst.getStride(k) * eb; // SBUF offsets are bytes
    }
    SmallVector<int64_t> srcDims = {src.getStride(inner), src.getSize(inner), 1,
                                    src.getSize(0)};
    SmallVector<int64_t> dstDims = {dst.getStride(0), dst.getSize(0), 1, dst.getSize(inner)};
    out.push_back({nisa::AccessPatternAttr::get(dst.getContext(), dst.getSpace(), dst.getIndex(),
                                                dstOffset, dstDims, dst.getElementType(),
                                                dst.getTerms(), dst.getCore()),
                   nisa::AccessPatternAttr::get(src.getContext(), src.getSpace(), src.getIndex(),
                                                srcOffset, srcDims, src.getElementType(),
                                                src.getTerms(), src.getCore())});
    for (size_t k = inner; k-- > 1;) { // the next middle index, row-major
      if (++index[k] < src.getSize(k))
        break;
      index[k] = 0;
    }
  }
  return out;
}

struct NeuronDmaTransposePass : impl::NeuronDmaTransposeBase<NeuronDmaTransposePass> {
  using Base::Base;
  void runOnOperation() override {
    const runtime::Target *t = runtime::findTarget(target);
    if (!t) {
      getOperation().emitError("unknown target '") << target << "'";
      return signalPassFailure();
    }
    if (!runtime::existsOn(runtime::Opcode::DmaTranspose, t->generation))
      return;
    SmallVector<nisa::DmaCopyOp> copies;
    getOperation().walk([&](nisa::DmaCopyOp copy) { copies.push_back(copy); });
    OpBuilder b(&getContext());
    for (nisa::DmaCopyOp copy : copies) {
      SmallVector<Piece> pieces = transposePieces(copy);
      if (pieces.empty())
        continue;
      b.setInsertionPoint(copy);
      for (const Piece &piece : pieces) {
        auto tr = b.create<nisa::DmaTransposeOp>(copy.getLoc(), copy.getQueueAttr(), piece.dst,
                                                 piece.src, copy.getWaitsAttr(),
                                                 copy.getWaitTermsAttr());
        tr->setDiscardableAttrs(copy->getDiscardableAttrDictionary());
      }
      copy->erase();
    }
  }
};

} // namespace

bool becomesDmaTranspose(nisa::DmaCopyOp copy, const runtime::Target &t) {
  return runtime::existsOn(runtime::Opcode::DmaTranspose, t.generation) &&
         !transposePieces(copy).empty();
}

} // namespace neuron::compiler

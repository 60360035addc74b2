// Lowering of data movement: reshape aliases HBM, permute and broadcast copy through
// DMA access patterns, constants become constant HBM buffers.
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
      .Default([](Operation *) { return failure(); });
}

} // namespace neuron::compiler

// The neuron-multi-buffer pass: how many rotating copies each loop-body tile gets.
#include "compiler/Passes.h"
#include "dialects/NTile/IR/NTileOps.h"
#include "runtime/program/Target.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"

using namespace mlir;
using neuron::ntile::MemSpace;

namespace neuron::compiler {
#define GEN_PASS_DEF_NEURONMULTIBUFFER
#include "compiler/Passes.h.inc"

namespace {

constexpr int64_t kMaxSbufBuffers = 4, kMaxPsumBuffers = 2;

struct NeuronMultiBufferPass : impl::NeuronMultiBufferBase<NeuronMultiBufferPass> {
  using NeuronMultiBufferBase::NeuronMultiBufferBase;

  void runOnOperation() override {
    const runtime::Target *t = runtime::findTarget(target);
    if (!t) {
      getOperation().emitError("unknown target '") << target << "'";
      return signalPassFailure();
    }
    getOperation().walk([&](ntile::LoopOp loop) {
      for (MemSpace space : {MemSpace::sbuf, MemSpace::psum}) {
        bool sbuf = space == MemSpace::sbuf;
        int64_t budget = sbuf ? t->sbufBytesPerPartition / 4 : t->psumBytesPerPartition / 2;
        int64_t align = sbuf ? 64 : t->psumBankBytes;
        auto paddedBytes = [&](memref::AllocOp alloc) {
          MemRefType type = alloc.getType();
          int64_t b = type.getDimSize(1) * ntile::getElementBytes(type.getElementType());
          return (b + align - 1) / align * align;
        };
        SmallVector<memref::AllocOp> allocs;
        int64_t bytes = 0;
        for (auto alloc : loop.getBody().front().getOps<memref::AllocOp>()) {
          if (ntile::getMemSpace(alloc.getType()) != space)
            continue;
          bytes += paddedBytes(alloc);
          allocs.push_back(alloc);
        }
        int64_t n = std::min<int64_t>(loop.getCount(), sbuf ? kMaxSbufBuffers : kMaxPsumBuffers);
        while (n > 1 && n * bytes > budget)
          --n;
        auto setBuffers = [&](memref::AllocOp alloc, int64_t count) {
          alloc->setAttr(ntile::kBuffersAttr,
                         IntegerAttr::get(IntegerType::get(&getContext(), 64), count));
        };
        if (n > 1) {
          for (memref::AllocOp alloc : allocs)
            setBuffers(alloc, n);
          continue;
        }
        // A body too large to multi-buffer whole (wide rows) still double-buffers the
        // tiles it loads from HBM, if that fits twice the budget: the next iteration's
        // loads then overlap this one's compute.
        if (!sbuf || loop.getCount() < 2)
          continue;
        SmallVector<memref::AllocOp> loaded;
        int64_t loadedBytes = 0;
        for (memref::AllocOp alloc : allocs) {
          bool isLoad = llvm::any_of(alloc->getUsers(), [&](Operation *user) {
            auto dma = dyn_cast<ntile::DmaOp>(user);
            return dma && dma.getTarget() == alloc.getResult() &&
                   ntile::getMemSpace(cast<MemRefType>(dma.getSource().getType())) ==
                       MemSpace::hbm;
          });
          if (!isLoad)
            continue;
          loadedBytes += paddedBytes(alloc);
          loaded.push_back(alloc);
        }
        if (!loaded.empty() && bytes + loadedBytes <= 2 * budget)
          for (memref::AllocOp alloc : loaded)
            setBuffers(alloc, 2);
      }
    });
  }
};

} // namespace
} // namespace neuron::compiler

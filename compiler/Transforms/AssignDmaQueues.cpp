// The neuron-assign-dma-queues pass: spreads DMA transfers over the 16 DMA queues.
#include "compiler/Passes.h"
#include "dialects/NIsa/IR/NIsaOps.h"

using namespace mlir;
using neuron::ntile::MemSpace;

namespace neuron::compiler {
#define GEN_PASS_DEF_NEURONASSIGNDMAQUEUES
#include "compiler/Passes.h.inc"

namespace {

/// Outside loops a transfer is split above this many bytes per part (HARDWARE.md: >= 2 KiB
/// per partition approaches a queue's peak; 32 KiB keeps the fixed cost small), and
/// successive transfers rotate over the queues.
constexpr int64_t kDmaSplitBytes = 32 * 1024;
/// Inside a loop the same instruction runs on the same queue in every iteration, so a
/// transfer is split finer (8 KiB parts) to keep all queues busy.
constexpr int64_t kLoopDmaSplitBytes = 8 * 1024;
/// Parts have at least this many outer rows.
constexpr int64_t kMinRowsPerPart = 8;

/// Rows [first, first + count) of the outermost dimension of a pattern.
nisa::AccessPatternAttr outerRows(nisa::AccessPatternAttr ap, int64_t first, int64_t count) {
  SmallVector<int64_t> dims(ap.getDims());
  dims[1] = count;
  bool onChip = ap.getSpace() != MemSpace::hbm;
  int64_t index = ap.getIndex(), offset = ap.getOffset();
  if (onChip)
    index += first * ap.getStride(0); // partitions
  else
    offset += first * ap.getStride(0); // elements
  return nisa::AccessPatternAttr::get(ap.getContext(), ap.getSpace(), index, offset, dims,
                                      ap.getElementType(), ap.getTerms());
}

struct NeuronAssignDmaQueuesPass : impl::NeuronAssignDmaQueuesBase<NeuronAssignDmaQueuesPass> {
  int next = 0;

  IntegerAttr nextQueue(OpBuilder &b) {
    int q = nisa::kQueueDma0 + next;
    next = (next + 1) % nisa::kNumDmaQueues;
    return b.getI32IntegerAttr(q);
  }

  void runOnOperation() override {
    SmallVector<Operation *> dmas;
    getOperation().walk([&](Operation *op) {
      if (isa<nisa::DmaCopyOp, nisa::DmaGatherOp>(op))
        dmas.push_back(op);
    });
    OpBuilder b(&getContext());
    for (Operation *op : dmas) {
      auto copy = dyn_cast<nisa::DmaCopyOp>(op);
      if (!copy) {
        op->setAttr("queue", nextQueue(b));
        continue;
      }
      nisa::AccessPatternAttr src = copy.getSrc(), dst = copy.getDst();
      bool inLoop = isa<nisa::LoopOp>(op->getParentOp());
      int64_t bytes = src.getNumElements() *
                      std::max<int64_t>(1, src.getElementType().getIntOrFloatBitWidth() / 8);
      int64_t rows = src.getSize(0);
      int64_t parts = std::min<int64_t>(
          {nisa::kNumDmaQueues, bytes / (inLoop ? kLoopDmaSplitBytes : kDmaSplitBytes),
           rows / kMinRowsPerPart});
      if (parts < 2 || dst.getSize(0) != rows) {
        op->setAttr("queue", nextQueue(b));
        continue;
      }
      b.setInsertionPoint(op);
      int64_t per = (rows + parts - 1) / parts;
      for (int64_t first = 0; first < rows; first += per) {
        int64_t count = std::min(per, rows - first);
        b.create<nisa::DmaCopyOp>(op->getLoc(), nextQueue(b), outerRows(dst, first, count),
                                  outerRows(src, first, count), nullptr, nullptr);
      }
      op->erase();
    }
  }
};

} // namespace
} // namespace neuron::compiler

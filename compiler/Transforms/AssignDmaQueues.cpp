// The neuron-assign-dma-queues pass: spreads DMA transfers over the 16 DMA queues (of the
// physical core each transfer runs on: the core of the queue convert-ntile-to-nisa gave it).
#include "compiler/Passes.h"
#include "compiler/Transforms/DmaTranspose.h"
#include "dialects/NIsa/IR/NIsaOps.h"
#include "runtime/program/Target.h"
#include "runtime/simulator/timing/CostModel.h"

#include "llvm/ADT/MapVector.h"

using namespace mlir;
using neuron::ntile::MemSpace;

namespace neuron::compiler {
#define GEN_PASS_DEF_NEURONASSIGNDMAQUEUES
#include "compiler/Passes.h.inc"

namespace {

/// Outside loops a transfer is split above this many bytes' worth of queue time per part
/// (HARDWARE.md: >= 2 KiB per partition approaches a queue's peak; 32 KiB keeps the fixed
/// cost small), and successive transfers rotate over the queues.
constexpr int64_t kDmaSplitBytes = 32 * 1024;
/// Inside a loop the same instruction runs on the same queue in every iteration, so
/// successive iterations cannot overlap on other queues: a transfer is split finer (2 KiB
/// parts) to spread every iteration over all queues.
constexpr int64_t kLoopDmaSplitBytes = 2 * 1024;
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
                                      ap.getElementType(), ap.getTerms(), ap.getCore());
}

/// A range of DMA queues used round-robin (local queue numbers of one physical core).
struct QueuePool {
  int first = 0, size = nisa::kNumDmaQueues, next = 0;
  int take() {
    int q = nisa::kQueueDma0 + first + next;
    next = (next + 1) % size;
    return q;
  }
};

int64_t elementBytes(nisa::AccessPatternAttr ap) {
  return std::max<int64_t>(1, ap.getElementType().getIntOrFloatBitWidth() / 8);
}

int64_t bytesOf(nisa::AccessPatternAttr ap) { return ap.getNumElements() * elementBytes(ap); }

/// Bytes of one contiguous run of a pattern (on chip: within a partition), as the simulator
/// times descriptors (runtime/simulator/Checks.cpp contiguousRunBytes).
int64_t runBytesOf(nisa::AccessPatternAttr ap) {
  const size_t first = ap.getSpace() == MemSpace::hbm ? 0 : 1;
  int64_t run = 1;
  for (size_t i = ap.getRank(); i-- > first;) {
    if (ap.getSize(i) == 1)
      continue;
    if (ap.getStride(i) != run)
      break;
    run *= ap.getSize(i);
  }
  return run * elementBytes(ap);
}

/// What a copy costs its queue, in bytes at the queue's full rate: a copy of many short runs
/// (a column, a transposed read) takes each run's descriptor time (CostModel.h dmaQueueNs),
/// so it is split and spread like a copy of that many bytes. A load that neuron-dma-transpose
/// makes a dma_transpose is timed by its bytes.
double queueBytesOf(const runtime::Target &t, nisa::DmaCopyOp copy) {
  if (becomesDmaTranspose(copy, t))
    return double(bytesOf(copy.getSrc()));
  const int64_t run = std::min(runBytesOf(copy.getSrc()), runBytesOf(copy.getDst()));
  return runtime::dmaQueueNs(t, bytesOf(copy.getSrc()), run) * t.dmaBytesPerNsPerQueue;
}

/// Instances of `op` per run: the product of its loops' trip counts.
int64_t instances(Operation *op) {
  int64_t n = 1;
  for (auto loop = op->getParentOfType<nisa::LoopOp>(); loop;
       loop = loop->getParentOfType<nisa::LoopOp>())
    n *= loop.getCount();
  return n;
}

/// A store (on-chip -> HBM) usually waits for compute of its own iteration; a load
/// behind it on the same queue could not run ahead into the next iteration.
/// The first loop after `op` in its block, if only DMAs and declarations lie between.
Operation *nextLoop(Operation *op) {
  for (Operation *next = op->getNextNode(); next; next = next->getNextNode()) {
    if (isa<nisa::LoopOp>(next))
      return next;
    if (!isa<nisa::DmaCopyOp, nisa::DmaGatherOp, nisa::DmaScatterOp, nisa::BufferOp>(next))
      return nullptr;
  }
  return nullptr;
}

bool isStore(Operation *op) {
  if (isa<nisa::DmaScatterOp>(op))
    return true;
  auto copy = dyn_cast<nisa::DmaCopyOp>(op);
  return copy && copy.getSrc().getSpace() != MemSpace::hbm &&
         copy.getDst().getSpace() == MemSpace::hbm;
}

/// Bytes a transfer moves: a scatter's rows (its dst pattern is the whole table).
int64_t movedBytes(Operation *op) {
  if (auto scatter = dyn_cast<nisa::DmaScatterOp>(op))
    return bytesOf(scatter.getSrc());
  return bytesOf(cast<nisa::InstructionOpInterface>(op).getWritePattern());
}

struct NeuronAssignDmaQueuesPass : impl::NeuronAssignDmaQueuesBase<NeuronAssignDmaQueuesPass> {
  using Base::Base;
  void runOnOperation() override {
    const runtime::Target *t = runtime::findTarget(target);
    if (!t) {
      getOperation().emitError("unknown target '") << target << "'";
      return signalPassFailure();
    }
    SmallVector<Operation *> dmas;
    getOperation().walk([&](Operation *op) {
      if (isa<nisa::DmaCopyOp, nisa::DmaGatherOp, nisa::DmaScatterOp>(op))
        dmas.push_back(op);
    });
    // Inside a loop nest, loads and stores get disjoint queues, sized by the bytes each
    // moves in that nest (a nest of loads alone uses all queues).
    struct NestPools {
      double loadBytes = 0, storeBytes = 0;
      QueuePool loads, stores;
    };
    llvm::MapVector<Operation *, NestPools> nests;
    auto outermostLoop = [](Operation *op) {
      Operation *nest = nullptr;
      for (auto loop = op->getParentOfType<nisa::LoopOp>(); loop;
           loop = loop->getParentOfType<nisa::LoopOp>())
        nest = loop;
      return nest;
    };
    for (Operation *op : dmas)
      if (Operation *nest = outermostLoop(op))
        (isStore(op) ? nests[nest].storeBytes : nests[nest].loadBytes) +=
            double(instances(op)) *
            movedBytes(op);
    for (auto &[nest, pools] : nests) {
      if (pools.loadBytes == 0 || pools.storeBytes == 0)
        continue;
      int n = nisa::kNumDmaQueues;
      pools.stores.size = std::clamp<int>(
          std::lround(n * pools.storeBytes / (pools.loadBytes + pools.storeBytes)), 1, n - 1);
      pools.loads.size = n - pools.stores.size;
      pools.stores.first = pools.loads.size;
    }
    QueuePool straight[runtime::kMaxPhysicalCores];
    OpBuilder b(&getContext());
    for (Operation *op : dmas) {
      const int core = runtime::coreOfQueue(cast<nisa::InstructionOpInterface>(op).getQueueId());
      auto queueAttr = [&](QueuePool *pool) {
        return b.getI32IntegerAttr(runtime::queueOf(core, pool->take()));
      };
      Operation *nest = outermostLoop(op);
      bool inLoop = nest != nullptr;
      QueuePool *pool = &straight[core];
      if (inLoop)
        pool = isStore(op) ? &nests[nest].stores : &nests[nest].loads;
      else if (!isStore(op) && !op->hasAttr(nisa::kPrefetchAttr))
        // A load just before a nest (a hoisted invariant load) goes to the nest's store
        // queues, idle until its first store, not ahead of the nest's first loads. A
        // software pipeline's prologue (nisa.prefetch) is what the nest needs first,
        // with its first loads: it takes every queue. (Inside the nest a pipeline's
        // prefetch, last in its iteration, shares the load queues: it queues behind the
        // iteration's loads and fills the time they leave.)
        if (Operation *next = nextLoop(op); next && nests.count(next) &&
                                            nests[next].stores.size < nisa::kNumDmaQueues)
          pool = &nests[next].stores;
      op->removeAttr(nisa::kPrefetchAttr);
      auto copy = dyn_cast<nisa::DmaCopyOp>(op);
      if (!copy) {
        op->setAttr("queue", queueAttr(pool));
        continue;
      }
      nisa::AccessPatternAttr src = copy.getSrc(), dst = copy.getDst();
      int64_t rows = src.getSize(0);
      int64_t parts = std::min<int64_t>(
          {pool->size,
           int64_t(queueBytesOf(*t, copy)) / (inLoop ? kLoopDmaSplitBytes : kDmaSplitBytes),
           rows / kMinRowsPerPart});
      if (parts < 2 || dst.getSize(0) != rows) {
        op->setAttr("queue", queueAttr(pool));
        continue;
      }
      b.setInsertionPoint(op);
      int64_t per = (rows + parts - 1) / parts;
      for (int64_t first = 0; first < rows; first += per) {
        int64_t count = std::min(per, rows - first);
        b.create<nisa::DmaCopyOp>(op->getLoc(), queueAttr(pool),
                                  outerRows(dst, first, count), outerRows(src, first, count),
                                  nullptr, nullptr);
      }
      op->erase();
    }
  }
};

} // namespace
} // namespace neuron::compiler

// The neuron-allocate-tiles pass: a byte offset in every partition of SBUF or PSUM for each
// tile, with liveness over loop regions. Each physical core of the target allocates its own
// SBUF/PSUM: the tiles of the nests neuron-split-cores gave it (ntile.core).
#include "compiler/Transforms/TileAllocator.h"
#include "compiler/Passes.h"
#include "dialects/Common/LoopTerms.h"
#include "dialects/NTile/IR/NTileOps.h"
#include "runtime/program/Target.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"

using namespace mlir;
using neuron::ntile::MemSpace;

namespace neuron::compiler {
#define GEN_PASS_DEF_NEURONALLOCATETILES
#include "compiler/Passes.h.inc"

namespace {

/// Alignment of SBUF ranges, in bytes.
constexpr int64_t kSbufAlignment = 64;

class Allocation {
public:
  Allocation(const runtime::Target &target, int64_t core)
      : target(target), core(core), sbuf(target.sbufBytesPerPartition, kSbufAlignment),
        psum(target.psumBytesPerPartition, target.psumBankBytes) {}

  LogicalResult run(Block &body) {
    computeLiveness(body);
    LogicalResult status = success();
    body.walk([&](memref::AllocOp alloc) {
      if (succeeded(status) && ntile::getMemSpace(alloc.getType()) != MemSpace::hbm &&
          ntile::getCore(alloc) == core)
        status = allocate(alloc);
    });
    return status;
  }

private:
  void computeLiveness(Block &block);
  LogicalResult allocate(memref::AllocOp alloc);

  const runtime::Target &target;
  int64_t core; // the physical core whose tiles this allocates
  TileAllocator sbuf, psum;
  DenseMap<Value, int64_t> lastUse;     // index of the last op (loop end) using a value
  DenseMap<Operation *, int64_t> order; // pre-order index of every op
};

/// Numbers ops in pre-order. A value is live until the last op that uses it, where a
/// use inside a loop counts as the end of the loop in the value's own block: the loop
/// reads the value again in every iteration.
void Allocation::computeLiveness(Block &block) {
  int64_t numOps = 0;
  block.walk<WalkOrder::PreOrder>([&](Operation *op) { order[op] = numOps++; });
  DenseMap<Operation *, int64_t> end; // pre-order index of an op's last descendant
  block.walk([&](Operation *op) {
    int64_t last = order[op];
    op->walk([&](Operation *inner) { last = std::max(last, order[inner]); });
    end[op] = last;
  });
  auto use = [&](Value v, Operation *user) {
    Block *home = v.getParentBlock();
    if (Operation *at = home ? home->findAncestorOpInBlock(*user) : nullptr)
      lastUse[v] = std::max(lastUse.lookup(v), end[at]);
  };
  block.walk([&](Operation *user) {
    for (Value operand : user->getOperands()) {
      use(operand, user);
      // A view keeps the tile it looks into alive.
      for (Value v = operand; auto view = v.getDefiningOp<ntile::ViewOp>();) {
        v = view.getSource();
        use(v, user);
      }
    }
    // A tile allocated in a loop body is rewritten by the next iteration: it holds its
    // memory until the loop ends, so that no other tile of the body shares it.
    if (auto alloc = dyn_cast<memref::AllocOp>(user))
      if (auto loop = dyn_cast_or_null<ntile::LoopOp>(alloc->getParentOp()))
        lastUse[alloc] = std::max(lastUse.lookup(alloc), end[loop]);
  });
}

LogicalResult Allocation::allocate(memref::AllocOp alloc) {
  MemRefType t = alloc.getType();
  MemSpace space = *ntile::getMemSpace(t);
  TileAllocator &pool = space == MemSpace::sbuf ? sbuf : psum;
  int64_t bytes = t.getDimSize(1) * ntile::getElementBytes(t.getElementType());
  // A PSUM tile may span banks (custom kernels' score tiles); it starts at a bank (the
  // pool's alignment), and each matmul result stays in one bank (the simulator checks).
  if (space == MemSpace::psum && bytes > target.psumBytesPerPartition)
    return alloc.emitError("PSUM tile of ")
           << bytes << " bytes per partition exceeds PSUM (" << target.psumBytesPerPartition
           << " bytes)";
  int64_t buffers = ntile::getBufferCount(alloc);
  int64_t stride = ntile::getBufferStride(t, target.psumBankBytes);
  pool.release(order.lookup(alloc));
  std::optional<int64_t> at =
      pool.allocate(buffers > 1 ? stride * buffers : bytes, lastUse.lookup(alloc.getResult()));
  if (!at) {
    InFlightDiagnostic diag = alloc.emitError()
                              << stringifyMemSpace(space) << " overflow: a tile of " << bytes
                              << " bytes per partition";
    if (buffers > 1)
      diag << " (x" << buffers << " buffers)";
    return diag << " does not fit while " << pool.liveBytes() << " of " << pool.getCapacity()
                << " bytes per partition are live";
  }
  alloc->setAttr(ntile::kAddressAttr, IntegerAttr::get(IntegerType::get(alloc.getContext(), 64), *at));
  return success();
}

struct NeuronAllocateTilesPass : impl::NeuronAllocateTilesBase<NeuronAllocateTilesPass> {
  using NeuronAllocateTilesBase::NeuronAllocateTilesBase;

  void runOnOperation() override {
    const runtime::Target *t = runtime::findTarget(target);
    if (!t) {
      getOperation().emitError("unknown target '") << target << "'";
      return signalPassFailure();
    }
    if (getOperation().getBody().empty())
      return;
    for (int64_t core = 0; core < t->physicalCores; ++core)
      if (failed(Allocation(*t, core).run(getOperation().getBody().front())))
        return signalPassFailure();
  }
};

} // namespace
} // namespace neuron::compiler

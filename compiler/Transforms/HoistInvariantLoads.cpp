// The neuron-hoist-invariant-loads pass: loads that are the same in every iteration of a
// loop leave it (loop-invariant code motion for tiles).
#include "compiler/Passes.h"
#include "dialects/Common/LoopTerms.h"
#include "dialects/NTile/IR/NTileOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

using namespace mlir;
using neuron::ntile::MemSpace;

namespace neuron::compiler {
#define GEN_PASS_DEF_NEURONHOISTINVARIANTLOADS
#include "compiler/Passes.h.inc"

namespace {

/// Does `op` (or an op nested in it) write memory whose root buffer is `buffer`?
bool writes(Operation *op, Value buffer) {
  bool found = false;
  op->walk([&](Operation *inner) {
    auto effects = dyn_cast<MemoryEffectOpInterface>(inner);
    if (!effects)
      return;
    SmallVector<MemoryEffects::EffectInstance> list;
    effects.getEffects(list);
    for (const auto &effect : list)
      if (isa<MemoryEffects::Write>(effect.getEffect()) && effect.getValue() &&
          ntile::getRootBuffer(effect.getValue()) == buffer)
        found = true;
  });
  return found;
}

bool usesLevel(ntile::AccessPatternAttr ap, int64_t level) {
  for (const LoopTerm &t : unpackTerms(ap.getTerms()))
    if (t.level >= level)
      return true;
  return false;
}

/// Moves out of `loop` every tile of its body filled by one DMA of loop-invariant data
/// and only read afterwards. Returns true if anything moved.
bool hoistFrom(ntile::LoopOp loop) {
  int64_t level = enclosingLoopCounts(loop).size(); // the loop's own induction variable
  bool changed = false;
  for (auto alloc : llvm::make_early_inc_range(loop.getBody().front().getOps<memref::AllocOp>())) {
    if (ntile::getMemSpace(alloc.getType()) == MemSpace::hbm)
      continue;
    Value tile = alloc.getResult();
    ntile::DmaOp load;
    bool invariant = true;
    for (Operation *user : tile.getUsers()) {
      auto dma = dyn_cast<ntile::DmaOp>(user);
      if (dma && dma.getTarget() == tile) {
        invariant &= !load && dma->getBlock() == alloc->getBlock();
        load = dma;
      } else if (writes(user, tile)) {
        invariant = false;
      }
    }
    if (!invariant || !load || usesLevel(load.getSourceAp(), level) ||
        usesLevel(load.getTargetAp(), level) ||
        writes(loop, ntile::getRootBuffer(load.getSource())) ||
        ntile::getMemSpace(cast<MemRefType>(load.getSource().getType())) != MemSpace::hbm)
      continue;
    // Terms of outer loops stay valid outside this one; the tile stays on the physical
    // core of the nest it leaves.
    if (int64_t core = ntile::getCore(loop)) {
      auto attr = IntegerAttr::get(IntegerType::get(loop.getContext(), 64), core);
      alloc->setAttr(ntile::kCoreAttr, attr);
      load->setAttr(ntile::kCoreAttr, attr);
    }
    alloc->moveBefore(loop);
    load->moveBefore(loop);
    changed = true;
  }
  return changed;
}

struct NeuronHoistInvariantLoadsPass
    : impl::NeuronHoistInvariantLoadsBase<NeuronHoistInvariantLoadsPass> {
  void runOnOperation() override {
    // Inner loops first, so that a load can leave several loops; repeat until stable.
    bool changed = true;
    while (changed) {
      changed = false;
      getOperation().walk([&](ntile::LoopOp loop) { changed |= hoistFrom(loop); });
    }
  }
};

} // namespace
} // namespace neuron::compiler

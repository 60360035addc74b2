// The neuron-overlap-collectives pass: work that does not need a collective's result moves
// ahead of the work that does, so the engines have it to do while the collective is in flight.
#include "compiler/Passes.h"
#include "dialects/NTorch/IR/NTorchOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

using namespace mlir;

namespace neuron::compiler {
#define GEN_PASS_DEF_NEURONOVERLAPCOLLECTIVES
#include "compiler/Passes.h.inc"

namespace {

struct OverlapCollectivesPass
    : impl::NeuronOverlapCollectivesBase<OverlapCollectivesPass> {
  void runOnOperation() override {
    for (Block &block : getOperation().getBody())
      reorder(block);
  }

  /// Ops that wait for a collective (its result, transitively; a later collective or a
  /// later op with side effects, which keep their order) go after all the others, each group
  /// in its original order.
  static void reorder(Block &block) {
    llvm::SmallPtrSet<Operation *, 32> waiting;
    bool anyWaiting = false;
    for (Operation &op : block.without_terminator()) {
      bool waits = false;
      for (Value operand : op.getOperands())
        if (Operation *def = operand.getDefiningOp())
          waits |= isa<ntorch::CollectiveOp>(def) || waiting.contains(def);
      // Ops in regions (fusions) are isolated: their operands are the op's operands.
      if (anyWaiting && !isMemoryEffectFree(&op))
        waits = true; // collectives and writes keep their relative order
      if (waits) {
        waiting.insert(&op);
        anyWaiting = true;
      }
    }
    if (!anyWaiting)
      return;
    Operation *terminator = block.getTerminator();
    SmallVector<Operation *> delayed;
    for (Operation &op : block.without_terminator())
      if (waiting.contains(&op))
        delayed.push_back(&op);
    for (Operation *op : delayed)
      op->moveBefore(terminator);
  }
};

} // namespace
} // namespace neuron::compiler

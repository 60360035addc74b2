// The neuron-fuse-matmul-epilogue pass: marks the fusions that consume a matmul's
// result tile by tile, straight from PSUM, instead of reading it back from HBM.
#include "compiler/Passes.h"
#include "dialects/NTorch/IR/NTorchOps.h"
#include "runtime/program/Target.h"

using namespace mlir;
namespace nt = neuron::ntorch;

namespace neuron::compiler {
#define GEN_PASS_DEF_NEURONFUSEMATMULEPILOGUE
#include "compiler/Passes.h.inc"

namespace {

ArrayRef<int64_t> shapeOf(Value v) { return cast<RankedTensorType>(v.getType()).getShape(); }

/// Can `fusion` run on each PSUM tile of `matmul` as the matmul produces it?
bool canBeEpilogue(nt::MatmulOp matmul, nt::FusionOp fusion, const runtime::Target &target) {
  if (fusion->getBlock() != matmul->getBlock() || fusion.getResults().empty() ||
      shapeOf(fusion.getResult(0)) != shapeOf(matmul.getResult()))
    return false;
  // The fusion's other operands must exist when the matmul runs, and none may be another
  // matmul's result: the lowering applies the epilogue to whichever matmul feeds it.
  for (Value in : fusion.getInputs()) {
    if (in == matmul.getResult())
      continue;
    Operation *def = in.getDefiningOp();
    if (def && (!def->isBeforeInBlock(matmul) || isa<nt::MatmulOp>(def)))
      return false;
  }
  // A row reduction needs the whole row in one PSUM tile.
  bool reduces = false;
  fusion.getBody().walk([&](nt::ReduceOp) { reduces = true; });
  return !reduces || shapeOf(matmul.getResult()).back() <= target.matmulMaxN;
}

struct NeuronFuseMatmulEpiloguePass
    : impl::NeuronFuseMatmulEpilogueBase<NeuronFuseMatmulEpiloguePass> {
  using NeuronFuseMatmulEpilogueBase::NeuronFuseMatmulEpilogueBase;

  void runOnOperation() override {
    const runtime::Target *t = runtime::findTarget(target);
    if (!t) {
      getOperation().emitError("unknown target '") << target << "'";
      return signalPassFailure();
    }
    getOperation().walk([&](nt::MatmulOp matmul) {
      Value result = matmul.getResult();
      if (!result.hasOneUse())
        return;
      auto fusion = dyn_cast<nt::FusionOp>(*result.getUsers().begin());
      if (fusion && canBeEpilogue(matmul, fusion, *t))
        fusion->setAttr(nt::FusionOp::getMatmulEpilogueAttrName(), UnitAttr::get(&getContext()));
    });
  }
};

} // namespace
} // namespace neuron::compiler

// The neuron-constant-fills pass: SBUF tiles filled from a one-value constant buffer are
// memsets (see Passes.td).
#include "compiler/Passes.h"
#include "dialects/NIsa/IR/NIsaOps.h"
#include "runtime/program/Target.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"

using namespace mlir;
using neuron::ntile::MemSpace;

namespace neuron::compiler {
#define GEN_PASS_DEF_NEURONCONSTANTFILLS
#include "compiler/Passes.h.inc"

namespace {

/// The one value of a splat constant, as the double a memset carries (exactly: integers up
/// to 2^53, every float of the program's float types).
std::optional<double> splatValue(nisa::BufferOp buffer) {
  if (buffer.getKind() != nisa::BufferKind::constant || !buffer.getValue())
    return std::nullopt;
  auto dense = dyn_cast<DenseElementsAttr>(*buffer.getValue());
  if (!dense || !dense.isSplat())
    return std::nullopt;
  Type et = dense.getElementType();
  if (isa<FloatType>(et))
    return dense.getSplatValue<APFloat>().convertToDouble();
  if (et.isInteger(1))
    return dense.getSplatValue<bool>() ? 1.0 : 0.0;
  APInt v = dense.getSplatValue<APInt>();
  int64_t i = et.isUnsignedInteger() ? int64_t(v.getZExtValue()) : v.getSExtValue();
  if (i > (int64_t(1) << 53) || i < -(int64_t(1) << 53))
    return std::nullopt;
  return double(i);
}

/// Whether a compute engine may write `ap`: the partition start rule (runtime/program/Target.h).
bool computeEnginesMayWrite(nisa::AccessPatternAttr ap) {
  const int64_t parts = ap.getSize(0);
  const int64_t span = parts > 1 ? (parts - 1) * ap.getStride(0) + 1 : 1;
  return runtime::partitionStartProblem(ap.getIndex(), span) == nullptr;
}

struct NeuronConstantFillsPass : impl::NeuronConstantFillsBase<NeuronConstantFillsPass> {
  void runOnOperation() override {
    llvm::DenseMap<uint32_t, double> splats;
    getOperation().walk([&](nisa::BufferOp buffer) {
      if (std::optional<double> v = splatValue(buffer))
        splats[buffer.getId()] = *v;
    });
    if (splats.empty())
      return;
    SmallVector<nisa::DmaCopyOp> fills;
    getOperation().walk([&](nisa::DmaCopyOp copy) {
      const MemSpace dst = copy.getDst().getSpace();
      if (copy.getSrc().getSpace() == MemSpace::hbm && (dst == MemSpace::sbuf || dst == MemSpace::psum) &&
          splats.count(copy.getSrc().getIndex()) && computeEnginesMayWrite(copy.getDst()))
        fills.push_back(copy);
    });
    OpBuilder b(&getContext());
    for (nisa::DmaCopyOp copy : fills) {
      b.setInsertionPoint(copy);
      const int core = runtime::coreOfQueue(copy.getQueue());
      // A PSUM fill (an NKI kernel's nl.zeros(..., buffer=nl.psum)) is the Vector engine's
      // memset: GpSimd cannot access PSUM.
      const int engine = copy.getDst().getSpace() == MemSpace::psum ? runtime::kQueueVector
                                                                     : runtime::kQueueGpSimd;
      auto memset = b.create<nisa::MemsetOp>(
          copy.getLoc(), b.getI32IntegerAttr(runtime::queueOf(core, engine)),
          copy.getDst(), b.getF64FloatAttr(splats[copy.getSrc().getIndex()]),
          copy.getWaitsAttr(), copy.getWaitTermsAttr());
      memset->setDiscardableAttrs(copy->getDiscardableAttrDictionary());
      copy->erase();
    }
  }
};

} // namespace
} // namespace neuron::compiler

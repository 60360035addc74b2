// The convert-ntorch-to-ntile pass: tensors become HBM buffers, ops become tiles.
#include "compiler/Conversion/NTorchToNTile/TileEmitter.h"
#include "compiler/Passes.h"
#include "dialects/NTorch/IR/NTorchOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"

using namespace mlir;
using neuron::ntile::MemSpace;

namespace neuron::compiler {
#define GEN_PASS_DEF_CONVERTNTORCHTONTILE
#include "compiler/Passes.h.inc"

namespace {

MemRefType hbmType(Type tensorType) {
  auto t = cast<RankedTensorType>(tensorType);
  return ntile::getBufferType(t.getShape(), t.getElementType(), MemSpace::hbm);
}

LogicalResult lowerOp(TileEmitter &e, Operation *op) {
  if (isa<ntorch::MatmulOp>(op))
    return lowerMatmul(e, op);
  if (isa<ntorch::UnaryOp, ntorch::BinaryOp, ntorch::CastOp, ntorch::SelectOp>(op))
    return lowerElementwise(e, op);
  if (isa<ntorch::ConstantOp, ntorch::ReshapeOp, ntorch::PermuteOp, ntorch::BroadcastOp,
          ntorch::SliceOp, ntorch::ConcatOp, ntorch::ScatterWindowOp, ntorch::PadOp, ntorch::GatherRowsOp>(op))
    return lowerDataMovement(e, op);
  if (isa<ntorch::ReduceOp>(op))
    return lowerReduction(e, op);
  if (isa<ntorch::Conv2dOp, ntorch::Pool2dOp>(op))
    return lowerWindow(e, op);
  if (isa<ntorch::FusionOp>(op))
    return lowerFusion(e, op);
  return op->emitOpError("has no lowering to ntile");
}

/// func(tensors) -> (tensors)  becomes  func(input buffers..., output buffers...).
LogicalResult convertFunc(func::FuncOp func, const runtime::Target &target) {
  FunctionType type = func.getFunctionType();
  SmallVector<Type> argTypes;
  for (Type t : type.getInputs())
    argTypes.push_back(hbmType(t));
  for (Type t : type.getResults())
    argTypes.push_back(hbmType(t));

  OpBuilder b(func);
  auto lowered = b.create<func::FuncOp>(func.getLoc(), func.getName(),
                                        b.getFunctionType(argTypes, {}));
  for (unsigned i = 0; i < type.getNumInputs(); ++i)
    lowered.setArgAttr(i, "ntile.input", b.getI32IntegerAttr(i));
  for (unsigned i = 0; i < type.getNumResults(); ++i)
    lowered.setArgAttr(type.getNumInputs() + i, "ntile.output", b.getI32IntegerAttr(i));
  Block *body = lowered.addEntryBlock();
  b.setInsertionPointToEnd(body);

  TileEmitter e(b, target);
  for (auto [i, arg] : llvm::enumerate(func.getArguments()))
    e.setBuffer(arg, body->getArgument(i));
  auto ret = cast<func::ReturnOp>(func.getBody().front().getTerminator());
  auto outputArg = [&](unsigned i) { return body->getArgument(type.getNumInputs() + i); };
  for (auto [i, v] : llvm::enumerate(ret.getOperands()))
    e.setOutput(v, outputArg(i));

  for (Operation &op : func.getBody().front().without_terminator())
    if (!e.isLowered(&op) && failed(lowerOp(e, &op))) {
      lowered.erase();
      return failure();
    }
  // Outputs not produced in place (inputs, views, repeated values) are copied.
  for (auto [i, v] : llvm::enumerate(ret.getOperands())) {
    if (e.buffer(v) == outputArg(i))
      continue;
    auto shape = cast<RankedTensorType>(v.getType()).getShape();
    e.copyStrided(ret.getLoc(), e.buffer(v), 0, contiguousStrides(shape), outputArg(i), shape);
  }
  b.create<func::ReturnOp>(ret.getLoc());
  func.erase();
  return success();
}

struct ConvertNTorchToNTilePass
    : impl::ConvertNTorchToNTileBase<ConvertNTorchToNTilePass> {
  using ConvertNTorchToNTileBase::ConvertNTorchToNTileBase;

  void runOnOperation() override {
    const runtime::Target *t = runtime::findTarget(target);
    if (!t) {
      getOperation().emitError("unknown target '") << target << "'";
      return signalPassFailure();
    }
    SmallVector<func::FuncOp> funcs;
    for (auto func : getOperation().getOps<func::FuncOp>())
      if (llvm::all_of(func.getArgumentTypes(), llvm::IsaPred<RankedTensorType>))
        funcs.push_back(func);
    for (func::FuncOp func : funcs)
      if (failed(convertFunc(func, *t)))
        return signalPassFailure();
  }
};

} // namespace
} // namespace neuron::compiler

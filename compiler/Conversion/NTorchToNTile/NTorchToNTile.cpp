// The convert-ntorch-to-ntile pass: tensors become HBM buffers, ops become loop nests of
// tiles. A dialect conversion: tensor types convert to HBM memrefs, each ntorch op family
// has its pattern (the lowerings of TileEmitter.h), and a function returning tensors
// takes output buffers instead.
#include "compiler/Conversion/NTorchToNTile/TileEmitter.h"
#include "compiler/Passes.h"
#include "dialects/NTorch/IR/NTorchOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Func/Transforms/FuncConversions.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Transforms/DialectConversion.h"

using namespace mlir;
using neuron::ntile::MemSpace;

namespace neuron::compiler {
#define GEN_PASS_DEF_CONVERTNTORCHTONTILE
#include "compiler/Passes.h.inc"

namespace {

MemRefType hbmType(RankedTensorType t) {
  return ntile::getBufferType(t.getShape(), t.getElementType(), MemSpace::hbm);
}

/// Tensors live in HBM.
struct HbmTypeConverter : TypeConverter {
  HbmTypeConverter() {
    addConversion([](Type t) { return t; });
    addConversion([](RankedTensorType t) -> Type { return hbmType(t); });
  }
};

using Lowering = LogicalResult (*)(TileEmitter &, Operation *);

/// Lowers the ops of one family: the operands' buffers come from the adaptor, the
/// results' buffers replace the op.
struct TilePattern : ConversionPattern {
  TilePattern(const TypeConverter &converter, MLIRContext *ctx, const runtime::Target &target,
              TileState &state, Lowering lowering, StringRef opName)
      : ConversionPattern(converter, opName, /*benefit=*/1, ctx), target(target), state(state),
        lowering(lowering) {}

  LogicalResult matchAndRewrite(Operation *op, ArrayRef<Value> operands,
                                ConversionPatternRewriter &rewriter) const override {
    TileEmitter e(rewriter, target, state);
    for (auto [original, converted] : llvm::zip(op->getOperands(), operands))
      if (isa<RankedTensorType>(original.getType()))
        e.setBuffer(original, converted);
    if (failed(lowering(e, op)))
      return failure();
    // Ops lowered ahead of their turn (a matmul's epilogue fusion) are done too: replace
    // them first, so that a matmul whose only reader was its epilogue can go.
    SmallVector<Operation *> early = llvm::to_vector(state.loweredEarly);
    state.loweredEarly.clear();
    for (Operation *lowered : early)
      rewriter.replaceOp(lowered, resultBuffers(lowered));
    SmallVector<Value> results = resultBuffers(op);
    if (llvm::any_of(results, [](Value v) { return !v; }))
      rewriter.eraseOp(op); // its result never leaves PSUM
    else
      rewriter.replaceOp(op, results);
    return success();
  }

  /// The buffers the lowering created for the results of `op` (null for none).
  SmallVector<Value> resultBuffers(Operation *op) const {
    SmallVector<Value> results;
    for (Value r : op->getResults())
      results.push_back(state.buffers.lookup(r));
    return results;
  }

  const runtime::Target &target;
  TileState &state;
  Lowering lowering;
};

/// The buffer `v` is a reinterpreted view of (itself if none).
Value viewOf(Value v) {
  while (Operation *def = v.getDefiningOp()) {
    if (!isa<ntile::ReinterpretOp, UnrealizedConversionCastOp>(def) || def->getNumOperands() != 1)
      break;
    v = def->getOperand(0);
  }
  return v;
}

/// `return %tensors` becomes copies into the output buffers that did not receive their
/// tensor in place (inputs, views, repeated values), and an empty return.
struct ReturnPattern : OpConversionPattern<func::ReturnOp> {
  ReturnPattern(const TypeConverter &converter, MLIRContext *ctx, const runtime::Target &target,
                TileState &state, unsigned numInputs)
      : OpConversionPattern(converter, ctx), target(target), state(state), numInputs(numInputs) {}

  LogicalResult matchAndRewrite(func::ReturnOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rewriter) const override {
    TileEmitter e(rewriter, target, state);
    Block *body = op->getBlock();
    for (auto [i, v] : llvm::enumerate(adaptor.getOperands())) {
      BlockArgument output = body->getArgument(numInputs + i);
      // (computed in place, maybe through a view; the entry block may have been rebuilt)
      auto root = dyn_cast<BlockArgument>(viewOf(v));
      if (v == output || (root && root.getArgNumber() == output.getArgNumber()))
        continue;
      auto shape = cast<MemRefType>(v.getType()).getShape();
      e.copyStrided(op.getLoc(), v, 0, contiguousStrides(shape), output, shape);
    }
    rewriter.replaceOpWithNewOp<func::ReturnOp>(op);
    return success();
  }

  const runtime::Target &target;
  TileState &state;
  unsigned numInputs;
};

/// Adds one output buffer argument per result; returned tensors are computed into them.
void addOutputArguments(func::FuncOp func, TileState &state) {
  Block &body = func.getBody().front();
  FunctionType type = func.getFunctionType();
  auto ret = cast<func::ReturnOp>(body.getTerminator());
  OpBuilder b(func);
  for (unsigned i = 0; i < type.getNumInputs(); ++i)
    func.setArgAttr(i, "ntile.input", b.getI32IntegerAttr(i));
  for (auto [i, v] : llvm::enumerate(ret.getOperands())) {
    BlockArgument output =
        body.addArgument(hbmType(cast<RankedTensorType>(v.getType())), func.getLoc());
    state.outputs.try_emplace(v, output);
  }
  // A returned reshape of a value used nowhere else: that value is computed straight into
  // the output buffer, viewed in its shape (HBM tensors are contiguous).
  b.setInsertionPointToStart(&body);
  for (auto [i, v] : llvm::enumerate(ret.getOperands())) {
    auto reshape = v.getDefiningOp<ntorch::ReshapeOp>();
    if (!reshape)
      continue;
    Value source = reshape.getInput();
    if (isa<BlockArgument>(source) || !source.hasOneUse() || state.outputs.count(source))
      continue;
    Value output = body.getArgument(type.getNumInputs() + i);
    state.outputs.try_emplace(
        source, b.create<ntile::ReinterpretOp>(
                    func.getLoc(), hbmType(cast<RankedTensorType>(source.getType())), output));
  }
  SmallVector<Type> inputs(type.getInputs());
  for (BlockArgument arg : body.getArguments().drop_front(type.getNumInputs()))
    inputs.push_back(arg.getType());
  func.setType(b.getFunctionType(inputs, {}));
  for (unsigned i = 0; i < type.getNumResults(); ++i)
    func.setArgAttr(type.getNumInputs() + i, "ntile.output", b.getI32IntegerAttr(i));
}

/// One pattern per op of a family, all with the family's lowering.
template <typename... Ops>
void addFamily(RewritePatternSet &patterns, const TypeConverter &converter,
               const runtime::Target &target, TileState &state, Lowering lowering) {
  (patterns.add<TilePattern>(converter, patterns.getContext(), target, state, lowering,
                             Ops::getOperationName()),
   ...);
}

/// Tiles need sizes: a tensor with a dynamic dim (tensor<?x200xf32>) is an error naming
/// the op and the type, not a program that silently does nothing.
LogicalResult rejectUntileableShapes(ModuleOp module) {
  auto problem = [](Type t) -> const char * {
    auto shaped = dyn_cast<ShapedType>(t);
    if (!shaped)
      return nullptr;
    if (!shaped.hasRank() || !shaped.hasStaticShape())
      return "a dynamic shape; the neuron lowering needs static shapes";
    return nullptr;
  };
  for (auto func : module.getOps<func::FuncOp>()) {
    for (auto [i, t] : llvm::enumerate(func.getArgumentTypes()))
      if (const char *why = problem(t))
        return func.emitError("argument ")
               << i << " of @" << func.getSymName() << " has type " << t << " with " << why;
    for (auto [i, t] : llvm::enumerate(func.getResultTypes()))
      if (const char *why = problem(t))
        return func.emitError("result ")
               << i << " of @" << func.getSymName() << " has type " << t << " with " << why;
    WalkResult result = func.walk([&](Operation *op) {
      SmallVector<Type> types(op->getOperandTypes());
      llvm::append_range(types, op->getResultTypes());
      for (Type t : types)
        if (const char *why = problem(t)) {
          op->emitError("'") << op->getName() << "' has a value of type " << t << " with "
                             << why;
          return WalkResult::interrupt();
        }
      // Empty tensors lower to nothing. An op that makes a non-empty result from an empty
      // operand (a sum over an empty dim is 0 in eager, an amax an error) would leave its
      // result unwritten; only a concat, which copies each operand, and an insert_strided,
      // which copies its input and then its (empty) window, are exact.
      auto empty = [](Type t) {
        auto shaped = dyn_cast<ShapedType>(t);
        return shaped && shaped.getNumElements() == 0;
      };
      if (!isa<ntorch::ConcatOp, ntorch::InsertStridedOp>(op) && llvm::any_of(op->getOperandTypes(), empty) &&
          !llvm::all_of(op->getResultTypes(), empty)) {
        op->emitError("'") << op->getName()
                           << "' computes a non-empty result from an empty tensor, which "
                              "the neuron lowering does not support";
        return WalkResult::interrupt();
      }
      return WalkResult::advance();
    });
    if (result.wasInterrupted())
      return failure();
  }
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
    MLIRContext *ctx = &getContext();
    HbmTypeConverter converter;
    ConversionTarget legal(*ctx);
    legal.addLegalDialect<ntile::NTileDialect, memref::MemRefDialect>();
    legal.addIllegalDialect<ntorch::NTorchDialect>();
    legal.addDynamicallyLegalOp<func::FuncOp>(
        [&](func::FuncOp f) { return converter.isSignatureLegal(f.getFunctionType()); });
    legal.addDynamicallyLegalOp<func::ReturnOp>(
        [](func::ReturnOp r) { return r.getNumOperands() == 0; });

    if (failed(rejectUntileableShapes(getOperation())))
      return signalPassFailure();
    for (auto func : llvm::to_vector(getOperation().getOps<func::FuncOp>())) {
      if (func.getBody().empty() ||
          !llvm::all_of(func.getArgumentTypes(), llvm::IsaPred<RankedTensorType>))
        continue;
      TileState state;
      unsigned numInputs = func.getNumArguments();
      addOutputArguments(func, state);
      RewritePatternSet patterns(ctx);
      addFamily<ntorch::MatmulOp>(patterns, converter, *t, state, lowerMatmul);
      addFamily<ntorch::UnaryOp, ntorch::BinaryOp, ntorch::CastOp, ntorch::SelectOp>(
          patterns, converter, *t, state, lowerElementwise);
      addFamily<ntorch::ConstantOp, ntorch::ReshapeOp, ntorch::PermuteOp, ntorch::BroadcastOp,
                ntorch::SliceOp, ntorch::ConcatOp, ntorch::ScatterWindowOp, ntorch::PadOp,
                ntorch::GatherRowsOp, ntorch::ScatterRowsOp, ntorch::CollectiveOp, ntorch::RandomOp,
                ntorch::AsStridedOp, ntorch::InsertStridedOp>(
          patterns, converter, *t, state, lowerDataMovement);
      addFamily<ntorch::ReduceOp>(patterns, converter, *t, state, lowerReduction);
      addFamily<ntorch::ScanOp>(patterns, converter, *t, state, lowerScan);
      addFamily<ntorch::Conv2dOp, ntorch::Pool2dOp>(patterns, converter, *t, state, lowerWindow);
      addFamily<ntorch::FusionOp>(patterns, converter, *t, state, lowerFusion);
      addFamily<ntorch::KernelOp>(patterns, converter, *t, state, lowerKernel);
      patterns.add<ReturnPattern>(converter, ctx, *t, state, numInputs);
      populateFunctionOpInterfaceTypeConversionPattern<func::FuncOp>(patterns, converter);
      if (failed(applyPartialConversion(func, legal, std::move(patterns))))
        return signalPassFailure();
    }
  }
};

} // namespace
} // namespace neuron::compiler

// Verifiers, folders and canonicalizations of the ntorch ops.
#include "dialects/NTorch/IR/NTorchOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/OpImplementation.h"

using namespace mlir;
using namespace neuron::ntorch;

bool neuron::ntorch::isBroadcastableTo(ArrayRef<int64_t> from, ArrayRef<int64_t> to) {
  if (from.size() > to.size())
    return false;
  size_t lead = to.size() - from.size();
  for (size_t i = 0; i < from.size(); ++i)
    if (from[i] != 1 && from[i] != to[lead + i])
      return false;
  return true;
}

static RankedTensorType tensorType(Value v) { return cast<RankedTensorType>(v.getType()); }

static std::string shapeStr(ArrayRef<int64_t> shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

//===----------------------------------------------------------------------===//
// ConstantOp
//===----------------------------------------------------------------------===//

OpFoldResult ConstantOp::fold(FoldAdaptor) { return getValue(); }

LogicalResult ConstantOp::verify() {
  if (cast<TypedAttr>(getValue()).getType() != getType())
    return emitOpError("value type ") << cast<TypedAttr>(getValue()).getType()
                                      << " differs from the result type " << getType();
  return success();
}

//===----------------------------------------------------------------------===//
// MatmulOp
//===----------------------------------------------------------------------===//

LogicalResult MatmulOp::verify() {
  auto lhs = tensorType(getLhs()), rhs = tensorType(getRhs()), res = tensorType(getResult());
  if (lhs.getRank() != 2 || rhs.getRank() != 2 || res.getRank() != 2)
    return emitOpError("expects rank-2 operands and result, got ranks ")
           << lhs.getRank() << ", " << rhs.getRank() << " -> " << res.getRank();
  int64_t m = getTransposeLhs() ? lhs.getDimSize(1) : lhs.getDimSize(0);
  int64_t k = getTransposeLhs() ? lhs.getDimSize(0) : lhs.getDimSize(1);
  int64_t k2 = getTransposeRhs() ? rhs.getDimSize(1) : rhs.getDimSize(0);
  int64_t n = getTransposeRhs() ? rhs.getDimSize(0) : rhs.getDimSize(1);
  if (k != k2)
    return emitOpError("contraction sizes differ: lhs has ") << k << ", rhs has " << k2;
  if (res.getDimSize(0) != m || res.getDimSize(1) != n)
    return emitOpError("result shape ") << shapeStr(res.getShape()) << " should be "
                                        << shapeStr({m, n});
  return success();
}

namespace {
/// matmul(permute[1,0](x), y) -> matmul(x, y) {transpose_lhs}; likewise for rhs.
/// Loading a transposed tile is just another DMA access pattern.
struct FoldTransposeIntoMatmul : OpRewritePattern<MatmulOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(MatmulOp op, PatternRewriter &rewriter) const override {
    auto isTranspose = [](Value v) -> PermuteOp {
      auto p = v.getDefiningOp<PermuteOp>();
      if (p && p.getDims().size() == 2 && p.getDims()[0] == 1 && p.getDims()[1] == 0)
        return p;
      return nullptr;
    };
    PermuteOp lhs = isTranspose(op.getLhs()), rhs = isTranspose(op.getRhs());
    if (!lhs && !rhs)
      return failure();
    rewriter.modifyOpInPlace(op, [&] {
      if (lhs) {
        op.getLhsMutable().assign(lhs.getInput());
        op.setTransposeLhs(!op.getTransposeLhs());
      }
      if (rhs) {
        op.getRhsMutable().assign(rhs.getInput());
        op.setTransposeRhs(!op.getTransposeRhs());
      }
    });
    return success();
  }
};
} // namespace

void MatmulOp::getCanonicalizationPatterns(RewritePatternSet &results, MLIRContext *ctx) {
  results.add<FoldTransposeIntoMatmul>(ctx);
}

//===----------------------------------------------------------------------===//
// UnaryOp, BinaryOp, CastOp
//===----------------------------------------------------------------------===//

LogicalResult UnaryOp::verify() {
  if (tensorType(getInput()).getShape() != tensorType(getResult()).getShape())
    return emitOpError("result shape differs from the input shape");
  return success();
}

LogicalResult BinaryOp::verify() {
  auto res = tensorType(getResult()).getShape();
  for (Value v : {getLhs(), getRhs()})
    if (!isBroadcastableTo(tensorType(v).getShape(), res))
      return emitOpError("operand shape ") << shapeStr(tensorType(v).getShape())
                                           << " does not broadcast to the result shape "
                                           << shapeStr(res);
  return success();
}

namespace {
/// binary(broadcast(x), y) -> binary(x, y): the binary op broadcasts by itself.
struct FoldBroadcastIntoBinary : OpRewritePattern<BinaryOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(BinaryOp op, PatternRewriter &rewriter) const override {
    if (!llvm::any_of(op->getOperands(),
                      [](Value v) { return v.getDefiningOp<BroadcastOp>(); }))
      return failure();
    rewriter.modifyOpInPlace(op, [&] {
      for (OpOperand &operand : op->getOpOperands())
        if (auto b = operand.get().getDefiningOp<BroadcastOp>())
          operand.set(b.getInput());
    });
    return success();
  }
};
} // namespace

void BinaryOp::getCanonicalizationPatterns(RewritePatternSet &results, MLIRContext *ctx) {
  results.add<FoldBroadcastIntoBinary>(ctx);
}

LogicalResult CastOp::verify() {
  if (tensorType(getInput()).getShape() != tensorType(getResult()).getShape())
    return emitOpError("result shape differs from the input shape");
  return success();
}

OpFoldResult CastOp::fold(FoldAdaptor) {
  if (getInput().getType() == getType())
    return getInput();
  return {};
}

//===----------------------------------------------------------------------===//
// PermuteOp, ReshapeOp, BroadcastOp
//===----------------------------------------------------------------------===//

LogicalResult PermuteOp::verify() {
  auto in = tensorType(getInput()), res = tensorType(getResult());
  ArrayRef<int64_t> dims = getDims();
  if ((int64_t)dims.size() != in.getRank() || res.getRank() != in.getRank())
    return emitOpError("expects ") << in.getRank() << " dims, got " << dims.size();
  llvm::SmallVector<bool> seen(dims.size(), false);
  for (auto [i, d] : llvm::enumerate(dims)) {
    if (d < 0 || d >= (int64_t)dims.size() || seen[d])
      return emitOpError("dims ") << shapeStr(dims) << " are not a permutation";
    seen[d] = true;
    if (res.getDimSize(i) != in.getDimSize(d))
      return emitOpError("result dimension ") << i << " should be " << in.getDimSize(d);
  }
  if (in.getElementType() != res.getElementType())
    return emitOpError("changes the element type");
  return success();
}

OpFoldResult PermuteOp::fold(FoldAdaptor) {
  for (auto [i, d] : llvm::enumerate(getDims()))
    if ((int64_t)i != d)
      return {};
  return getInput();
}

LogicalResult ReshapeOp::verify() {
  auto in = tensorType(getInput()), res = tensorType(getResult());
  if (in.getNumElements() != res.getNumElements())
    return emitOpError("cannot reshape ") << shapeStr(in.getShape()) << " ("
                                          << in.getNumElements() << " elements) to "
                                          << shapeStr(res.getShape());
  if (in.getElementType() != res.getElementType())
    return emitOpError("changes the element type");
  return success();
}

OpFoldResult ReshapeOp::fold(FoldAdaptor) {
  if (getInput().getType() == getType())
    return getInput();
  if (auto inner = getInput().getDefiningOp<ReshapeOp>()) {
    getInputMutable().assign(inner.getInput());
    return getResult();
  }
  return {};
}

LogicalResult BroadcastOp::verify() {
  auto in = tensorType(getInput()), res = tensorType(getResult());
  if (!isBroadcastableTo(in.getShape(), res.getShape()))
    return emitOpError("cannot broadcast ") << shapeStr(in.getShape()) << " to "
                                            << shapeStr(res.getShape());
  if (in.getElementType() != res.getElementType())
    return emitOpError("changes the element type");
  return success();
}

OpFoldResult BroadcastOp::fold(FoldAdaptor) {
  if (getInput().getType() == getType())
    return getInput();
  return {};
}

#define GET_OP_CLASSES
#include "dialects/NTorch/IR/NTorchOps.cpp.inc"

// Canonicalization of ntile ops: scalar steps fold into one pass over a tile.
//
// Two tensor_scalar steps in a row, the second reading and overwriting the first's result in
// place, become one two-op tensor_scalar (the engines apply two scalars in one pass, at the
// cost of one): `x * 2 + 1`, `clamp(x, a, b)`. The Scalar engine computes fn(x * scale + bias)
// in one pass: an affine scalar step (x * a + b for constants a, b) right before an
// activation that consumes its result in place, or after an identity activation, becomes one
// activation: fn(x * (a * s) + (b * s + c)). Only float tiles, only mul/add/sub for the
// affine folds (a division by a constant is not a multiply by an exact reciprocal), and only
// when the first step's result is overwritten by the second (the same tile, in place), so
// nothing else can read it. The intermediate is no longer rounded to the tile's dtype: as an
// fp32 fused multiply-add would, the result is at least as accurate as the two steps.
#include "dialects/NTile/IR/NTileOps.h"

#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include <cmath>
#include <optional>

using namespace mlir;

namespace neuron::ntile {
namespace {

/// y = x * scale + bias; `adds`: a step of it adds a constant, which may be +0 (-0 + 0
/// is +0, while an activation's immediate bias of 0 is no bias: fn(x * scale)).
struct Affine {
  double scale = 1.0, bias = 0.0;
  bool adds = false;
  /// This step, then `next` (applied to its result).
  Affine then(const Affine &next) const {
    return {scale * next.scale, bias * next.scale + next.bias, adds || next.adds};
  }
  /// Whether one activation computes it exactly: not when its steps added constants
  /// that sum to +0 (x + 0 makes -0 into +0; the activation would keep -0).
  bool foldable() const { return !(adds && bias == 0.0 && !std::signbit(bias)); }
};

bool isFloatTile(Value v) { return isa<FloatType>(cast<MemRefType>(v.getType()).getElementType()); }

/// Per-partition scale or bias tiles: the immediates alone are not the map.
bool hasTiles(ActivationOp op) {
  return op.getScaleTile() || op.getBiasTile() || op.getAccum();
}

/// The affine map of a tensor_scalar, if it is one (mul, add, sub, reversed or not).
std::optional<Affine> affineStep(AluOp alu, double c, bool reverse) {
  switch (alu) {
  case AluOp::mul:
    return Affine{c, 0.0, false};
  case AluOp::add:
    return Affine{1.0, c, true};
  case AluOp::sub:
    return reverse ? Affine{-1.0, c, true} : Affine{1.0, -c, true};
  default:
    return std::nullopt;
  }
}

std::optional<Affine> affineOf(TensorScalarOp op) {
  std::optional<Affine> first =
      affineStep(op.getOp(), op.getScalar().convertToDouble(), op.getReverse());
  if (!first || !op.getOp2())
    return first;
  std::optional<Affine> second =
      affineStep(*op.getOp2(), op.getScalar2()->convertToDouble(), op.getReverse2());
  if (!second)
    return std::nullopt;
  return first->then(*second);
}

/// The affine first step of a fold: a float tensor_scalar, or an identity activation, whose
/// target `op` reads and overwrites in place, right before `op`.
struct FirstStep {
  Operation *op;
  Value source;
  Affine map;
};

std::optional<FirstStep> firstStepOf(Operation *op, Value source, Value target) {
  if (source != target || !isFloatTile(target))
    return std::nullopt;
  Operation *prev = op->getPrevNode();
  if (auto ts = dyn_cast_or_null<TensorScalarOp>(prev)) {
    std::optional<Affine> map = affineOf(ts);
    if (!map || ts.getTarget() != source || !isFloatTile(ts.getSource()))
      return std::nullopt;
    return FirstStep{prev, ts.getSource(), *map};
  }
  if (auto act = dyn_cast_or_null<ActivationOp>(prev)) {
    if (act.getFn() != ActFunc::identity || act.getTarget() != source || hasTiles(act) ||
        !isFloatTile(act.getSource()))
      return std::nullopt;
    double bias = act.getBias().convertToDouble();
    return FirstStep{prev, act.getSource(),
                     Affine{act.getScale().convertToDouble(), bias, bias != 0.0}};
  }
  return std::nullopt;
}

/// Two one-op tensor_scalars in place on float tiles: one two-op tensor_scalar (the same
/// ops in the same order, computed in fp32 and rounded once).
struct FoldTensorScalarPair : OpRewritePattern<TensorScalarOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(TensorScalarOp op, PatternRewriter &r) const override {
    auto prev = dyn_cast_or_null<TensorScalarOp>(op->getPrevNode());
    if (!prev || op.getOp2() || prev.getOp2() || op.getSource() != op.getTarget() ||
        prev.getTarget() != op.getSource() || !isFloatTile(op.getTarget()) ||
        !isFloatTile(prev.getSource()))
      return failure();
    auto fused = r.create<TensorScalarOp>(
        op.getLoc(), prev.getOp(), prev.getSource(), prev.getScalar(), op.getTarget(),
        prev.getReverse(), op.getOpAttr(), op.getScalarAttr(), op.getReverse());
    fused->setDiscardableAttrs(op->getDiscardableAttrDictionary());
    r.replaceOp(op, fused->getResults());
    r.eraseOp(prev);
    return success();
  }
};

/// An affine tensor_scalar after an identity activation: one identity activation.
struct FoldAffineScalars : OpRewritePattern<TensorScalarOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(TensorScalarOp op, PatternRewriter &r) const override {
    std::optional<Affine> second = affineOf(op);
    std::optional<FirstStep> first = firstStepOf(op, op.getSource(), op.getTarget());
    if (!second || !first || !isa<ActivationOp>(first->op))
      return failure();
    Affine map = first->map.then(*second);
    if (!map.foldable())
      return failure();
    r.replaceOpWithNewOp<ActivationOp>(op, ActFuncAttr::get(r.getContext(), ActFunc::identity),
                                       first->source, op.getTarget(),
                                       r.getF64FloatAttr(map.scale), r.getF64FloatAttr(map.bias),
                                       Value(), Value(), Value());
    r.eraseOp(first->op);
    return success();
  }
};

/// An activation after an affine step: the step moves into its scale and bias.
struct FoldAffineIntoActivation : OpRewritePattern<ActivationOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(ActivationOp op, PatternRewriter &r) const override {
    std::optional<FirstStep> first = firstStepOf(op, op.getSource(), op.getTarget());
    if (!first || hasTiles(op))
      return failure();
    double bias = op.getBias().convertToDouble();
    Affine map = first->map.then(Affine{op.getScale().convertToDouble(), bias, bias != 0.0});
    if (!map.foldable())
      return failure();
    r.replaceOpWithNewOp<ActivationOp>(op, op.getFnAttr(), first->source, op.getTarget(),
                                       r.getF64FloatAttr(map.scale), r.getF64FloatAttr(map.bias),
                                       Value(), Value(), Value());
    r.eraseOp(first->op);
    return success();
  }
};

/// An activation after a float tensor_tensor that adds or subtracts a per-partition [P, 1]
/// tile, in place: the tile becomes the activation's bias tile, fn(x * 1 + (+-1) * b),
/// which is exactly fn(x +- b) (`exp(x - max)` of a softmax is one Scalar pass).
struct FoldRowBiasIntoActivation : OpRewritePattern<ActivationOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(ActivationOp op, PatternRewriter &r) const override {
    auto tt = dyn_cast_or_null<TensorTensorOp>(op->getPrevNode());
    if (!tt || hasTiles(op) || op.getSource() != op.getTarget() ||
        tt.getTarget() != op.getSource() || !isFloatTile(tt.getTarget()) ||
        op.getScale().convertToDouble() != 1.0 || op.getBias().convertToDouble() != 0.0 ||
        (tt.getOp() != AluOp::add && tt.getOp() != AluOp::sub))
      return failure();
    auto isRow = [](Value v) { return cast<MemRefType>(v.getType()).getDimSize(1) == 1; };
    Value full = tt.getLhs(), row = tt.getRhs();
    if (isRow(full) == isRow(row) || isRow(tt.getTarget()))
      return failure();
    double sign = 1.0, scale = 1.0;
    if (isRow(full)) { // row - full = full * -1 + row
      std::swap(full, row);
      if (tt.getOp() == AluOp::sub)
        scale = -1.0;
    } else if (tt.getOp() == AluOp::sub) {
      sign = -1.0;
    }
    if (!isFloatTile(full) || !isFloatTile(row))
      return failure();
    r.replaceOpWithNewOp<ActivationOp>(op, op.getFnAttr(), full, op.getTarget(),
                                       r.getF64FloatAttr(scale), r.getF64FloatAttr(sign),
                                       Value(), row, Value());
    r.eraseOp(tt);
    return success();
  }
};

/// Whether `op` writes `v`, or reads or writes `w` (its declared memory effects).
bool touches(Operation *op, Value v, Value w) {
  auto effects = dyn_cast<MemoryEffectOpInterface>(op);
  if (!effects)
    return true;
  SmallVector<MemoryEffects::EffectInstance> list;
  effects.getEffects(list);
  for (const auto &e : list) {
    if (e.getValue() == w)
      return true;
    if (e.getValue() == v && isa<MemoryEffects::Write>(e.getEffect()))
      return true;
  }
  return false;
}

/// A sum reduce of an activation's fp32 result becomes the activation's row sums (the
/// Scalar engine accumulates along the free dims at the cost of MIN_II): a reduce whose
/// source an earlier float activation in the block wrote, with no write of the source or
/// use of the sum tile in between.
struct FoldSumIntoActivation : OpRewritePattern<ReduceOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(ReduceOp op, PatternRewriter &r) const override {
    Value tile = op.getSource(), sums = op.getTarget();
    auto sumsType = cast<MemRefType>(sums.getType());
    if (op.getOp() != AluOp::add || !sumsType.getElementType().isF32() ||
        !cast<MemRefType>(tile.getType()).getElementType().isF32())
      return failure();
    Operation *sumsDef = sums.getDefiningOp();
    for (Operation *prev = op->getPrevNode(); prev; prev = prev->getPrevNode()) {
      if (prev == sumsDef)
        continue;
      if (isa<LoopOp>(prev))
        return failure();
      auto act = dyn_cast<ActivationOp>(prev);
      if (act && act.getTarget() == tile) {
        if (act.getAccum())
          return failure();
        // The sum tile must exist before the activation.
        if (sumsDef && sumsDef->getBlock() == act->getBlock() && act->isBeforeInBlock(sumsDef))
          r.moveOpBefore(sumsDef, act);
        r.modifyOpInPlace(act, [&] { act.getAccumMutable().assign(sums); });
        r.eraseOp(op);
        return success();
      }
      if (!isa<memref::AllocOp>(prev) && touches(prev, tile, sums))
        return failure();
    }
    return failure();
  }
};

} // namespace

void ReduceOp::getCanonicalizationPatterns(RewritePatternSet &results, MLIRContext *ctx) {
  results.add<FoldSumIntoActivation>(ctx);
}

void TensorScalarOp::getCanonicalizationPatterns(RewritePatternSet &results, MLIRContext *ctx) {
  results.add<FoldTensorScalarPair, FoldAffineScalars>(ctx);
}

void ActivationOp::getCanonicalizationPatterns(RewritePatternSet &results, MLIRContext *ctx) {
  results.add<FoldAffineIntoActivation, FoldRowBiasIntoActivation>(ctx);
}

} // namespace neuron::ntile

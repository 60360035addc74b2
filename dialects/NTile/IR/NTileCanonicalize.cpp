// Canonicalization of ntile ops: affine scalar steps fold into one Scalar-engine activation.
//
// The Scalar engine computes fn(x * scale + bias) in one pass over a tile. A tile op that
// multiplies by, adds or subtracts a scalar (x * a + b for constants a, b), immediately
// followed by another such step or by an activation that consumes its result in place,
// becomes one activation: fn(x * (a * s) + (b * s + c)). Two passes over the tile become
// one, on the engine that has the scale and bias built in (`x * 2 + 1` was two Vector
// passes). Only float tiles, only mul/add/sub (a division by a constant is not a multiply
// by an exact reciprocal), and only when the first step's result is overwritten by the
// second (the same tile, in place), so nothing else can read it. The intermediate is no
// longer rounded to the tile's dtype: as an fp32 fused multiply-add would, the result is
// at least as accurate as the two steps.
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
std::optional<Affine> affineOf(TensorScalarOp op) {
  double c = op.getScalar().convertToDouble();
  switch (op.getOp()) {
  case AluOp::mul:
    return Affine{c, 0.0, false};
  case AluOp::add:
    return Affine{1.0, c, true};
  case AluOp::sub:
    return op.getReverse() ? Affine{-1.0, c, true} : Affine{1.0, -c, true};
  default:
    return std::nullopt;
  }
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

/// An affine tensor_scalar after an affine step: one identity activation.
struct FoldAffineScalars : OpRewritePattern<TensorScalarOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(TensorScalarOp op, PatternRewriter &r) const override {
    std::optional<Affine> second = affineOf(op);
    std::optional<FirstStep> first = firstStepOf(op, op.getSource(), op.getTarget());
    if (!second || !first)
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
  results.add<FoldAffineScalars>(ctx);
}

void ActivationOp::getCanonicalizationPatterns(RewritePatternSet &results, MLIRContext *ctx) {
  results.add<FoldAffineIntoActivation, FoldRowBiasIntoActivation>(ctx);
}

} // namespace neuron::ntile

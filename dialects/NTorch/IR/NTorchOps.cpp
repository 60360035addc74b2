// Verifiers, folders and canonicalizations of the ntorch ops.
#include "dialects/NTorch/IR/NTorchOps.h"

#include "mlir/IR/Builders.h"
#include "runtime/program/Program.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/OpImplementation.h"

#include <cmath>
#include <cstdint>

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

int64_t neuron::ntorch::fusedRowBytes(ArrayRef<Operation *> ops, int64_t cols) {
  llvm::DenseMap<Operation *, size_t> index;
  for (auto [i, o] : llvm::enumerate(ops))
    index[o] = i;
  auto bytesOf = [&](Value v) -> int64_t {
    auto t = cast<ShapedType>(v.getType());
    int64_t elem = std::max<int64_t>(1, t.getElementType().getIntOrFloatBitWidth() / 8);
    // (a reduction's result is a row value whatever its last dim: rows may number cols)
    bool full = t.getRank() > 0 && t.getShape().back() == cols && !v.getDefiningOp<ReduceOp>();
    return (full ? cols : 1) * elem;
  };
  auto lastUseIs = [&](Value v, Operation *o) {
    return llvm::all_of(v.getUsers(), [&](Operation *user) {
      auto it = index.find(user);
      return it != index.end() && it->second <= index[o];
    });
  };
  int64_t total = 0;
  llvm::DenseSet<Value> loaded;
  for (Operation *o : ops) {
    for (Value in : o->getOperands())
      if (!index.count(in.getDefiningOp()) && loaded.insert(in).second)
        total += bytesOf(in);
    if (isa<ReshapeOp>(o))
      continue;
    for (Value r : o->getResults()) {
      bool reuses = llvm::any_of(o->getOperands(), [&](Value in) {
        Operation *def = in.getDefiningOp();
        return def && index.count(def) && !isa<ConstantOp, ReshapeOp>(def) &&
               cast<ShapedType>(in.getType()).getElementType() ==
                   cast<ShapedType>(r.getType()).getElementType() &&
               bytesOf(in) == bytesOf(r) && lastUseIs(in, o);
      });
      if (!reuses)
        total += bytesOf(r);
    }
  }
  return total;
}

/// A float converted to an integer of `width` bits as torch's .to() does on x86-64, which is
/// how the simulator converts too (runtime/simulator/functional/Numerics.h): truncation toward
/// zero; NaN, infinities and values out of range give INT64_MIN for 64 bits; narrower types
/// take the low bits of the int32 conversion, whose out-of-range value is INT32_MIN
/// (300.0 -> u8 44, -1.0 -> u8 255, NaN -> 0).
static APInt floatToInteger(double value, unsigned width) {
  if (width == 64) {
    bool ok = value >= -0x1p63 && value < 0x1p63; // false for NaN
    return APInt(64, ok ? (uint64_t)(int64_t)value : (uint64_t)INT64_MIN);
  }
  bool ok = value > -2147483649.0 && value < 2147483648.0;
  int64_t t = ok ? (int64_t)(int32_t)value : (int64_t)INT32_MIN;
  return APInt(64, (uint64_t)t).trunc(width);
}

DenseElementsAttr neuron::ntorch::splatAttr(ShapedType type, double value) {
  Type et = type.getElementType();
  if (auto ft = dyn_cast<FloatType>(et)) {
    APFloat f(value);
    bool lost;
    f.convert(ft.getFloatSemantics(), APFloat::rmNearestTiesToEven, &lost);
    return DenseElementsAttr::get(type, f);
  }
  if (et.isInteger(1))
    return DenseElementsAttr::get(type, value != 0.0);
  unsigned width = et.getIntOrFloatBitWidth();
  // A whole number (a Python int) wraps to the width, as torch converts Python ints:
  // uint8 + 300 adds 44, uint8 > -1 compares with 255. The bits are the same for ui8 and i8;
  // ui8 reads them back zero-extended.
  if (value == std::trunc(value) && value >= -0x1p63 && value < 0x1p63)
    return DenseElementsAttr::get(type, APInt(64, (uint64_t)(int64_t)value).trunc(width));
  return DenseElementsAttr::get(type, floatToInteger(value, width));
}

static RankedTensorType tensorType(Value v) { return cast<RankedTensorType>(v.getType()); }

static std::string shapeStr(ArrayRef<int64_t> shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

/// Ops that compute in fp32 on the Tensor engine (matmul, convolution) cannot give eager's
/// uint8 results (exact products and sums, wrapped mod 256): rejected, naming the way out.
static LogicalResult rejectUint8(Operation *op, const char *what) {
  auto isUint8 = [](Value v) {
    return cast<ShapedType>(v.getType()).getElementType().isUnsignedInteger(8);
  };
  if (llvm::any_of(op->getOperands(), isUint8) || llvm::any_of(op->getResults(), isUint8))
    return op->emitOpError("does not support uint8 tensors: ")
           << what << " computes in fp32, which is not exact for uint8 (eager wraps mod 256); "
           << "convert the operands to a float dtype (.float()) first";
  return success();
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
  if (failed(rejectUint8(*this, "the matmul")))
    return failure();
  auto lhs = tensorType(getLhs()), rhs = tensorType(getRhs()), res = tensorType(getResult());
  int64_t rank = res.getRank();
  if ((rank != 2 && rank != 3) || lhs.getRank() != rank || rhs.getRank() != rank)
    return emitOpError("expects operands and result of rank 2 (or 3 with a batch), got ranks ")
           << lhs.getRank() << ", " << rhs.getRank() << " -> " << res.getRank();
  int64_t b = rank - 2;
  if (b && (lhs.getDimSize(0) != res.getDimSize(0) || rhs.getDimSize(0) != res.getDimSize(0)))
    return emitOpError("batch sizes differ");
  int64_t m = getTransposeLhs() ? lhs.getDimSize(b + 1) : lhs.getDimSize(b);
  int64_t k = getTransposeLhs() ? lhs.getDimSize(b) : lhs.getDimSize(b + 1);
  int64_t k2 = getTransposeRhs() ? rhs.getDimSize(b + 1) : rhs.getDimSize(b);
  int64_t n = getTransposeRhs() ? rhs.getDimSize(b) : rhs.getDimSize(b + 1);
  if (k != k2)
    return emitOpError("contraction sizes differ: lhs has ") << k << ", rhs has " << k2;
  if (res.getDimSize(b) != m || res.getDimSize(b + 1) != n)
    return emitOpError("result shape ") << shapeStr(res.getShape()) << " should end in "
                                        << shapeStr({m, n});
  return success();
}

namespace {
/// matmul(permute[1,0](x), y) -> matmul(x, y) {transpose_lhs}; likewise for rhs.
/// Loading a transposed tile is just another DMA access pattern.
struct FoldTransposeIntoMatmul : OpRewritePattern<MatmulOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(MatmulOp op, PatternRewriter &rewriter) const override {
    // Swapping the two innermost dims (keeping a batch dim in place).
    auto isTranspose = [](Value v) -> PermuteOp {
      auto p = v.getDefiningOp<PermuteOp>();
      if (!p)
        return nullptr;
      ArrayRef<int64_t> d = p.getDims();
      if (d.size() == 2 && d[0] == 1 && d[1] == 0)
        return p;
      if (d.size() == 3 && d[0] == 0 && d[1] == 2 && d[2] == 1)
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

/// The value under a chain of reshapes and permutes, and those views, outermost first.
static Value throughViews(Value v, SmallVectorImpl<Operation *> &views) {
  while (Operation *def = v.getDefiningOp()) {
    if (!isa<ReshapeOp, PermuteOp>(def))
      break;
    views.push_back(def);
    v = def->getOperand(0);
  }
  return v;
}

/// The same views applied to `base` instead (innermost first), in base's element type.
static Value reapplyViews(PatternRewriter &rewriter, Value base, ArrayRef<Operation *> views) {
  Type et = tensorType(base).getElementType();
  for (Operation *view : llvm::reverse(views)) {
    Operation *copy = rewriter.clone(*view);
    copy->setOperand(0, base);
    copy->getResult(0).setType(
        RankedTensorType::get(tensorType(view->getResult(0)).getShape(), et));
    base = copy->getResult(0);
  }
  return base;
}

/// matmul(x * c, y) -> matmul(x, y) * c for a scalar constant c, through reshapes and
/// permutes (likewise for y): the scale moves to the result, where it joins the consumer's
/// elementwise work, and the operands stay as they were loaded (narrow, for the pattern
/// below). The fp32 result differs from the original by rounding only (PyTorch's CPU attention
/// scales q and k by sqrt(scale) each).
struct HoistScaleFromMatmul : OpRewritePattern<MatmulOp> {
  using OpRewritePattern::OpRewritePattern;

  /// The multiply by a scalar constant an operand is (through views), with the views and
  /// the constant.
  static BinaryOp scaled(Value v, SmallVectorImpl<Operation *> &views, Value &scale) {
    auto mul = throughViews(v, views).getDefiningOp<BinaryOp>();
    if (!mul || mul.getFn() != BinaryFn::mul)
      return nullptr;
    for (auto [x, c] : {std::pair(mul.getLhs(), mul.getRhs()), std::pair(mul.getRhs(), mul.getLhs())}) {
      if (c.getDefiningOp<ConstantOp>() && tensorType(c).getNumElements() == 1 &&
          tensorType(x) == tensorType(mul.getResult())) {
        scale = c;
        return mul;
      }
    }
    return nullptr;
  }

  LogicalResult matchAndRewrite(MatmulOp op, PatternRewriter &rewriter) const override {
    // fp32 only: in a narrow result type the moved multiply would round a second time.
    auto resType = tensorType(op.getResult());
    if (!resType.getElementType().isF32())
      return failure();
    for (OpOperand *operand : {&op.getLhsMutable(), &op.getRhsMutable()}) {
      SmallVector<Operation *> views;
      Value scale;
      BinaryOp mul = scaled(operand->get(), views, scale);
      if (!mul)
        continue;
      Value unscaled =
          reapplyViews(rewriter, mul.getLhs() == scale ? mul.getRhs() : mul.getLhs(), views);
      rewriter.setInsertionPointAfter(op);
      auto product = rewriter.create<BinaryOp>(op.getLoc(), resType, BinaryFn::mul,
                                               op.getResult(), scale);
      rewriter.replaceAllUsesExcept(op.getResult(), product.getResult(), product);
      rewriter.modifyOpInPlace(op, [&] { operand->set(unscaled); });
      return success();
    }
    return failure();
  }
};

/// matmul(widen(a), widen(b)) -> matmul(a, b), with the same fp32 result, where widen is a
/// bf16/fp16 -> fp32 cast seen through reshapes and permutes. The Tensor engine multiplies
/// the narrow values exactly into its fp32 accumulator, so the result is the same; the fp32
/// copies (and a fp32 matmul, several times slower) go away. This is how PyTorch's CPU
/// attention in bf16 reaches the compiler: its inputs are upcast before the matmuls.
struct FoldWideningIntoMatmul : OpRewritePattern<MatmulOp> {
  using OpRewritePattern::OpRewritePattern;

  /// The narrow value an operand widens (through views), and the views in between.
  static Value narrowSource(Value v, SmallVectorImpl<Operation *> &views) {
    auto cast = throughViews(v, views).getDefiningOp<CastOp>();
    if (!cast)
      return {};
    Type from = tensorType(cast.getInput()).getElementType();
    Type to = tensorType(cast.getResult()).getElementType();
    return to.isF32() && (from.isBF16() || from.isF16()) ? cast.getInput() : Value();
  }

  LogicalResult matchAndRewrite(MatmulOp op, PatternRewriter &rewriter) const override {
    if (!tensorType(op.getResult()).getElementType().isF32())
      return failure();
    SmallVector<Operation *> lhsViews, rhsViews;
    Value lhs = narrowSource(op.getLhs(), lhsViews), rhs = narrowSource(op.getRhs(), rhsViews);
    if (!lhs || !rhs || tensorType(lhs).getElementType() != tensorType(rhs).getElementType())
      return failure();
    Value narrowLhs = reapplyViews(rewriter, lhs, lhsViews);
    Value narrowRhs = reapplyViews(rewriter, rhs, rhsViews);
    rewriter.modifyOpInPlace(op, [&] {
      op.getLhsMutable().assign(narrowLhs);
      op.getRhsMutable().assign(narrowRhs);
    });
    return success();
  }
};
} // namespace

namespace {
/// An op with an empty operand whose result is then all zeros (a sum over an empty dim, a
/// product with an empty contraction dim) -> a zero splat constant, or an empty constant
/// for an empty result. Empty tensors lower to nothing, so the op itself could not write
/// its result (and the reduction's lowering refuses to reduce an empty dim).
LogicalResult replaceWithZeros(Operation *op, Value input, Value result,
                               PatternRewriter &rewriter) {
  auto in = tensorType(input), res = tensorType(result);
  if (in.getNumElements() != 0)
    return failure();
  if (res.getNumElements() == 0) {
    rewriter.replaceOpWithNewOp<ConstantOp>(op, res,
                                            DenseElementsAttr::get(res, ArrayRef<Attribute>{}));
    return success();
  }
  Attribute zero = rewriter.getZeroAttr(res.getElementType());
  if (!zero)
    return failure();
  rewriter.replaceOpWithNewOp<ConstantOp>(op, res, DenseElementsAttr::get(res, zero));
  return success();
}

/// matmul(a, b) with an empty contraction dim and a non-empty result -> zeros (eager's mm).
struct EmptyContractionMatmul : OpRewritePattern<MatmulOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(MatmulOp op, PatternRewriter &rewriter) const override {
    Value empty = tensorType(op.getLhs()).getNumElements() == 0 ? op.getLhs() : op.getRhs();
    return replaceWithZeros(op, empty, op.getResult(), rewriter);
  }
};
} // namespace

void MatmulOp::getCanonicalizationPatterns(RewritePatternSet &results, MLIRContext *ctx) {
  results.add<FoldTransposeIntoMatmul, HoistScaleFromMatmul, FoldWideningIntoMatmul,
              EmptyContractionMatmul>(ctx);
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

OpFoldResult CastOp::fold(FoldAdaptor adaptor) {
  if (getInput().getType() == getType())
    return getInput();
  // A cast of a splat constant is a splat constant (scalars of mixed-precision ops),
  // converted as the simulator converts at run time.
  auto splat = dyn_cast_or_null<SplatElementsAttr>(adaptor.getInput());
  if (!splat)
    return {};
  auto type = cast<RankedTensorType>(getType());
  Type from = splat.getElementType(), to = type.getElementType();
  if (isa<FloatType>(from)) {
    double value = splat.getSplatValue<APFloat>().convertToDouble();
    if (isa<FloatType>(to) || to.isInteger(1))
      return splatAttr(type, value);
    return DenseElementsAttr::get(type, floatToInteger(value, to.getIntOrFloatBitWidth()));
  }
  // Integers keep their exact value (int64 beyond 2^53 too); ui8 and i1 are unsigned:
  // ui8 200 is 200, never -56.
  APInt value = from.isInteger(1) ? APInt(1, splat.getSplatValue<bool>())
                                  : splat.getSplatValue<APInt>();
  bool isSigned = !from.isInteger(1) && !from.isUnsignedInteger();
  if (auto ft = dyn_cast<FloatType>(to)) {
    // Through fp32, as torch (and the simulator) convert integers to half types.
    APFloat f(APFloat::IEEEsingle());
    f.convertFromAPInt(value, isSigned, APFloat::rmNearestTiesToEven);
    bool lost;
    f.convert(ft.getFloatSemantics(), APFloat::rmNearestTiesToEven, &lost);
    return DenseElementsAttr::get(type, f);
  }
  if (to.isInteger(1))
    return DenseElementsAttr::get(type, !value.isZero());
  unsigned width = to.getIntOrFloatBitWidth();
  return DenseElementsAttr::get(type, isSigned ? value.sextOrTrunc(width)
                                               : value.zextOrTrunc(width));
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

//===----------------------------------------------------------------------===//
// ReduceOp
//===----------------------------------------------------------------------===//

LogicalResult ScanOp::verify() {
  auto in = tensorType(getInput()), res = tensorType(getResult());
  if (in.getShape() != res.getShape())
    return emitOpError("result shape must be the input's");
  if (in.getRank() != 2 || !isa<FloatType>(in.getElementType()) ||
      !isa<FloatType>(res.getElementType()))
    return emitOpError("scans a rank-2 float tensor along its last dim");
  if (getFn() != BinaryFn::add && getFn() != BinaryFn::mul)
    return emitOpError("scans with add or mul only");
  return success();
}

LogicalResult ReduceOp::verify() {
  auto in = tensorType(getInput()), res = tensorType(getResult());
  SmallVector<int64_t> expected;
  SmallVector<bool> reduced(in.getRank(), false);
  for (int64_t d : getDims()) {
    if (d < 0 || d >= in.getRank() || reduced[d])
      return emitOpError("dims ") << shapeStr(getDims()) << " are invalid for rank "
                                  << in.getRank();
    reduced[d] = true;
  }
  for (int64_t i = 0; i < in.getRank(); ++i)
    if (!reduced[i])
      expected.push_back(in.getDimSize(i));
    else if (getKeepdim())
      expected.push_back(1);
  if (res.getShape() != ArrayRef<int64_t>(expected))
    return emitOpError("result shape ") << shapeStr(res.getShape()) << " should be "
                                        << shapeStr(expected);
  return success();
}

namespace {
/// reduce(x, dims) with dims not trailing -> reduce(permute(x), trailing dims):
/// the lowering reduces along the free dimension of a tile.
struct MoveReducedDimsLast : OpRewritePattern<ReduceOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(ReduceOp op, PatternRewriter &rewriter) const override {
    auto in = tensorType(op.getInput());
    int64_t rank = in.getRank(), n = op.getDims().size();
    SmallVector<bool> reduced(rank, false);
    for (int64_t d : op.getDims())
      reduced[d] = true;
    SmallVector<int64_t> sorted(op.getDims());
    llvm::sort(sorted);
    bool trailing = true;
    for (int64_t i = 0; i < n; ++i)
      trailing &= sorted[i] == rank - n + i;
    if (trailing && (!op.getKeepdim() || n == 0))
      return failure();
    SmallVector<int64_t> perm, shape, keptShape;
    for (int64_t i = 0; i < rank; ++i)
      if (!reduced[i]) {
        perm.push_back(i);
        keptShape.push_back(in.getDimSize(i));
      }
    for (int64_t d : sorted)
      perm.push_back(d);
    for (int64_t p : perm)
      shape.push_back(in.getDimSize(p));
    Value x = op.getInput();
    if (!trailing)
      x = rewriter.create<PermuteOp>(op.getLoc(), RankedTensorType::get(shape, in.getElementType()),
                                     x, perm);
    SmallVector<int64_t> dims = llvm::to_vector(llvm::seq<int64_t>(rank - n, rank));
    auto keptType = RankedTensorType::get(keptShape, tensorType(op.getResult()).getElementType());
    Value r = rewriter.create<ReduceOp>(op.getLoc(), keptType, op.getFn(), x, dims, false);
    if (op.getKeepdim())
      r = rewriter.create<ReshapeOp>(op.getLoc(), op.getType(), r);
    rewriter.replaceOp(op, r);
    return success();
  }
};
} // namespace

namespace {
/// sum over an empty dim with a non-empty result -> zeros, as in eager. (amax/amin of an
/// empty dim is an error in eager and stays one here.)
struct EmptySum : OpRewritePattern<ReduceOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(ReduceOp op, PatternRewriter &rewriter) const override {
    if (op.getFn() != ReduceFn::sum)
      return failure();
    return replaceWithZeros(op, op.getInput(), op.getResult(), rewriter);
  }
};
} // namespace

void ReduceOp::getCanonicalizationPatterns(RewritePatternSet &results, MLIRContext *ctx) {
  results.add<MoveReducedDimsLast, EmptySum>(ctx);
}

//===----------------------------------------------------------------------===//
// SelectOp, SliceOp, ConcatOp, PadOp, GatherRowsOp
//===----------------------------------------------------------------------===//

LogicalResult SelectOp::verify() {
  auto res = tensorType(getResult()).getShape();
  for (Value v : {getCondition(), getLhs(), getRhs()})
    if (!isBroadcastableTo(tensorType(v).getShape(), res))
      return emitOpError("operand shape ") << shapeStr(tensorType(v).getShape())
                                           << " does not broadcast to the result shape "
                                           << shapeStr(res);
  if (!tensorType(getCondition()).getElementType().isInteger(1))
    return emitOpError("condition must be a tensor of i1");
  return success();
}

LogicalResult SliceOp::verify() {
  auto in = tensorType(getInput()), res = tensorType(getResult());
  int64_t rank = in.getRank();
  if (res.getRank() != rank || (int64_t)getOffsets().size() != rank ||
      (int64_t)getStrides().size() != rank)
    return emitOpError("expects offsets, strides and result of rank ") << rank;
  for (int64_t d = 0; d < rank; ++d) {
    int64_t off = getOffsets()[d], st = getStrides()[d], size = res.getDimSize(d);
    if (off < 0 || st < 1 || (size > 0 && off + (size - 1) * st >= in.getDimSize(d)))
      return emitOpError("dimension ") << d << ": " << size << " elements from " << off
                                       << " by " << st << " exceed size " << in.getDimSize(d);
  }
  return success();
}

OpFoldResult SliceOp::fold(FoldAdaptor) {
  if (getInput().getType() != getType())
    return {};
  for (auto [o, s] : llvm::zip(getOffsets(), getStrides()))
    if (o != 0 || s != 1)
      return {};
  return getInput();
}

LogicalResult ScatterWindowOp::verify() {
  auto in = tensorType(getInput()), res = tensorType(getResult());
  int64_t rank = res.getRank();
  if (in.getRank() != rank || (int64_t)getOffsets().size() != rank ||
      (int64_t)getStrides().size() != rank)
    return emitOpError("expects offsets, strides and input of rank ") << rank;
  for (int64_t d = 0; d < rank; ++d) {
    int64_t off = getOffsets()[d], st = getStrides()[d], size = in.getDimSize(d);
    if (off < 0 || st < 1 || (size > 0 && off + (size - 1) * st >= res.getDimSize(d)))
      return emitOpError("dimension ") << d << ": the window exceeds size " << res.getDimSize(d);
  }
  return success();
}

/// A strided window of `shape` at `offset` + i[d] * strides[d] into `elements` contiguous
/// elements: one stride per dim, non-negative, every address inside; with `distinct`,
/// no two window elements share an address (sorted by stride, each dim longer than one
/// steps past the extent of the dims below it: sufficient, and true of every view).
static LogicalResult verifyStridedWindow(Operation *op, ArrayRef<int64_t> shape, int64_t offset,
                                         ArrayRef<int64_t> strides, int64_t elements,
                                         bool distinct) {
  if (strides.size() != shape.size())
    return op->emitOpError("expects ") << shape.size() << " strides, got " << strides.size();
  if (offset < 0)
    return op->emitOpError("offset ") << offset << " is negative";
  if (llvm::any_of(strides, [](int64_t s) { return s < 0; }))
    return op->emitOpError("strides ") << shapeStr(strides) << " must be non-negative";
  if (llvm::is_contained(shape, 0))
    return success();
  int64_t last = offset;
  for (auto [size, stride] : llvm::zip(shape, strides))
    last += (size - 1) * stride;
  if (last >= elements)
    return op->emitOpError("window reaches element ")
           << last << " of a tensor of " << elements << " elements";
  if (!distinct)
    return success();
  SmallVector<std::pair<int64_t, int64_t>> dims; // (stride, size) of dims longer than one
  for (auto [size, stride] : llvm::zip(shape, strides))
    if (size > 1)
      dims.push_back({stride, size});
  llvm::sort(dims);
  int64_t extent = 1; // addresses spanned by the dims with smaller strides
  for (auto [stride, size] : dims) {
    if (stride < extent)
      return op->emitOpError("window elements overlap: stride ")
             << stride << " is below the extent " << extent << " of the smaller strides";
    extent = stride * (size - 1) + extent;
  }
  return success();
}

LogicalResult AsStridedOp::verify() {
  auto in = tensorType(getInput()), res = tensorType(getResult());
  if (in.getElementType() != res.getElementType())
    return emitOpError("result element type differs from the input's");
  return verifyStridedWindow(*this, res.getShape(), getOffset(), getStrides(),
                             in.getNumElements(), /*distinct=*/false);
}

LogicalResult InsertStridedOp::verify() {
  auto in = tensorType(getInput()), src = tensorType(getSrc());
  if (in.getElementType() != src.getElementType())
    return emitOpError("src element type differs from the input's");
  return verifyStridedWindow(*this, src.getShape(), getOffset(), getStrides(),
                             in.getNumElements(), /*distinct=*/true);
}

LogicalResult ConcatOp::verify() {
  auto res = tensorType(getResult());
  int64_t dim = getDim(), total = 0;
  if (dim < 0 || dim >= res.getRank())
    return emitOpError("dim ") << dim << " out of range";
  for (Value v : getInputs()) {
    auto t = tensorType(v);
    if (t.getRank() != res.getRank())
      return emitOpError("operands must have the result's rank");
    for (int64_t d = 0; d < res.getRank(); ++d)
      if (d != dim && t.getDimSize(d) != res.getDimSize(d))
        return emitOpError("operand shape ") << shapeStr(t.getShape())
                                             << " differs outside dim " << dim;
    total += t.getDimSize(dim);
  }
  if (total != res.getDimSize(dim))
    return emitOpError("operands add up to ") << total << " along dim " << dim << ", result has "
                                              << res.getDimSize(dim);
  return success();
}

LogicalResult PadOp::verify() {
  auto in = tensorType(getInput()), res = tensorType(getResult());
  if ((int64_t)getLow().size() != in.getRank() || (int64_t)getHigh().size() != in.getRank())
    return emitOpError("expects one low and one high pad per dimension");
  for (int64_t d = 0; d < in.getRank(); ++d)
    if (getLow()[d] < 0 || getHigh()[d] < 0 ||
        res.getDimSize(d) != in.getDimSize(d) + getLow()[d] + getHigh()[d])
      return emitOpError("dimension ") << d << " does not match the padding";
  return success();
}

LogicalResult GatherRowsOp::verify() {
  auto table = tensorType(getTable()), idx = tensorType(getIndices()), res = tensorType(getResult());
  if (table.getRank() != 2)
    return emitOpError("table must be rank 2");
  if (!isa<IntegerType>(idx.getElementType()))
    return emitOpError("indices must be integers");
  if (idx.getElementType().isUnsignedInteger())
    return emitOpError("does not take uint8 indices (torch takes a uint8 index tensor as a "
                       "mask); convert them to torch.int64");
  SmallVector<int64_t> expected(idx.getShape());
  expected.push_back(table.getDimSize(1));
  if (res.getShape() != ArrayRef<int64_t>(expected))
    return emitOpError("result shape ") << shapeStr(res.getShape()) << " should be "
                                        << shapeStr(expected);
  return success();
}

LogicalResult ScatterRowsOp::verify() {
  auto in = tensorType(getInput()), idx = tensorType(getIndices()), vals = tensorType(getValues());
  if (in.getRank() != 2)
    return emitOpError("input must be rank 2");
  if (tensorType(getResult()) != in)
    return emitOpError("result type must be the input's");
  if (idx.getRank() != 1 || !isa<IntegerType>(idx.getElementType()))
    return emitOpError("indices must be a rank-1 integer tensor");
  if (idx.getElementType().isUnsignedInteger() || idx.getElementType().isInteger(1))
    return emitOpError("takes i32 or i64 indices, not ") << idx.getElementType();
  if (vals.getElementType() != in.getElementType())
    return emitOpError("values must have the input's element type");
  SmallVector<int64_t> expected = {idx.getDimSize(0), in.getDimSize(1)};
  if (vals.getShape() != ArrayRef<int64_t>(expected))
    return emitOpError("values shape ") << shapeStr(vals.getShape()) << " should be "
                                        << shapeStr(expected);
  if (auto a = getAccumulate();
      a && *a != neuron::AluOp::add && *a != neuron::AluOp::mul &&
      *a != neuron::AluOp::max && *a != neuron::AluOp::min)
    return emitOpError("accumulates with add, mul, max or min, not ") << stringifyAluOp(*a);
  return success();
}

//===----------------------------------------------------------------------===//
// Conv2dOp, Pool2dOp
//===----------------------------------------------------------------------===//

static int64_t windowOut(int64_t in, int64_t k, int64_t s, int64_t p, int64_t d) {
  return (in + 2 * p - d * (k - 1) - 1) / s + 1;
}

/// Whether window parameters are out of range: kernel, stride, dilation >= 1,
/// padding >= 0, and the dilated window fits the padded input (a window that
/// does not fit leaves no output, which PyTorch rejects too). Checked before
/// windowOut divides by the stride.
static bool badWindow(Operation *op, int64_t in, int64_t k, int64_t s, int64_t p, int64_t d) {
  constexpr int64_t limit = int64_t(1) << 31;
  if (k < 1 || s < 1 || d < 1 || p < 0 || k > limit || s > limit || d > limit || p > limit) {
    op->emitOpError("window kernel ") << k << ", stride " << s << ", padding " << p
                                      << ", dilation " << d << " out of range";
    return true;
  }
  if (d * (k - 1) + 1 > in + 2 * p) {
    op->emitOpError("window of ") << d * (k - 1) + 1 << " elements does not fit the input of "
                                  << in << " padded by " << p << " on each side";
    return true;
  }
  return false;
}

LogicalResult Conv2dOp::verify() {
  if (failed(rejectUint8(*this, "the convolution")))
    return failure();
  auto in = tensorType(getInput()), w = tensorType(getWeight()), res = tensorType(getResult());
  if (in.getRank() != 4 || w.getRank() != 4 || res.getRank() != 4)
    return emitOpError("expects NCHW input, OIHW weight and NCHW result");
  if (getStride().size() != 2 || getPadding().size() != 2 || getDilation().size() != 2)
    return emitOpError("stride, padding and dilation have two entries");
  int64_t g = getGroups();
  if (g < 1 || in.getDimSize(1) != w.getDimSize(1) * g || w.getDimSize(0) % g != 0)
    return emitOpError("channels do not match: input has ")
           << in.getDimSize(1) << ", weight expects " << w.getDimSize(1) << " x " << g
           << " groups";
  for (int i = 0; i < 2; ++i)
    if (badWindow(*this, in.getDimSize(2 + i), w.getDimSize(2 + i), getStride()[i],
                  getPadding()[i], getDilation()[i]))
      return failure();
  SmallVector<int64_t> expected = {in.getDimSize(0), w.getDimSize(0),
                                   windowOut(in.getDimSize(2), w.getDimSize(2), getStride()[0],
                                             getPadding()[0], getDilation()[0]),
                                   windowOut(in.getDimSize(3), w.getDimSize(3), getStride()[1],
                                             getPadding()[1], getDilation()[1])};
  if (res.getShape() != ArrayRef<int64_t>(expected))
    return emitOpError("result shape ") << shapeStr(res.getShape()) << " should be "
                                        << shapeStr(expected);
  return success();
}

LogicalResult Pool2dOp::verify() {
  auto in = tensorType(getInput()), res = tensorType(getResult());
  if (in.getRank() != 4 || res.getRank() != 4)
    return emitOpError("expects NCHW input and result");
  if (getKernel().size() != 2 || getStride().size() != 2 || getPadding().size() != 2)
    return emitOpError("kernel, stride and padding have two entries");
  for (int i = 0; i < 2; ++i)
    if (badWindow(*this, in.getDimSize(2 + i), getKernel()[i], getStride()[i], getPadding()[i],
                  1))
      return failure();
  SmallVector<int64_t> expected = {
      in.getDimSize(0), in.getDimSize(1),
      windowOut(in.getDimSize(2), getKernel()[0], getStride()[0], getPadding()[0], 1),
      windowOut(in.getDimSize(3), getKernel()[1], getStride()[1], getPadding()[1], 1)};
  if (res.getShape() != ArrayRef<int64_t>(expected))
    return emitOpError("result shape ") << shapeStr(res.getShape()) << " should be "
                                        << shapeStr(expected);
  return success();
}

//===----------------------------------------------------------------------===//
// FusionOp
//===----------------------------------------------------------------------===//

LogicalResult FusionOp::verify() {
  Block &body = getBody().front();
  if (body.getNumArguments() != getInputs().size())
    return emitOpError("body takes ") << body.getNumArguments() << " arguments for "
                                      << getInputs().size() << " operands";
  for (auto [arg, in] : llvm::zip(body.getArguments(), getInputs()))
    if (arg.getType() != in.getType())
      return emitOpError("argument types differ from the operand types");
  auto yield = cast<YieldOp>(body.getTerminator());
  if (yield.getValues().getTypes() != getResultTypes())
    return emitOpError("yields types that differ from the results");
  if (getNumResults() == 0)
    return emitOpError("has no results");
  return success();
}

#define GET_OP_CLASSES
#include "dialects/NTorch/IR/NTorchOps.cpp.inc"

LogicalResult CollectiveOp::verify() {
  auto in = tensorType(getInput()), res = tensorType(getResult());
  if (in.getElementType() != res.getElementType())
    return emitOpError("does not convert element types");
  if (getGroupSize() < 1)
    return emitOpError("group size must be positive, got ") << getGroupSize();
  if (getReduce() != AluOp::add && getReduce() != AluOp::max && getReduce() != AluOp::min &&
      getReduce() != AluOp::mul)
    return emitOpError("cannot reduce with ") << stringifyAluOp(getReduce());
  int64_t expected = runtime::collectiveDstElements(
      static_cast<runtime::CollectiveKind>(getKind()), in.getNumElements(), getGroupSize());
  if (expected != res.getNumElements() ||
      (in.getRank() > 0 && res.getRank() != in.getRank()))
    return emitOpError("a ") << stringifyCollectiveKind(getKind()) << " over "
                             << getGroupSize() << " ranks cannot turn " << in << " into "
                             << res;
  return success();
}

LogicalResult RandomOp::verify() {
  if (!isa<FloatType>(tensorType(getResult()).getElementType()))
    return emitOpError("random numbers are floats, not ")
           << tensorType(getResult()).getElementType();
  if (getStream() < 0 || getStream() >= (int64_t(1) << 40))
    return emitOpError("stream must be in [0, 2^40), got ") << getStream();
  return success();
}

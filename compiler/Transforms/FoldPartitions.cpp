// The neuron-fold-partitions pass: elementwise ops over few rows are viewed as [p k, n / (p k)]
// so that their tiles use all SBUF partitions, and reductions of long rows into few rows are
// split in two (across partitions, then along them).
#include "compiler/Passes.h"
#include "dialects/NTorch/IR/NTorchOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/SetVector.h"

#include <optional>

using namespace mlir;
namespace nt = neuron::ntorch;

namespace neuron::compiler {
#define GEN_PASS_DEF_NEURONFOLDPARTITIONS
#include "compiler/Passes.h.inc"

namespace {

/// Rows of a tensor as the tile lowering sees them: every dim but the last.
int64_t rowsOf(RankedTensorType t) {
  int64_t rows = 1;
  for (int64_t d : t.getShape().drop_back())
    rows *= d;
  return rows;
}

/// Longest row of a folded tensor, in elements: 8 to 32 KiB per partition (1- to 4-byte
/// dtypes), so each partition's DMA descriptor stays well above the 2 KiB that reaches full
/// bandwidth while a double-buffered tile still fits SBUF many times over.
constexpr int64_t kFoldedRow = 8192;

/// Shortest reduced length (elements per row) that splitReduction spreads over partitions.
constexpr int64_t kSplitReductionMin = 4096;

/// The largest divisor of n that is at most limit.
int64_t largestDivisorAtMost(int64_t n, int64_t limit) {
  for (int64_t p = std::min(n, limit); p > 1; --p)
    if (n % p == 0)
      return p;
  return 1;
}

struct FoldPartitions : impl::NeuronFoldPartitionsBase<FoldPartitions> {
  using NeuronFoldPartitionsBase::NeuronFoldPartitionsBase;

  void runOnOperation() override {
    // Candidates, then only whole islands of them: an op whose operand comes from, or whose
    // result goes to, other compute (a matmul whose epilogue it is, a row reduction) stays in
    // that op's shape, so that the two still fuse.
    llvm::SetVector<Operation *> folded;
    getOperation().walk([&](Operation *op) {
      if (isa<nt::UnaryOp, nt::BinaryOp, nt::CastOp, nt::SelectOp>(op) && foldedShape(op))
        folded.insert(op);
    });
    auto neutral = [](Operation *op) {
      return !op || isa<nt::ConstantOp, nt::ReshapeOp, func::ReturnOp>(op);
    };
    for (bool changed = true; changed;) {
      changed = false;
      for (Operation *op : SmallVector<Operation *>(folded.begin(), folded.end())) {
        bool island = llvm::all_of(op->getOperands(), [&](Value v) {
          Operation *def = v.getDefiningOp();
          return neutral(def) || folded.contains(def);
        }) && llvm::all_of(op->getUsers(), [&](Operation *user) {
          return neutral(user) || folded.contains(user);
        });
        if (!island) {
          folded.remove(op);
          changed = true;
        }
      }
    }
    for (Operation *op : folded)
      fold(op, *foldedShape(op));
    getOperation().walk([&](nt::ReduceOp op) { splitReduction(op); });
  }

  /// A reduction of long trailing dims into few rows (a loss's sum, a mean over a whole
  /// tensor) reduces each row on one partition: [R, L] becomes [R, k, L / k] reduced along
  /// its last dim (R k rows on as many partitions), then along k. (fp32 sums are
  /// reassociated, as eager's vectorized sums are; max, min and integer sums are exact.)
  void splitReduction(nt::ReduceOp op) {
    auto in = dyn_cast<RankedTensorType>(op.getInput().getType());
    if (!in || !in.hasStaticShape() || in.getRank() == 0)
      return;
    // A sum in a float narrower than fp32 is rounded once, from fp32: partial sums in its
    // own dtype would be rounded twice.
    if (op.getFn() == nt::ReduceFn::sum && isa<FloatType>(in.getElementType()) &&
        in.getElementType().getIntOrFloatBitWidth() < 32)
      return;
    ArrayRef<int64_t> dims = op.getDims();
    int64_t rank = in.getRank(), first = rank - int64_t(dims.size());
    SmallVector<int64_t> sorted(dims);
    llvm::sort(sorted);
    for (auto [i, d] : llvm::enumerate(sorted))
      if (d != first + int64_t(i))
        return; // (not a trailing suffix)
    int64_t rows = 1, length = 1;
    for (int64_t d = 0; d < rank; ++d)
      (d < first ? rows : length) *= in.getDimSize(d);
    if (rows * 2 > partitions || length < kSplitReductionMin)
      return;
    int64_t k = largestDivisorAtMost(length, partitions / rows);
    if (k < 8)
      return;
    OpBuilder b(op);
    Location loc = op.getLoc();
    Type et = in.getElementType(), rt = cast<RankedTensorType>(op.getType()).getElementType();
    SmallVector<int64_t> lead(in.getShape().take_front(first));
    SmallVector<int64_t> split(lead), partial(lead);
    split.append({k, length / k});
    partial.push_back(k);
    Value x = b.create<nt::ReshapeOp>(loc, RankedTensorType::get(split, et), op.getInput());
    auto inner = b.create<nt::ReduceOp>(loc, RankedTensorType::get(partial, rt), op.getFnAttr(), x,
                                        b.getDenseI64ArrayAttr({int64_t(split.size()) - 1}),
                                        UnitAttr());
    auto outer = b.create<nt::ReduceOp>(loc, RankedTensorType::get(lead, rt), op.getFnAttr(),
                                        inner.getResult(),
                                        b.getDenseI64ArrayAttr({int64_t(partial.size()) - 1}),
                                        UnitAttr());
    Value back = b.create<nt::ReshapeOp>(loc, op.getType(), outer.getResult());
    op.getResult().replaceAllUsesWith(back);
    op.erase();
  }

  /// [p k, n / (p k)] for an op this pass can fold, nothing otherwise.
  std::optional<SmallVector<int64_t, 2>> foldedShape(Operation *op) {
    auto result = dyn_cast<RankedTensorType>(op->getResult(0).getType());
    if (!result || !result.hasStaticShape() || result.getRank() == 0)
      return std::nullopt;
    int64_t numel = result.getNumElements(), rows = rowsOf(result);
    if (rows >= partitions)
      return std::nullopt;
    int64_t p = largestDivisorAtMost(numel, partitions);
    if (p <= rows)
      return std::nullopt;
    // [p * k, m / k]: p partitions, rows no longer than kFoldedRow (k the smallest such
    // divisor of m), so that long tensors also tile into several row blocks.
    int64_t m = numel / p, k = std::max<int64_t>(1, (m + kFoldedRow - 1) / kFoldedRow);
    while (m % k != 0)
      ++k;
    // Operands: the result's shape (viewed as folded), or one element (broadcast as it is).
    for (Value v : op->getOperands()) {
      auto t = cast<RankedTensorType>(v.getType());
      if (t.getShape() != result.getShape() && !(t.hasStaticShape() && t.getNumElements() == 1))
        return std::nullopt;
    }
    return SmallVector<int64_t, 2>{p * k, m / k};
  }

  void fold(Operation *op, ArrayRef<int64_t> folded) {
    auto result = cast<RankedTensorType>(op->getResult(0).getType());
    OpBuilder b(op);
    IRMapping mapping;
    for (Value v : op->getOperands()) {
      auto t = cast<RankedTensorType>(v.getType());
      if (t.getShape() == result.getShape())
        mapping.map(v, b.create<nt::ReshapeOp>(
                           op->getLoc(), RankedTensorType::get(folded, t.getElementType()), v));
      else if (t.getRank() > 2)
        mapping.map(v, b.create<nt::ReshapeOp>(
                           op->getLoc(), RankedTensorType::get({1, 1}, t.getElementType()), v));
    }
    Operation *clone = b.clone(*op, mapping);
    clone->getResult(0).setType(RankedTensorType::get(folded, result.getElementType()));
    Value back = b.create<nt::ReshapeOp>(op->getLoc(), result, clone->getResult(0));
    op->getResult(0).replaceAllUsesWith(back);
    op->erase();
  }
};

} // namespace
} // namespace neuron::compiler

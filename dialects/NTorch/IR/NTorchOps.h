// The ntorch ops.
#pragma once

#include "dialects/NTorch/IR/NTorchDialect.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#define GET_OP_CLASSES
#include "dialects/NTorch/IR/NTorchOps.h.inc"

namespace neuron::ntorch {
/// True when `from` broadcasts to `to` under numpy rules (trailing alignment,
/// each dimension equal or 1).
bool isBroadcastableTo(llvm::ArrayRef<int64_t> from, llvm::ArrayRef<int64_t> to);
/// A splat of `value` for `type`: rounded to nearest for floats; for integers, whole
/// numbers wrap to the width (as eager does with a Python int) and other values convert as
/// torch does on x86-64; nonzero-is-true for i1.
mlir::DenseElementsAttr splatAttr(mlir::ShapedType type, double value);

/// SBUF bytes per partition that a fusion over whole rows (a fused reduction) may keep
/// for its blocks of rows: half of the smallest target's SBUF (192 KiB), the rest left to
/// multi-buffering and to the tiles of other ops.
constexpr int64_t kFusedRowBudgetBytes = 96 * 1024;
/// Rows up to this many elements always fuse whole (their tiles are small).
constexpr int64_t kFusedRowAlwaysFits = 2048;

/// SBUF bytes per partition that the tile-by-tile lowering of `ops` (in order, as in a
/// fusion's body) keeps for one block of rows of `cols` elements: one tile per operand
/// read from outside `ops` and per result, except that a result takes over the tile of an
/// operand produced in `ops` whose last use it is, of the same element type and size (the
/// lowering's reuse rule); a reshape's result shares its input's tile. Values whose last
/// dimension is not `cols`, and reductions' results (row values), take one element.
int64_t fusedRowBytes(llvm::ArrayRef<mlir::Operation *> ops, int64_t cols);
} // namespace neuron::ntorch

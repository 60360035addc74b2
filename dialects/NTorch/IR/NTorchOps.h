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
} // namespace neuron::ntorch

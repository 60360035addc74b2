// MLIR element types as the runtime's dtypes, for passes that ask the simulator's cost model.
#pragma once

#include "runtime/program/Program.h"

#include "mlir/IR/BuiltinTypes.h"

namespace neuron::compiler {

/// The runtime dtype of a tile element type (for costs: every other float type counts as
/// fp32, every other integer width as its nearest runtime integer).
inline runtime::DType runtimeDType(mlir::Type t) {
  if (t.isBF16())
    return runtime::DType::BF16;
  if (t.isF16())
    return runtime::DType::F16;
  if (t.isFloat8E4M3FN())
    return runtime::DType::F8E4M3FN;
  if (t.isFloat8E5M2())
    return runtime::DType::F8E5M2;
  if (mlir::isa<mlir::FloatType>(t))
    return runtime::DType::F32;
  switch (t.getIntOrFloatBitWidth()) {
  case 64:
    return runtime::DType::I64;
  case 32:
    return runtime::DType::I32;
  case 1:
    return runtime::DType::Bool;
  default:
    return runtime::DType::I8;
  }
}

} // namespace neuron::compiler

// The ntile ops.
#pragma once

#include "dialects/NTile/IR/NTileDialect.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Interfaces/ViewLikeInterface.h"

#define GET_OP_CLASSES
#include "dialects/NTile/IR/NTileOps.h.inc"

namespace neuron::ntile {
/// The buffer a value views or reinterprets (through ntile.reinterpret and ntile.view).
mlir::Value getRootBuffer(mlir::Value v);
} // namespace neuron::ntile

// The ntile dialect: tiles in HBM/SBUF/PSUM and the ops that move and compute them.
#pragma once

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Dialect.h"

#include "dialects/NTile/IR/NTileDialect.h.inc"
#include "dialects/Common/NeuronEnums.h"
#include "dialects/NTile/IR/NTileEnums.h.inc"

#define GET_ATTRDEF_CLASSES
#include "dialects/NTile/IR/NTileAttrs.h.inc"

namespace neuron::ntile {
/// The memory space of an ntile buffer; nullopt when it has none.
std::optional<MemSpace> getMemSpace(mlir::MemRefType type);
/// memref<shape x elementType, #ntile.mem<space>>.
mlir::MemRefType getBufferType(llvm::ArrayRef<int64_t> shape, mlir::Type elementType,
                               MemSpace space);
/// Bytes of one element of `type` (i1 is stored as one byte).
int64_t getElementBytes(mlir::Type type);
} // namespace neuron::ntile

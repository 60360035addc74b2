// The ntile dialect: tiles in HBM/SBUF/PSUM and the ops that move and compute them.
#pragma once

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Dialect.h"

#include "dialects/NTile/IR/NTileOpsDialect.h.inc"
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

/// Attributes of an SBUF/PSUM tile's memref.alloc: how many buffers it rotates over in
/// its loop (neuron-multi-buffer) and its byte offset in every partition
/// (neuron-allocate-tiles).
inline constexpr llvm::StringLiteral kBuffersAttr = "ntile.buffers";
inline constexpr llvm::StringLiteral kAddressAttr = "ntile.address";
/// Marks an ntile.dma that loads a software pipeline's next stage (its prologue outside
/// the loop, its prefetch of the next iteration's data inside): the load has a stage of
/// slack and must not queue behind the transfers of the stage in flight. Carried to the
/// nisa dma_copy as nisa.prefetch, which neuron-assign-dma-queues reads.
inline constexpr llvm::StringLiteral kPrefetchAttr = "ntile.prefetch";
/// The physical core (of a logical core of several, see neuron-split-cores) that runs a
/// top-level loop nest and owns the tiles allocated in it; ops hoisted out of such a
/// nest carry it too. Absent: core 0.
inline constexpr llvm::StringLiteral kCoreAttr = "ntile.core";
/// The `ntile.core` of `op` or of its nearest ancestor that has one; 0 if none has.
int64_t getCore(mlir::Operation *op);
/// `ntile.buffers` of a tile allocation (1 without the attribute).
int64_t getBufferCount(mlir::Operation *alloc);
/// Bytes between the rotating buffers of a tile: its bytes per partition, aligned to
/// 64 bytes in SBUF and to a bank in PSUM.
int64_t getBufferStride(mlir::MemRefType tile, int64_t psumBankBytes);
} // namespace neuron::ntile

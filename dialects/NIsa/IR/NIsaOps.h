// The nisa ops (one per instruction) and generic access to their queue, waits and operands.
#pragma once

#include "dialects/NIsa/IR/NIsaDialect.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"

#define GET_OP_CLASSES
#include "dialects/NIsa/IR/NIsaOps.h.inc"

namespace neuron::nisa {
inline constexpr int kQueueTensor = 0, kQueueVector = 1, kQueueScalar = 2, kQueueGpSimd = 3,
                     kQueueDma0 = 4, kNumDmaQueues = 16, kNumQueues = 20;

/// True for the ops that are instructions (everything but nisa.buffer).
bool isInstruction(mlir::Operation *op);
/// The queue an instruction runs on.
int getQueue(mlir::Operation *op);
/// The access pattern an instruction writes.
AccessPatternAttr getWrite(mlir::Operation *op);
/// The access patterns an instruction reads (for matmul with accumulate, dst too).
llvm::SmallVector<AccessPatternAttr> getReads(mlir::Operation *op);
} // namespace neuron::nisa

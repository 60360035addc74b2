// The nisa ops (one per instruction) and generic access to their queue, waits and operands.
#pragma once

#include "dialects/NIsa/IR/NIsaDialect.h"
#include "runtime/program/Program.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"

namespace neuron::nisa {
// Queues are the program format's: one per compute engine, the DMA queues, then the
// collective engine's.
using runtime::kNumDmaQueues;
using runtime::kQueueCollective;
using runtime::kNumQueues;
using runtime::kQueueDma0;
using runtime::kQueueGpSimd;
using runtime::kQueueScalar;
using runtime::kQueueTensor;
using runtime::kQueueVector;
/// A dma_copy of a software pipeline's prologue or prefetch (ntile.prefetch), until
/// neuron-assign-dma-queues gives it its queues.
inline constexpr llvm::StringLiteral kPrefetchAttr = "nisa.prefetch";
} // namespace neuron::nisa

#include "dialects/NIsa/IR/NIsaInterfaces.h.inc"
#define GET_OP_CLASSES
#include "dialects/NIsa/IR/NIsaOps.h.inc"

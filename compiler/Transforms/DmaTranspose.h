// What neuron-dma-transpose turns into dma_transpose, for the passes before it.
#pragma once

#include "dialects/NIsa/IR/NIsaOps.h"
#include "runtime/program/Target.h"

namespace neuron::compiler {

/// Whether neuron-dma-transpose will make `copy` (a transposing HBM -> SBUF load) a
/// dma_transpose on target `t`: its queue time is then its bytes at the transpose's share of
/// the DMA rate, not one descriptor per element.
bool becomesDmaTranspose(nisa::DmaCopyOp copy, const runtime::Target &t);

} // namespace neuron::compiler

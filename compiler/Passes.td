// Every Neuron pass. The order they run in is defined once, in compiler/Pipeline.cpp.
#ifndef NEURON_COMPILER_PASSES_TD
#define NEURON_COMPILER_PASSES_TD

include "mlir/Pass/PassBase.td"

//===----------------------------------------------------------------------===//
// Conversions
//===----------------------------------------------------------------------===//

def ConvertNTileToNIsa : Pass<"convert-ntile-to-nisa", "mlir::ModuleOp"> {
  let summary = "Allocate SBUF/PSUM, number HBM buffers and emit one nisa instruction per tile op";
  let description = [{
    SBUF tiles get a byte range of every partition from a next-fit ring allocator
    (live from their allocation to their last use), PSUM tiles a bank; running out of
    either is an error naming the op. DMAs are spread round-robin over the 16 DMA
    queues. Semaphore waits are added later by neuron-insert-semaphores.
  }];
  let options = [Option<"target", "target", "std::string", "\"trn2\"", "target name">];
  let dependentDialects = ["::neuron::nisa::NIsaDialect"];
}

def ConvertNTorchToNTile : Pass<"convert-ntorch-to-ntile", "mlir::ModuleOp"> {
  let summary = "Tile ntorch ops into DMA and engine ops on SBUF/PSUM tiles";
  let description = [{
    Tensors become HBM buffers (function arguments for inputs and outputs). Each
    ntorch op becomes its tiles: DMA loads with access patterns (transposes and
    broadcasts are patterns), engine ops on tiles of at most 128 partitions, and DMA
    stores. Matmuls tile M and K by 128 and N by 512 and accumulate in PSUM.
  }];
  let options = [Option<"target", "target", "std::string", "\"trn2\"", "target name">];
  let dependentDialects = ["::neuron::ntile::NTileDialect", "::mlir::memref::MemRefDialect"];
}

//===----------------------------------------------------------------------===//
// ntorch transforms
//===----------------------------------------------------------------------===//

def NeuronFuseElementwise : Pass<"neuron-fuse-elementwise", "mlir::func::FuncOp"> {
  let summary = "Group elementwise ops and row reductions into ntorch.fusion regions";
  let description = [{
    Chains of elementwise ops over one iteration shape, with reductions along the
    last dimension when a row fits in one tile (softmax, layer norm), become one
    ntorch.fusion: the lowering computes them tile by tile in SBUF, so their
    intermediate values never travel to HBM and back.
  }];
  let dependentDialects = ["::neuron::ntorch::NTorchDialect"];
}

//===----------------------------------------------------------------------===//
// nisa transforms
//===----------------------------------------------------------------------===//

def NeuronInsertSemaphores : Pass<"neuron-insert-semaphores", "mlir::func::FuncOp"> {
  let summary = "Add the semaphore waits that order instructions across queues";
  let description = [{
    Each queue counts its completed instructions. An instruction that reads or
    writes memory that an earlier instruction on another queue wrote (or reads,
    for a write) waits for that queue's count to cover it. Only the latest
    conflicting instruction per queue is waited for.
  }];
}

#endif // NEURON_COMPILER_PASSES_TD

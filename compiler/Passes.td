// Every Neuron pass. The order they run in is defined once, in compiler/Pipeline.cpp.
#ifndef NEURON_COMPILER_PASSES_TD
#define NEURON_COMPILER_PASSES_TD

include "mlir/Pass/PassBase.td"

//===----------------------------------------------------------------------===//
// Conversions
//===----------------------------------------------------------------------===//

def ConvertNTileToNIsa : Pass<"convert-ntile-to-nisa", "mlir::ModuleOp"> {
  let summary = "Number HBM buffers and emit one nisa instruction per tile op";
  let description = [{
    A dialect conversion (one OpConversionPattern per ntile op). HBM buffers become
    numbered `nisa.buffer` declarations (arguments, then allocations and constants);
    tiles sit at their `ntile.address` (neuron-allocate-tiles), rotating over their
    `ntile.buffers` copies with the iterations of their loop; views add their column
    offset; `ntile.loop` becomes `nisa.loop`. DMAs go to the first DMA queue:
    neuron-assign-dma-queues spreads them, neuron-insert-semaphores orders them.
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
    stores. Matmuls tile M and K by 128 and N by 512 and accumulate in PSUM; when two
    K panels of the resident operand fit, its column panels are a software pipeline
    over two SBUF slots (panel i + 1 loads while the row blocks run against panel i),
    the loads marked `ntile.prefetch`.
  }];
  let options = [Option<"target", "target", "std::string", "\"trn2\"", "target name">];
  let dependentDialects = ["::neuron::ntile::NTileDialect", "::mlir::memref::MemRefDialect"];
}

//===----------------------------------------------------------------------===//
// ntorch transforms
//===----------------------------------------------------------------------===//

def NeuronFoldPartitions : Pass<"neuron-fold-partitions", "mlir::func::FuncOp"> {
  let summary = "Spread elementwise ops over few rows across all partitions";
  let description = [{
    An elementwise op (unary, binary, cast, select) on a tensor with fewer rows than SBUF has
    partitions (a 1-D tensor, [3, 5000000]) would use only those rows' partitions. Its
    operands and result are viewed as [p k, numel / (p k)] instead, with p the largest divisor
    of the element count up to the partition count and k splitting long rows (at most 8192
    elements): HBM tensors are contiguous, so the views are free, and chains of such ops meet in the folded shape once canonicalization cancels the
    reshapes between them. Operands of one element keep broadcasting.
  }];
  let options = [
    Option<"partitions", "partitions", "int64_t", "128", "SBUF partitions to spread over">,
  ];
  let dependentDialects = ["::neuron::ntorch::NTorchDialect"];
}

def NeuronOverlapCollectives : Pass<"neuron-overlap-collectives", "mlir::func::FuncOp"> {
  let summary = "Put the work that waits for a collective after the work that does not";
  let description = [{
    Engines run their instructions in program order, so an op that needs a collective's
    result, placed before independent work on the same engine, holds that work back until the
    collective completes. Ops that use a collective's result (transitively), and from the
    first of them on every later collective and op with side effects (which keep their
    relative order, the same on every rank), move after the other ops of the block; both
    groups keep their order. The collective itself stays where it was, so it starts as early
    as before and the independent work runs while it is in flight.
  }];
}

def NeuronFuseElementwise : Pass<"neuron-fuse-elementwise", "mlir::func::FuncOp"> {
  let summary = "Group elementwise ops and row reductions into ntorch.fusion regions";
  let description = [{
    Chains of elementwise ops over one iteration shape, with reductions along the
    last dimension when a block of whole rows fits SBUF (softmax, layer norm: rows of
    up to 2048 elements always, wider ones while the lowering's tiles of a block fit
    ntorch::kFusedRowBudgetBytes, counted by ntorch::fusedRowBytes), become one
    ntorch.fusion: the lowering computes them tile by tile in SBUF, so their
    intermediate values never travel to HBM and back. First, reshapes that only add
    leading unit dims sink below the elementwise ops they feed (so a batch-of-1 view
    does not split a chain), and a single op reading a matmul's result becomes a
    fusion of its own (a candidate for the matmul's epilogue).
  }];
  let dependentDialects = ["::neuron::ntorch::NTorchDialect"];
}

def NeuronFuseMatmulEpilogue : Pass<"neuron-fuse-matmul-epilogue", "mlir::func::FuncOp"> {
  let summary = "Run a fusion that consumes a matmul's result on each of its PSUM tiles";
  let description = [{
    When a matmul's only user is an ntorch.fusion over the matmul's shape whose other
    operands exist before the matmul (and whose row reductions fit one PSUM tile),
    the fusion gets the `ntorch.matmul_epilogue` attribute: the lowering then applies
    it to every PSUM result tile (bias, activation, softmax rows) instead of storing
    the matmul's result to HBM and loading it back.
  }];
  let options = [Option<"target", "target", "std::string", "\"trn2\"", "target name">];
}

//===----------------------------------------------------------------------===//
// ntile transforms
//===----------------------------------------------------------------------===//

def NeuronHoistInvariantLoads : Pass<"neuron-hoist-invariant-loads", "mlir::func::FuncOp"> {
  let summary = "Move loads that are the same in every iteration out of their loops";
  let description = [{
    A tile allocated in an `ntile.loop` body, written only by one DMA from HBM whose
    patterns do not use the loop's induction variable (a bias or LayerNorm weight
    broadcast over row blocks), and only read otherwise, is allocated and loaded once
    before the loop, provided nothing in the loop writes the source buffer. Inner
    loops first, repeated until nothing moves: a load leaves every loop it does not
    depend on.
  }];
}

def NeuronScalarTensorTensor : Pass<"neuron-scalar-tensor-tensor", "mlir::func::FuncOp"> {
  let summary = "Fuse a scalar step and the tensor_tensor consuming it into scalar_tensor_tensor";
  let description = [{
    `(data <op0> s) <op1> other` runs as one Vector or GpSimd pass (nki.isa
    scalar_tensor_tensor), with s an immediate or a per-partition [P, 1] tile: a
    tensor_scalar, or a tensor_tensor with one per-partition operand, whose float result the
    next instruction touching it, a tensor_tensor with a full tile, consumes and overwrites
    (or is its only other reader). Only where the simulator's cost model prices the fused
    instruction below the two on the Vector engine for the target (runtime/Isa.def: N for a
    bf16 subtract then multiply, else 2N, against tensor_scalar's N with the trn2+
    performance modes plus tensor_tensor's N or 2N): on fp32 tiles `(g - s) * y` of a
    softmax backward or `x * 0.5 + r`. Computed in fp32, rounded once.
  }];
  let options = [Option<"target", "target", "std::string", "\"trn2\"", "target name">];
}

def NeuronAllocateTiles : Pass<"neuron-allocate-tiles", "mlir::func::FuncOp"> {
  let summary = "Give every SBUF/PSUM tile a byte offset in every partition";
  let description = [{
    A next-fit ring allocator over each memory, in program order: a tile lives from
    its allocation to its last use; a use inside a loop lasts until the loop ends,
    and a tile allocated in a loop body holds its `ntile.buffers` copies until its
    loop ends. PSUM tiles take whole banks. The offset becomes `ntile.address` on the
    `memref.alloc`; running out of memory is an error naming the tile.
  }];
  let options = [Option<"target", "target", "std::string", "\"trn2\"", "target name">];
}

def NeuronSplitCores : Pass<"neuron-split-cores", "mlir::func::FuncOp"> {
  let summary = "Split parallel loop nests over the physical cores of a logical core";
  let description = [{
    On a target whose logical core has two physical cores (`trn2-lnc2`), each top-level
    `ntile.loop` whose iterations are independent (no tile from outside the nest, HBM
    writes of different iterations disjoint, no written buffer read back) is split: the
    loop keeps the first half of its iterations on core 0 and a clone marked
    `ntile.core = 1` runs the second half, its offsets shifted by the first half.
    Other nests, and every nest on single-core targets, stay on core 0.
    neuron-allocate-tiles gives each core's tiles that core's SBUF/PSUM;
    convert-ntile-to-nisa and neuron-assign-dma-queues put its instructions on that
    core's queues; neuron-insert-semaphores orders dependences across cores.
  }];
  let options = [Option<"target", "target", "std::string", "\"trn2\"", "target name">];
}

def NeuronMultiBuffer : Pass<"neuron-multi-buffer", "mlir::func::FuncOp"> {
  let summary = "Decide how many buffers each tile allocated in a loop body rotates over";
  let description = [{
    A tile allocated in an `ntile.loop` body is rewritten by every iteration; with
    one buffer the next iteration's writer waits for this iteration's readers. This
    pass sets `ntile.buffers = N` on such allocations (SBUF up to 4, PSUM up to 2, never
    more than the loop's trip count), shrinking N while the tiles of one loop body
    would take more than a quarter of SBUF or half of PSUM.
    convert-ntile-to-nisa gives the tile N copies that rotate with the iterations.
  }];
  let options = [Option<"target", "target", "std::string", "\"trn2\"", "target name">];
}

//===----------------------------------------------------------------------===//
// nisa transforms
//===----------------------------------------------------------------------===//

def NeuronAssignDmaQueues : Pass<"neuron-assign-dma-queues", "mlir::func::FuncOp"> {
  let summary = "Split large DMA transfers by rows and spread them over the 16 DMA queues";
  let description = [{
    In program order, every DMA goes to the next queue round-robin. A transfer of at
    least 16 rows is split by its outer rows into parts of at least 8 rows: outside
    loops parts of at least 32 KiB, inside loops of at least 2 KiB, since an
    instruction of a loop body runs on the same queue in every iteration. The sizes are
    of queue time in bytes at the queue's full rate: a copy of short contiguous runs
    (a column, a transposed read) costs each run's descriptor time (runtime/HARDWARE.md,
    DMA efficiency), so a 128-element column is split like 128 x 2438 bytes. Inside a
    loop nest loads and stores get disjoint queues sized by their bytes; a load just
    before a nest takes the nest's store queues, unless it is a software pipeline's
    prologue (`nisa.prefetch`, consumed here), which takes every queue.
  }];
  let options = [Option<"target", "target", "std::string", "\"trn2\"", "target name">];
}

def NeuronConstantFills : Pass<"neuron-constant-fills", "mlir::func::FuncOp"> {
  let summary = "Fill SBUF tiles of one constant with memset instead of a DMA";
  let description = [{
    A DMA from a constant HBM buffer that holds a single value (a splat) into SBUF becomes a
    `memset` on the GpSimd engine of the same core: max(MIN_II, N) cycles instead of a DMA
    with its start latency and, for a broadcast source, one descriptor per element
    (runtime/HARDWARE.md). Only where a compute engine may write the tile (the partition
    start rule); it runs before neuron-assign-dma-queues splits transfers by rows. The buffer
    declaration stays.
  }];
}

def NeuronDmaTranspose : Pass<"neuron-dma-transpose", "mlir::func::FuncOp"> {
  let summary = "Turn element-strided transposing HBM loads into dma_transpose (trn2 and later)";
  let description = [{
    A load whose partitions are consecutive HBM elements and whose free elements lie a row
    apart (a matmul operand read transposed) moves one element per DMA descriptor, at a few
    percent of the DMA bandwidth (runtime/HARDWARE.md, the DMA efficiency curve). Where the
    target has `dma_transpose` (runtime/program/Isa.def), such a load of 2- or 4-byte
    elements becomes dma_transposes at 90% of the DMA bandwidth: one per index of the dims
    between the partition dim and the innermost (at most 64).
  }];
  let options = [Option<"target", "target", "std::string", "\"trn2\"", "target name">];
}

def NeuronBalanceEngines : Pass<"neuron-balance-engines", "mlir::func::FuncOp"> {
  let summary = "Spread elementwise and reduce instructions over the Vector, Scalar and GpSimd engines";
  let description = [{
    The instructions of one block (a loop body, or the function body) run as a
    pipeline across iterations: the busiest engine sets the pace. Instructions that
    more than one engine can run (tensor_tensor, tensor_scalar, scalar_tensor_tensor,
    tensor_reduce, select, tensor_copy on Vector or GpSimd; tensor_copy on Scalar; a float tensor_tensor
    add, sub or mul with a per-partition operand and a float tensor_scalar add, sub or
    mul on Scalar, as an activation with a per-partition or immediate scale or bias)
    go, longest first, to the engine whose load grows least, with the simulator's cost
    model. GpSimd never gets an instruction that touches PSUM.
  }];
  let options = [Option<"target", "target", "std::string", "\"trn2\"", "target name">];
}

def NeuronInsertSemaphores : Pass<"neuron-insert-semaphores", "mlir::func::FuncOp"> {
  let summary = "Add the semaphore waits that order instructions across queues";
  let description = [{
    Each queue counts its completed instruction instances. An instruction that
    reads or writes memory that an earlier instruction on another queue wrote (or
    reads, for a write) waits for that queue's count to cover it. Inside loops the
    counts are affine in the induction variables (`wait_terms`), and dependences
    carried from earlier iterations (a rewritten tile, a rotating buffer N
    iterations back) are found by visiting each loop body twice. A dependence carried
    by an outer loop waits, in a shared inner loop, for the latest conflicting
    iteration: the same one, a fixed number later (a buffer rotating in the inner
    loop, one rotation back across the outer boundary), or the last.
  }];
}

#endif // NEURON_COMPILER_PASSES_TD

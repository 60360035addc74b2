// The nisa instructions: one op per runtime::Opcode, each naming its opcode through
// the Instruction interface (queues and engines are the runtime's too).
#ifndef NISA_OPS_TD
#define NISA_OPS_TD

include "dialects/NIsa/IR/NIsaDialect.td"

def NIsa_InstructionOpInterface : OpInterface<"InstructionOpInterface"> {
  let cppNamespace = "::neuron::nisa";
  let description = [{
    An instruction of one engine queue: what it is in the program format, the queue
    it runs on, and the memory it reads and writes (which the semaphore pass orders).
  }];
  let methods = [
    InterfaceMethod<"the program opcode", "::neuron::runtime::Opcode", "getOpcode">,
    InterfaceMethod<"the access patterns read (a matmul that accumulates reads dst too)",
                    "::llvm::SmallVector<::neuron::nisa::AccessPatternAttr>", "getReadPatterns">,
    InterfaceMethod<"the access pattern written", "::neuron::nisa::AccessPatternAttr",
                    "getWritePattern", (ins), [{}], [{ return $_op.getDst(); }]>,
    InterfaceMethod<"the queue (runtime::kQueue*)", "int", "getQueueId", (ins), [{}],
                    [{ return $_op.getQueue(); }]>,
  ];
  let extraSharedClassDeclaration = [{
    ::neuron::runtime::Engine getEngine() {
      return ::neuron::runtime::engineOfQueue($_op.getQueueId());
    }
  }];
}

def NIsa_BufferOp : NIsa_Op<"buffer"> {
  let summary = "declares an HBM buffer of the program";
  let description = [{
    ```mlir
    nisa.buffer 0 input 0 : tensor<3x200xf32>
    nisa.buffer 2 constant -1 {value = dense<5.000000e-01> : tensor<f32>} : tensor<f32>
    ```
  }];
  let arguments = (ins I32Attr:$id, NIsa_BufferKind:$kind, I32Attr:$index,
                       TypeAttrOf<AnyRankedTensor>:$type, OptionalAttr<ElementsAttr>:$value);
  let assemblyFormat = "$id $kind $index attr-dict `:` $type";
  let hasVerifier = 1;
}

def NIsa_LoopOp : NIsa_Op<"loop", [NoTerminator, SingleBlock]> {
  let summary = "the hardware runs its body `count` times";
  let description = [{
    Instructions inside use the loop's induction variable `ivN` (N = nesting depth,
    0 outermost) in their access-pattern offsets and semaphore wait counts.
    ```mlir
    nisa.loop iv0 to 8 {
      nisa.dma_copy on 4 #nisa.ap<sbuf[0] + 0 + 1024*(iv0 mod 2), [[1, 128], [1, 256]], f32>,
          #nisa.ap<hbm[0] + 0 + 32768*iv0, [[256, 128], [1, 256]], f32>
    }
    ```
  }];
  let arguments = (ins I64Attr:$count);
  let regions = (region SizedRegion<1>:$body);
  let hasCustomAssemblyFormat = 1;
  let hasVerifier = 1;
  let skipDefaultBuilders = 1;
  let builders = [OpBuilder<(ins "int64_t":$count)>];
}

// Every instruction names its queue and the semaphore counts it waits for: `waits` are
// [queue, count] pairs; inside loops `wait_terms` adds (wait index, level, coef, modulus)
// quadruples to the counts, as loop terms do to offsets.
class NIsa_Instruction<string mnemonic, dag operands, string format, string prefix = "">
    : NIsa_Op<mnemonic, [NIsa_InstructionOpInterface]> {
  let arguments = !con((ins I32Attr:$queue, NIsa_AccessPatternAttr:$dst), operands,
                       (ins OptionalAttr<DenseI32ArrayAttr>:$waits,
                            OptionalAttr<DenseI64ArrayAttr>:$wait_terms));
  let assemblyFormat = prefix # " `on` $queue $dst `,` " # format # " (`wait` $waits^)? attr-dict";
  let hasVerifier = 1;
}

def NIsa_DmaCopyOp : NIsa_Instruction<"dma_copy", (ins NIsa_AccessPatternAttr:$src), "$src"> {
  let summary = "DMA: dst = src, any memories, same element type";
  let extraClassDeclaration = [{
    static ::neuron::runtime::Opcode getOpcode() { return ::neuron::runtime::Opcode::DmaCopy; }
    llvm::SmallVector<AccessPatternAttr> getReadPatterns() {
      return {getSrc()};
    }
  }];
}

def NIsa_DmaTransposeOp : NIsa_Instruction<"dma_transpose", (ins NIsa_AccessPatternAttr:$src), "$src"> {
  let summary = "DMA (trn2 and later): sbuf dst[c, r] = src[r, c] of a 2-D HBM or SBUF source";
  let description = [{
    The source's two dims are [rows, cols] (an HBM source: `[[row stride, rows],
    [1, cols]]`); dst is `[cols partitions, rows]`. Bit-exact for 2- and 4-byte elements.
    ```mlir
    nisa.dma_transpose on 4 #nisa.ap<sbuf[0] + 0, [[1, 128], [1, 64]], f32>,
        #nisa.ap<hbm[1] + 0, [[200, 64], [1, 128]], f32>
    ```
  }];
  let extraClassDeclaration = [{
    static ::neuron::runtime::Opcode getOpcode() { return ::neuron::runtime::Opcode::DmaTranspose; }
    llvm::SmallVector<AccessPatternAttr> getReadPatterns() {
      return {getSrc()};
    }
  }];
}

def NIsa_TransposeOp : NIsa_Instruction<"nc_transpose", (ins NIsa_AccessPatternAttr:$src), "$src"> {
  let summary = "Tensor engine: psum dst[f, p] = sbuf src[p, f], bit-exact";
  let extraClassDeclaration = [{
    static ::neuron::runtime::Opcode getOpcode() { return ::neuron::runtime::Opcode::Transpose; }
    llvm::SmallVector<AccessPatternAttr> getReadPatterns() { return {getSrc()}; }
  }];
}

def NIsa_MemsetOp : NIsa_Instruction<"memset", (ins F64Attr:$value), "$value"> {
  let summary = "Vector, Scalar or GpSimd engine: every element of dst = value";
  let description = [{
    ```mlir
    nisa.memset on 3 <sbuf[0] + 0, [[1, 128], [1, 512]], bf16>, 0.000000e+00
    ```
  }];
  let extraClassDeclaration = [{
    static ::neuron::runtime::Opcode getOpcode() { return ::neuron::runtime::Opcode::Memset; }
    llvm::SmallVector<AccessPatternAttr> getReadPatterns() { return {}; }
  }];
}

def NIsa_MatmulOp : NIsa_Instruction<"nc_matmul",
    (ins NIsa_AccessPatternAttr:$stationary, NIsa_AccessPatternAttr:$moving, UnitAttr:$accumulate),
    "$stationary `,` $moving"> {
  let summary = "Tensor engine: psum dst[M, N] (+)= stationary[K, M]^T @ moving[K, N]";
  let extraClassDeclaration = [{
    static ::neuron::runtime::Opcode getOpcode() { return ::neuron::runtime::Opcode::Matmul; }
    llvm::SmallVector<AccessPatternAttr> getReadPatterns() {
      llvm::SmallVector<AccessPatternAttr> reads = {getStationary(), getMoving()};
      if (getAccumulate())
        reads.push_back(getDst());
      return reads;
    }
  }];
}

def NIsa_ActivationOp : NIsa_Instruction<"activation",
    (ins Neuron_ActFunc:$fn, NIsa_AccessPatternAttr:$src,
         DefaultValuedAttr<F64Attr, "1.0">:$scale, DefaultValuedAttr<F64Attr, "0.0">:$bias,
         OptionalAttr<NIsa_AccessPatternAttr>:$scale_tile,
         OptionalAttr<NIsa_AccessPatternAttr>:$bias_tile,
         OptionalAttr<NIsa_AccessPatternAttr>:$accum),
    "$src", "$fn"> {
  let summary = "Scalar engine: dst = fn(src * scale + bias)";
  let description = [{
    With `scale_tile` / `bias_tile` (one value per partition, read with free stride 0) the
    scale is `scale` times that value, the bias `bias` times the bias tile's value.
    `accum` ([P, 1] fp32) is written too: the sum of each row's activated values (see
    getAccumPattern; the semaphore pass orders it as a write).
  }];
  let extraClassDeclaration = [{
    static ::neuron::runtime::Opcode getOpcode() { return ::neuron::runtime::Opcode::Activation; }
    llvm::SmallVector<AccessPatternAttr> getReadPatterns() {
      llvm::SmallVector<AccessPatternAttr> reads = {getSrc()};
      if (getScaleTileAttr())
        reads.push_back(getScaleTileAttr());
      if (getBiasTileAttr())
        reads.push_back(getBiasTileAttr());
      return reads;
    }
    AccessPatternAttr getAccumPattern() { return getAccumAttr(); }
  }];
}

def NIsa_TensorTensorOp : NIsa_Instruction<"tensor_tensor",
    (ins Neuron_AluOp:$op, NIsa_AccessPatternAttr:$lhs, NIsa_AccessPatternAttr:$rhs),
    "$lhs `,` $rhs", "$op"> {
  let summary = "Vector engine: dst = lhs <op> rhs";
  let extraClassDeclaration = [{
    static ::neuron::runtime::Opcode getOpcode() { return ::neuron::runtime::Opcode::TensorTensor; }
    llvm::SmallVector<AccessPatternAttr> getReadPatterns() {
      return {getLhs(), getRhs()};
    }
  }];
}

def NIsa_TensorScalarOp : NIsa_Instruction<"tensor_scalar",
    (ins Neuron_AluOp:$op, NIsa_AccessPatternAttr:$src, F64Attr:$scalar, UnitAttr:$reverse,
         OptionalAttr<Neuron_AluOp>:$op2, OptionalAttr<F64Attr>:$scalar2, UnitAttr:$reverse2),
    "$src `,` $scalar (`then` $op2^ $scalar2)?", "$op"> {
  let summary = "Vector engine: dst = src <op> scalar (scalar <op> src when reverse), then "
                "<op2> scalar2 in the same pass";
  let extraClassDeclaration = [{
    static ::neuron::runtime::Opcode getOpcode() { return ::neuron::runtime::Opcode::TensorScalar; }
    llvm::SmallVector<AccessPatternAttr> getReadPatterns() {
      return {getSrc()};
    }
  }];
}

def NIsa_ScalarTensorTensorOp : NIsa_Instruction<"scalar_tensor_tensor",
    (ins Neuron_AluOp:$op0, Neuron_AluOp:$op1, NIsa_AccessPatternAttr:$data, F64Attr:$scalar,
         OptionalAttr<NIsa_AccessPatternAttr>:$scalar_tile, NIsa_AccessPatternAttr:$other,
         UnitAttr:$reverse0, UnitAttr:$reverse1),
    "$data `,` $scalar (`tile` $scalar_tile^)? `,` $other", "$op0 $op1"> {
  let summary = "Vector or GpSimd engine: dst = (data <op0> scalar) <op1> other";
  let description = [{
    With `scalar_tile` (one value per partition, read with free stride 0) the scalar is that
    tile's value. `reverse0`: the scalar on the left of op0; `reverse1`: other on the left.
    ```mlir
    nisa.scalar_tensor_tensor sub mul on 1 <sbuf[0] + 0, [[1, 128], [1, 64]], f32>,
        <sbuf[0] + 256, [[1, 128], [1, 64]], f32>, 0.000000e+00 tile <sbuf[0] + 512, [[1, 128], [0, 64]], f32>,
        <sbuf[0] + 1024, [[1, 128], [1, 64]], f32>
    ```
  }];
  let extraClassDeclaration = [{
    static ::neuron::runtime::Opcode getOpcode() { return ::neuron::runtime::Opcode::ScalarTensorTensor; }
    llvm::SmallVector<AccessPatternAttr> getReadPatterns() {
      llvm::SmallVector<AccessPatternAttr> reads = {getData(), getOther()};
      if (getScalarTileAttr())
        reads.push_back(getScalarTileAttr());
      return reads;
    }
  }];
}

def NIsa_TensorTensorScanOp : NIsa_Instruction<"tensor_tensor_scan",
    (ins Neuron_AluOp:$op0, Neuron_AluOp:$op1, NIsa_AccessPatternAttr:$data0,
         NIsa_AccessPatternAttr:$data1, F64Attr:$initial,
         OptionalAttr<NIsa_AccessPatternAttr>:$initial_tile),
    "$data0 `,` $data1 `,` $initial (`tile` $initial_tile^)?", "$op0 $op1"> {
  let summary = "Vector engine: dst[p, i] = (data0[p, i] <op0> dst[p, i - 1]) <op1> data1[p, i]";
  let description = [{
    dst[p, -1] is `initial`, or with `initial_tile` (one value per partition, read with free
    stride 0) that tile's value.
  }];
  let extraClassDeclaration = [{
    static ::neuron::runtime::Opcode getOpcode() { return ::neuron::runtime::Opcode::TensorTensorScan; }
    llvm::SmallVector<AccessPatternAttr> getReadPatterns() {
      llvm::SmallVector<AccessPatternAttr> reads = {getData0(), getData1()};
      if (getInitialTileAttr())
        reads.push_back(getInitialTileAttr());
      return reads;
    }
  }];
}

def NIsa_BnStatsOp : NIsa_Instruction<"bn_stats", (ins NIsa_AccessPatternAttr:$src), "$src"> {
  let summary = "Vector engine: dst[p, 0:6] = (count, mean, M2) of the even then odd elements of src[p]";
  let extraClassDeclaration = [{
    static ::neuron::runtime::Opcode getOpcode() { return ::neuron::runtime::Opcode::BnStats; }
    llvm::SmallVector<AccessPatternAttr> getReadPatterns() { return {getSrc()}; }
  }];
}

def NIsa_BnAggrOp : NIsa_Instruction<"bn_aggr", (ins NIsa_AccessPatternAttr:$src), "$src"> {
  let summary = "Vector engine: dst[p, 0:2] = (mean, variance) of the bn_stats groups of src[p]";
  let extraClassDeclaration = [{
    static ::neuron::runtime::Opcode getOpcode() { return ::neuron::runtime::Opcode::BnAggr; }
    llvm::SmallVector<AccessPatternAttr> getReadPatterns() { return {getSrc()}; }
  }];
}

def NIsa_TensorCopyOp : NIsa_Instruction<"tensor_copy", (ins NIsa_AccessPatternAttr:$src), "$src"> {
  let summary = "Vector engine: dst = src, converting the element type";
  let extraClassDeclaration = [{
    static ::neuron::runtime::Opcode getOpcode() { return ::neuron::runtime::Opcode::TensorCopy; }
    llvm::SmallVector<AccessPatternAttr> getReadPatterns() {
      return {getSrc()};
    }
  }];
}

def NIsa_TensorReduceOp : NIsa_Instruction<"tensor_reduce",
    (ins Neuron_AluOp:$op, NIsa_AccessPatternAttr:$src), "$src", "$op"> {
  let summary = "Vector engine: dst[p, 0] = reduce<op> over the free elements of src[p]";
  let extraClassDeclaration = [{
    static ::neuron::runtime::Opcode getOpcode() { return ::neuron::runtime::Opcode::TensorReduce; }
    llvm::SmallVector<AccessPatternAttr> getReadPatterns() {
      return {getSrc()};
    }
  }];
}

def NIsa_SelectOp : NIsa_Instruction<"select",
    (ins NIsa_AccessPatternAttr:$condition, NIsa_AccessPatternAttr:$on_true,
         NIsa_AccessPatternAttr:$on_false),
    "$condition `,` $on_true `,` $on_false"> {
  let summary = "Vector engine: dst = condition != 0 ? on_true : on_false";
  let extraClassDeclaration = [{
    static ::neuron::runtime::Opcode getOpcode() { return ::neuron::runtime::Opcode::Select; }
    llvm::SmallVector<AccessPatternAttr> getReadPatterns() {
      return {getCondition(), getOnTrue(), getOnFalse()};
    }
  }];
}

def NIsa_DmaGatherOp : NIsa_Instruction<"dma_gather",
    (ins NIsa_AccessPatternAttr:$table, NIsa_AccessPatternAttr:$indices),
    "$table `[` $indices `]`"> {
  let summary = "indirect DMA: dst[p, :] = rows of the table pattern, row indices[p]";
  let description = [{
    `table` is the HBM pattern of row 0 (its first pair is [row stride, rows]; the
    rest selects the columns); `indices` holds one integer per partition in SBUF.
  }];
  let extraClassDeclaration = [{
    static ::neuron::runtime::Opcode getOpcode() { return ::neuron::runtime::Opcode::DmaGather; }
    llvm::SmallVector<AccessPatternAttr> getReadPatterns() {
      return {getTable(), getIndices()};
    }
  }];
}

def NIsa_DmaScatterOp : NIsa_Instruction<"dma_scatter",
    (ins NIsa_AccessPatternAttr:$src, NIsa_AccessPatternAttr:$indices,
         OptionalAttr<Neuron_AluOp>:$accumulate),
    "$src `[` $indices `]`", "(`accumulate` $accumulate^)?"> {
  let summary = "indirect DMA: rows indices[p] of the dst table pattern (<accumulate>)= src[p, :]";
  let description = [{
    `dst` is the HBM pattern of table row 0 (its first pair is [row stride, rows]; the
    rest selects the columns); `src` is an SBUF tile with one row per partition and
    `indices` one integer per partition in SBUF. Rows are written in partition order
    (the last of duplicate indices wins); with `accumulate` (add, mul, max, min) each
    row combines with the table's instead (runtime::Opcode::DmaScatter).
  }];
  let extraClassDeclaration = [{
    static ::neuron::runtime::Opcode getOpcode() { return ::neuron::runtime::Opcode::DmaScatter; }
    llvm::SmallVector<AccessPatternAttr> getReadPatterns() {
      llvm::SmallVector<AccessPatternAttr> reads = {getSrc(), getIndices()};
      if (getAccumulate())
        reads.push_back(getDst());
      return reads;
    }
  }];
}

def NIsa_RandomOp : NIsa_Instruction<"random", (ins I64Attr:$stream), "`stream` $stream"> {
  let summary = "GpSimd engine: dst = the next uniform [0, 1) numbers of stream `stream`";
  let extraClassDeclaration = [{
    static ::neuron::runtime::Opcode getOpcode() { return ::neuron::runtime::Opcode::Random; }
    llvm::SmallVector<AccessPatternAttr> getReadPatterns() { return {}; }
  }];
}

def NIsa_CollectiveOp : NIsa_Instruction<"collective",
    (ins Neuron_CollectiveKind:$kind, Neuron_AluOp:$reduce, StrAttr:$group,
         I64Attr:$group_size, NIsa_AccessPatternAttr:$src),
    "$src", "$kind $reduce `group` $group `of` $group_size"> {
  let summary = "collective engine: dst (HBM) = collective over the group of src (HBM)";
  let extraClassDeclaration = [{
    static ::neuron::runtime::Opcode getOpcode() { return ::neuron::runtime::Opcode::Collective; }
    llvm::SmallVector<AccessPatternAttr> getReadPatterns() {
      return {getSrc()};
    }
  }];
}

def NIsa_InstOp : NIsa_Instruction<"inst",
    (ins Neuron_Opcode:$instr, TypedArrayAttrBase<NIsa_AccessPatternAttr, "access patterns">:$srcs,
         DefaultValuedAttr<DictionaryAttr, "{}">:$fields),
    "$srcs", "$instr"> {
  let summary = "any instruction of the ISA table, by opcode, with its fields";
  let description = [{
    The instructions that have no op of their own (kernels reach them by their nki.isa names):
    `srcs` are the program's sources in order, `fields` the instruction's fields under their
    program-format names. A source the instruction writes (a reduce result) and dst when the
    instruction reads it come from the ISA table (runtime::writesLastSource / readsDst).
    ```mlir
    nisa.inst tensor_scalar_reduce on 1 <sbuf[0] + 256, [[1, 128], [1, 64]], f32>,
        [#nisa.ap<sbuf[0] + 0, [[1, 128], [1, 64]], f32>, #nisa.ap<sbuf[0] + 512, [[1, 128], [1, 1]], f32>]
        {fields = {alu = "mul", alu2 = "max", imm = [5.000000e-01, 0.000000e+00]}}
    ```
  }];
  let extraClassDeclaration = [{
    ::neuron::runtime::Opcode getOpcode() { return ::neuron::toRuntime(getInstr()); }
    /// The runtime instruction's opcode and fields (no operands): what the ISA table's
    /// predicates need.
    ::neuron::runtime::Instruction describe();
    llvm::SmallVector<AccessPatternAttr> getReadPatterns();
    /// Written besides dst: the last source of an instruction that writes it.
    llvm::SmallVector<AccessPatternAttr> getExtraWritePatterns();
  }];
}

#endif // NISA_OPS_TD

// The ntile ops.
#ifndef NTILE_OPS_TD
#define NTILE_OPS_TD

include "dialects/NTile/IR/NTileDialect.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/Interfaces/ViewLikeInterface.td"

// As ntorch tensors: signless integers, and ui8 (torch.uint8, exported as the program's u8).
// UI32, UI16: NKI kernels' uint32 / uint16 tiles (indices, counts); the runtime checks which
// instructions take them.
def NTile_Buffer : MemRefOf<[AnyFloat, AnySignlessInteger, UI8, UI16, UI32]>;

def NTile_ConstantOp : NTile_Op<"constant", [Pure]> {
  let summary = "a constant HBM buffer";
  let description = [{
    ```mlir
    %c = ntile.constant dense<0.5> : memref<f32, #ntile.mem<hbm>>
    ```
  }];
  let arguments = (ins ElementsAttr:$value);
  let results = (outs NTile_Buffer:$result);
  let assemblyFormat = "$value attr-dict `:` type($result)";
  let hasVerifier = 1;
}

def NTile_ReinterpretOp : NTile_Op<"reinterpret", [Pure, ViewLikeOpInterface]> {
  let summary = "the same contiguous HBM bytes with another shape";
  let description = [{
    ```mlir
    %v = ntile.reinterpret %b : memref<3x200xf32, #ntile.mem<hbm>> to memref<600xf32, #ntile.mem<hbm>>
    ```
  }];
  let arguments = (ins NTile_Buffer:$source);
  let results = (outs NTile_Buffer:$result);
  let assemblyFormat = "$source attr-dict `:` type($source) `to` type($result)";
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    mlir::Value getViewSource() { return getSource(); }
  }];
}

def NTile_LoopOp : NTile_Op<"loop", [NoTerminator, SingleBlock]> {
  let summary = "runs its body `count` times; access patterns inside use its induction variable";
  let description = [{
    The induction variable of the loop at nesting depth N (0 = outermost) is `ivN`;
    access patterns in the body add terms such as `128*iv0` to their offsets. A tile
    allocated in the body is a fresh tile in every iteration (the multi-buffering pass
    decides how many physical buffers it rotates over).
    ```mlir
    ntile.loop iv0 to 4 {
      %t = memref.alloc() : memref<128x512xf32, #ntile.mem<sbuf>>
      ntile.dma %x #ntile.ap<0 + 65536*iv0, [[512, 128], [1, 512]]> to %t #ntile.ap<0, [[512, 128], [1, 512]]>
          : memref<512x512xf32, #ntile.mem<hbm>>, memref<128x512xf32, #ntile.mem<sbuf>>
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

def NTile_ViewOp : NTile_Op<"view", [Pure, ViewLikeOpInterface]> {
  let summary = "columns [offset, offset + width) of the first partitions of a tile";
  let description = [{
    The offset (in elements of the free dimension) may vary with enclosing loops.
    ```mlir
    %v = ntile.view %panel #ntile.ap<0 + 128*iv1, [[1024, 128], [1, 128]]>
        : memref<128x1024xbf16, #ntile.mem<sbuf>> to memref<128x128xbf16, #ntile.mem<sbuf>>
    ```
  }];
  let arguments = (ins NTile_Buffer:$source, NTile_AccessPatternAttr:$ap);
  let results = (outs NTile_Buffer:$result);
  let assemblyFormat = "$source $ap attr-dict `:` type($source) `to` type($result)";
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    mlir::Value getViewSource() { return getSource(); }
  }];
}

def NTile_DmaOp : NTile_Op<"dma"> {
  let summary = "copies elements between two access patterns (any memories)";
  let description = [{
    Both patterns visit the same number of elements in row-major order of their
    [stride, size] pairs; a stride of 0 broadcasts. SBUF/PSUM patterns put the
    partition dimension first.
    ```mlir
    ntile.dma %x #ntile.ap<0, [[200, 3], [1, 200]]> to %t #ntile.ap<0, [[200, 3], [1, 200]]>
        : memref<3x200xf32, #ntile.mem<hbm>>, memref<3x200xf32, #ntile.mem<sbuf>>
    ```
  }];
  let arguments = (ins Arg<NTile_Buffer, "", [MemRead]>:$source, NTile_AccessPatternAttr:$source_ap,
                       Arg<NTile_Buffer, "", [MemWrite]>:$target, NTile_AccessPatternAttr:$target_ap);
  let assemblyFormat = [{
    $source $source_ap `to` $target $target_ap attr-dict `:` type($source) `,` type($target)
  }];
  let hasVerifier = 1;
}

def NTile_MatmulOp : NTile_Op<"matmul"> {
  let summary = "Tensor-engine matmul: psum[M, N] (+)= stationary[K, M]^T @ moving[K, N]";
  let description = [{
    K (the partition dimension of both inputs) <= 128, M <= 128, N <= 512 (one
    PSUM bank of fp32). `accumulate` adds into the PSUM tile instead of overwriting.
    ```mlir
    ntile.matmul %st, %mv to %ps {accumulate} : memref<128x3xbf16, #ntile.mem<sbuf>>,
        memref<128x300xbf16, #ntile.mem<sbuf>>, memref<3x300xf32, #ntile.mem<psum>>
    ```
  }];
  let arguments = (ins Arg<NTile_Buffer, "", [MemRead]>:$stationary,
                       Arg<NTile_Buffer, "", [MemRead]>:$moving,
                       Arg<NTile_Buffer, "", [MemRead, MemWrite]>:$result,
                       UnitAttr:$accumulate);
  let assemblyFormat = [{
    $stationary `,` $moving `to` $result attr-dict `:` type($stationary) `,` type($moving) `,` type($result)
  }];
  let hasVerifier = 1;
}

class NTile_ElementwiseOp<string mnemonic> : NTile_Op<mnemonic> {
  let hasVerifier = 1;
}

def NTile_TransposeOp : NTile_Op<"transpose"> {
  let summary = "Tensor engine: psum target[f, p] = source[p, f], bit-exact";
  let description = [{
    The PE array's transpose mode (nki.isa nc_transpose on the Tensor engine): an SBUF tile
    of at most 128 x 128 into a PSUM tile of the same element type.
    ```mlir
    ntile.transpose %s to %t : memref<128x64xbf16, #ntile.mem<sbuf>>, memref<64x128xbf16, #ntile.mem<psum>>
    ```
  }];
  let arguments = (ins Arg<NTile_Buffer, "", [MemRead]>:$source,
                       Arg<NTile_Buffer, "", [MemWrite]>:$target);
  let assemblyFormat = "$source `to` $target attr-dict `:` type($source) `,` type($target)";
  let hasVerifier = 1;
}

def NTile_ActivationOp : NTile_Op<"activation", [AttrSizedOperandSegments]> {
  let summary = "Scalar engine: target = fn(source * scale + bias)";
  let description = [{
    `scale` and `bias` are immediates; with a `scale_tile` / `bias_tile` ([P, 1] tiles,
    one value per partition) the scale is `scale` times the tile's value of the row, the
    bias `bias` times the bias tile's value. With `accum` ([P, 1] fp32) the engine also
    writes the sum of each row's activated values there (the Scalar engine's accumulate
    along the free dims).
    ```mlir
    ntile.activation relu %a to %b : memref<3x300xf32, #ntile.mem<sbuf>>, memref<3x300xf32, #ntile.mem<sbuf>>
    ntile.activation exp %a bias %m : memref<3x1xf32, #ntile.mem<sbuf>> to %b {bias = -1.0 : f64}
        : memref<3x300xf32, #ntile.mem<sbuf>>, memref<3x300xf32, #ntile.mem<sbuf>>
    ```
  }];
  let arguments = (ins Neuron_ActFunc:$fn, Arg<NTile_Buffer, "", [MemRead]>:$source,
                       Arg<NTile_Buffer, "", [MemWrite]>:$target,
                       DefaultValuedAttr<F64Attr, "1.0">:$scale,
                       DefaultValuedAttr<F64Attr, "0.0">:$bias,
                       Arg<Optional<NTile_Buffer>, "", [MemRead]>:$scale_tile,
                       Arg<Optional<NTile_Buffer>, "", [MemRead]>:$bias_tile,
                       Arg<Optional<NTile_Buffer>, "", [MemWrite]>:$accum);
  let assemblyFormat = [{
    $fn $source (`scale` $scale_tile^ `:` type($scale_tile))? (`bias` $bias_tile^ `:` type($bias_tile))?
    `to` $target (`sum` $accum^ `:` type($accum))? attr-dict `:` type($source) `,` type($target)
  }];
  let hasCanonicalizer = 1;
  let hasVerifier = 1;
  let builders = [
    OpBuilder<(ins "::neuron::ActFunc":$fn, "::mlir::Value":$source, "::mlir::Value":$target,
                   "::llvm::APFloat":$scale, "::llvm::APFloat":$bias), [{
      build($_builder, $_state, fn, source, target, scale, bias, ::mlir::Value(),
            ::mlir::Value(), ::mlir::Value());
    }]>
  ];
}

def NTile_TensorTensorOp : NTile_ElementwiseOp<"tensor_tensor"> {
  let summary = "Vector engine: target = lhs <op> rhs";
  let description = [{
    ```mlir
    ntile.tensor_tensor add %a, %b to %c : memref<3x300xf32, #ntile.mem<psum>>,
        memref<3x300xf32, #ntile.mem<sbuf>>, memref<3x300xf32, #ntile.mem<sbuf>>
    ```
  }];
  let arguments = (ins Neuron_AluOp:$op, Arg<NTile_Buffer, "", [MemRead]>:$lhs,
                       Arg<NTile_Buffer, "", [MemRead]>:$rhs, Arg<NTile_Buffer, "", [MemWrite]>:$target);
  let assemblyFormat = [{
    $op $lhs `,` $rhs `to` $target attr-dict `:` type($lhs) `,` type($rhs) `,` type($target)
  }];
}

def NTile_TensorScalarOp : NTile_ElementwiseOp<"tensor_scalar"> {
  let summary = "Vector engine: target = source <op> scalar (scalar <op> source if reverse)";
  let description = [{
    With `then op2 scalar2` the result is combined with a second scalar in the same pass
    (`reverse2`: scalar2 on the left), computed in fp32 and rounded once (float tiles).
    ```mlir
    ntile.tensor_scalar mul %a, 5.000000e-01 to %b : memref<3x300xf32, #ntile.mem<sbuf>>, memref<3x300xf32, #ntile.mem<sbuf>>
    ntile.tensor_scalar max %a, 0.0 then min 6.0 to %a : memref<3x300xf32, #ntile.mem<sbuf>>, memref<3x300xf32, #ntile.mem<sbuf>>
    ```
  }];
  let arguments = (ins Neuron_AluOp:$op, Arg<NTile_Buffer, "", [MemRead]>:$source, F64Attr:$scalar,
                       Arg<NTile_Buffer, "", [MemWrite]>:$target, UnitAttr:$reverse,
                       OptionalAttr<Neuron_AluOp>:$op2, OptionalAttr<F64Attr>:$scalar2,
                       UnitAttr:$reverse2);
  let assemblyFormat = [{
    $op $source `,` $scalar (`then` $op2^ $scalar2)? `to` $target attr-dict `:` type($source) `,` type($target)
  }];
  let builders = [
    OpBuilder<(ins "::neuron::AluOp":$op, "::mlir::Value":$source, "::llvm::APFloat":$scalar,
                   "::mlir::Value":$target, "bool":$reverse), [{
      build($_builder, $_state, op, source, scalar, target, reverse, ::neuron::AluOpAttr(),
            ::mlir::FloatAttr(), false);
    }]>
  ];
  let hasCanonicalizer = 1;
}

def NTile_ScalarTensorTensorOp : NTile_ElementwiseOp<"scalar_tensor_tensor"> {
  let summary = "Vector engine: target = (data <op0> scalar) <op1> other, in one pass";
  let description = [{
    The scalar is the immediate `scalar`, or with `scalar_tile` ([P, 1], one value per
    partition) that tile's value of the row (the immediate is then unused). `reverse0` puts
    the scalar on the left of op0, `reverse1` the other tile on the left of op1. Float tiles;
    computed in fp32 and rounded once. neuron-scalar-tensor-tensor forms it from a
    tensor_scalar (or a per-partition tensor_tensor) and the tensor_tensor that consumes it.
    ```mlir
    ntile.scalar_tensor_tensor sub mul %g, 0.000000e+00 tile %s : memref<128x1xf32, #ntile.mem<sbuf>>, %y to %g
        : memref<128x64xf32, #ntile.mem<sbuf>>, memref<128x64xf32, #ntile.mem<sbuf>>, memref<128x64xf32, #ntile.mem<sbuf>>
    ```
  }];
  let arguments = (ins Neuron_AluOp:$op0, Neuron_AluOp:$op1, Arg<NTile_Buffer, "", [MemRead]>:$data,
                       F64Attr:$scalar, Arg<Optional<NTile_Buffer>, "", [MemRead]>:$scalar_tile,
                       Arg<NTile_Buffer, "", [MemRead]>:$other,
                       Arg<NTile_Buffer, "", [MemWrite]>:$target, UnitAttr:$reverse0,
                       UnitAttr:$reverse1);
  let assemblyFormat = [{
    $op0 $op1 $data `,` $scalar (`tile` $scalar_tile^ `:` type($scalar_tile))? `,` $other `to` $target
    attr-dict `:` type($data) `,` type($other) `,` type($target)
  }];
}

def NTile_TensorTensorScanOp : NTile_ElementwiseOp<"tensor_tensor_scan"> {
  let summary = "Vector engine: target[p, i] = (data0[p, i] <op0> r) <op1> data1[p, i]";
  let description = [{
    r = target[p, i - 1], and `initial` for i = 0 (or, with `tile`, the value of each
    partition of a [partitions, 1] tile: a chunk of a longer scan starting where the previous
    chunk ended): a running combination along the free dimension, computed in fp32 (float
    tiles). A cumsum is ones * r + x; a cumprod x * r * 1.
    ```mlir
    ntile.tensor_tensor_scan mul add %ones, %x, -0.000000e+00 to %y : memref<128x257xf32, #ntile.mem<sbuf>>,
        memref<128x257xf32, #ntile.mem<sbuf>>, memref<128x257xf32, #ntile.mem<sbuf>>
    ntile.tensor_tensor_scan mul add %a, %b, 0.000000e+00 tile %r0 : memref<128x1xf32, #ntile.mem<sbuf>>
        to %y : memref<128x64xf32, #ntile.mem<sbuf>>, memref<128x64xf32, #ntile.mem<sbuf>>,
        memref<128x64xf32, #ntile.mem<sbuf>>
    ```
  }];
  let arguments = (ins Neuron_AluOp:$op0, Neuron_AluOp:$op1, Arg<NTile_Buffer, "", [MemRead]>:$data0,
                       Arg<NTile_Buffer, "", [MemRead]>:$data1, F64Attr:$initial,
                       Arg<Optional<NTile_Buffer>, "", [MemRead]>:$initial_tile,
                       Arg<NTile_Buffer, "", [MemWrite]>:$target);
  let assemblyFormat = [{
    $op0 $op1 $data0 `,` $data1 `,` $initial (`tile` $initial_tile^ `:` type($initial_tile))?
    `to` $target attr-dict `:` type($data0) `,` type($data1) `,` type($target)
  }];
}

def NTile_BnStatsOp : NTile_ElementwiseOp<"bn_stats"> {
  let summary = "Vector engine: target[p, 0:6] = batch-norm statistics of source[p, :]";
  let description = [{
    Count, mean and mean-centred sum of squares of the even-indexed elements of each
    partition, then of the odd-indexed ones (at most 512 float elements per partition).
    ```mlir
    ntile.bn_stats %x to %s : memref<128x512xf32, #ntile.mem<sbuf>>, memref<128x6xf32, #ntile.mem<sbuf>>
    ```
  }];
  let arguments = (ins Arg<NTile_Buffer, "", [MemRead]>:$source,
                       Arg<NTile_Buffer, "", [MemWrite]>:$target);
  let assemblyFormat = "$source `to` $target attr-dict `:` type($source) `,` type($target)";
}

def NTile_BnAggrOp : NTile_ElementwiseOp<"bn_aggr"> {
  let summary = "Vector engine: target[p, 0:2] = (mean, variance) of bn_stats groups";
  let description = [{
    Combines the bn_stats results held side by side in each partition of the source (6 values
    per group) into the mean and population variance of all their elements.
    ```mlir
    ntile.bn_aggr %s to %mv : memref<128x12xf32, #ntile.mem<sbuf>>, memref<128x2xf32, #ntile.mem<sbuf>>
    ```
  }];
  let arguments = (ins Arg<NTile_Buffer, "", [MemRead]>:$source,
                       Arg<NTile_Buffer, "", [MemWrite]>:$target);
  let assemblyFormat = "$source `to` $target attr-dict `:` type($source) `,` type($target)";
}

def NTile_CopyOp : NTile_ElementwiseOp<"copy"> {
  let summary = "Vector engine: target = source, converting the element type";
  let description = [{
    ```mlir
    ntile.copy %ps to %sb : memref<3x300xf32, #ntile.mem<psum>>, memref<3x300xbf16, #ntile.mem<sbuf>>
    ```
  }];
  let arguments = (ins Arg<NTile_Buffer, "", [MemRead]>:$source, Arg<NTile_Buffer, "", [MemWrite]>:$target);
  let assemblyFormat = "$source `to` $target attr-dict `:` type($source) `,` type($target)";
}

def NTile_ReduceOp : NTile_ElementwiseOp<"reduce"> {
  let summary = "Vector engine: target[p, 0] = reduce<op> over source[p, :]";
  let description = [{
    ```mlir
    ntile.reduce max %a to %m : memref<128x512xf32, #ntile.mem<sbuf>>, memref<128x1xf32, #ntile.mem<sbuf>>
    ```
  }];
  let arguments = (ins Neuron_AluOp:$op, Arg<NTile_Buffer, "", [MemRead]>:$source,
                       Arg<NTile_Buffer, "", [MemWrite]>:$target);
  let assemblyFormat = "$op $source `to` $target attr-dict `:` type($source) `,` type($target)";
  let hasCanonicalizer = 1;
}

def NTile_SelectOp : NTile_ElementwiseOp<"select"> {
  let summary = "Vector engine: target = condition != 0 ? on_true : on_false";
  let description = [{
    ```mlir
    ntile.select %c, %a, %b to %t : memref<4x8xi1, #ntile.mem<sbuf>>, memref<4x8xf32, #ntile.mem<sbuf>>,
        memref<4x8xf32, #ntile.mem<sbuf>>, memref<4x8xf32, #ntile.mem<sbuf>>
    ```
  }];
  let arguments = (ins Arg<NTile_Buffer, "", [MemRead]>:$condition,
                       Arg<NTile_Buffer, "", [MemRead]>:$on_true,
                       Arg<NTile_Buffer, "", [MemRead]>:$on_false,
                       Arg<NTile_Buffer, "", [MemWrite]>:$target);
  let assemblyFormat = [{
    $condition `,` $on_true `,` $on_false `to` $target attr-dict `:` type($condition) `,`
    type($on_true) `,` type($on_false) `,` type($target)
  }];
}

def NTile_GatherOp : NTile_Op<"gather"> {
  let summary = "indirect DMA: target[p, :] = table[indices[p], column : column + F]";
  let description = [{
    The table is a rank-2 HBM buffer; indices is an integer SBUF tile [P, 1]. An
    index outside the table is an error when the program runs.
    ```mlir
    ntile.gather %table[%ids] column 0 to %t : memref<64x32xf32, #ntile.mem<hbm>>,
        memref<16x1xi64, #ntile.mem<sbuf>>, memref<16x32xf32, #ntile.mem<sbuf>>
    ```
  }];
  let arguments = (ins Arg<NTile_Buffer, "", [MemRead]>:$table, Arg<NTile_Buffer, "", [MemRead]>:$indices,
                       I64Attr:$column, Arg<NTile_Buffer, "", [MemWrite]>:$target);
  let assemblyFormat = [{
    $table `[` $indices `]` `column` $column `to` $target attr-dict `:` type($table) `,`
    type($indices) `,` type($target)
  }];
  let hasVerifier = 1;
}

def NTile_ScatterOp : NTile_Op<"scatter"> {
  let summary = "indirect DMA: table[indices[p], column : column + F] (<accumulate>)= source[p, :]";
  let description = [{
    The table is a rank-2 HBM buffer; indices is an integer SBUF tile [P, 1], source an
    SBUF tile [P, F]. Rows go in partition order: of duplicate indices the last wins, or
    with `accumulate` (add, mul, max, min) they combine with the table's row in that
    order. An index outside the table is an error when the program runs.
    ```mlir
    ntile.scatter %t to %table[%ids] column 0 accumulate add : memref<16x32xf32, #ntile.mem<sbuf>>,
        memref<64x32xf32, #ntile.mem<hbm>>, memref<16x1xi64, #ntile.mem<sbuf>>
    ```
  }];
  let arguments = (ins Arg<NTile_Buffer, "", [MemRead]>:$source,
                       Arg<NTile_Buffer, "", [MemRead, MemWrite]>:$table,
                       Arg<NTile_Buffer, "", [MemRead]>:$indices, I64Attr:$column,
                       OptionalAttr<Neuron_AluOp>:$accumulate);
  let assemblyFormat = [{
    $source `to` $table `[` $indices `]` `column` $column (`accumulate` $accumulate^)? attr-dict
    `:` type($source) `,` type($table) `,` type($indices)
  }];
  let hasVerifier = 1;
}

def NTile_RandomOp : NTile_Op<"random"> {
  let summary = "GpSimd engine: the next uniform [0, 1) numbers of stream `stream`";
  let description = [{
    Every execution fills the tile with the stream's next numbers (row-major).
    ```mlir
    ntile.random stream 48 to %t : memref<128x512xf32, #ntile.mem<sbuf>>
    ```
  }];
  let arguments = (ins I64Attr:$stream, Arg<NTile_Buffer, "", [MemWrite]>:$target);
  let assemblyFormat = "`stream` $stream `to` $target attr-dict `:` type($target)";
  let hasVerifier = 1;
}

def NTile_CollectiveOp : NTile_Op<"collective"> {
  let summary = "collective-communication engine: a collective from HBM to HBM";
  let description = [{
    As ntorch.collective, on whole contiguous HBM buffers.
    ```mlir
    ntile.collective all_reduce add group "0" of 4 %g to %r
        : memref<1024xf32, #ntile.mem<hbm>>, memref<1024xf32, #ntile.mem<hbm>>
    ```
  }];
  let arguments = (ins Neuron_CollectiveKind:$kind, Neuron_AluOp:$reduce, StrAttr:$group,
                       I64Attr:$group_size, Arg<NTile_Buffer, "", [MemRead]>:$source,
                       Arg<NTile_Buffer, "", [MemWrite]>:$target);
  let assemblyFormat = [{
    $kind $reduce `group` $group `of` $group_size $source `to` $target attr-dict `:`
    type($source) `,` type($target)
  }];
  let hasVerifier = 1;
}

def NTile_IsaOp : NTile_Op<"isa"> {
  let summary = "one instruction of the ISA table, by its opcode, on whole tiles";
  let description = [{
    Any instruction of runtime/program/Isa.def that has no op of its own here (kernels call
    them by their nki.isa names): the sources and the target are whole SBUF/PSUM tiles,
    `fields` holds the instruction's fields under their program-format names (`imm`, `alu`,
    `func`, `reduce_cmd`, ...), and the sources listed in `broadcast` ([P, 1] tiles) are read
    with free stride 0 across the target's row. The runtime checks the operands when the
    program is loaded, as it does for every instruction; the sources an instruction writes
    (a reduce result) count as written.
    ```mlir
    ntile.isa nonzero_with_count (%x) to %idx {fields = {imm = [0.0, -1.0]}, ntile.engine = "gpsimd"}
        : (memref<128x64xf32, #ntile.mem<sbuf>>) -> memref<128x65xi32, #ntile.mem<sbuf>>
    ```
  }];
  let arguments = (ins Neuron_Opcode:$opcode,
                       Arg<Variadic<NTile_Buffer>, "", [MemRead, MemWrite]>:$sources,
                       Arg<NTile_Buffer, "", [MemRead, MemWrite]>:$target,
                       DefaultValuedAttr<DictionaryAttr, "{}">:$fields,
                       OptionalAttr<DenseI64ArrayAttr>:$broadcast);
  let assemblyFormat = [{
    $opcode `(` $sources `)` `to` $target attr-dict `:` functional-type($sources, $target)
  }];
  let hasVerifier = 1;
}

#endif // NTILE_OPS_TD

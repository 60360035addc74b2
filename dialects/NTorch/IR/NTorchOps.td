// The ntorch ops. Add an op here, then teach the importer and NTorchToNTile about it.
#ifndef NTORCH_OPS_TD
#define NTORCH_OPS_TD

include "dialects/NTorch/IR/NTorchDialect.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/Interfaces/InferTypeOpInterface.td"
include "mlir/IR/BuiltinAttributeInterfaces.td"
include "mlir/IR/RegionKindInterface.td"

// Integers are signless (two's complement, i1 = bool) except ui8, torch.uint8: its values
// are 0..255 wherever they are read (constants, casts, immediates, the program's u8).
def NTorch_Tensor : RankedTensorOf<[AnyFloat, AnySignlessInteger, UI8]>;
// A kernel's HBM tensors may also be NKI's uint32 / uint16 (indices, counts): no other op takes
// them.
def NTorch_KernelTensor : RankedTensorOf<[AnyFloat, AnySignlessInteger, UI8, UI16, UI32]>;

def NTorch_ConstantOp : NTorch_Op<"constant", [ConstantLike, Pure, AllTypesMatch<["value", "result"]>]> {
  let summary = "a constant tensor";
  let description = [{
    ```mlir
    %c = ntorch.constant dense<0.5> : tensor<f32>
    ```
  }];
  let arguments = (ins ElementsAttr:$value);
  let results = (outs NTorch_Tensor:$result);
  let assemblyFormat = "$value attr-dict";
  let hasFolder = 1;
  let hasVerifier = 1;
}

def NTorch_MatmulOp : NTorch_Op<"matmul", [Pure]> {
  let summary = "matrix product (aten.mm, the product part of aten.addmm)";
  let description = [{
    `result[m, n] = sum_k lhs'[m, k] * rhs'[k, n]` where `lhs'` is `lhs`, or its
    transpose when `transpose_lhs` is set (likewise `rhs'`). Accumulates in fp32.
    Rank-3 operands are batched (aten.bmm): the leading dimension is the batch.
    ```mlir
    %r = ntorch.matmul %a, %b {transpose_rhs} : tensor<3x200xf32>, tensor<300x200xf32> -> tensor<3x300xf32>
    ```
  }];
  let arguments = (ins NTorch_Tensor:$lhs, NTorch_Tensor:$rhs,
                       UnitAttr:$transpose_lhs, UnitAttr:$transpose_rhs);
  let results = (outs NTorch_Tensor:$result);
  let assemblyFormat = "$lhs `,` $rhs attr-dict `:` type($lhs) `,` type($rhs) `->` type($result)";
  let hasVerifier = 1;
  let hasCanonicalizer = 1;
}

def NTorch_UnaryOp : NTorch_Op<"unary", [Pure]> {
  let summary = "elementwise function of one tensor";
  let description = [{
    ```mlir
    %r = ntorch.unary relu %x : tensor<3x300xf32> -> tensor<3x300xf32>
    ```
  }];
  let arguments = (ins NTorch_UnaryFn:$fn, NTorch_Tensor:$input);
  let results = (outs NTorch_Tensor:$result);
  let assemblyFormat = "$fn $input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
}

def NTorch_BinaryOp : NTorch_Op<"binary", [Pure]> {
  let summary = "elementwise function of two tensors with numpy broadcasting";
  let description = [{
    Operands broadcast to the result shape; either may be rank 0.
    ```mlir
    %r = ntorch.binary add %x, %bias : tensor<3x300xf32>, tensor<300xf32> -> tensor<3x300xf32>
    ```
  }];
  let arguments = (ins NTorch_BinaryFn:$fn, NTorch_Tensor:$lhs, NTorch_Tensor:$rhs);
  let results = (outs NTorch_Tensor:$result);
  let assemblyFormat = "$fn $lhs `,` $rhs attr-dict `:` type($lhs) `,` type($rhs) `->` type($result)";
  let hasVerifier = 1;
  let hasCanonicalizer = 1;
}

def NTorch_CastOp : NTorch_Op<"cast", [Pure]> {
  let summary = "elementwise dtype conversion";
  let description = [{
    ```mlir
    %r = ntorch.cast %x : tensor<3x200xf32> -> tensor<3x200xbf16>
    ```
  }];
  let arguments = (ins NTorch_Tensor:$input);
  let results = (outs NTorch_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
  let hasFolder = 1;
}

def NTorch_PermuteOp : NTorch_Op<"permute", [Pure]> {
  let summary = "reorders dimensions (aten.permute, aten.t, aten.transpose)";
  let description = [{
    `result.shape[i] = input.shape[dims[i]]`.
    ```mlir
    %r = ntorch.permute %w [1, 0] : tensor<300x200xf32> -> tensor<200x300xf32>
    ```
  }];
  let arguments = (ins NTorch_Tensor:$input, DenseI64ArrayAttr:$dims);
  let results = (outs NTorch_Tensor:$result);
  let assemblyFormat = "$input $dims attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
  let hasFolder = 1;
}

def NTorch_ReshapeOp : NTorch_Op<"reshape", [Pure]> {
  let summary = "same elements, new shape (aten.view, aten.reshape, squeeze, unsqueeze)";
  let description = [{
    ```mlir
    %r = ntorch.reshape %x : tensor<3x200xf32> -> tensor<600xf32>
    ```
  }];
  let arguments = (ins NTorch_Tensor:$input);
  let results = (outs NTorch_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
  let hasFolder = 1;
}

def NTorch_BroadcastOp : NTorch_Op<"broadcast", [Pure]> {
  let summary = "numpy-style broadcast to a larger shape (aten.expand)";
  let description = [{
    ```mlir
    %r = ntorch.broadcast %x : tensor<1x200xf32> -> tensor<3x200xf32>
    ```
  }];
  let arguments = (ins NTorch_Tensor:$input);
  let results = (outs NTorch_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
  let hasFolder = 1;
}

def NTorch_ReduceOp : NTorch_Op<"reduce", [Pure]> {
  let summary = "reduces dimensions (aten.sum, aten.amax, aten.amin, aten.any)";
  let description = [{
    Reduces `dims` of the input; with `keepdim` they stay as size 1. The lowering
    reduces trailing dimensions; canonicalization permutes other dims to the end.
    ```mlir
    %r = ntorch.reduce max %x [1] {keepdim} : tensor<3x200xf32> -> tensor<3x1xf32>
    ```
  }];
  let arguments = (ins NTorch_ReduceFn:$fn, NTorch_Tensor:$input, DenseI64ArrayAttr:$dims,
                       UnitAttr:$keepdim);
  let results = (outs NTorch_Tensor:$result);
  let assemblyFormat = "$fn $input $dims attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
  let hasCanonicalizer = 1;
}

def NTorch_ScanOp : NTorch_Op<"scan", [Pure]> {
  let summary = "inclusive scan along the last dim of [rows, L] (float cumsum, cumprod)";
  let description = [{
    `result[r, i] = result[r, i - 1] <fn> input[r, i]` (fn: add or mul), computed one element
    after another in fp32 and rounded to the result's float type once per element, as eager's
    loop over half types does. Lowered to the Vector engine's tensor_tensor_scan.
    ```mlir
    %r = ntorch.scan add %x : tensor<4x1000xbf16> -> tensor<4x1000xbf16>
    ```
  }];
  let arguments = (ins NTorch_BinaryFn:$fn, NTorch_Tensor:$input);
  let results = (outs NTorch_Tensor:$result);
  let assemblyFormat = "$fn $input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
}

def NTorch_SelectOp : NTorch_Op<"select", [Pure]> {
  let summary = "elementwise choice: cond ? lhs : rhs, with broadcasting (aten.where)";
  let description = [{
    ```mlir
    %r = ntorch.select %mask, %x, %y : tensor<4x4xi1>, tensor<4x4xf32>, tensor<f32> -> tensor<4x4xf32>
    ```
  }];
  let arguments = (ins NTorch_Tensor:$condition, NTorch_Tensor:$lhs, NTorch_Tensor:$rhs);
  let results = (outs NTorch_Tensor:$result);
  let assemblyFormat = [{
    $condition `,` $lhs `,` $rhs attr-dict `:` type($condition) `,` type($lhs) `,` type($rhs) `->` type($result)
  }];
  let hasVerifier = 1;
}

def NTorch_SliceOp : NTorch_Op<"slice", [Pure]> {
  let summary = "a strided window (aten.slice, aten.select, aten.split)";
  let description = [{
    `result[i...] = input[offsets[d] + i[d] * strides[d] ...]`; the result shape gives the sizes.
    ```mlir
    %r = ntorch.slice %x [0, 64] [1, 1] : tensor<4x192xf32> -> tensor<4x64xf32>
    ```
  }];
  let arguments = (ins NTorch_Tensor:$input, DenseI64ArrayAttr:$offsets, DenseI64ArrayAttr:$strides);
  let results = (outs NTorch_Tensor:$result);
  let assemblyFormat = "$input $offsets $strides attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
  let hasFolder = 1;
}

def NTorch_ConcatOp : NTorch_Op<"concat", [Pure]> {
  let summary = "joins tensors along a dimension (aten.cat)";
  let description = [{
    ```mlir
    %r = ntorch.concat %a, %b {dim = 1 : i64} : tensor<2x3xf32>, tensor<2x5xf32> -> tensor<2x8xf32>
    ```
  }];
  let arguments = (ins Variadic<NTorch_Tensor>:$inputs, I64Attr:$dim);
  let results = (outs NTorch_Tensor:$result);
  let assemblyFormat = "$inputs attr-dict `:` type($inputs) `->` type($result)";
  let hasVerifier = 1;
}

def NTorch_PadOp : NTorch_Op<"pad", [Pure]> {
  let summary = "constant padding before and after each dimension (aten.constant_pad_nd)";
  let description = [{
    ```mlir
    %r = ntorch.pad %x [0, 1] [0, 1] {value = 0.0 : f64} : tensor<2x3xf32> -> tensor<2x5xf32>
    ```
  }];
  let arguments = (ins NTorch_Tensor:$input, DenseI64ArrayAttr:$low, DenseI64ArrayAttr:$high,
                       F64Attr:$value);
  let results = (outs NTorch_Tensor:$result);
  let assemblyFormat = "$input $low $high attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
}

def NTorch_ScatterWindowOp : NTorch_Op<"scatter_window", [Pure]> {
  let summary = "zeros with the input placed at a strided window (gradients of windows)";
  let description = [{
    `result[offsets[d] + i[d] * strides[d] ...] = input[i...]`, zero elsewhere: the
    adjoint of ntorch.slice, used by convolution and pooling backward.
    ```mlir
    %r = ntorch.scatter_window %g [0, 0, 1, 1] [1, 1, 2, 2] : tensor<2x3x4x4xf32> -> tensor<2x3x10x10xf32>
    ```
  }];
  let arguments = (ins NTorch_Tensor:$input, DenseI64ArrayAttr:$offsets, DenseI64ArrayAttr:$strides);
  let results = (outs NTorch_Tensor:$result);
  let assemblyFormat = "$input $offsets $strides attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
}

def NTorch_AsStridedOp : NTorch_Op<"as_strided", [Pure]> {
  let summary = "elements of the contiguous input at linear addresses (aten.as_strided, unfold)";
  let description = [{
    `result[i...] = flat(input)[offset + sum_d i[d] * strides[d]]`: a strided read of the
    input's elements in row-major order. Strides are non-negative (0 repeats an element);
    every address must be inside the input.
    ```mlir
    %r = ntorch.as_strided %x offset 1 strides [2, 1] : tensor<4x9xf32> -> tensor<4x3xf32>
    ```
  }];
  let arguments = (ins NTorch_Tensor:$input, I64Attr:$offset, DenseI64ArrayAttr:$strides);
  let results = (outs NTorch_Tensor:$result);
  let assemblyFormat = [{
    $input `offset` $offset `strides` $strides attr-dict `:` type($input) `->` type($result)
  }];
  let hasVerifier = 1;
}

def NTorch_InsertStridedOp : NTorch_Op<"insert_strided",
    [Pure, AllTypesMatch<["input", "result"]>]> {
  let summary = "the input with a strided window replaced by src (aten.slice_scatter, ...)";
  let description = [{
    `result = input`, then `flat(result)[offset + sum_d i[d] * strides[d]] = src[i...]`:
    the scatter counterpart of ntorch.as_strided (slice_scatter, select_scatter,
    diagonal_scatter, as_strided_scatter). The window's addresses must be inside the input
    and distinct (strides of dims longer than one positive, each at least the extent of the
    dims with smaller strides).
    ```mlir
    %r = ntorch.insert_strided %src into %x offset 2 strides [9, 1] : tensor<4x3xf32> into tensor<4x9xf32>
    ```
  }];
  let arguments = (ins NTorch_Tensor:$input, NTorch_Tensor:$src, I64Attr:$offset,
                       DenseI64ArrayAttr:$strides);
  let results = (outs NTorch_Tensor:$result);
  let assemblyFormat = [{
    $src `into` $input `offset` $offset `strides` $strides attr-dict `:` type($src) `into`
    type($input)
  }];
  let hasVerifier = 1;
}

def NTorch_GatherRowsOp : NTorch_Op<"gather_rows", [Pure]> {
  let summary = "rows of a table picked by integer indices (aten.embedding, aten.index_select)";
  let description = [{
    `result[i..., :] = table[indices[i...], :]` for a rank-2 table.
    ```mlir
    %r = ntorch.gather_rows %table, %ids : tensor<64x32xf32>, tensor<2x16xi64> -> tensor<2x16x32xf32>
    ```
  }];
  let arguments = (ins NTorch_Tensor:$table, NTorch_Tensor:$indices);
  let results = (outs NTorch_Tensor:$result);
  let assemblyFormat = "$table `,` $indices attr-dict `:` type($table) `,` type($indices) `->` type($result)";
  let hasVerifier = 1;
}

def NTorch_ScatterRowsOp : NTorch_Op<"scatter_rows", [Pure, AllTypesMatch<["input", "result"]>]> {
  let summary = "input with rows picked by integer indices replaced or combined (index_put, scatter)";
  let description = [{
    `result = input; result[indices[i], :] = values[i, :]` for i = 0, 1, ... in order,
    for a rank-2 input and rank-1 indices: of duplicate indices the last row wins. With
    `accumulate` (add, mul, max, min), `result[indices[i], :] = result[indices[i], :]
    <accumulate> values[i, :]` instead, duplicates combined in index order. An index
    outside [0, rows) is an error when the program runs.
    ```mlir
    %r = ntorch.scatter_rows %input[%ids] = %values accumulate add
        : tensor<64x32xf32>, tensor<16xi64>, tensor<16x32xf32>
    ```
  }];
  let arguments = (ins NTorch_Tensor:$input, NTorch_Tensor:$indices, NTorch_Tensor:$values,
                       OptionalAttr<Neuron_AluOp>:$accumulate);
  let results = (outs NTorch_Tensor:$result);
  let assemblyFormat = [{
    $input `[` $indices `]` `=` $values (`accumulate` $accumulate^)? attr-dict `:` type($input)
    `,` type($indices) `,` type($values)
  }];
  let hasVerifier = 1;
}

def NTorch_Conv2dOp : NTorch_Op<"conv2d", [Pure]> {
  let summary = "2-D convolution, NCHW input, OIHW weight (aten.convolution)";
  let description = [{
    ```mlir
    %r = ntorch.conv2d %x, %w stride [2, 2] padding [1, 1] dilation [1, 1] groups 1
        : tensor<2x3x16x16xf32>, tensor<8x3x3x3xf32> -> tensor<2x8x8x8xf32>
    ```
  }];
  let arguments = (ins NTorch_Tensor:$input, NTorch_Tensor:$weight, DenseI64ArrayAttr:$stride,
                       DenseI64ArrayAttr:$padding, DenseI64ArrayAttr:$dilation, I64Attr:$groups);
  let results = (outs NTorch_Tensor:$result);
  let assemblyFormat = [{
    $input `,` $weight `stride` $stride `padding` $padding `dilation` $dilation `groups` $groups
    attr-dict `:` type($input) `,` type($weight) `->` type($result)
  }];
  let hasVerifier = 1;
}

def NTorch_Pool2dOp : NTorch_Op<"pool2d", [Pure]> {
  let summary = "2-D max or average pooling over NCHW (aten.max_pool2d, aten.avg_pool2d)";
  let description = [{
    Padding reads -inf for max and 0 for avg; avg divides by the full window
    unless `exclude_pad` (count_include_pad=False).
    ```mlir
    %r = ntorch.pool2d max %x kernel [3, 3] stride [2, 2] padding [1, 1] : tensor<2x8x8x8xf32> -> tensor<2x8x4x4xf32>
    ```
  }];
  let arguments = (ins NTorch_PoolFn:$fn, NTorch_Tensor:$input, DenseI64ArrayAttr:$kernel,
                       DenseI64ArrayAttr:$stride, DenseI64ArrayAttr:$padding, UnitAttr:$exclude_pad);
  let results = (outs NTorch_Tensor:$result);
  let assemblyFormat = [{
    $fn $input `kernel` $kernel `stride` $stride `padding` $padding attr-dict `:` type($input) `->` type($result)
  }];
  let hasVerifier = 1;
}

def NTorch_RandomOp : NTorch_Op<"random", [Pure]> {
  let summary = "uniform random numbers in [0, 1) (torch.rand; dropout masks)";
  let description = [{
    The numbers of stream `stream` (unique per op in a graph) under the seed the
    program is run with: a counter-based generator on the GpSimd engine. They are not
    the CPU generator's numbers; each run of the program draws a new seed.
    ```mlir
    %u = ntorch.random stream 3 : tensor<8x16xf32>
    ```
  }];
  let arguments = (ins I64Attr:$stream);
  let results = (outs NTorch_Tensor:$result);
  let assemblyFormat = "`stream` $stream attr-dict `:` type($result)";
  let hasVerifier = 1;
}

def NTorch_CollectiveOp : NTorch_Op<"collective", [MemoryEffects<[MemWrite]>]> {
  let summary = "a collective over a process group (the _c10d_functional ops)";
  let description = [{
    `group` names the torch.distributed process group, `group_size` its ranks. For a
    source of N elements: all_reduce gives N (reduced with `reduce`), all_gather N x
    ranks (along dim 0), reduce_scatter N / ranks (this rank's block of dim 0 of the
    reduction), all_to_all N (block k of dim 0 goes to rank k). Not pure: every rank
    runs the same collectives in the same order, so none is dropped, merged or moved.
    ```mlir
    %r = ntorch.collective all_reduce add group "0" of 4 %g : tensor<1024xf32> -> tensor<1024xf32>
    ```
  }];
  let arguments = (ins Neuron_CollectiveKind:$kind, Neuron_AluOp:$reduce, StrAttr:$group,
                       I64Attr:$group_size, NTorch_Tensor:$input);
  let results = (outs NTorch_Tensor:$result);
  let assemblyFormat = [{
    $kind $reduce `group` $group `of` $group_size $input attr-dict `:` type($input) `->`
    type($result)
  }];
  let hasVerifier = 1;
}

def NTorch_FusionOp : NTorch_Op<"fusion", [IsolatedFromAbove,
    SingleBlockImplicitTerminator<"YieldOp">]> {
  let summary = "elementwise ops (and row reductions) computed tile by tile in SBUF";
  let description = [{
    The body's block arguments are the operands; every op in it works on tensors
    that broadcast to the iteration shape (the shape of the first result). The
    lowering loads each tile of the operands once, computes the whole body on
    tiles and stores only the results: intermediate values never reach HBM.
    With the `ntorch.matmul_epilogue` attribute (set by neuron-fuse-matmul-epilogue),
    the operand that is a matmul's result is never stored: the fusion runs on each
    of the matmul's PSUM tiles as it is produced.
    ```mlir
    %r = ntorch.fusion %x, %b : tensor<3x300xf32>, tensor<300xf32> -> tensor<3x300xf32> {
    ^bb0(%a: tensor<3x300xf32>, %c: tensor<300xf32>):
      %0 = ntorch.binary add %a, %c : tensor<3x300xf32>, tensor<300xf32> -> tensor<3x300xf32>
      %1 = ntorch.unary relu %0 : tensor<3x300xf32> -> tensor<3x300xf32>
      ntorch.yield %1 : tensor<3x300xf32>
    }
    ```
  }];
  let arguments = (ins Variadic<NTorch_Tensor>:$inputs);
  let results = (outs Variadic<NTorch_Tensor>:$results);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = [{
    $inputs attr-dict `:` type($inputs) `->` type($results) $body
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    static llvm::StringRef getMatmulEpilogueAttrName() { return "ntorch.matmul_epilogue"; }
    bool isMatmulEpilogue() { return (*this)->hasAttr(getMatmulEpilogueAttrName()); }
  }];
}

def NTorch_YieldOp : NTorch_Op<"yield", [Pure, Terminator, HasParent<"FusionOp">]> {
  let summary = "the results of a fusion";
  let arguments = (ins Variadic<NTorch_Tensor>:$values);
  let assemblyFormat = "$values attr-dict `:` type($values)";
  let builders = [OpBuilder<(ins), [{ /* no values */ }]>];
}


def NTorch_KernelOp : NTorch_Op<"kernel", [Pure]> {
  let summary = "a custom tile kernel (neuronsim.kernels), inlined by convert-ntorch-to-ntile";
  let description = [{
    `ir` is the text of a module holding one ntile function `@<kernel_name>` whose
    arguments are the HBM buffers of the inputs, then of the results (in order). The
    lowering inlines that function's body (loop nests of DMAs and engine ops) where the
    op stands; the kernel's tiles then get the same allocation, DMA queues and
    semaphores as the graph's.
    ```mlir
    %y = ntorch.kernel "rmsnorm"(%x, %g) {ir = "module { func.func @rmsnorm(...) ... }"}
        : (tensor<256x512xf32>, tensor<512xf32>) -> tensor<256x512xf32>
    ```
  }];
  let arguments = (ins StrAttr:$kernel_name, StrAttr:$ir, Variadic<NTorch_KernelTensor>:$inputs);
  let results = (outs Variadic<NTorch_KernelTensor>:$results);
  let assemblyFormat = [{
    $kernel_name `(` $inputs `)` attr-dict `:` functional-type($inputs, $results)
  }];
}

#endif // NTORCH_OPS_TD

// The ntorch ops. Add an op here, then teach the importer and NTorchToNTile about it.
#ifndef NTORCH_OPS_TD
#define NTORCH_OPS_TD

include "dialects/NTorch/IR/NTorchDialect.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/Interfaces/InferTypeOpInterface.td"
include "mlir/IR/BuiltinAttributeInterfaces.td"

def NTorch_Tensor : RankedTensorOf<[AnyFloat, AnySignlessInteger]>;

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

#endif // NTORCH_OPS_TD

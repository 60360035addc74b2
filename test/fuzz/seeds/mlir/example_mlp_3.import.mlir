#loc = [unknown]
module {
  func.func @main(%arg0: tensor<300x200xbf16> [unknown], %arg1: tensor<300xbf16> [unknown], %arg2: tensor<3x200xbf16> [unknown], %arg3: tensor<10x300xbf16> [unknown], %arg4: tensor<10xbf16> [unknown]) -> tensor<3x10xbf16> {
    %0 = ntorch.permute %arg0 [1, 0] : tensor<300x200xbf16> -> tensor<200x300xbf16> "aten.permute.default"(#loc1)
    %1 = ntorch.matmul %arg2, %0 : tensor<3x200xbf16>, tensor<200x300xbf16> -> tensor<3x300xbf16> "aten.addmm.default"(#loc1)
    %2 = ntorch.binary add %arg1, %1 : tensor<300xbf16>, tensor<3x300xbf16> -> tensor<3x300xbf16> "aten.addmm.default"(#loc1)
    %3 = ntorch.unary relu %2 : tensor<3x300xbf16> -> tensor<3x300xbf16> "aten.relu.default"(#loc1)
    %4 = ntorch.permute %arg3 [1, 0] : tensor<10x300xbf16> -> tensor<300x10xbf16> "aten.permute.default"(#loc1)
    %5 = ntorch.matmul %3, %4 : tensor<3x300xbf16>, tensor<300x10xbf16> -> tensor<3x10xbf16> "aten.addmm.default"(#loc1)
    %6 = ntorch.binary add %arg4, %5 : tensor<10xbf16>, tensor<3x10xbf16> -> tensor<3x10xbf16> "aten.addmm.default"(#loc1)
    return %6 : tensor<3x10xbf16> [unknown]
  } [unknown]
} [unknown]
#loc1 = mlp.py:33:0
#loc2 = "aten.permute.default"(#loc1)
#loc3 = "aten.addmm.default"(#loc1)
#loc4 = "aten.relu.default"(#loc1)

#loc = [unknown]
module {
  func.func @main(%arg0: tensor<512x256xf32> [unknown], %arg1: tensor<512xf32> [unknown], %arg2: tensor<128x256xf32> [unknown], %arg3: tensor<128x512xf32> [unknown], %arg4: tensor<128xf32> [unknown]) -> tensor<128x128xf32> {
    %0 = ntorch.permute %arg0 [1, 0] : tensor<512x256xf32> -> tensor<256x512xf32> "aten.permute.default"(#loc1)
    %1 = ntorch.matmul %arg2, %0 : tensor<128x256xf32>, tensor<256x512xf32> -> tensor<128x512xf32> "aten.addmm.default"(#loc1)
    %2 = ntorch.binary add %arg1, %1 : tensor<512xf32>, tensor<128x512xf32> -> tensor<128x512xf32> "aten.addmm.default"(#loc1)
    %3 = ntorch.unary relu %2 : tensor<128x512xf32> -> tensor<128x512xf32> "aten.relu.default"(#loc1)
    %4 = ntorch.permute %arg3 [1, 0] : tensor<128x512xf32> -> tensor<512x128xf32> "aten.permute.default"(#loc1)
    %5 = ntorch.matmul %3, %4 : tensor<128x512xf32>, tensor<512x128xf32> -> tensor<128x128xf32> "aten.addmm.default"(#loc1)
    %6 = ntorch.binary add %arg4, %5 : tensor<128xf32>, tensor<128x128xf32> -> tensor<128x128xf32> "aten.addmm.default"(#loc1)
    return %6 : tensor<128x128xf32> [unknown]
  } [unknown]
} [unknown]
#loc1 = mlp.py:33:0
#loc2 = "aten.permute.default"(#loc1)
#loc3 = "aten.addmm.default"(#loc1)
#loc4 = "aten.relu.default"(#loc1)

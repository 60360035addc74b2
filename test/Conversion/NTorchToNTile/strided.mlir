// RUN: neuron-opt %s -convert-ntorch-to-ntile -split-input-file | FileCheck %s

// as_strided is one HBM -> HBM DMA reading the input at the offset with the given strides.
// CHECK-LABEL: func @ntorch.as_strided$dma
// CHECK: ntile.dma %arg0 <1, {{\[\[}}1, 3], [2, 3]]> to %arg1 <0, {{\[\[}}3, 3], [1, 3]]>
// CHECK-NOT: ntile.dma
func.func @ntorch.as_strided$dma(%x: tensor<4x9xf32>) -> tensor<3x3xf32> {
  %0 = ntorch.as_strided %x offset 1 strides [1, 2] : tensor<4x9xf32> -> tensor<3x3xf32>
  return %0 : tensor<3x3xf32>
}

// -----

// insert_strided copies the input, then src into the window (offset 1, stride 3 along
// the rows of 9).
// CHECK-LABEL: func @ntorch.insert_strided$two_dmas
// CHECK: ntile.dma %arg0 {{.*}} to %arg2 <0,
// CHECK: ntile.dma %arg1 <0, {{\[\[}}3, 4], [1, 3]]> to %arg2 <1, {{\[\[}}9, 4], [3, 3]]>
// CHECK-NOT: ntile.dma
func.func @ntorch.insert_strided$two_dmas(%x: tensor<4x9xf32>, %s: tensor<4x3xf32>) -> tensor<4x9xf32> {
  %0 = ntorch.insert_strided %s into %x offset 1 strides [9, 3] : tensor<4x3xf32> into tensor<4x9xf32>
  return %0 : tensor<4x9xf32>
}

// -----

// An empty window copies the input only.
// CHECK-LABEL: func @ntorch.insert_strided$empty
// CHECK: ntile.dma %arg0
// CHECK-NOT: ntile.dma
func.func @ntorch.insert_strided$empty(%x: tensor<4x9xf32>, %s: tensor<4x0xf32>) -> tensor<4x9xf32> {
  %0 = ntorch.insert_strided %s into %x offset 0 strides [9, 1] : tensor<4x0xf32> into tensor<4x9xf32>
  return %0 : tensor<4x9xf32>
}

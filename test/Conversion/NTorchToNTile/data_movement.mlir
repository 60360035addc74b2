// RUN: neuron-opt %s -convert-ntorch-to-ntile -split-input-file | FileCheck %s

// A reshape is the same HBM bytes; returning it copies into the output.
// CHECK-LABEL: func @ntorch.reshape$alias
// CHECK: %[[V:.*]] = ntile.reinterpret %arg0 : memref<3x200xf32, #ntile.mem<hbm>> to memref<600xf32, #ntile.mem<hbm>>
// CHECK: ntile.dma %[[V]] <0, {{\[\[}}1, 1], [1, 600]]> to %arg1 <0, {{\[\[}}1, 1], [1, 600]]>
func.func @ntorch.reshape$alias(%x: tensor<3x200xf32>) -> tensor<600xf32> {
  %0 = ntorch.reshape %x : tensor<3x200xf32> -> tensor<600xf32>
  return %0 : tensor<600xf32>
}

// -----

// A permute is an HBM -> HBM DMA that reads with permuted strides.
// CHECK-LABEL: func @ntorch.permute$dma
// CHECK: ntile.dma %arg0 <0, {{\[\[}}1, 5], [5, 3]]> to %arg1 <0, {{\[\[}}3, 5], [1, 3]]>
func.func @ntorch.permute$dma(%x: tensor<3x5xf32>) -> tensor<5x3xf32> {
  %0 = ntorch.permute %x [1, 0] : tensor<3x5xf32> -> tensor<5x3xf32>
  return %0 : tensor<5x3xf32>
}

// -----

// A returned input is copied into its output buffer.
// CHECK-LABEL: func @ntorch.return$input
// CHECK: ntile.dma %arg0 <0, {{\[\[}}1, 1], [1, 7]]> to %arg1
func.func @ntorch.return$input(%x: tensor<7xf32>) -> tensor<7xf32> {
  return %x : tensor<7xf32>
}

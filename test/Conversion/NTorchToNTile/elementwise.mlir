// RUN: neuron-opt %s -convert-ntorch-to-ntile -canonicalize -split-input-file | FileCheck %s

// A bias of shape [300] broadcasts over rows with a stride-0 DMA pattern; the
// result is written straight into the output buffer.
// CHECK-LABEL: func @ntorch.binary$broadcast
// CHECK: ntile.dma %arg0 <0, {{\[\[}}300, 3], [1, 300]]> to %[[X:.*]] <0
// CHECK: ntile.dma %arg1 <0, {{\[\[}}0, 3], [1, 300]]> to %[[B:.*]] <0
// CHECK: ntile.tensor_tensor add %[[X]], %[[B]] to %[[R:.*]] :
// CHECK: ntile.dma %[[R]] <0, {{\[\[}}300, 3], [1, 300]]> to %arg2
func.func @ntorch.binary$broadcast(%x: tensor<3x300xf32>, %b: tensor<300xf32>) -> tensor<3x300xf32> {
  %0 = ntorch.binary add %x, %b : tensor<3x300xf32>, tensor<300xf32> -> tensor<3x300xf32>
  return %0 : tensor<3x300xf32>
}

// -----

// A scalar constant becomes an immediate; a constant lhs sets `reverse`.
// CHECK-LABEL: func @ntorch.binary$scalar
// CHECK-NOT: ntile.constant
// CHECK: ntile.tensor_scalar sub %{{.*}}, 1.000000e+00 to %{{.*}} {reverse}
func.func @ntorch.binary$scalar(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %c = ntorch.constant dense<1.0> : tensor<f32>
  %0 = ntorch.binary sub %c, %x : tensor<f32>, tensor<4x8xf32> -> tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

// Unary functions run on the Scalar engine, tiled by 128 rows; casts are copies.
// CHECK-LABEL: func @ntorch.unary$rows
// CHECK: ntile.activation gelu %{{.*}} to %{{.*}} : memref<128x16xf32, #ntile.mem<sbuf>>, memref<128x16xf32, #ntile.mem<sbuf>>
// CHECK: ntile.activation gelu %{{.*}} to %{{.*}} : memref<72x16xf32, #ntile.mem<sbuf>>, memref<72x16xf32, #ntile.mem<sbuf>>
// CHECK: ntile.copy %{{.*}} to %{{.*}} : memref<128x16xf32, #ntile.mem<sbuf>>, memref<128x16xbf16, #ntile.mem<sbuf>>
func.func @ntorch.unary$rows(%x: tensor<2x100x16xf32>) -> tensor<2x100x16xbf16> {
  %0 = ntorch.unary gelu %x : tensor<2x100x16xf32> -> tensor<2x100x16xf32>
  %1 = ntorch.cast %0 : tensor<2x100x16xf32> -> tensor<2x100x16xbf16>
  return %1 : tensor<2x100x16xbf16>
}

// -----

// A [2, 1, 4] operand broadcast to [2, 3, 4]: rows repeat within each outer
// index, so each run of rows is one DMA with a stride-0 partition step.
// CHECK-LABEL: func @ntorch.binary$middle_broadcast
// CHECK: ntile.dma %arg1 <0, {{\[\[}}0, 3], [1, 4]]> to %[[T:.*]] <0, {{\[\[}}4, 3], [1, 4]]>
// CHECK: ntile.dma %arg1 <4, {{\[\[}}0, 3], [1, 4]]> to %[[T]] <12, {{\[\[}}4, 3], [1, 4]]>
func.func @ntorch.binary$middle_broadcast(%x: tensor<2x3x4xf32>, %y: tensor<2x1x4xf32>) -> tensor<2x3x4xf32> {
  %0 = ntorch.binary mul %x, %y : tensor<2x3x4xf32>, tensor<2x1x4xf32> -> tensor<2x3x4xf32>
  return %0 : tensor<2x3x4xf32>
}

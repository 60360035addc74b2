// RUN: neuron-opt %s | neuron-opt | FileCheck %s

// CHECK-LABEL: func @ntorch.as_strided
func.func @ntorch.as_strided(%x: tensor<4x9xf32>) -> tensor<4x4x3xf32> {
  // CHECK: ntorch.as_strided %{{.*}} offset 0 strides [9, 2, 1] : tensor<4x9xf32> -> tensor<4x4x3xf32>
  %0 = ntorch.as_strided %x offset 0 strides [9, 2, 1] : tensor<4x9xf32> -> tensor<4x4x3xf32>
  return %0 : tensor<4x4x3xf32>
}

// Stride 0 repeats an element; the last address, 35, is the last element.
// CHECK-LABEL: func @ntorch.as_strided$repeat
func.func @ntorch.as_strided$repeat(%x: tensor<4x9xbf16>) -> tensor<5x2xbf16> {
  // CHECK: ntorch.as_strided %{{.*}} offset 0 strides [0, 35]
  %0 = ntorch.as_strided %x offset 0 strides [0, 35] : tensor<4x9xbf16> -> tensor<5x2xbf16>
  return %0 : tensor<5x2xbf16>
}

// CHECK-LABEL: func @ntorch.insert_strided
func.func @ntorch.insert_strided(%x: tensor<4x9xf32>, %s: tensor<4x3xf32>) -> tensor<4x9xf32> {
  // CHECK: ntorch.insert_strided %{{.*}} into %{{.*}} offset 1 strides [9, 3] : tensor<4x3xf32> into tensor<4x9xf32>
  %0 = ntorch.insert_strided %s into %x offset 1 strides [9, 3] : tensor<4x3xf32> into tensor<4x9xf32>
  return %0 : tensor<4x9xf32>
}

// A diagonal window (stride 10 = 9 + 1) and an empty one.
// CHECK-LABEL: func @ntorch.insert_strided$diagonal_and_empty
func.func @ntorch.insert_strided$diagonal_and_empty(%x: tensor<4x9xi32>, %d: tensor<4xi32>,
                                                    %e: tensor<0x3xi32>) -> tensor<4x9xi32> {
  // CHECK: ntorch.insert_strided %{{.*}} into %{{.*}} offset 2 strides [10]
  %0 = ntorch.insert_strided %d into %x offset 2 strides [10] : tensor<4xi32> into tensor<4x9xi32>
  // CHECK: ntorch.insert_strided %{{.*}} into %{{.*}} offset 0 strides [9, 1]
  %1 = ntorch.insert_strided %e into %0 offset 0 strides [9, 1] : tensor<0x3xi32> into tensor<4x9xi32>
  return %1 : tensor<4x9xi32>
}

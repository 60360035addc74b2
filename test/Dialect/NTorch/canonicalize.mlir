// RUN: neuron-opt %s -canonicalize -split-input-file | FileCheck %s

// A transpose feeding a matmul becomes a flag: the DMA reads the tile transposed.
// CHECK-LABEL: func @fold_transpose_into_matmul
// CHECK-SAME: (%[[X:.*]]: tensor<3x200xf32>, %[[W:.*]]: tensor<300x200xf32>)
// CHECK-NEXT: %[[R:.*]] = ntorch.matmul %[[X]], %[[W]] {transpose_rhs}
// CHECK-NEXT: return %[[R]]
func.func @fold_transpose_into_matmul(%x: tensor<3x200xf32>, %w: tensor<300x200xf32>) -> tensor<3x300xf32> {
  %t = ntorch.permute %w [1, 0] : tensor<300x200xf32> -> tensor<200x300xf32>
  %0 = ntorch.matmul %x, %t : tensor<3x200xf32>, tensor<200x300xf32> -> tensor<3x300xf32>
  return %0 : tensor<3x300xf32>
}

// -----

// Binary ops broadcast by themselves.
// CHECK-LABEL: func @fold_broadcast_into_binary
// CHECK-NOT: ntorch.broadcast
// CHECK: ntorch.binary mul %{{.*}}, %{{.*}} : tensor<3x200xf32>, tensor<1x200xf32>
func.func @fold_broadcast_into_binary(%x: tensor<3x200xf32>, %b: tensor<1x200xf32>) -> tensor<3x200xf32> {
  %e = ntorch.broadcast %b : tensor<1x200xf32> -> tensor<3x200xf32>
  %0 = ntorch.binary mul %x, %e : tensor<3x200xf32>, tensor<3x200xf32> -> tensor<3x200xf32>
  return %0 : tensor<3x200xf32>
}

// -----

// Identity views fold away; chains of reshapes collapse.
// CHECK-LABEL: func @fold_views
// CHECK-NEXT: %[[R:.*]] = ntorch.reshape %arg0 : tensor<3x200xf32> -> tensor<200x3xf32>
// CHECK-NEXT: return %[[R]]
func.func @fold_views(%x: tensor<3x200xf32>) -> tensor<200x3xf32> {
  %0 = ntorch.permute %x [0, 1] : tensor<3x200xf32> -> tensor<3x200xf32>
  %1 = ntorch.cast %0 : tensor<3x200xf32> -> tensor<3x200xf32>
  %2 = ntorch.reshape %1 : tensor<3x200xf32> -> tensor<600xf32>
  %3 = ntorch.reshape %2 : tensor<600xf32> -> tensor<200x3xf32>
  return %3 : tensor<200x3xf32>
}

// RUN: neuron-opt %s | neuron-opt | FileCheck %s

// CHECK-LABEL: func @ntorch.matmul$transposed
func.func @ntorch.matmul$transposed(%a: tensor<3x200xbf16>, %b: tensor<300x200xbf16>) -> tensor<3x300xbf16> {
  // CHECK: ntorch.matmul %{{.*}}, %{{.*}} {transpose_rhs} : tensor<3x200xbf16>, tensor<300x200xbf16> -> tensor<3x300xbf16>
  %0 = ntorch.matmul %a, %b {transpose_rhs} : tensor<3x200xbf16>, tensor<300x200xbf16> -> tensor<3x300xbf16>
  return %0 : tensor<3x300xbf16>
}

// CHECK-LABEL: func @ntorch.elementwise
func.func @ntorch.elementwise(%x: tensor<3x300xf32>, %b: tensor<300xf32>) -> tensor<3x300xi1> {
  // CHECK: %[[C:.*]] = ntorch.constant dense<5.000000e-01> : tensor<f32>
  %c = ntorch.constant dense<0.5> : tensor<f32>
  // CHECK: ntorch.binary add %{{.*}}, %{{.*}} : tensor<3x300xf32>, tensor<300xf32> -> tensor<3x300xf32>
  %0 = ntorch.binary add %x, %b : tensor<3x300xf32>, tensor<300xf32> -> tensor<3x300xf32>
  // CHECK: ntorch.unary gelu_tanh
  %1 = ntorch.unary gelu_tanh %0 : tensor<3x300xf32> -> tensor<3x300xf32>
  // CHECK: ntorch.binary gt %{{.*}}, %[[C]] : tensor<3x300xf32>, tensor<f32> -> tensor<3x300xi1>
  %2 = ntorch.binary gt %1, %c : tensor<3x300xf32>, tensor<f32> -> tensor<3x300xi1>
  return %2 : tensor<3x300xi1>
}

// CHECK-LABEL: func @ntorch.data_movement
func.func @ntorch.data_movement(%x: tensor<1x200xf32>) -> tensor<200x3xbf16> {
  // CHECK: ntorch.broadcast %{{.*}} : tensor<1x200xf32> -> tensor<3x200xf32>
  %0 = ntorch.broadcast %x : tensor<1x200xf32> -> tensor<3x200xf32>
  // CHECK: ntorch.permute %{{.*}} [1, 0] : tensor<3x200xf32> -> tensor<200x3xf32>
  %1 = ntorch.permute %0 [1, 0] : tensor<3x200xf32> -> tensor<200x3xf32>
  // CHECK: ntorch.reshape %{{.*}} : tensor<200x3xf32> -> tensor<600xf32>
  %2 = ntorch.reshape %1 : tensor<200x3xf32> -> tensor<600xf32>
  %3 = ntorch.reshape %2 : tensor<600xf32> -> tensor<200x3xf32>
  // CHECK: ntorch.cast %{{.*}} : tensor<200x3xf32> -> tensor<200x3xbf16>
  %4 = ntorch.cast %3 : tensor<200x3xf32> -> tensor<200x3xbf16>
  return %4 : tensor<200x3xbf16>
}

// RUN: neuron-opt %s -neuron-fold-partitions -canonicalize | FileCheck %s

// A 1-D elementwise chain is viewed as [128 x 8192] rows: all partitions, 8 K-element rows;
// the reshapes between the folded ops cancel.
// CHECK-LABEL: func @chain_1d
// CHECK: %[[X:.*]] = ntorch.reshape %arg0 : tensor<1048576xf32> -> tensor<128x8192xf32>
// CHECK: %[[M:.*]] = ntorch.binary mul %[[X]], %{{.*}} : tensor<128x8192xf32>, tensor<f32> -> tensor<128x8192xf32>
// CHECK: %[[E:.*]] = ntorch.unary exp %[[M]] : tensor<128x8192xf32> -> tensor<128x8192xf32>
// CHECK: %[[R:.*]] = ntorch.reshape %[[E]] : tensor<128x8192xf32> -> tensor<1048576xf32>
// CHECK: return %[[R]]
func.func @chain_1d(%x: tensor<1048576xf32>) -> tensor<1048576xf32> {
  %c = ntorch.constant dense<2.0> : tensor<f32>
  %m = ntorch.binary mul %x, %c : tensor<1048576xf32>, tensor<f32> -> tensor<1048576xf32>
  %e = ntorch.unary exp %m : tensor<1048576xf32> -> tensor<1048576xf32>
  return %e : tensor<1048576xf32>
}

// Few rows of a count without 128 as a divisor: the largest divisor up to 128 (125).
// CHECK-LABEL: func @three_rows
// CHECK: ntorch.unary exp %{{.*}} : tensor<125x120xf32> -> tensor<125x120xf32>
func.func @three_rows(%x: tensor<3x5000xf32>) -> tensor<3x5000xf32> {
  %e = ntorch.unary exp %x : tensor<3x5000xf32> -> tensor<3x5000xf32>
  return %e : tensor<3x5000xf32>
}

// A matmul's epilogue stays in the matmul's shape (it fuses there), and so does an op
// beside a broadcast operand.
// CHECK-LABEL: func @epilogue
// CHECK-NOT: ntorch.reshape
// CHECK: ntorch.unary relu %{{.*}} : tensor<3x300xf32> -> tensor<3x300xf32>
func.func @epilogue(%x: tensor<3x200xf32>, %w: tensor<200x300xf32>, %b: tensor<300xf32>) -> tensor<3x300xf32> {
  %mm = ntorch.matmul %x, %w : tensor<3x200xf32>, tensor<200x300xf32> -> tensor<3x300xf32>
  %a = ntorch.binary add %b, %mm : tensor<300xf32>, tensor<3x300xf32> -> tensor<3x300xf32>
  %r = ntorch.unary relu %a : tensor<3x300xf32> -> tensor<3x300xf32>
  return %r : tensor<3x300xf32>
}

// Enough rows already: unchanged.
// CHECK-LABEL: func @many_rows
// CHECK-NOT: ntorch.reshape
func.func @many_rows(%x: tensor<256x64xf32>) -> tensor<256x64xf32> {
  %e = ntorch.unary exp %x : tensor<256x64xf32> -> tensor<256x64xf32>
  return %e : tensor<256x64xf32>
}

// RUN: neuron-opt %s | neuron-opt | FileCheck %s

// CHECK-LABEL: func @ntorch.scatter_rows
// CHECK: ntorch.scatter_rows %arg0[%arg1] = %arg2 : tensor<64x32xf32>, tensor<16xi64>, tensor<16x32xf32>
// CHECK: ntorch.scatter_rows %{{.*}}[%arg1] = %arg2 accumulate max : tensor<64x32xf32>, tensor<16xi64>, tensor<16x32xf32>
func.func @ntorch.scatter_rows(%x: tensor<64x32xf32>, %i: tensor<16xi64>, %v: tensor<16x32xf32>) -> tensor<64x32xf32> {
  %0 = ntorch.scatter_rows %x[%i] = %v : tensor<64x32xf32>, tensor<16xi64>, tensor<16x32xf32>
  %1 = ntorch.scatter_rows %0[%i] = %v accumulate max : tensor<64x32xf32>, tensor<16xi64>, tensor<16x32xf32>
  return %1 : tensor<64x32xf32>
}

// RUN: neuron-opt %s -split-input-file -verify-diagnostics

func.func @values_shape(%x: tensor<64x32xf32>, %i: tensor<16xi64>, %v: tensor<16x31xf32>) -> tensor<64x32xf32> {
  // expected-error @+1 {{values shape [16, 31] should be [16, 32]}}
  %0 = ntorch.scatter_rows %x[%i] = %v : tensor<64x32xf32>, tensor<16xi64>, tensor<16x31xf32>
  return %0 : tensor<64x32xf32>
}

// -----

func.func @indices_rank(%x: tensor<64x32xf32>, %i: tensor<4x4xi64>, %v: tensor<16x32xf32>) -> tensor<64x32xf32> {
  // expected-error @+1 {{indices must be a rank-1 integer tensor}}
  %0 = ntorch.scatter_rows %x[%i] = %v : tensor<64x32xf32>, tensor<4x4xi64>, tensor<16x32xf32>
  return %0 : tensor<64x32xf32>
}

// -----

func.func @mask_indices(%x: tensor<64x32xf32>, %i: tensor<16xi1>, %v: tensor<16x32xf32>) -> tensor<64x32xf32> {
  // expected-error @+1 {{takes i32 or i64 indices, not 'i1'}}
  %0 = ntorch.scatter_rows %x[%i] = %v : tensor<64x32xf32>, tensor<16xi1>, tensor<16x32xf32>
  return %0 : tensor<64x32xf32>
}

// -----

func.func @accumulate_sub(%x: tensor<64x32xf32>, %i: tensor<16xi64>, %v: tensor<16x32xf32>) -> tensor<64x32xf32> {
  // expected-error @+1 {{accumulates with add, mul, max or min, not sub}}
  %0 = ntorch.scatter_rows %x[%i] = %v accumulate sub : tensor<64x32xf32>, tensor<16xi64>, tensor<16x32xf32>
  return %0 : tensor<64x32xf32>
}

// -----

func.func @input_rank(%x: tensor<64xf32>, %i: tensor<16xi64>, %v: tensor<16x1xf32>) -> tensor<64xf32> {
  // expected-error @+1 {{input must be rank 2}}
  %0 = ntorch.scatter_rows %x[%i] = %v : tensor<64xf32>, tensor<16xi64>, tensor<16x1xf32>
  return %0 : tensor<64xf32>
}

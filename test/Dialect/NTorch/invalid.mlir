// RUN: neuron-opt %s -split-input-file -verify-diagnostics

// Contraction sizes must agree.
func.func @matmul_k_mismatch(%a: tensor<3x200xf32>, %b: tensor<100x300xf32>) -> tensor<3x300xf32> {
  // expected-error @+1 {{contraction sizes differ: lhs has 200, rhs has 100}}
  %0 = ntorch.matmul %a, %b : tensor<3x200xf32>, tensor<100x300xf32> -> tensor<3x300xf32>
  return %0 : tensor<3x300xf32>
}

// -----

// The result shape follows from the operands.
func.func @matmul_bad_result(%a: tensor<3x200xf32>, %b: tensor<200x300xf32>) -> tensor<3x30xf32> {
  // expected-error @+1 {{result shape [3, 30] should end in [3, 300]}}
  %0 = ntorch.matmul %a, %b : tensor<3x200xf32>, tensor<200x300xf32> -> tensor<3x30xf32>
  return %0 : tensor<3x30xf32>
}

// -----

// Operands of binary ops broadcast numpy-style.
func.func @binary_not_broadcastable(%a: tensor<3x200xf32>, %b: tensor<3xf32>) -> tensor<3x200xf32> {
  // expected-error @+1 {{operand shape [3] does not broadcast to the result shape [3, 200]}}
  %0 = ntorch.binary add %a, %b : tensor<3x200xf32>, tensor<3xf32> -> tensor<3x200xf32>
  return %0 : tensor<3x200xf32>
}

// -----

// permute needs a permutation.
func.func @permute_repeated_dim(%a: tensor<3x200xf32>) -> tensor<3x3xf32> {
  // expected-error @+1 {{dims [0, 0] are not a permutation}}
  %0 = ntorch.permute %a [0, 0] : tensor<3x200xf32> -> tensor<3x3xf32>
  return %0 : tensor<3x3xf32>
}

// -----

// reshape keeps the element count.
func.func @reshape_count(%a: tensor<3x200xf32>) -> tensor<601xf32> {
  // expected-error @+1 {{cannot reshape [3, 200] (600 elements) to [601]}}
  %0 = ntorch.reshape %a : tensor<3x200xf32> -> tensor<601xf32>
  return %0 : tensor<601xf32>
}

// -----

// broadcast only grows dimensions of size 1.
func.func @broadcast_bad(%a: tensor<2x200xf32>) -> tensor<3x200xf32> {
  // expected-error @+1 {{cannot broadcast [2, 200] to [3, 200]}}
  %0 = ntorch.broadcast %a : tensor<2x200xf32> -> tensor<3x200xf32>
  return %0 : tensor<3x200xf32>
}

// -----

// Unknown element functions are rejected by the parser.
func.func @unknown_fn(%a: tensor<3xf32>) -> tensor<3xf32> {
  // expected-error @+1 {{expected string or keyword containing one of the following enum values for attribute 'fn' [relu, exp,}}
  %0 = ntorch.unary frobnicate %a : tensor<3xf32> -> tensor<3xf32>
  return %0 : tensor<3xf32>
}

// -----

// Window parameters are checked before the output size divides by the stride.
func.func @pool_stride_zero(%x: tensor<1x1x8x8xf32>) -> tensor<1x1x4x4xf32> {
  // expected-error @+1 {{window kernel 2, stride 0, padding 0, dilation 1 out of range}}
  %0 = ntorch.pool2d max %x kernel [2, 2] stride [0, 2] padding [0, 0] : tensor<1x1x8x8xf32> -> tensor<1x1x4x4xf32>
  return %0 : tensor<1x1x4x4xf32>
}

// -----

func.func @pool_window_too_large(%x: tensor<1x1x8x8xf32>) -> tensor<1x1x1x1xf32> {
  // expected-error @+1 {{window of 9 elements does not fit the input of 8 padded by 0 on each side}}
  %0 = ntorch.pool2d max %x kernel [9, 2] stride [1, 2] padding [0, 0] : tensor<1x1x8x8xf32> -> tensor<1x1x1x1xf32>
  return %0 : tensor<1x1x1x1xf32>
}

// -----

// An all_gather over 4 ranks makes 4x the elements.
func.func @all_gather_size(%x: tensor<8x16xf32>) -> tensor<16x16xf32> {
  // expected-error @+1 {{a all_gather over 4 ranks cannot turn 'tensor<8x16xf32>' into 'tensor<16x16xf32>'}}
  %0 = ntorch.collective all_gather add group "0" of 4 %x : tensor<8x16xf32> -> tensor<16x16xf32>
  return %0 : tensor<16x16xf32>
}

// -----

func.func @collective_reduce_op(%x: tensor<8xf32>) -> tensor<8xf32> {
  // expected-error @+1 {{cannot reduce with sub}}
  %0 = ntorch.collective all_reduce sub group "0" of 2 %x : tensor<8xf32> -> tensor<8xf32>
  return %0 : tensor<8xf32>
}

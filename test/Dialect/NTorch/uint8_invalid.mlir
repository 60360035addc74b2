// RUN: neuron-opt %s -split-input-file -verify-diagnostics

// ui8 is a tensor element type of its own; unsigned types other than ui8 are not.
func.func @uint16_rejected(%x: tensor<4xui16>) -> tensor<4xui16> {
  // expected-error @+1 {{must be ranked tensor of floating-point or signless integer or 8-bit unsigned integer values}}
  %0 = ntorch.unary relu %x : tensor<4xui16> -> tensor<4xui16>
  return %0 : tensor<4xui16>
}

// -----

// The Tensor engine multiplies and accumulates in fp32: not exact for uint8, whose eager
// results are exact and wrap mod 256.
func.func @matmul_uint8(%a: tensor<3x200xui8>, %b: tensor<200x4xui8>) -> tensor<3x4xui8> {
  // expected-error @+1 {{does not support uint8 tensors: the matmul computes in fp32}}
  %0 = ntorch.matmul %a, %b : tensor<3x200xui8>, tensor<200x4xui8> -> tensor<3x4xui8>
  return %0 : tensor<3x4xui8>
}

// -----

func.func @conv_uint8(%x: tensor<1x2x4x4xui8>, %w: tensor<1x2x2x2xui8>) -> tensor<1x1x3x3xui8> {
  // expected-error @+1 {{does not support uint8 tensors: the convolution computes in fp32}}
  %0 = ntorch.conv2d %x, %w stride [1, 1] padding [0, 0] dilation [1, 1] groups 1
      : tensor<1x2x4x4xui8>, tensor<1x2x2x2xui8> -> tensor<1x1x3x3xui8>
  return %0 : tensor<1x1x3x3xui8>
}

// -----

// torch takes uint8 index tensors as masks: rows picked by uint8 values would not be eager's.
func.func @gather_rows_uint8_indices(%t: tensor<300x4xf32>, %i: tensor<2xui8>) -> tensor<2x4xf32> {
  // expected-error @+1 {{does not take uint8 indices}}
  %0 = ntorch.gather_rows %t, %i : tensor<300x4xf32>, tensor<2xui8> -> tensor<2x4xf32>
  return %0 : tensor<2x4xf32>
}

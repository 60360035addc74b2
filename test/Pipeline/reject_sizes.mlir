// RUN: not neuron-opt %s -split-input-file -neuron-lower 2>&1 | FileCheck %s

// Dynamic dims cannot be tiled: an error naming the function and the type, exit 1.
// CHECK: error: argument 0 of @dynamic has type 'tensor<?x200xf32>' with a dynamic shape; the neuron lowering needs static shapes
func.func @dynamic(%a: tensor<?x200xf32>, %b: tensor<?x200xf32>) -> tensor<?x200xf32> {
  %0 = ntorch.binary add %a, %b : tensor<?x200xf32>, tensor<?x200xf32> -> tensor<?x200xf32>
  return %0 : tensor<?x200xf32>
}

// -----

// A broadcast intermediate of 16 GiB is more than the 12 GiB of HBM of one trn2 core.
// CHECK: error: 'ntorch.binary' result 'tensor<65536x65536xf32>' needs 16.0 GiB (17179869184 bytes), more than the 12.0 GiB of HBM of one trn2 NeuronCore
func.func @huge(%a: tensor<65536x1xf32>, %b: tensor<1x65536xf32>) -> tensor<65536x65536xf32> {
  %0 = ntorch.binary add %a, %b : tensor<65536x1xf32>, tensor<1x65536xf32> -> tensor<65536x65536xf32>
  return %0 : tensor<65536x65536xf32>
}

// -----

// Each tensor fits (5 GiB), but at the permute the input, exp's result and the permuted
// copy are live at once (the error points at the permute, line 9 of this split).
// CHECK: offset :9:8: error: the tensors live in HBM at this op (inputs, outputs and intermediates still to be read) need 15.0 GiB (16106127360 bytes), more than the 12.0 GiB of HBM of one trn2 NeuronCore
// CHECK-NOT: error
func.func @live(%a: tensor<20480x65536xf32>) -> tensor<1x20480xf32> {
  %0 = ntorch.unary exp %a : tensor<20480x65536xf32> -> tensor<20480x65536xf32>
  %1 = ntorch.permute %0 [1, 0] : tensor<20480x65536xf32> -> tensor<65536x20480xf32>
  %2 = ntorch.reduce sum %1 [0] {keepdim} : tensor<65536x20480xf32> -> tensor<1x20480xf32>
  return %2 : tensor<1x20480xf32>
}

// -----

// Empty tensors lower to nothing; a non-empty result computed from one would stay unwritten
// (a sum over an empty dim is zeros, see Dialect/NTorch/canonicalize.mlir; a max is an error
// in eager).
// CHECK: error: 'ntorch.reduce' computes a non-empty result from an empty tensor, which the neuron lowering does not support
func.func @empty_max(%x: tensor<1x0x3xf32>) -> tensor<1x3xf32> {
  %0 = ntorch.reduce max %x [1] : tensor<1x0x3xf32> -> tensor<1x3xf32>
  return %0 : tensor<1x3xf32>
}

// RUN: neuron-opt %s -split-input-file -verify-diagnostics

func.func @as_strided_outside(%x: tensor<4x9xf32>) -> tensor<3x3xf32> {
  // expected-error @+1 {{window reaches element 37 of a tensor of 36 elements}}
  %0 = ntorch.as_strided %x offset 1 strides [12, 6] : tensor<4x9xf32> -> tensor<3x3xf32>
  return %0 : tensor<3x3xf32>
}

// -----

func.func @as_strided_stride_count(%x: tensor<4x9xf32>) -> tensor<3x3xf32> {
  // expected-error @+1 {{expects 2 strides, got 1}}
  %0 = ntorch.as_strided %x offset 0 strides [1] : tensor<4x9xf32> -> tensor<3x3xf32>
  return %0 : tensor<3x3xf32>
}

// -----

func.func @as_strided_negative(%x: tensor<4x9xf32>) -> tensor<3xf32> {
  // expected-error @+1 {{strides [-1] must be non-negative}}
  %0 = ntorch.as_strided %x offset 5 strides [-1] : tensor<4x9xf32> -> tensor<3xf32>
  return %0 : tensor<3xf32>
}

// -----

func.func @as_strided_dtype(%x: tensor<4x9xf32>) -> tensor<3xbf16> {
  // expected-error @+1 {{result element type differs from the input's}}
  %0 = ntorch.as_strided %x offset 0 strides [1] : tensor<4x9xf32> -> tensor<3xbf16>
  return %0 : tensor<3xbf16>
}

// -----

func.func @insert_outside(%x: tensor<4x9xf32>, %s: tensor<4x3xf32>) -> tensor<4x9xf32> {
  // expected-error @+1 {{window reaches element 36 of a tensor of 36 elements}}
  %0 = ntorch.insert_strided %s into %x offset 3 strides [9, 3] : tensor<4x3xf32> into tensor<4x9xf32>
  return %0 : tensor<4x9xf32>
}

// -----

// Writes must not overlap: which would win is undefined.
func.func @insert_overlap(%x: tensor<4x9xf32>, %s: tensor<2x2xf32>) -> tensor<4x9xf32> {
  // expected-error @+1 {{window elements overlap: stride 1 is below the extent 2 of the smaller strides}}
  %0 = ntorch.insert_strided %s into %x offset 0 strides [1, 1] : tensor<2x2xf32> into tensor<4x9xf32>
  return %0 : tensor<4x9xf32>
}

// -----

func.func @insert_repeat(%x: tensor<4x9xf32>, %s: tensor<2xf32>) -> tensor<4x9xf32> {
  // expected-error @+1 {{window elements overlap: stride 0 is below the extent 1 of the smaller strides}}
  %0 = ntorch.insert_strided %s into %x offset 0 strides [0] : tensor<2xf32> into tensor<4x9xf32>
  return %0 : tensor<4x9xf32>
}

// -----

func.func @insert_dtype(%x: tensor<4x9xf32>, %s: tensor<2xbf16>) -> tensor<4x9xf32> {
  // expected-error @+1 {{src element type differs from the input's}}
  %0 = ntorch.insert_strided %s into %x offset 0 strides [1] : tensor<2xbf16> into tensor<4x9xf32>
  return %0 : tensor<4x9xf32>
}

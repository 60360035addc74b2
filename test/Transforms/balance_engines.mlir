// RUN: neuron-opt %s -neuron-balance-engines -split-input-file | FileCheck %s

// One loop body: the Vector engine already runs the reduce (tensor_reduce stays there).
// Longest first, each movable instruction goes where its engine's total grows least
// (simulator costs on trn2): the fp32 tensor_tensor mul (2N cycles) to GpSimd, the
// subtraction of a per-partition [128, 1] tile (free stride 0) to the Scalar engine as
// identity(x * 1 + (-1) * tile); the add that reads PSUM cannot run on GpSimd and is no
// per-partition add, so it stays on Vector.
// CHECK-LABEL: func @spread
// CHECK: nisa.tensor_tensor mul on 3
// CHECK-NEXT: nisa.activation identity on 2 <sbuf[0] + 4096, {{\[\[}}1, 128], [1, 512]], f32>, <sbuf[0] + 0, {{\[\[}}1, 128], [1, 512]], f32> {bias = -1.000000e+00 : f64, bias_tile = #nisa.ap<sbuf[0] + 8192, {{\[\[}}1, 128], [0, 512]], f32>}
// CHECK-NEXT: nisa.tensor_tensor add on 1 {{.*}}<psum[0]
// CHECK-NEXT: nisa.tensor_reduce max on 1
func.func @spread() {
  nisa.loop iv0 to 4 {
    nisa.tensor_tensor mul on 1 <sbuf[0] + 0, [[1, 128], [1, 512]], f32>, <sbuf[0] + 0, [[1, 128], [1, 512]], f32>, <sbuf[0] + 2048, [[1, 128], [1, 512]], f32>
    nisa.tensor_tensor sub on 1 <sbuf[0] + 4096, [[1, 128], [1, 512]], f32>, <sbuf[0] + 0, [[1, 128], [1, 512]], f32>, <sbuf[0] + 8192, [[1, 128], [0, 512]], f32>
    nisa.tensor_tensor add on 1 <sbuf[0] + 6144, [[1, 128], [1, 512]], f32>, <psum[0] + 0, [[1, 128], [1, 512]], f32>, <sbuf[0] + 2048, [[1, 128], [1, 512]], f32>
    nisa.tensor_reduce max on 1 <sbuf[0] + 8192, [[1, 128], [1, 1]], f32>, <sbuf[0] + 0, [[1, 128], [1, 512]], f32>
  }
  return
}

// -----

// A multiply by a per-partition tile does not move to the Scalar engine (x * s + 0 would
// turn a product of -0 into +0).
// CHECK-LABEL: func @mul_stays
// CHECK-NOT: nisa.activation
func.func @mul_stays() {
  nisa.tensor_tensor mul on 1 <sbuf[0] + 0, [[1, 128], [1, 512]], f32>, <sbuf[0] + 0, [[1, 128], [1, 512]], f32>, <sbuf[0] + 8192, [[1, 128], [0, 512]], f32>
  return
}

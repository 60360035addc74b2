// RUN: neuron-opt %s | neuron-opt | FileCheck %s

// CHECK-LABEL: func @nisa.program
func.func @nisa.program() {
  // CHECK: nisa.buffer 0 input 0 : tensor<3x200xf32>
  nisa.buffer 0 input 0 : tensor<3x200xf32>
  // CHECK: nisa.buffer 1 constant -1 {value = dense<5.000000e-01> : tensor<f32>} : tensor<f32>
  nisa.buffer 1 constant -1 {value = dense<0.5> : tensor<f32>} : tensor<f32>
  // CHECK: nisa.dma_copy on 4 <sbuf[0] + 0, {{\[\[}}1, 3], [1, 200]], f32>, <hbm[0] + 0, {{\[\[}}200, 3], [1, 200]], f32>
  nisa.dma_copy on 4 <sbuf[0] + 0, [[1, 3], [1, 200]], f32>, <hbm[0] + 0, [[200, 3], [1, 200]], f32>
  // CHECK: nisa.activation exp on 2 <sbuf[0] + 1024, {{\[\[}}1, 3], [1, 200]], f32>, <sbuf[0] + 0, {{\[\[}}1, 3], [1, 200]], f32> wait [4, 1]
  nisa.activation exp on 2 <sbuf[0] + 1024, [[1, 3], [1, 200]], f32>, <sbuf[0] + 0, [[1, 3], [1, 200]], f32> wait [4, 1]
  // CHECK: nisa.tensor_scalar mul on 1 {{.*}}, 2.000000e+00 wait [2, 1] {reverse}
  nisa.tensor_scalar mul on 1 <sbuf[0] + 0, [[1, 3], [1, 200]], f32>, <sbuf[0] + 1024, [[1, 3], [1, 200]], f32>, 2.0 wait [2, 1] {reverse}
  // CHECK: nisa.tensor_scalar max on 1 {{.*}}, 0.000000e+00 then min 6.000000e+00
  nisa.tensor_scalar max on 1 <sbuf[0] + 0, [[1, 3], [1, 200]], f32>, <sbuf[0] + 1024, [[1, 3], [1, 200]], f32>, 0.0 then min 6.0
  // CHECK: nisa.scalar_tensor_tensor sub mul on 1 {{.*}}, 0.000000e+00 tile <sbuf[0] + 2048, {{\[\[}}1, 3], [0, 200]], f32>, <sbuf[0] + 1024
  nisa.scalar_tensor_tensor sub mul on 1 <sbuf[0] + 0, [[1, 3], [1, 200]], f32>, <sbuf[0] + 0, [[1, 3], [1, 200]], f32>, 0.0 tile <sbuf[0] + 2048, [[1, 3], [0, 200]], f32>, <sbuf[0] + 1024, [[1, 3], [1, 200]], f32>
  // CHECK: nisa.nc_matmul on 0 <psum[0] + 0, {{\[\[}}1, 3], [1, 8]], f32>
  nisa.nc_matmul on 0 <psum[0] + 0, [[1, 3], [1, 8]], f32>, <sbuf[0] + 0, [[1, 64], [1, 3]], bf16>, <sbuf[64] + 0, [[1, 64], [1, 8]], bf16> {accumulate}
  // CHECK: nisa.tensor_tensor add on 1
  nisa.tensor_tensor add on 1 <sbuf[0] + 0, [[1, 3], [1, 8]], f32>, <psum[0] + 0, [[1, 3], [1, 8]], f32>, <sbuf[0] + 64, [[1, 3], [1, 8]], f32>
  // CHECK: nisa.tensor_copy on 1
  nisa.tensor_copy on 1 <sbuf[0] + 0, [[1, 3], [1, 8]], bf16>, <psum[0] + 0, [[1, 3], [1, 8]], f32>
  return
}

// Loops, rotating offsets and affine semaphore counts round-trip.
// CHECK-LABEL: func @nisa.loops
// CHECK: nisa.loop iv0 to 8 {
// CHECK-NEXT: nisa.dma_copy on 4 <sbuf[0] + 0 + 256*(iv0 mod 2), {{\[\[}}1, 1], [1, 64]], f32>, <hbm[0] + 0 + 64*iv0, {{\[\[}}64, 1], [1, 64]], f32> wait [1, -1] {wait_terms = array<i64: 0, 0, 1, 0>}
func.func @nisa.loops() {
  nisa.buffer 0 input 0 : tensor<8x64xf32>
  nisa.loop iv0 to 8 {
    nisa.dma_copy on 4 <sbuf[0] + 0 + 256*(iv0 mod 2), [[1, 1], [1, 64]], f32>, <hbm[0] + 0 + 64*iv0, [[64, 1], [1, 64]], f32> wait [1, -1] {wait_terms = array<i64: 0, 0, 1, 0>}
    nisa.tensor_copy on 1 <sbuf[0] + 1024, [[1, 1], [1, 64]], f32>, <sbuf[0] + 0 + 256*(iv0 mod 2), [[1, 1], [1, 64]], f32>
  }
  return
}

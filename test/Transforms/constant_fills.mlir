// RUN: neuron-opt %s -neuron-constant-fills | FileCheck %s

// A DMA of a one-value constant into SBUF (a broadcast of a scalar, or a splat tile) becomes
// a memset on the GpSimd queue of its core, keeping its loop terms; a constant of several
// values, a DMA into HBM, a DMA from an input and a fill of partitions a compute engine may
// not start at (16 partitions from partition 16) stay DMAs. A fill of PSUM (NKI's
// nl.zeros(..., buffer=nl.psum)) is a memset on the Vector queue (GpSimd cannot access PSUM).
// CHECK-LABEL: func @fills
// CHECK: nisa.memset on 3 <sbuf[0] + 0, {{\[\[}}1, 128], [1, 512]], f32>, 5.000000e-01
// CHECK: nisa.loop iv0 to 4 {
// CHECK-NEXT: nisa.memset on 3 <sbuf[0] + 4096 + 256*(iv0 mod 2), {{\[\[}}1, 64], [1, 64]], bf16>, 0.000000e+00
// CHECK: nisa.memset on 24 <sbuf[0] + 8192, {{\[\[}}1, 16], [1, 8]], i32, core 1>, -3.000000e+00
// CHECK: nisa.dma_copy on 6 <sbuf[0] + 12288, {{\[\[}}1, 2], [1, 2]], f32>, <hbm[3]
// CHECK: nisa.dma_copy on 7 <hbm[4]
// CHECK: nisa.dma_copy on 8 <sbuf[0] + 16384, {{\[\[}}1, 2], [1, 2]], f32>, <hbm[5]
// CHECK: nisa.dma_copy on 9 <sbuf[16] + 0, {{\[\[}}1, 16], [1, 4]], f32>, <hbm[0]
// CHECK: nisa.memset on 1 <psum[0] + 0, {{\[\[}}1, 128], [1, 512]], f32>, 5.000000e-01
func.func @fills() {
  nisa.buffer 0 constant -1 {value = dense<5.000000e-01> : tensor<f32>} : tensor<f32>
  nisa.buffer 1 constant -1 {value = dense<0.000000e+00> : tensor<64x64xbf16>} : tensor<64x64xbf16>
  nisa.buffer 2 constant -1 {value = dense<-3> : tensor<i32>} : tensor<i32>
  nisa.buffer 3 constant -1 {value = dense<[[1.0, 2.0], [3.0, 4.0]]> : tensor<2x2xf32>} : tensor<2x2xf32>
  nisa.buffer 4 output 0 : tensor<4xf32>
  nisa.buffer 5 input 0 : tensor<2x2xf32>
  nisa.dma_copy on 4 <sbuf[0] + 0, [[1, 128], [1, 512]], f32>, <hbm[0] + 0, [[0, 128], [0, 512]], f32>
  nisa.loop iv0 to 4 {
    nisa.dma_copy on 5 <sbuf[0] + 4096 + 256*(iv0 mod 2), [[1, 64], [1, 64]], bf16>, <hbm[1] + 0, [[64, 64], [1, 64]], bf16>
  }
  nisa.dma_copy on 25 <sbuf[0] + 8192, [[1, 16], [1, 8]], i32, core 1>, <hbm[2] + 0, [[0, 16], [0, 8]], i32>
  nisa.dma_copy on 6 <sbuf[0] + 12288, [[1, 2], [1, 2]], f32>, <hbm[3] + 0, [[2, 2], [1, 2]], f32>
  nisa.dma_copy on 7 <hbm[4] + 0, [[0, 1], [1, 4]], f32>, <hbm[0] + 0, [[0, 1], [0, 4]], f32>
  nisa.dma_copy on 8 <sbuf[0] + 16384, [[1, 2], [1, 2]], f32>, <hbm[5] + 0, [[2, 2], [1, 2]], f32>
  nisa.dma_copy on 9 <sbuf[16] + 0, [[1, 16], [1, 4]], f32>, <hbm[0] + 0, [[0, 16], [0, 4]], f32>
  nisa.dma_copy on 10 <psum[0] + 0, [[1, 128], [1, 512]], f32>, <hbm[0] + 0, [[0, 128], [0, 512]], f32>
  return
}

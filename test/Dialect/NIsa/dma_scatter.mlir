// RUN: neuron-opt %s | neuron-opt | FileCheck %s

// CHECK-LABEL: func @nisa.scatter
// CHECK: nisa.dma_scatter on 4 <hbm[0] + 0, {{\[\[}}40, 300], [1, 40]], f32>, <sbuf[0] + 64, {{\[\[}}1, 128], [1, 40]], f32>[<sbuf[0] + 0, {{\[\[}}1, 128], [1, 1]], i64>]
// CHECK: nisa.dma_scatter accumulate min on 5
func.func @nisa.scatter() {
  nisa.buffer 0 output 0 : tensor<300x40xf32>
  nisa.dma_scatter on 4 <hbm[0] + 0, [[40, 300], [1, 40]], f32>, <sbuf[0] + 64, [[1, 128], [1, 40]], f32>[<sbuf[0] + 0, [[1, 128], [1, 1]], i64>]
  nisa.dma_scatter accumulate min on 5 <hbm[0] + 0, [[40, 300], [1, 40]], f32>, <sbuf[0] + 64, [[1, 128], [1, 40]], f32>[<sbuf[0] + 0, [[1, 128], [1, 1]], i64>] wait [4, 1]
  return
}

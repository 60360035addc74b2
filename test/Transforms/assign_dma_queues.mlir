// RUN: neuron-opt %s -neuron-assign-dma-queues | FileCheck %s

// Outside loops: transfers rotate over the queues; a 64 KiB transfer of 128 rows
// splits into two parts of 32 KiB. In a loop: parts of 8 KiB (8 here), since the
// same instruction runs on the same queue in every iteration; the parts keep the
// loop terms. Small transfers and gathers are not split.
// CHECK-LABEL: func @queues
// CHECK-NEXT: nisa.buffer
// CHECK-NEXT: nisa.dma_copy on 4 <sbuf[0] + 0, {{\[\[}}1, 64], [1, 128]], f32>, <hbm[0] + 0, {{\[\[}}128, 64], [1, 128]], f32>
// CHECK-NEXT: nisa.dma_copy on 5 <sbuf[64] + 0, {{\[\[}}1, 64], [1, 128]], f32>, <hbm[0] + 8192, {{\[\[}}128, 64], [1, 128]], f32>
// CHECK-NEXT: nisa.dma_copy on 6 <sbuf[0] + 0, {{\[\[}}1, 2], [1, 4]], f32>
// CHECK-NEXT: nisa.loop iv0 to 4 {
// CHECK-NEXT: nisa.dma_copy on 7 <sbuf[0] + 0 + 512*(iv0 mod 2), {{\[\[}}1, 16], [1, 128]], f32>, <hbm[0] + 0 + 128*iv0, {{\[\[}}128, 16], [1, 128]], f32>
// CHECK-NEXT: nisa.dma_copy on 8 <sbuf[16] + 0 + 512*(iv0 mod 2), {{\[\[}}1, 16], [1, 128]], f32>, <hbm[0] + 2048 + 128*iv0, {{\[\[}}128, 16], [1, 128]], f32>
// CHECK-COUNT-5: nisa.dma_copy
// CHECK-NEXT: nisa.dma_copy on 14 <sbuf[112] + 0 + 512*(iv0 mod 2)
// CHECK-NEXT: }
func.func @queues() {
  nisa.buffer 0 input 0 : tensor<1024x128xf32>
  nisa.dma_copy on 4 <sbuf[0] + 0, [[1, 128], [1, 128]], f32>, <hbm[0] + 0, [[128, 128], [1, 128]], f32>
  nisa.dma_copy on 4 <sbuf[0] + 0, [[1, 2], [1, 4]], f32>, <hbm[0] + 0, [[128, 2], [1, 4]], f32>
  nisa.loop iv0 to 4 {
    nisa.dma_copy on 4 <sbuf[0] + 0 + 512*(iv0 mod 2), [[1, 128], [1, 128]], f32>, <hbm[0] + 0 + 128*iv0, [[128, 128], [1, 128]], f32>
  }
  return
}

// RUN: neuron-opt %s -neuron-assign-dma-queues | FileCheck %s

// Outside loops: transfers rotate over the queues; a 64 KiB transfer of 128 rows of 512 B
// takes a queue as long as 128 x 1219 B at full rate (the descriptor rule of
// runtime/HARDWARE.md: runs under 1 KiB at 42%) and splits into parts of at least 32 KiB of
// that, here one per queue of the pool it goes to (3). Loads just before a loop nest take the nest's store queues
// (idle until its first store) so as not to delay its first loads; the store after the
// loop rotates over all queues. Inside loops, where an instruction runs on the same
// queue in every iteration, loads and stores get disjoint queues in proportion to the
// bytes they move (here 13 for loads, 3 for stores: loads move 4x the bytes) and split
// into parts of at least 2 KiB and 8 rows, one per queue of their pool, keeping the
// loop terms.
// CHECK-LABEL: func @queues
// CHECK-NEXT: nisa.buffer
// CHECK-NEXT: nisa.buffer
// CHECK-NEXT: nisa.dma_copy on 17 <sbuf[0] + 0, {{\[\[}}1, 43], [1, 128]], f32>, <hbm[0] + 0, {{\[\[}}128, 43], [1, 128]], f32>
// CHECK-NEXT: nisa.dma_copy on 18 <sbuf[43] + 0, {{\[\[}}1, 43], [1, 128]], f32>, <hbm[0] + 5504, {{\[\[}}128, 43], [1, 128]], f32>
// CHECK-NEXT: nisa.dma_copy on 19 <sbuf[86] + 0, {{\[\[}}1, 42], [1, 128]], f32>, <hbm[0] + 11008, {{\[\[}}128, 42], [1, 128]], f32>
// CHECK-NEXT: nisa.dma_copy on 17 <sbuf[0] + 0, {{\[\[}}1, 2], [1, 4]], f32>
// CHECK-NEXT: nisa.loop iv0 to 8 {
// CHECK-NEXT: nisa.dma_copy on 4 <sbuf[0] + 0 + 512*(iv0 mod 2), {{\[\[}}1, 10], [1, 128]], f32>, <hbm[0] + 0 + 128*iv0, {{\[\[}}128, 10], [1, 128]], f32>
// CHECK-NEXT: nisa.dma_copy on 5 <sbuf[10] + 0 + 512*(iv0 mod 2), {{\[\[}}1, 10], [1, 128]], f32>, <hbm[0] + 1280 + 128*iv0, {{\[\[}}128, 10], [1, 128]], f32>
// CHECK-COUNT-10: nisa.dma_copy on
// CHECK-NEXT: nisa.dma_copy on 16 <sbuf[120] + 0 + 512*(iv0 mod 2), {{\[\[}}1, 8], [1, 128]], f32>
// CHECK-NEXT: nisa.dma_copy on 18 <hbm[1] + 0 + 128*iv0, {{\[\[}}128, 43], [1, 32]], f32>, <sbuf[0] + 1024 + 128*(iv0 mod 2), {{\[\[}}1, 43], [1, 32]], f32>
// CHECK-NEXT: nisa.dma_copy on 19 <hbm[1] + 5504 + 128*iv0
// CHECK-NEXT: nisa.dma_copy on 17 <hbm[1] + 11008 + 128*iv0
// CHECK-NEXT: }
// CHECK-NEXT: nisa.dma_copy on 4 <hbm[1] + 0, {{\[\[}}128, 2], [1, 4]], f32>
func.func @queues() {
  nisa.buffer 0 input 0 : tensor<1024x128xf32>
  nisa.buffer 1 output 0 : tensor<1024x128xf32>
  nisa.dma_copy on 4 <sbuf[0] + 0, [[1, 128], [1, 128]], f32>, <hbm[0] + 0, [[128, 128], [1, 128]], f32>
  nisa.dma_copy on 4 <sbuf[0] + 0, [[1, 2], [1, 4]], f32>, <hbm[0] + 0, [[128, 2], [1, 4]], f32>
  nisa.loop iv0 to 8 {
    nisa.dma_copy on 4 <sbuf[0] + 0 + 512*(iv0 mod 2), [[1, 128], [1, 128]], f32>, <hbm[0] + 0 + 128*iv0, [[128, 128], [1, 128]], f32>
    nisa.dma_copy on 4 <hbm[1] + 0 + 128*iv0, [[128, 128], [1, 32]], f32>, <sbuf[0] + 1024 + 128*(iv0 mod 2), [[1, 128], [1, 32]], f32>
  }
  nisa.dma_copy on 4 <hbm[1] + 0, [[128, 2], [1, 4]], f32>, <sbuf[0] + 0, [[1, 2], [1, 4]], f32>
  return
}

// A software pipeline (nisa.prefetch, from ntile.prefetch): its prologue before the nest
// is what the nest needs first, with its first loads, and takes every queue (here 4
// parts: 128 rows of 512 B take a queue as long as 128 x 1219 B, runs under 1 KiB moving
// at the 1 KiB run's 42%), not the nest's store queues as an unmarked load
// would (see @queues). Inside the nest the prefetch of the next iteration, last in the
// body, shares the load queues (14; the stores move 1/7 of the bytes: 2 queues) and
// queues behind the iteration's loads. The attribute is consumed.
// CHECK-LABEL: func @prefetch
// CHECK-NOT: nisa.prefetch
// CHECK: nisa.dma_copy on 4 <sbuf[0] + 0, {{\[\[}}1, 32], [1, 128]], f32>, <hbm[1] + 0, {{\[\[}}576, 32], [1, 128]], f32>
// CHECK-COUNT-2: nisa.dma_copy on
// CHECK-NEXT: nisa.dma_copy on 7 <sbuf[96] + 0, {{\[\[}}1, 32], [1, 128]], f32>, <hbm[1] + 55296, {{\[\[}}576, 32], [1, 128]], f32>
// CHECK-NEXT: nisa.loop iv0 to 8 {
// CHECK-NEXT: nisa.dma_copy on 4 <sbuf[0] + 1024 + 512*(iv0 mod 2), {{\[\[}}1, 10], [1, 128]], f32>
// CHECK-COUNT-11: nisa.dma_copy on
// CHECK-NEXT: nisa.dma_copy on 16 <sbuf[120] + 1024 + 512*(iv0 mod 2), {{\[\[}}1, 8], [1, 128]], f32>
// CHECK-NEXT: nisa.dma_copy on 18 <hbm[2] + 0 + 4096*iv0, {{\[\[}}32, 64], [1, 32]], f32>
// CHECK-NEXT: nisa.dma_copy on 19 <hbm[2] + 2048 + 4096*iv0, {{\[\[}}32, 64], [1, 32]], f32>
// CHECK-NEXT: nisa.dma_copy on 17 <sbuf[0] + 256 + -256*(iv0 mod 2), {{\[\[}}1, 10], [1, 64]], f32>, <hbm[1] + 64 + 64*iv0, {{\[\[}}576, 10], [1, 64]], f32>
// CHECK-NEXT: nisa.dma_copy on 4 <sbuf[10] + 256 + -256*(iv0 mod 2), {{\[\[}}1, 10], [1, 64]], f32>
// CHECK-COUNT-10: nisa.dma_copy on
// CHECK-NEXT: nisa.dma_copy on 15 <sbuf[120] + 256 + -256*(iv0 mod 2), {{\[\[}}1, 8], [1, 64]], f32>
// CHECK-NEXT: }
// CHECK-NOT: nisa.prefetch
func.func @prefetch() {
  nisa.buffer 0 input 0 : tensor<1024x128xf32>
  nisa.buffer 1 input 1 : tensor<128x576xf32>
  nisa.buffer 2 output 0 : tensor<1024x32xf32>
  nisa.dma_copy on 4 <sbuf[0] + 0, [[1, 128], [1, 128]], f32>, <hbm[1] + 0, [[576, 128], [1, 128]], f32> {nisa.prefetch}
  nisa.loop iv0 to 8 {
    nisa.dma_copy on 4 <sbuf[0] + 1024 + 512*(iv0 mod 2), [[1, 128], [1, 128]], f32>, <hbm[0] + 0 + 128*iv0, [[128, 128], [1, 128]], f32>
    nisa.dma_copy on 4 <hbm[2] + 0 + 4096*iv0, [[32, 128], [1, 32]], f32>, <sbuf[0] + 2048, [[1, 128], [1, 32]], f32>
    nisa.dma_copy on 4 <sbuf[0] + 256 + -256*(iv0 mod 2), [[1, 128], [1, 64]], f32>, <hbm[1] + 64 + 64*iv0, [[576, 128], [1, 64]], f32> {nisa.prefetch}
  }
  return
}

// A column (one 4-byte element per partition, 128 descriptors) moves 512 B but holds its
// queue for 128 descriptors' time (128 x 610 B at full rate: a 256-byte packet's time
// each): outside loops it splits like a transfer of that many bytes, into 2 parts.
// CHECK-LABEL: func @column
// CHECK-NEXT: nisa.buffer
// CHECK-NEXT: nisa.dma_copy on 4 <sbuf[0] + 0, {{\[\[}}1, 64], [1, 1]], f32>, <hbm[0] + 0, {{\[\[}}16, 64], [1, 1]], f32>
// CHECK-NEXT: nisa.dma_copy on 5 <sbuf[64] + 0, {{\[\[}}1, 64], [1, 1]], f32>, <hbm[0] + 1024, {{\[\[}}16, 64], [1, 1]], f32>
// CHECK-NEXT: return
func.func @column() {
  nisa.buffer 0 input 0 : tensor<128x16xf32>
  nisa.dma_copy on 4 <sbuf[0] + 0, [[1, 128], [1, 1]], f32>, <hbm[0] + 0, [[16, 128], [1, 1]], f32>
  return
}

// RUN: neuron-opt %s -convert-ntorch-to-ntile -split-input-file | FileCheck %s

// A sum over rows of 20000 f32: 2 blocks of 128 rows (iv0, 128 * 20000 = 2560000 per
// block). A row is 9 chunks of 2048 plus 1568. The first chunk is peeled: its reduce
// starts the [128, 1] accumulator (no tensor_tensor); chunks 1..8 are a loop (iv1)
// whose reduce is combined into the accumulator by tensor_tensor add, at offset
// 2048 + 2048*iv1; the last 1568 elements (at 18432) are a remainder chunk after the
// loop. One store of the accumulator per block.
// CHECK-LABEL: func @ntorch.reduce$long_rows
// CHECK-NEXT: ntile.loop iv0 to 2 {
// CHECK-NEXT: %[[T0:.*]] = memref.alloc() : memref<128x2048xf32, #ntile.mem<sbuf>>
// CHECK-NEXT: ntile.dma %arg0 <0 + 2560000*iv0, {{\[\[}}20000, 128], [1, 2048]]> to %[[T0]] <0, {{\[\[}}2048, 128], [1, 2048]]>
// CHECK-NEXT: %[[ACC:.*]] = memref.alloc() : memref<128x1xf32, #ntile.mem<sbuf>>
// CHECK-NEXT: ntile.reduce add %[[T0]] to %[[ACC]] :
// CHECK-NEXT: ntile.loop iv1 to 8 {
// CHECK-NEXT: %[[T:.*]] = memref.alloc() : memref<128x2048xf32, #ntile.mem<sbuf>>
// CHECK-NEXT: ntile.dma %arg0 <2048 + 2048*iv1 + 2560000*iv0, {{\[\[}}20000, 128], [1, 2048]]> to %[[T]]
// CHECK-NEXT: %[[P:.*]] = memref.alloc() : memref<128x1xf32, #ntile.mem<sbuf>>
// CHECK-NEXT: ntile.reduce add %[[T]] to %[[P]] :
// CHECK-NEXT: ntile.tensor_tensor add %[[ACC]], %[[P]] to %[[ACC]] :
// CHECK-NEXT: }
// CHECK-NEXT: %[[TR:.*]] = memref.alloc() : memref<128x1568xf32, #ntile.mem<sbuf>>
// CHECK-NEXT: ntile.dma %arg0 <18432 + 2560000*iv0, {{\[\[}}20000, 128], [1, 1568]]> to %[[TR]]
// CHECK-NEXT: %[[PR:.*]] = memref.alloc() : memref<128x1xf32, #ntile.mem<sbuf>>
// CHECK-NEXT: ntile.reduce add %[[TR]] to %[[PR]] :
// CHECK-NEXT: ntile.tensor_tensor add %[[ACC]], %[[PR]] to %[[ACC]] :
// CHECK-NEXT: ntile.dma %[[ACC]] <0, {{\[\[}}1, 128], [1, 1]]> to %arg1 <0 + 128*iv0, {{\[\[}}1, 128], [1, 1]]>
// CHECK-NEXT: }
// CHECK-NEXT: return
func.func @ntorch.reduce$long_rows(%x: tensor<256x20000xf32>) -> tensor<256xf32> {
  %0 = ntorch.reduce sum %x [1] : tensor<256x20000xf32> -> tensor<256xf32>
  return %0 : tensor<256xf32>
}

// -----

// 300 rows of exactly two chunks of bf16: the chunk after the peeled one is emitted
// inline (a loop of one iteration is no loop) and there is no remainder chunk. The
// accumulator is fp32 and converted to bf16 before the store. Rows: 2 blocks of 128
// (iv0), then a remainder block of 44 rows at row 256.
// CHECK-LABEL: func @ntorch.reduce$two_chunks
// CHECK-NEXT: ntile.loop iv0 to 2 {
// CHECK-NOT: ntile.loop
// CHECK: ntile.dma %arg0 <0 + 524288*iv0, {{\[\[}}4096, 128], [1, 2048]]>
// CHECK-NEXT: %[[ACC:.*]] = memref.alloc() : memref<128x1xf32, #ntile.mem<sbuf>>
// CHECK-NEXT: ntile.reduce add %{{.*}} to %[[ACC]] :
// CHECK-NEXT: memref.alloc
// CHECK-NEXT: ntile.dma %arg0 <2048 + 524288*iv0, {{\[\[}}4096, 128], [1, 2048]]>
// CHECK-NEXT: %[[P:.*]] = memref.alloc() : memref<128x1xf32, #ntile.mem<sbuf>>
// CHECK-NEXT: ntile.reduce add %{{.*}} to %[[P]] :
// CHECK-NEXT: ntile.tensor_tensor add %[[ACC]], %[[P]] to %[[ACC]] :
// CHECK-NEXT: %[[R:.*]] = memref.alloc() : memref<128x1xbf16, #ntile.mem<sbuf>>
// CHECK-NEXT: ntile.copy %[[ACC]] to %[[R]] :
// CHECK-NEXT: ntile.dma %[[R]] <0, {{\[\[}}1, 128], [1, 1]]> to %arg1 <0 + 128*iv0, {{\[\[}}1, 128], [1, 1]]>
// CHECK-NEXT: }
// CHECK-NOT: ntile.loop
// CHECK: ntile.dma %arg0 <1048576, {{\[\[}}4096, 44], [1, 2048]]>
// CHECK: ntile.dma %arg0 <1050624, {{\[\[}}4096, 44], [1, 2048]]>
// CHECK: ntile.dma %{{.*}} to %arg1 <256, {{\[\[}}1, 44], [1, 1]]>
// CHECK-NEXT: return
func.func @ntorch.reduce$two_chunks(%x: tensor<300x4096xbf16>) -> tensor<300xbf16> {
  %0 = ntorch.reduce sum %x [1] : tensor<300x4096xbf16> -> tensor<300xbf16>
  return %0 : tensor<300xbf16>
}

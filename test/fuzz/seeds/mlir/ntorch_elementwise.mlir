// RUN: neuron-opt %s -convert-ntorch-to-ntile -canonicalize -split-input-file | FileCheck %s

// A bias of shape [300] broadcasts over rows with a stride-0 DMA pattern; the
// result is written straight into the output buffer.
// CHECK-LABEL: func @ntorch.binary$broadcast
// CHECK: ntile.dma %arg0 <0, {{\[\[}}300, 3], [1, 300]]> to %[[X:.*]] <0
// CHECK: ntile.dma %arg1 <0, {{\[\[}}0, 3], [1, 300]]> to %[[B:.*]] <0
// CHECK: ntile.tensor_tensor add %[[X]], %[[B]] to %[[R:.*]] :
// CHECK: ntile.dma %[[R]] <0, {{\[\[}}300, 3], [1, 300]]> to %arg2
func.func @ntorch.binary$broadcast(%x: tensor<3x300xf32>, %b: tensor<300xf32>) -> tensor<3x300xf32> {
  %0 = ntorch.binary add %x, %b : tensor<3x300xf32>, tensor<300xf32> -> tensor<3x300xf32>
  return %0 : tensor<3x300xf32>
}

// -----

// A scalar constant becomes an immediate; a constant lhs sets `reverse`.
// CHECK-LABEL: func @ntorch.binary$scalar
// CHECK-NOT: ntile.constant
// CHECK: ntile.tensor_scalar sub %{{.*}}, 1.000000e+00 to %{{.*}} {reverse}
func.func @ntorch.binary$scalar(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %c = ntorch.constant dense<1.0> : tensor<f32>
  %0 = ntorch.binary sub %c, %x : tensor<f32>, tensor<4x8xf32> -> tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

// Unary functions run on the Scalar engine, tiled by 128 rows; casts are copies.
// CHECK-LABEL: func @ntorch.unary$rows
// CHECK: ntile.activation gelu %{{.*}} to %{{.*}} : memref<128x16xf32, #ntile.mem<sbuf>>, memref<128x16xf32, #ntile.mem<sbuf>>
// CHECK: ntile.activation gelu %{{.*}} to %{{.*}} : memref<72x16xf32, #ntile.mem<sbuf>>, memref<72x16xf32, #ntile.mem<sbuf>>
// CHECK: ntile.copy %{{.*}} to %{{.*}} : memref<128x16xf32, #ntile.mem<sbuf>>, memref<128x16xbf16, #ntile.mem<sbuf>>
func.func @ntorch.unary$rows(%x: tensor<2x100x16xf32>) -> tensor<2x100x16xbf16> {
  %0 = ntorch.unary gelu %x : tensor<2x100x16xf32> -> tensor<2x100x16xf32>
  %1 = ntorch.cast %0 : tensor<2x100x16xf32> -> tensor<2x100x16xbf16>
  return %1 : tensor<2x100x16xbf16>
}

// -----

// A [2, 1, 4] operand broadcast to [2, 3, 4]: rows repeat within each outer
// index, so each run of rows is one DMA with a stride-0 partition step.
// CHECK-LABEL: func @ntorch.binary$middle_broadcast
// CHECK: ntile.dma %arg1 <0, {{\[\[}}0, 3], [1, 4]]> to %[[T:.*]] <0, {{\[\[}}4, 3], [1, 4]]>
// CHECK: ntile.dma %arg1 <4, {{\[\[}}0, 3], [1, 4]]> to %[[T]] <12, {{\[\[}}4, 3], [1, 4]]>
func.func @ntorch.binary$middle_broadcast(%x: tensor<2x3x4xf32>, %y: tensor<2x1x4xf32>) -> tensor<2x3x4xf32> {
  %0 = ntorch.binary mul %x, %y : tensor<2x3x4xf32>, tensor<2x1x4xf32> -> tensor<2x3x4xf32>
  return %0 : tensor<2x3x4xf32>
}

// -----

// Loop form. [1024, 4096] f32 + a [4096] bias: 8 blocks of 128 rows (iv0) x 2 tiles
// of 2048 columns (iv1), one copy of the tile body and no remainder. HBM offsets step
// by 128 * 4096 = 524288 per row block and 2048 per column tile; the bias is read
// with a partition stride of 0 and only the column term.
// CHECK-LABEL: func @ntorch.binary$loops
// CHECK-NEXT: ntile.loop iv0 to 8 {
// CHECK-NEXT: ntile.loop iv1 to 2 {
// CHECK-NEXT: %[[X:.*]] = memref.alloc() : memref<128x2048xf32, #ntile.mem<sbuf>>
// CHECK-NEXT: ntile.dma %arg0 <0 + 2048*iv1 + 524288*iv0, {{\[\[}}4096, 128], [1, 2048]]> to %[[X]] <0, {{\[\[}}2048, 128], [1, 2048]]>
// CHECK-NEXT: %[[B:.*]] = memref.alloc() : memref<128x2048xf32, #ntile.mem<sbuf>>
// CHECK-NEXT: ntile.dma %arg1 <0 + 2048*iv1, {{\[\[}}0, 128], [1, 2048]]> to %[[B]] <0, {{\[\[}}2048, 128], [1, 2048]]>
// CHECK-NEXT: %[[R:.*]] = memref.alloc() : memref<128x2048xf32, #ntile.mem<sbuf>>
// CHECK-NEXT: ntile.tensor_tensor add %[[X]], %[[B]] to %[[R]] :
// CHECK-NEXT: ntile.dma %[[R]] <0, {{\[\[}}2048, 128], [1, 2048]]> to %arg2 <0 + 2048*iv1 + 524288*iv0, {{\[\[}}4096, 128], [1, 2048]]>
// CHECK-NEXT: }
// CHECK-NEXT: }
// CHECK-NEXT: return
func.func @ntorch.binary$loops(%x: tensor<1024x4096xf32>, %b: tensor<4096xf32>) -> tensor<1024x4096xf32> {
  %0 = ntorch.binary add %x, %b : tensor<1024x4096xf32>, tensor<4096xf32> -> tensor<1024x4096xf32>
  return %0 : tensor<1024x4096xf32>
}

// -----

// [8, 256, 512]: both operands and the result are contiguous, so the two row dims
// merge into 2048 rows: one loop of 16 blocks stepping 128 * 512 = 65536, not a loop
// per dimension, and the 512 columns fit one tile (no column loop).
// CHECK-LABEL: func @ntorch.binary$merged_rows
// CHECK-NEXT: ntile.loop iv0 to 16 {
// CHECK-NOT: ntile.loop
// CHECK: ntile.dma %arg0 <0 + 65536*iv0, {{\[\[}}512, 128], [1, 512]]>
// CHECK-NEXT: memref.alloc
// CHECK-NEXT: ntile.dma %arg1 <0 + 65536*iv0, {{\[\[}}512, 128], [1, 512]]>
// CHECK-NEXT: memref.alloc
// CHECK-NEXT: ntile.tensor_tensor mul {{.*}} : memref<128x512xf32, #ntile.mem<sbuf>>
// CHECK-NEXT: ntile.dma %{{.*}} to %arg2 <0 + 65536*iv0, {{\[\[}}512, 128], [1, 512]]>
// CHECK-NEXT: }
// CHECK-NEXT: return
func.func @ntorch.binary$merged_rows(%x: tensor<8x256x512xf32>, %y: tensor<8x256x512xf32>) -> tensor<8x256x512xf32> {
  %0 = ntorch.binary mul %x, %y : tensor<8x256x512xf32>, tensor<8x256x512xf32> -> tensor<8x256x512xf32>
  return %0 : tensor<8x256x512xf32>
}

// -----

// [4, 300, 64] - [4, 1, 64]: the broadcast operand steps through dim 0 but not dim 1,
// so the row dims do not merge: a loop over dim 0 (iv0, stride 300 * 64 = 19200), in
// it a loop over two full blocks of 128 rows of dim 1 (iv1, stride 128 * 64 = 8192),
// then a remainder block of the last 44 rows (at 256 * 64 = 16384) inside the iv0
// loop. The [4, 1, 64] operand follows iv0 only (64 per index) with partition stride 0.
// CHECK-LABEL: func @ntorch.binary$unmerged_rows
// CHECK-NEXT: ntile.loop iv0 to 4 {
// CHECK-NEXT: ntile.loop iv1 to 2 {
// CHECK-NEXT: memref.alloc
// CHECK-NEXT: ntile.dma %arg0 <0 + 19200*iv0 + 8192*iv1, {{\[\[}}64, 128], [1, 64]]>
// CHECK-NEXT: memref.alloc
// CHECK-NEXT: ntile.dma %arg1 <0 + 64*iv0, {{\[\[}}0, 128], [1, 64]]>
// CHECK-NEXT: memref.alloc
// CHECK-NEXT: ntile.tensor_tensor sub {{.*}} : memref<128x64xf32, #ntile.mem<sbuf>>
// CHECK-NEXT: ntile.dma %{{.*}} to %arg2 <0 + 19200*iv0 + 8192*iv1, {{\[\[}}64, 128], [1, 64]]>
// CHECK-NEXT: }
// CHECK-NEXT: memref.alloc
// CHECK-NEXT: ntile.dma %arg0 <16384 + 19200*iv0, {{\[\[}}64, 44], [1, 64]]>
// CHECK-NEXT: memref.alloc
// CHECK-NEXT: ntile.dma %arg1 <0 + 64*iv0, {{\[\[}}0, 44], [1, 64]]>
// CHECK-NEXT: memref.alloc
// CHECK-NEXT: ntile.tensor_tensor sub {{.*}} : memref<44x64xf32, #ntile.mem<sbuf>>
// CHECK-NEXT: ntile.dma %{{.*}} to %arg2 <16384 + 19200*iv0, {{\[\[}}64, 44], [1, 64]]>
// CHECK-NEXT: }
// CHECK-NEXT: return
func.func @ntorch.binary$unmerged_rows(%x: tensor<4x300x64xf32>, %y: tensor<4x1x64xf32>) -> tensor<4x300x64xf32> {
  %0 = ntorch.binary sub %x, %y : tensor<4x300x64xf32>, tensor<4x1x64xf32> -> tensor<4x300x64xf32>
  return %0 : tensor<4x300x64xf32>
}

// -----

// where(cond, x, bias) on [512, 5000]: three operands loaded per tile. 4 row blocks
// (iv0) x 2 full column tiles of 2048 (iv1), then the 904 remaining columns (at 4096)
// as a remainder tile inside the row loop. The [5000] bias broadcasts with partition
// stride 0 and has no row term.
// CHECK-LABEL: func @ntorch.select$loops
// CHECK-NEXT: ntile.loop iv0 to 4 {
// CHECK-NEXT: ntile.loop iv1 to 2 {
// CHECK-NEXT: %[[C:.*]] = memref.alloc() : memref<128x2048xi1, #ntile.mem<sbuf>>
// CHECK-NEXT: ntile.dma %arg0 <0 + 2048*iv1 + 640000*iv0, {{\[\[}}5000, 128], [1, 2048]]> to %[[C]]
// CHECK-NEXT: %[[X:.*]] = memref.alloc() : memref<128x2048xf32, #ntile.mem<sbuf>>
// CHECK-NEXT: ntile.dma %arg1 <0 + 2048*iv1 + 640000*iv0, {{\[\[}}5000, 128], [1, 2048]]> to %[[X]]
// CHECK-NEXT: %[[Y:.*]] = memref.alloc() : memref<128x2048xf32, #ntile.mem<sbuf>>
// CHECK-NEXT: ntile.dma %arg2 <0 + 2048*iv1, {{\[\[}}0, 128], [1, 2048]]> to %[[Y]]
// CHECK-NEXT: %[[R:.*]] = memref.alloc() : memref<128x2048xf32, #ntile.mem<sbuf>>
// CHECK-NEXT: ntile.select %[[C]], %[[X]], %[[Y]] to %[[R]] :
// CHECK-NEXT: ntile.dma %[[R]] <0, {{\[\[}}2048, 128], [1, 2048]]> to %arg3 <0 + 2048*iv1 + 640000*iv0, {{\[\[}}5000, 128], [1, 2048]]>
// CHECK-NEXT: }
// CHECK-NEXT: memref.alloc() : memref<128x904xi1, #ntile.mem<sbuf>>
// CHECK-NEXT: ntile.dma %arg0 <4096 + 640000*iv0, {{\[\[}}5000, 128], [1, 904]]>
// CHECK-NEXT: memref.alloc
// CHECK-NEXT: ntile.dma %arg1 <4096 + 640000*iv0, {{\[\[}}5000, 128], [1, 904]]>
// CHECK-NEXT: memref.alloc
// CHECK-NEXT: ntile.dma %arg2 <4096, {{\[\[}}0, 128], [1, 904]]>
// CHECK-NEXT: memref.alloc
// CHECK-NEXT: ntile.select {{.*}} : memref<128x904xi1, #ntile.mem<sbuf>>
// CHECK-NEXT: ntile.dma %{{.*}} to %arg3 <4096 + 640000*iv0, {{\[\[}}5000, 128], [1, 904]]>
// CHECK-NEXT: }
// CHECK-NEXT: return
func.func @ntorch.select$loops(%c: tensor<512x5000xi1>, %x: tensor<512x5000xf32>, %y: tensor<5000xf32>) -> tensor<512x5000xf32> {
  %0 = ntorch.select %c, %x, %y : tensor<512x5000xi1>, tensor<512x5000xf32>, tensor<5000xf32> -> tensor<512x5000xf32>
  return %0 : tensor<512x5000xf32>
}

// RUN: neuron-opt %s -canonicalize -neuron-fuse-elementwise -convert-ntorch-to-ntile -split-input-file | FileCheck %s

// Softmax over [1024, 512] fuses into one ntorch.fusion, lowered as one loop over 8
// blocks of 128 rows (128 * 512 = 65536 elements per block), two blocks per iteration
// (iv0 to 4; 131072 elements apart), every op emitted for both blocks in turn so that
// the engines' in-order queues overlap the blocks' reduce -> use chains. A row (512
// f32) fits one tile, so there is no column loop. Each block loads x once and stores
// the result once; the row max and row sum are [128, 1] tiles that never reach HBM.
// x - max is not computed on its own: exp applies it as its per-partition bias tile
// (times -1). The final mul broadcasts the reciprocal along the free dimension and
// overwrites the exp tile in place (its last use).
// CHECK-LABEL: func @softmax$loops
// CHECK-NEXT: ntile.loop iv0 to 4 {
// CHECK-NEXT: %[[X:.*]] = memref.alloc() : memref<128x512xf32, #ntile.mem<sbuf>>
// CHECK-NEXT: ntile.dma %arg0 <0 + 131072*iv0, {{\[\[}}512, 128], [1, 512]]> to %[[X]] <0, {{\[\[}}512, 128], [1, 512]]>
// CHECK-NEXT: %[[M:.*]] = memref.alloc() : memref<128x1xf32, #ntile.mem<sbuf>>
// CHECK-NEXT: ntile.reduce max %[[X]] to %[[M]] :
// CHECK-NEXT: %[[X2:.*]] = memref.alloc() : memref<128x512xf32, #ntile.mem<sbuf>>
// CHECK-NEXT: ntile.dma %arg0 <65536 + 131072*iv0, {{\[\[}}512, 128], [1, 512]]> to %[[X2]] <0, {{\[\[}}512, 128], [1, 512]]>
// CHECK-NEXT: %[[M2:.*]] = memref.alloc() : memref<128x1xf32, #ntile.mem<sbuf>>
// CHECK-NEXT: ntile.reduce max %[[X2]] to %[[M2]] :
// CHECK-NEXT: %[[D:.*]] = memref.alloc() : memref<128x512xf32, #ntile.mem<sbuf>>
// CHECK-NEXT: ntile.activation exp %[[X]] bias %[[M]] : memref<128x1xf32, #ntile.mem<sbuf>> to %[[D]] {bias = -1.000000e+00 : f64} : memref<128x512xf32, #ntile.mem<sbuf>>, memref<128x512xf32, #ntile.mem<sbuf>>
// CHECK-NEXT: %[[D2:.*]] = memref.alloc() : memref<128x512xf32, #ntile.mem<sbuf>>
// CHECK-NEXT: ntile.activation exp %[[X2]] bias %[[M2]] : memref<128x1xf32, #ntile.mem<sbuf>> to %[[D2]] {bias = -1.000000e+00 : f64}
// CHECK-NEXT: %[[S:.*]] = memref.alloc() : memref<128x1xf32, #ntile.mem<sbuf>>
// CHECK-NEXT: ntile.reduce add %[[D]] to %[[S]] :
// CHECK-NEXT: %[[S2:.*]] = memref.alloc() : memref<128x1xf32, #ntile.mem<sbuf>>
// CHECK-NEXT: ntile.reduce add %[[D2]] to %[[S2]] :
// CHECK-NEXT: %[[INV:.*]] = memref.alloc() : memref<128x1xf32, #ntile.mem<sbuf>>
// CHECK-NEXT: ntile.activation reciprocal %[[S]] to %[[INV]] :
// CHECK-NEXT: %[[INV2:.*]] = memref.alloc() : memref<128x1xf32, #ntile.mem<sbuf>>
// CHECK-NEXT: ntile.activation reciprocal %[[S2]] to %[[INV2]] :
// CHECK-NEXT: ntile.tensor_tensor mul %[[D]], %[[INV]] to %[[D]] : memref<128x512xf32, #ntile.mem<sbuf>>, memref<128x1xf32, #ntile.mem<sbuf>>, memref<128x512xf32, #ntile.mem<sbuf>>
// CHECK-NEXT: ntile.tensor_tensor mul %[[D2]], %[[INV2]] to %[[D2]] :
// CHECK-NEXT: ntile.dma %[[D]] <0, {{\[\[}}512, 128], [1, 512]]> to %arg1 <0 + 131072*iv0, {{\[\[}}512, 128], [1, 512]]>
// CHECK-NEXT: ntile.dma %[[D2]] <0, {{\[\[}}512, 128], [1, 512]]> to %arg1 <65536 + 131072*iv0, {{\[\[}}512, 128], [1, 512]]>
// CHECK-NEXT: }
// CHECK-NEXT: return
func.func @softmax$loops(%x: tensor<1024x512xf32>) -> tensor<1024x512xf32> {
  %m = ntorch.reduce max %x [1] {keepdim} : tensor<1024x512xf32> -> tensor<1024x1xf32>
  %d = ntorch.binary sub %x, %m : tensor<1024x512xf32>, tensor<1024x1xf32> -> tensor<1024x512xf32>
  %e = ntorch.unary exp %d : tensor<1024x512xf32> -> tensor<1024x512xf32>
  %s = ntorch.reduce sum %e [1] {keepdim} : tensor<1024x512xf32> -> tensor<1024x1xf32>
  %r = ntorch.unary reciprocal %s : tensor<1024x1xf32> -> tensor<1024x1xf32>
  %y = ntorch.binary mul %e, %r : tensor<1024x512xf32>, tensor<1024x1xf32> -> tensor<1024x512xf32>
  return %y : tensor<1024x512xf32>
}

// -----

// A fusion that also returns its row max ([3, 200, 1]): the 600 rows merge (4 full
// blocks of 128 as one loop of 2 iterations of two blocks, then a remainder of 88 rows
// at row 512). The [128, 1] max tile is stored as a result with one element per row
// (offset 256*iv0, 128 more for the second block), the full rows with 128 * 256 =
// 32768 per block.
// CHECK-LABEL: func @row_result$loops
// CHECK-NEXT: ntile.loop iv0 to 2 {
// CHECK-NEXT: %[[X:.*]] = memref.alloc() : memref<128x256xf32, #ntile.mem<sbuf>>
// CHECK-NEXT: ntile.dma %arg0 <0 + 65536*iv0, {{\[\[}}256, 128], [1, 256]]> to %[[X]]
// CHECK-NEXT: %[[M:.*]] = memref.alloc() : memref<128x1xf32, #ntile.mem<sbuf>>
// CHECK-NEXT: ntile.reduce max %[[X]] to %[[M]] :
// CHECK: ntile.activation exp %{{.*}} to %[[E:[^ ]*]] {
// CHECK: ntile.activation exp %{{.*}} to %[[E2:[^ ]*]] {
// CHECK-NEXT: ntile.dma %[[M]] <0, {{\[\[}}1, 128], [1, 1]]> to %arg2 <0 + 256*iv0, {{\[\[}}1, 128], [1, 1]]>
// CHECK-NEXT: ntile.dma %[[E]] <0, {{\[\[}}256, 128], [1, 256]]> to %arg1 <0 + 65536*iv0, {{\[\[}}256, 128], [1, 256]]>
// CHECK-NEXT: ntile.dma %{{.*}} <0, {{\[\[}}1, 128], [1, 1]]> to %arg2 <128 + 256*iv0, {{\[\[}}1, 128], [1, 1]]>
// CHECK-NEXT: ntile.dma %[[E2]] <0, {{\[\[}}256, 128], [1, 256]]> to %arg1 <32768 + 65536*iv0, {{\[\[}}256, 128], [1, 256]]>
// CHECK-NEXT: }
// CHECK-NEXT: %[[RX:.*]] = memref.alloc() : memref<88x256xf32, #ntile.mem<sbuf>>
// CHECK-NEXT: ntile.dma %arg0 <131072, {{\[\[}}256, 88], [1, 256]]> to %[[RX]]
// CHECK-NOT: ntile.loop
// CHECK: ntile.dma %{{.*}} to %arg2 <512, {{\[\[}}1, 88], [1, 1]]>
// CHECK-NEXT: ntile.dma %{{.*}} to %arg1 <131072, {{\[\[}}256, 88], [1, 256]]>
// CHECK-NEXT: return
func.func @row_result$loops(%x: tensor<3x200x256xf32>) -> (tensor<3x200x256xf32>, tensor<3x200x1xf32>) {
  %m = ntorch.reduce max %x [2] {keepdim} : tensor<3x200x256xf32> -> tensor<3x200x1xf32>
  %d = ntorch.binary sub %x, %m : tensor<3x200x256xf32>, tensor<3x200x1xf32> -> tensor<3x200x256xf32>
  %e = ntorch.unary exp %d : tensor<3x200x256xf32> -> tensor<3x200x256xf32>
  return %e, %m : tensor<3x200x256xf32>, tensor<3x200x1xf32>
}

// -----

// x - m (m per row) is never materialized: its square is one activation with m as the
// bias tile (times -1), and (x - m) * r is identity(x * r + (-1) * (m * r)) with r as
// the scale tile and one [128, 1] product m * r as the bias tile.
// CHECK-LABEL: func @normalize$rows
// CHECK: ntile.dma %arg1 {{.*}} to %[[M:[^ ]*]] <
// CHECK: ntile.dma %arg0 {{.*}} to %[[X:[^ ]*]] <
// CHECK-NOT: ntile.tensor_tensor sub
// CHECK: ntile.activation square %[[X]] bias %[[M]] : memref<128x1xf32, #ntile.mem<sbuf>> to %{{[^ ]*}} {bias = -1.000000e+00 : f64}
// CHECK: ntile.dma %arg2 {{.*}} to %[[R:[^ ]*]] <
// CHECK: ntile.tensor_tensor mul %[[M]], %[[R]] to %[[MR:[^ ]*]] : memref<128x1xf32
// CHECK: ntile.activation identity %[[X]] scale %[[R]] : memref<128x1xf32, #ntile.mem<sbuf>> bias %[[MR]] : memref<128x1xf32, #ntile.mem<sbuf>> to %{{[^ ]*}} {bias = -1.000000e+00 : f64}
func.func @normalize$rows(%x: tensor<256x64xf32>, %m: tensor<256x1xf32>, %r: tensor<256x1xf32>) -> (tensor<256x64xf32>, tensor<256x64xf32>) {
  %d = ntorch.binary sub %x, %m : tensor<256x64xf32>, tensor<256x1xf32> -> tensor<256x64xf32>
  %sq = ntorch.binary mul %d, %d : tensor<256x64xf32>, tensor<256x64xf32> -> tensor<256x64xf32>
  %y = ntorch.binary mul %d, %r : tensor<256x64xf32>, tensor<256x1xf32> -> tensor<256x64xf32>
  return %sq, %y : tensor<256x64xf32>, tensor<256x64xf32>
}

// -----

// A row value whose tile is full (a select with a splat operand broadcasts it, as in
// logsumexp's masked max) is no per-partition bias: the subtraction stays a
// tensor_tensor on full tiles.
// CHECK-LABEL: func @full_tile_row$rows
// CHECK: ntile.select
// CHECK: ntile.tensor_tensor sub %{{.*}}, %{{.*}} to %{{.*}} : memref<5x5xf32, #ntile.mem<sbuf>>, memref<5x5xf32, #ntile.mem<sbuf>>, memref<5x5xf32, #ntile.mem<sbuf>>
// CHECK: ntile.activation exp
func.func @full_tile_row$rows(%x: tensor<5x5xf32>, %c: tensor<5x1xi1>) -> tensor<5x5xf32> {
  %m = ntorch.reduce max %x [1] {keepdim} : tensor<5x5xf32> -> tensor<5x1xf32>
  %zero = ntorch.constant dense<0.0> : tensor<f32>
  %s = ntorch.select %c, %zero, %m : tensor<5x1xi1>, tensor<f32>, tensor<5x1xf32> -> tensor<5x1xf32>
  %d = ntorch.binary sub %x, %s : tensor<5x5xf32>, tensor<5x1xf32> -> tensor<5x5xf32>
  %e = ntorch.unary exp %d : tensor<5x5xf32> -> tensor<5x5xf32>
  return %e : tensor<5x5xf32>
}

// -----

// A fusion of empty tensors (a select and a reduce over 0x0x0, as the gather of an empty
// matrix becomes) lowers to nothing: no loop, no division by its empty row blocks.
// CHECK-LABEL: func @empty_fusion
// CHECK-NOT: ntile.loop
// CHECK-NOT: ntile.dma
// CHECK: return
func.func @empty_fusion(%c: tensor<0x0x0xi1>, %a: tensor<0x1x0xf32>, %b: tensor<0x0x1xf32>) -> tensor<0x0xf32> {
  %r = ntorch.fusion %c, %a, %b : tensor<0x0x0xi1>, tensor<0x1x0xf32>, tensor<0x0x1xf32> -> tensor<0x0xf32> {
  ^bb0(%x: tensor<0x0x0xi1>, %y: tensor<0x1x0xf32>, %z: tensor<0x0x1xf32>):
    %s = ntorch.select %x, %y, %z : tensor<0x0x0xi1>, tensor<0x1x0xf32>, tensor<0x0x1xf32> -> tensor<0x0x0xf32>
    %t = ntorch.reduce sum %s [2] : tensor<0x0x0xf32> -> tensor<0x0xf32>
    ntorch.yield %t : tensor<0x0xf32>
  }
  return %r : tensor<0x0xf32>
}

// RUN: neuron-opt %s -canonicalize -neuron-fuse-elementwise -convert-ntorch-to-ntile -split-input-file | FileCheck %s

// Softmax over [1024, 512] fuses into one ntorch.fusion, lowered as one loop over 8
// blocks of 128 rows, two blocks per iteration (iv0 to 4; 131072 elements apart), every
// op emitted for both blocks in turn so that the engines' in-order queues overlap the
// blocks' reduce -> use chains. A row (512 f32, 2048 bytes) is narrower than the DMA's
// efficient descriptor (2438 bytes), so the two blocks are row-packed: partition p holds
// rows 2p and 2p + 1 of the iteration's 256, loaded with one DMA of 1024 contiguous
// elements per partition; each block is a view of its 512 columns, and the results are
// written into the views of one packed tile stored with one DMA. The row max and row sum
// are [128, 1] tiles that never reach HBM. x - max is not computed on its own: exp
// applies it as its per-partition bias tile (times -1). The final mul broadcasts the
// reciprocal along the free dimension.
// CHECK-LABEL: func @softmax$loops
// CHECK-NEXT: ntile.loop iv0 to 4 {
// CHECK-NEXT: %[[Y:.*]] = memref.alloc() : memref<128x1024xf32, #ntile.mem<sbuf>>
// CHECK-NEXT: %[[X:.*]] = memref.alloc() : memref<128x1024xf32, #ntile.mem<sbuf>>
// CHECK-NEXT: ntile.dma %arg0 <0 + 131072*iv0, {{\[\[}}1024, 128], [1, 1024]]> to %[[X]] <0, {{\[\[}}1024, 128], [1, 1024]]>
// CHECK-NEXT: %[[X0:.*]] = ntile.view %[[X]] <0, {{\[\[}}1024, 128], [1, 512]]> : memref<128x1024xf32, #ntile.mem<sbuf>> to memref<128x512xf32, #ntile.mem<sbuf>>
// CHECK-NEXT: %[[M:.*]] = memref.alloc() : memref<128x1xf32, #ntile.mem<sbuf>>
// CHECK-NEXT: ntile.reduce max %[[X0]] to %[[M]] :
// CHECK-NEXT: %[[X1:.*]] = ntile.view %[[X]] <512, {{\[\[}}1024, 128], [1, 512]]>
// CHECK-NEXT: %[[M2:.*]] = memref.alloc() : memref<128x1xf32, #ntile.mem<sbuf>>
// CHECK-NEXT: ntile.reduce max %[[X1]] to %[[M2]] :
// CHECK-NEXT: %[[D:.*]] = memref.alloc() : memref<128x512xf32, #ntile.mem<sbuf>>
// CHECK-NEXT: ntile.activation exp %[[X0]] bias %[[M]] : memref<128x1xf32, #ntile.mem<sbuf>> to %[[D]] {bias = -1.000000e+00 : f64} : memref<128x512xf32, #ntile.mem<sbuf>>, memref<128x512xf32, #ntile.mem<sbuf>>
// CHECK-NEXT: %[[D2:.*]] = memref.alloc() : memref<128x512xf32, #ntile.mem<sbuf>>
// CHECK-NEXT: ntile.activation exp %[[X1]] bias %[[M2]] : memref<128x1xf32, #ntile.mem<sbuf>> to %[[D2]] {bias = -1.000000e+00 : f64}
// CHECK-NEXT: %[[S:.*]] = memref.alloc() : memref<128x1xf32, #ntile.mem<sbuf>>
// CHECK-NEXT: ntile.reduce add %[[D]] to %[[S]] :
// CHECK-NEXT: %[[S2:.*]] = memref.alloc() : memref<128x1xf32, #ntile.mem<sbuf>>
// CHECK-NEXT: ntile.reduce add %[[D2]] to %[[S2]] :
// CHECK-NEXT: %[[INV:.*]] = memref.alloc() : memref<128x1xf32, #ntile.mem<sbuf>>
// CHECK-NEXT: ntile.activation reciprocal %[[S]] to %[[INV]] :
// CHECK-NEXT: %[[INV2:.*]] = memref.alloc() : memref<128x1xf32, #ntile.mem<sbuf>>
// CHECK-NEXT: ntile.activation reciprocal %[[S2]] to %[[INV2]] :
// CHECK-NEXT: %[[Y0:.*]] = ntile.view %[[Y]] <0, {{\[\[}}1024, 128], [1, 512]]>
// CHECK-NEXT: ntile.tensor_tensor mul %[[D]], %[[INV]] to %[[Y0]] : memref<128x512xf32, #ntile.mem<sbuf>>, memref<128x1xf32, #ntile.mem<sbuf>>, memref<128x512xf32, #ntile.mem<sbuf>>
// CHECK-NEXT: %[[Y1:.*]] = ntile.view %[[Y]] <512, {{\[\[}}1024, 128], [1, 512]]>
// CHECK-NEXT: ntile.tensor_tensor mul %[[D2]], %[[INV2]] to %[[Y1]] :
// CHECK-NEXT: ntile.dma %[[Y]] <0, {{\[\[}}1024, 128], [1, 1024]]> to %arg1 <0 + 131072*iv0, {{\[\[}}1024, 128], [1, 1024]]>
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

// A fusion that also returns its row max ([3, 200, 1]): the 600 rows merge. Rows of 256
// f32 (1024 bytes) are narrower than the DMA's efficient descriptor (2438 bytes); packing
// three to a partition would leave one group of 384 rows and no loop, so two go to a
// partition (2048 contiguous bytes per partition and DMA): a loop of two row-packed
// groups of 256 rows, slot j the rows 2p + j. Each slot's [128, 1] max tile is stored
// with one element per row, 2 rows apart. The 88 rows left over at row 512 go one per
// partition.
// CHECK-LABEL: func @row_result$loops
// CHECK-NEXT: ntile.loop iv0 to 2 {
// CHECK-NEXT: %[[E:.*]] = memref.alloc() : memref<128x512xf32, #ntile.mem<sbuf>>
// CHECK-NEXT: %[[X:.*]] = memref.alloc() : memref<128x512xf32, #ntile.mem<sbuf>>
// CHECK-NEXT: ntile.dma %arg0 <0 + 65536*iv0, {{\[\[}}512, 128], [1, 512]]> to %[[X]]
// CHECK-NEXT: %[[X0:.*]] = ntile.view %[[X]] <0, {{\[\[}}512, 128], [1, 256]]>
// CHECK-NEXT: %[[M:.*]] = memref.alloc() : memref<128x1xf32, #ntile.mem<sbuf>>
// CHECK-NEXT: ntile.reduce max %[[X0]] to %[[M]] :
// CHECK: ntile.activation exp %{{.*}} to %{{.*}} {
// CHECK: ntile.activation exp %{{.*}} to %{{.*}} {
// CHECK-NEXT: ntile.dma %[[M]] <0, {{\[\[}}1, 128], [1, 1]]> to %arg2 <0 + 256*iv0, {{\[\[}}2, 128], [1, 1]]>
// CHECK-NEXT: ntile.dma %{{.*}} <0, {{\[\[}}1, 128], [1, 1]]> to %arg2 <1 + 256*iv0, {{\[\[}}2, 128], [1, 1]]>
// CHECK-NEXT: ntile.dma %[[E]] <0, {{\[\[}}512, 128], [1, 512]]> to %arg1 <0 + 65536*iv0, {{\[\[}}512, 128], [1, 512]]>
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

// -----

// Layer norm's statistics as the importer writes them (mean = sum(x) * (1/n), variance =
// sum((x - mean)^2) * (1/n)) lower to bn_stats over chunks of at most 512 columns (768 =
// two chunks of 384) and one bn_aggr, whose [P, 2] result holds the mean and the
// variance: no ntile.reduce, no pass over the squared deviation. Rows of 768 bf16 (1536
// bytes) are packed two to a partition.
// CHECK-LABEL: func @layer_norm$bn_stats
// CHECK-NOT: ntile.reduce
// CHECK: ntile.loop iv0 to 2 {
// CHECK: ntile.dma %arg0 <0 + 196608*iv0, {{\[\[}}1536, 128], [1, 1536]]> to %[[X:[^ ]*]] <0, {{\[\[}}1536, 128], [1, 1536]]>
// CHECK-NEXT: %[[X0:.*]] = ntile.view %[[X]] <0, {{\[\[}}1536, 128], [1, 768]]>
// CHECK-NEXT: %[[X1:.*]] = ntile.view %[[X]] <768, {{\[\[}}1536, 128], [1, 768]]>
// CHECK-NEXT: %[[ST:.*]] = memref.alloc() : memref<128x12xf32, #ntile.mem<sbuf>>
// CHECK-NEXT: %[[S0:.*]] = ntile.view %[[ST]] <0, {{\[\[}}12, 128], [1, 6]]>
// CHECK-NEXT: %[[C0:.*]] = ntile.view %[[X0]] <0, {{\[\[}}768, 128], [1, 384]]>
// CHECK-NEXT: ntile.bn_stats %[[C0]] to %[[S0]] : memref<128x384xbf16, #ntile.mem<sbuf>>, memref<128x6xf32, #ntile.mem<sbuf>>
// CHECK-NEXT: %[[S1:.*]] = ntile.view %[[ST]] <6, {{\[\[}}12, 128], [1, 6]]>
// CHECK-NEXT: %[[C1:.*]] = ntile.view %[[X0]] <384, {{\[\[}}768, 128], [1, 384]]>
// CHECK-NEXT: ntile.bn_stats %[[C1]] to %[[S1]]
// CHECK-NEXT: %[[MV:.*]] = memref.alloc() : memref<128x2xf32, #ntile.mem<sbuf>>
// CHECK-NEXT: ntile.bn_aggr %[[ST]] to %[[MV]] : memref<128x12xf32, #ntile.mem<sbuf>>, memref<128x2xf32, #ntile.mem<sbuf>>
// CHECK-NEXT: %[[MEAN:.*]] = ntile.view %[[MV]] <0, {{\[\[}}2, 128], [1, 1]]>
// CHECK-NEXT: %[[VAR:.*]] = ntile.view %[[MV]] <1, {{\[\[}}2, 128], [1, 1]]>
// CHECK: ntile.bn_aggr
// CHECK-NOT: ntile.reduce
// CHECK-NOT: ntile.activation square
// CHECK: ntile.tensor_scalar add %[[VAR]], 9.9999997473787516E-6 to %[[R:[^ ]*]] :
// CHECK-NEXT: ntile.activation rsqrt %[[R]] to %[[R]]
// CHECK: ntile.tensor_tensor mul %[[MEAN]], %[[R]] to %[[MR:[^ ]*]] :
// CHECK: ntile.activation identity %[[X0]] scale %[[R]] : memref<128x1xf32, #ntile.mem<sbuf>> bias %[[MR]]
// CHECK: ntile.dma %{{.*}} <0, {{\[\[}}1536, 128], [1, 1536]]> to %arg1 <0 + 196608*iv0, {{\[\[}}1536, 128], [1, 1536]]>
func.func @layer_norm$bn_stats(%x: tensor<512x768xbf16>) -> tensor<512x768xbf16> {
  %inv = ntorch.constant dense<0.00130208337> : tensor<f32>
  %eps = ntorch.constant dense<9.99999974E-6> : tensor<f32>
  %xf = ntorch.cast %x : tensor<512x768xbf16> -> tensor<512x768xf32>
  %s = ntorch.reduce sum %xf [1] : tensor<512x768xf32> -> tensor<512xf32>
  %s1 = ntorch.reshape %s : tensor<512xf32> -> tensor<512x1xf32>
  %m = ntorch.binary mul %s1, %inv : tensor<512x1xf32>, tensor<f32> -> tensor<512x1xf32>
  %d = ntorch.binary sub %xf, %m : tensor<512x768xf32>, tensor<512x1xf32> -> tensor<512x768xf32>
  %sq = ntorch.binary mul %d, %d : tensor<512x768xf32>, tensor<512x768xf32> -> tensor<512x768xf32>
  %q = ntorch.reduce sum %sq [1] : tensor<512x768xf32> -> tensor<512xf32>
  %q1 = ntorch.reshape %q : tensor<512xf32> -> tensor<512x1xf32>
  %v = ntorch.binary mul %q1, %inv : tensor<512x1xf32>, tensor<f32> -> tensor<512x1xf32>
  %ve = ntorch.binary add %v, %eps : tensor<512x1xf32>, tensor<f32> -> tensor<512x1xf32>
  %r = ntorch.unary rsqrt %ve : tensor<512x1xf32> -> tensor<512x1xf32>
  %y = ntorch.binary mul %d, %r : tensor<512x768xf32>, tensor<512x1xf32> -> tensor<512x768xf32>
  %yb = ntorch.cast %y : tensor<512x768xf32> -> tensor<512x768xbf16>
  return %yb : tensor<512x768xbf16>
}

// -----

// The affine tail of a norm whose weight, bias and output are bf16 is computed in bf16:
// the normalized row is written in bf16 by the Scalar engine, then x * weight and + bias
// read and write bf16 tiles only (trn2's all-bf16 tensor_tensor). The weight and bias are
// loaded once per group and shared by its two slots; the sum goes into the slot's view of
// the packed result tile.
// CHECK-LABEL: func @affine$bf16
// CHECK: ntile.activation identity %{{.*}} scale %{{.*}} bias %{{.*}} to %[[N:[^ ]*]] {bias = -1.000000e+00 : f64} : memref<128x768xbf16, #ntile.mem<sbuf>>, memref<128x768xbf16, #ntile.mem<sbuf>>
// CHECK: ntile.tensor_tensor mul %[[N]], %[[W:[^ ]*]] to %[[N]] : memref<128x768xbf16, #ntile.mem<sbuf>>, memref<128x768xbf16, #ntile.mem<sbuf>>, memref<128x768xbf16, #ntile.mem<sbuf>>
// CHECK: ntile.activation identity %{{.*}} to %[[N2:[^ ]*]] {bias = -1.000000e+00 : f64} : memref<128x768xbf16, #ntile.mem<sbuf>>, memref<128x768xbf16, #ntile.mem<sbuf>>
// CHECK: ntile.tensor_tensor mul %[[N2]], %[[W]] to %[[N2]] : memref<128x768xbf16
// CHECK: ntile.tensor_tensor add %[[N]], %[[B:[^ ]*]] to %[[V0:[^ ]*]] : memref<128x768xbf16, #ntile.mem<sbuf>>, memref<128x768xbf16, #ntile.mem<sbuf>>, memref<128x768xbf16, #ntile.mem<sbuf>>
// CHECK: ntile.tensor_tensor add %[[N2]], %[[B]] to %{{.*}} : memref<128x768xbf16
func.func @affine$bf16(%x: tensor<512x768xbf16>, %w: tensor<768xbf16>, %b: tensor<768xbf16>) -> tensor<512x768xbf16> {
  %inv = ntorch.constant dense<0.00130208337> : tensor<f32>
  %eps = ntorch.constant dense<9.99999974E-6> : tensor<f32>
  %xf = ntorch.cast %x : tensor<512x768xbf16> -> tensor<512x768xf32>
  %s = ntorch.reduce sum %xf [1] : tensor<512x768xf32> -> tensor<512xf32>
  %s1 = ntorch.reshape %s : tensor<512xf32> -> tensor<512x1xf32>
  %m = ntorch.binary mul %s1, %inv : tensor<512x1xf32>, tensor<f32> -> tensor<512x1xf32>
  %d = ntorch.binary sub %xf, %m : tensor<512x768xf32>, tensor<512x1xf32> -> tensor<512x768xf32>
  %sq = ntorch.binary mul %d, %d : tensor<512x768xf32>, tensor<512x768xf32> -> tensor<512x768xf32>
  %q = ntorch.reduce sum %sq [1] : tensor<512x768xf32> -> tensor<512xf32>
  %q1 = ntorch.reshape %q : tensor<512xf32> -> tensor<512x1xf32>
  %v = ntorch.binary mul %q1, %inv : tensor<512x1xf32>, tensor<f32> -> tensor<512x1xf32>
  %ve = ntorch.binary add %v, %eps : tensor<512x1xf32>, tensor<f32> -> tensor<512x1xf32>
  %r = ntorch.unary rsqrt %ve : tensor<512x1xf32> -> tensor<512x1xf32>
  %y = ntorch.binary mul %d, %r : tensor<512x768xf32>, tensor<512x1xf32> -> tensor<512x768xf32>
  %yw = ntorch.binary mul %y, %w : tensor<512x768xf32>, tensor<768xbf16> -> tensor<512x768xf32>
  %yb = ntorch.binary add %yw, %b : tensor<512x768xf32>, tensor<768xbf16> -> tensor<512x768xf32>
  %o = ntorch.cast %yb : tensor<512x768xf32> -> tensor<512x768xbf16>
  return %o : tensor<512x768xbf16>
}

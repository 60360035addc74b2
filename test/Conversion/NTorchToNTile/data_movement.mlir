// RUN: neuron-opt %s -convert-ntorch-to-ntile -split-input-file | FileCheck %s

// A reshape is the same HBM bytes; returning it copies into the output.
// CHECK-LABEL: func @ntorch.reshape$alias
// CHECK: %[[V:.*]] = ntile.reinterpret %arg0 : memref<3x200xf32, #ntile.mem<hbm>> to memref<600xf32, #ntile.mem<hbm>>
// CHECK: ntile.dma %[[V]] <0, {{\[\[}}1, 1], [1, 600]]> to %arg1 <0, {{\[\[}}1, 1], [1, 600]]>
func.func @ntorch.reshape$alias(%x: tensor<3x200xf32>) -> tensor<600xf32> {
  %0 = ntorch.reshape %x : tensor<3x200xf32> -> tensor<600xf32>
  return %0 : tensor<600xf32>
}

// -----

// A permute of integers is an HBM -> HBM DMA that reads with permuted strides (float
// permutes that move the innermost dim go through the PE array: below).
// CHECK-LABEL: func @ntorch.permute$dma
// CHECK: ntile.dma %arg0 <0, {{\[\[}}1, 5], [5, 3]]> to %arg1 <0, {{\[\[}}3, 5], [1, 3]]>
func.func @ntorch.permute$dma(%x: tensor<3x5xi32>) -> tensor<5x3xi32> {
  %0 = ntorch.permute %x [1, 0] : tensor<3x5xi32> -> tensor<5x3xi32>
  return %0 : tensor<5x3xi32>
}

// -----

// A float transpose of [512, 300]: rows of the input load contiguously into SBUF (four
// blocks of 128 rows x 300), nc_transpose turns each 128 x 128 block (the last 44 columns
// wide) into PSUM, four PSUM tiles in rotation, a copy places it in the output rows (three
// tiles of 128, 128 and 44 rows x 512), which store contiguously.
// CHECK-LABEL: func @ntorch.permute$pe
// CHECK: ntile.dma %arg0 <0, {{\[\[}}300, 128], [1, 300]]> to %{{.*}} : memref<512x300xf32, #ntile.mem<hbm>>, memref<128x300xf32
// CHECK-COUNT-3: ntile.dma %arg0
// CHECK-COUNT-4: memref.alloc() : memref<128x128xf32, #ntile.mem<psum>>
// CHECK: %[[B:.*]] = ntile.view %{{.*}} <0, {{\[\[}}300, 128], [1, 128]]>
// CHECK-NEXT: ntile.transpose %[[B]] to %{{.*}} : memref<128x128xf32, #ntile.mem<sbuf>>, memref<128x128xf32, #ntile.mem<psum>>
// CHECK-NEXT: ntile.view
// CHECK-NEXT: ntile.copy
// CHECK-COUNT-11: ntile.transpose
// CHECK: ntile.dma %{{.*}} <0, {{\[\[}}512, 128], [1, 512]]> to %arg1 <0, {{\[\[}}512, 128], [1, 512]]>
// CHECK: ntile.dma %{{.*}} <0, {{\[\[}}512, 128], [1, 512]]> to %arg1 <65536, {{\[\[}}512, 128], [1, 512]]>
// CHECK: ntile.dma %{{.*}} <0, {{\[\[}}512, 44], [1, 512]]> to %arg1 <131072, {{\[\[}}512, 44], [1, 512]]>
func.func @ntorch.permute$pe(%x: tensor<512x300xf32>) -> tensor<300x512xf32> {
  %0 = ntorch.permute %x [1, 0] : tensor<512x300xf32> -> tensor<300x512xf32>
  return %0 : tensor<300x512xf32>
}

// -----

// A returned input is copied into its output buffer.
// CHECK-LABEL: func @ntorch.return$input
// CHECK: ntile.dma %arg0 <0, {{\[\[}}1, 1], [1, 7]]> to %arg1
func.func @ntorch.return$input(%x: tensor<7xf32>) -> tensor<7xf32> {
  return %x : tensor<7xf32>
}

// -----

// An integer transpose of [512, 300]: a loop over two blocks of 128 output rows (iv0), each one
// HBM -> HBM DMA reading columns of the input (element stride 300, so the block start
// steps by 128 input columns) and writing 128 * 512 = 65536 output elements further;
// then a remainder block of 44 rows.
// CHECK-LABEL: func @ntorch.permute$loops
// CHECK-NEXT: ntile.loop iv0 to 2 {
// CHECK-NEXT: ntile.dma %arg0 <0 + 128*iv0, {{\[\[}}1, 128], [300, 512]]> to %arg1 <0 + 65536*iv0, {{\[\[}}512, 128], [1, 512]]>
// CHECK-NEXT: }
// CHECK-NEXT: ntile.dma %arg0 <256, {{\[\[}}1, 44], [300, 512]]> to %arg1 <131072, {{\[\[}}512, 44], [1, 512]]>
// CHECK-NEXT: return
func.func @ntorch.permute$loops(%x: tensor<512x300xi32>) -> tensor<300x512xi32> {
  %0 = ntorch.permute %x [1, 0] : tensor<512x300xi32> -> tensor<300x512xi32>
  return %0 : tensor<300x512xi32>
}

// -----

// An embedding lookup of 1000 indices: a loop over 7 blocks of 128 indices (iv0): each
// loads its indices ([128, 1], offset 128*iv0), gathers the 768-wide rows with one
// indirect DMA and stores them 128 * 768 = 98304 elements further. The last 104
// indices (from 896) are a remainder block after the loop.
// CHECK-LABEL: func @ntorch.gather_rows$loops
// CHECK-NEXT: ntile.loop iv0 to 7 {
// CHECK-NEXT: %[[I:.*]] = memref.alloc() : memref<128x1xi32, #ntile.mem<sbuf>>
// CHECK-NEXT: ntile.dma %arg1 <0 + 128*iv0, {{\[\[}}1, 128], [1, 1]]> to %[[I]] <0, {{\[\[}}1, 128], [1, 1]]>
// CHECK-NEXT: %[[T:.*]] = memref.alloc() : memref<128x768xf32, #ntile.mem<sbuf>>
// CHECK-NEXT: ntile.gather %arg0[%[[I]]] column 0 to %[[T]] :
// CHECK-NEXT: ntile.dma %[[T]] <0, {{\[\[}}768, 128], [1, 768]]> to %arg2 <0 + 98304*iv0, {{\[\[}}768, 128], [1, 768]]>
// CHECK-NEXT: }
// CHECK-NEXT: %[[RI:.*]] = memref.alloc() : memref<104x1xi32, #ntile.mem<sbuf>>
// CHECK-NEXT: ntile.dma %arg1 <896, {{\[\[}}1, 104], [1, 1]]> to %[[RI]]
// CHECK-NEXT: %[[RT:.*]] = memref.alloc() : memref<104x768xf32, #ntile.mem<sbuf>>
// CHECK-NEXT: ntile.gather %arg0[%[[RI]]] column 0 to %[[RT]] :
// CHECK-NEXT: ntile.dma %[[RT]] <0, {{\[\[}}768, 104], [1, 768]]> to %arg2 <688128, {{\[\[}}768, 104], [1, 768]]>
// CHECK-NEXT: return
func.func @ntorch.gather_rows$loops(%table: tensor<5000x768xf32>, %ids: tensor<1000xi32>) -> tensor<1000x768xf32> {
  %0 = ntorch.gather_rows %table, %ids : tensor<5000x768xf32>, tensor<1000xi32> -> tensor<1000x768xf32>
  return %0 : tensor<1000x768xf32>
}

// -----

// [4, 64] indices into a 3000-wide table: the 256 indices are 2 blocks (iv0); rows
// wider than a tile are gathered in column tiles of 2048 and 952 that share the
// block's index tile; the stores step by 128 * 3000 = 384000 per block.
// CHECK-LABEL: func @ntorch.gather_rows$wide
// CHECK-NEXT: ntile.loop iv0 to 2 {
// CHECK-NEXT: %[[I:.*]] = memref.alloc() : memref<128x1xi64, #ntile.mem<sbuf>>
// CHECK-NEXT: ntile.dma %arg1 <0 + 128*iv0, {{\[\[}}1, 128], [1, 1]]> to %[[I]]
// CHECK-NEXT: %[[T0:.*]] = memref.alloc() : memref<128x2048xf32, #ntile.mem<sbuf>>
// CHECK-NEXT: ntile.gather %arg0[%[[I]]] column 0 to %[[T0]] :
// CHECK-NEXT: ntile.dma %[[T0]] <0, {{\[\[}}2048, 128], [1, 2048]]> to %arg2 <0 + 384000*iv0, {{\[\[}}3000, 128], [1, 2048]]>
// CHECK-NEXT: %[[T1:.*]] = memref.alloc() : memref<128x952xf32, #ntile.mem<sbuf>>
// CHECK-NEXT: ntile.gather %arg0[%[[I]]] column 2048 to %[[T1]] :
// CHECK-NEXT: ntile.dma %[[T1]] <0, {{\[\[}}952, 128], [1, 952]]> to %arg2 <2048 + 384000*iv0, {{\[\[}}3000, 128], [1, 952]]>
// CHECK-NEXT: }
// CHECK-NEXT: return
func.func @ntorch.gather_rows$wide(%table: tensor<100x3000xf32>, %ids: tensor<4x64xi64>) -> tensor<4x64x3000xf32> {
  %0 = ntorch.gather_rows %table, %ids : tensor<100x3000xf32>, tensor<4x64xi64> -> tensor<4x64x3000xf32>
  return %0 : tensor<4x64x3000xf32>
}

// RUN: neuron-opt %s -convert-ntorch-to-ntile -split-input-file | FileCheck %s

// conv2d N=2, C=O=64, 3x3, pad 1, 32x32 -> 32x32 (bf16) as an implicit GEMM. The
// input is first copied into a zero-padded [2, 64, 34, 34] HBM buffer. The 9 weight
// tiles w^T [64 channels, 64 outputs] fit in SBUF: they are loaded into one resident
// panel [64, 9 * 64] (one 3x3 loop nest) before any matmul, and the matmuls read views
// of it. Then a loop
// over images (iv0) and over output tiles of 16 rows x 32 columns = 512 pixels (iv1).
// Each output tile accumulates in one PSUM tile over the kernel offsets: (0, 0) is
// peeled off (no accumulate), then kw = 1..2 (iv2) for kh = 0, then kh = 1..2 (iv2) x
// kw = 0..2 (iv3). Input windows step by 64 * 34 * 34 = 73984 per image, 16 * 34 = 544
// per row tile, 34 per kernel row, 1 per kernel column; panel views by 64 per kernel
// column and 192 per kernel row.
// CHECK-LABEL: func @ntorch.conv2d$loops
// CHECK: %[[XP:.*]] = memref.alloc() : memref<2x64x34x34xbf16, #ntile.mem<hbm>>
// CHECK: %[[PANEL:.*]] = memref.alloc() : memref<64x576xbf16, #ntile.mem<sbuf>>
// CHECK-NEXT: ntile.loop iv0 to 3 {
// CHECK-NEXT: ntile.loop iv1 to 3 {
// CHECK-NEXT: ntile.dma %arg1 <0 + 3*iv0 + 1*iv1, {{\[\[}}9, 64], [576, 64]]> to %[[PANEL]] <0 + 192*iv0 + 64*iv1, {{\[\[}}576, 64], [1, 64]]>
// CHECK-NOT: ntile.matmul
// The loop over images directly encloses the loop over pixel tiles:
// CHECK: ntile.loop iv0 to 2 {{{[[:space:]]*}}ntile.loop iv1 to 2 {
// CHECK-NEXT: %[[ACC:.*]] = memref.alloc() : memref<64x512xf32, #ntile.mem<psum>>
// CHECK-NEXT: %[[W0:.*]] = ntile.view %[[PANEL]] <0, {{\[\[}}576, 64], [1, 64]]> : {{.*}} to memref<64x64xbf16, #ntile.mem<sbuf>>
// CHECK-NEXT: %[[X0:.*]] = memref.alloc() : memref<64x512xbf16, #ntile.mem<sbuf>>
// CHECK-NEXT: ntile.dma %[[XP]] <0 + 73984*iv0 + 544*iv1, {{\[\[}}1156, 64], [34, 16], [1, 32]]> to %[[X0]] <0, {{\[\[}}512, 64], [1, 512]]>
// CHECK-NEXT: ntile.matmul %[[W0]], %[[X0]] to %[[ACC]] :
// CHECK-NEXT: ntile.loop iv2 to 2 {
// CHECK-NEXT: %[[W1:.*]] = ntile.view %[[PANEL]] <64 + 64*iv2, {{\[\[}}576, 64], [1, 64]]>
// CHECK-NEXT: %[[X1:.*]] = memref.alloc() : memref<64x512xbf16, #ntile.mem<sbuf>>
// CHECK-NEXT: ntile.dma %[[XP]] <1 + 73984*iv0 + 544*iv1 + 1*iv2, {{\[\[}}1156, 64], [34, 16], [1, 32]]> to %[[X1]]
// CHECK-NEXT: ntile.matmul %[[W1]], %[[X1]] to %[[ACC]] {accumulate}
// CHECK-NEXT: }
// CHECK-NEXT: ntile.loop iv2 to 2 {
// CHECK-NEXT: ntile.loop iv3 to 3 {
// CHECK-NEXT: %[[W2:.*]] = ntile.view %[[PANEL]] <192 + 192*iv2 + 64*iv3, {{\[\[}}576, 64], [1, 64]]>
// CHECK-NEXT: %[[X2:.*]] = memref.alloc() : memref<64x512xbf16, #ntile.mem<sbuf>>
// CHECK-NEXT: ntile.dma %[[XP]] <34 + 73984*iv0 + 544*iv1 + 34*iv2 + 1*iv3, {{\[\[}}1156, 64], [34, 16], [1, 32]]> to %[[X2]]
// CHECK-NEXT: ntile.matmul %[[W2]], %[[X2]] to %[[ACC]] {accumulate}
// CHECK-NEXT: }
// CHECK-NEXT: }
// CHECK-NEXT: %[[R:.*]] = memref.alloc() : memref<64x512xbf16, #ntile.mem<sbuf>>
// CHECK-NEXT: ntile.copy %[[ACC]] to %[[R]] :
// CHECK-NEXT: ntile.dma %[[R]] <0, {{\[\[}}512, 64], [1, 512]]> to %arg2 <0 + 65536*iv0 + 512*iv1, {{\[\[}}1024, 64], [32, 16], [1, 32]]>
// CHECK-NEXT: }
// CHECK-NEXT: }
// CHECK-NEXT: return
func.func @ntorch.conv2d$loops(%x: tensor<2x64x32x32xbf16>, %w: tensor<64x64x3x3xbf16>) -> tensor<2x64x32x32xbf16> {
  %0 = ntorch.conv2d %x, %w stride [1, 1] padding [1, 1] dilation [1, 1] groups 1
      : tensor<2x64x32x32xbf16>, tensor<64x64x3x3xbf16> -> tensor<2x64x32x32xbf16>
  return %0 : tensor<2x64x32x32xbf16>
}

// -----

// Max pool 2x2 / 2 over [2, 160, 64, 64] f32: 320 planes on partitions, 2 blocks of
// 128 (iv0, 128 * 64 * 64 = 524288 input elements per block), then a remainder block
// of 64 planes at plane 256. The 32x32 output pixels of a plane fit one tile, read
// with a row stride of 2 * 64 and a column stride of 2. The first window element is
// loaded straight into the accumulator; (0, 1) is combined inline (a loop of one
// iteration), then the kernel row 1 (offset 64) is a loop over kw (iv1).
// CHECK-LABEL: func @ntorch.pool2d$max
// CHECK-NEXT: ntile.loop iv0 to 2 {
// CHECK-NEXT: %[[ACC:.*]] = memref.alloc() : memref<128x1024xf32, #ntile.mem<sbuf>>
// CHECK-NEXT: ntile.dma %arg0 <0 + 524288*iv0, {{\[\[}}4096, 128], [128, 32], [2, 32]]> to %[[ACC]] <0, {{\[\[}}1024, 128], [1, 1024]]>
// CHECK-NEXT: %[[T1:.*]] = memref.alloc() : memref<128x1024xf32, #ntile.mem<sbuf>>
// CHECK-NEXT: ntile.dma %arg0 <1 + 524288*iv0, {{\[\[}}4096, 128], [128, 32], [2, 32]]> to %[[T1]]
// CHECK-NEXT: ntile.tensor_tensor max %[[ACC]], %[[T1]] to %[[ACC]] :
// CHECK-NEXT: ntile.loop iv1 to 2 {
// CHECK-NEXT: %[[T2:.*]] = memref.alloc() : memref<128x1024xf32, #ntile.mem<sbuf>>
// CHECK-NEXT: ntile.dma %arg0 <64 + 524288*iv0 + 1*iv1, {{\[\[}}4096, 128], [128, 32], [2, 32]]> to %[[T2]]
// CHECK-NEXT: ntile.tensor_tensor max %[[ACC]], %[[T2]] to %[[ACC]] :
// CHECK-NEXT: }
// CHECK-NEXT: ntile.dma %[[ACC]] <0, {{\[\[}}1024, 128], [1, 1024]]> to %arg1 <0 + 131072*iv0, {{\[\[}}1024, 128], [32, 32], [1, 32]]>
// CHECK-NEXT: }
// CHECK-NEXT: %[[RACC:.*]] = memref.alloc() : memref<64x1024xf32, #ntile.mem<sbuf>>
// CHECK-NEXT: ntile.dma %arg0 <1048576, {{\[\[}}4096, 64], [128, 32], [2, 32]]> to %[[RACC]]
// CHECK: ntile.loop iv0 to 2 {
// CHECK-NEXT: memref.alloc() : memref<64x1024xf32, #ntile.mem<sbuf>>
// CHECK-NEXT: ntile.dma %arg0 <1048640 + 1*iv0, {{\[\[}}4096, 64], [128, 32], [2, 32]]>
// CHECK-NEXT: ntile.tensor_tensor max %[[RACC]], %{{.*}} to %[[RACC]] :
// CHECK-NEXT: }
// CHECK-NEXT: ntile.dma %[[RACC]] <0, {{\[\[}}1024, 64], [1, 1024]]> to %arg1 <262144, {{\[\[}}1024, 64], [32, 32], [1, 32]]>
// CHECK-NEXT: return
func.func @ntorch.pool2d$max(%x: tensor<2x160x64x64xf32>) -> tensor<2x160x32x32xf32> {
  %0 = ntorch.pool2d max %x kernel [2, 2] stride [2, 2] padding [0, 0] : tensor<2x160x64x64xf32> -> tensor<2x160x32x32xf32>
  return %0 : tensor<2x160x32x32xf32>
}

// -----

// Avg pool 2x2 / 2 over [1, 64, 200, 200] bf16: the 64 planes are one block, the
// 100x100 output pixels are a loop (iv0) over 5 tiles of 20 output rows x 100 columns
// (2000 per tile, 20 * 2 * 200 = 8000 input elements apart). The sum accumulates in
// fp32: the first window element is loaded as bf16 and copied into the accumulator,
// the others are added to it; the mean is a multiply by 1/4, then a copy to bf16.
// CHECK-LABEL: func @ntorch.pool2d$avg
// CHECK-NEXT: ntile.loop iv0 to 5 {
// CHECK-NEXT: %[[ACC:.*]] = memref.alloc() : memref<64x2000xf32, #ntile.mem<sbuf>>
// CHECK-NEXT: %[[T0:.*]] = memref.alloc() : memref<64x2000xbf16, #ntile.mem<sbuf>>
// CHECK-NEXT: ntile.dma %arg0 <0 + 8000*iv0, {{\[\[}}40000, 64], [400, 20], [2, 100]]> to %[[T0]] <0, {{\[\[}}2000, 64], [1, 2000]]>
// CHECK-NEXT: ntile.copy %[[T0]] to %[[ACC]] :
// CHECK-NEXT: %[[T1:.*]] = memref.alloc() : memref<64x2000xbf16, #ntile.mem<sbuf>>
// CHECK-NEXT: ntile.dma %arg0 <1 + 8000*iv0, {{\[\[}}40000, 64], [400, 20], [2, 100]]> to %[[T1]]
// CHECK-NEXT: ntile.tensor_tensor add %[[ACC]], %[[T1]] to %[[ACC]] :
// CHECK-NEXT: ntile.loop iv1 to 2 {
// CHECK-NEXT: %[[T2:.*]] = memref.alloc() : memref<64x2000xbf16, #ntile.mem<sbuf>>
// CHECK-NEXT: ntile.dma %arg0 <200 + 8000*iv0 + 1*iv1, {{\[\[}}40000, 64], [400, 20], [2, 100]]> to %[[T2]]
// CHECK-NEXT: ntile.tensor_tensor add %[[ACC]], %[[T2]] to %[[ACC]] :
// CHECK-NEXT: }
// CHECK-NEXT: %[[MEAN:.*]] = memref.alloc() : memref<64x2000xf32, #ntile.mem<sbuf>>
// CHECK-NEXT: ntile.tensor_scalar mul %[[ACC]], 2.500000e-01 to %[[MEAN]] :
// CHECK-NEXT: %[[R:.*]] = memref.alloc() : memref<64x2000xbf16, #ntile.mem<sbuf>>
// CHECK-NEXT: ntile.copy %[[MEAN]] to %[[R]] :
// CHECK-NEXT: ntile.dma %[[R]] <0, {{\[\[}}2000, 64], [1, 2000]]> to %arg1 <0 + 2000*iv0, {{\[\[}}10000, 64], [100, 20], [1, 100]]>
// CHECK-NEXT: }
// CHECK-NEXT: return
func.func @ntorch.pool2d$avg(%x: tensor<1x64x200x200xbf16>) -> tensor<1x64x100x100xbf16> {
  %0 = ntorch.pool2d avg %x kernel [2, 2] stride [2, 2] padding [0, 0] : tensor<1x64x200x200xbf16> -> tensor<1x64x100x100xbf16>
  return %0 : tensor<1x64x100x100xbf16>
}

// -----

// Weights that do not fit the resident budget (4 channel chunks x 49 offsets x 128
// outputs x 4 bytes) are loaded per step, next to their input slice, inside the
// accumulation nest: (chunk 0, kh 0, kw 0) peeled, kw = 1..6 (iv0), kh = 1..6 x
// kw = 0..6 (iv0, iv1), then chunks 1..3 (iv0, 128 * 49 = 6272 apart in both the
// weights and the input) x kh x kw.
// CHECK-LABEL: func @ntorch.conv2d$streamed_weights
// CHECK-NOT: memref<128x{{[0-9]+}}xf32, #ntile.mem<sbuf>>
// CHECK: %[[ACC:.*]] = memref.alloc() : memref<128x1xf32, #ntile.mem<psum>>
// CHECK-NEXT: %[[W0:.*]] = memref.alloc() : memref<128x128xf32, #ntile.mem<sbuf>>
// CHECK-NEXT: ntile.dma %arg1 <0, {{\[\[}}49, 128], [25088, 128]]> to %[[W0]]
// CHECK-NEXT: %[[X0:.*]] = memref.alloc() : memref<128x1xf32, #ntile.mem<sbuf>>
// CHECK-NEXT: ntile.dma %arg0 <0, {{\[\[}}49, 128], [1, 1], [1, 1]]> to %[[X0]]
// CHECK-NEXT: ntile.matmul %[[W0]], %[[X0]] to %[[ACC]] :
// CHECK-NEXT: ntile.loop iv0 to 6 {
// CHECK: ntile.matmul {{.*}} {accumulate}
// CHECK-NEXT: }
// CHECK-NEXT: ntile.loop iv0 to 6 {
// CHECK-NEXT: ntile.loop iv1 to 7 {
// CHECK: ntile.matmul {{.*}} {accumulate}
// CHECK-NEXT: }
// CHECK-NEXT: }
// CHECK-NEXT: ntile.loop iv0 to 3 {
// CHECK-NEXT: ntile.loop iv1 to 7 {
// CHECK-NEXT: ntile.loop iv2 to 7 {
// CHECK-NEXT: %[[W:.*]] = memref.alloc() : memref<128x128xf32, #ntile.mem<sbuf>>
// CHECK-NEXT: ntile.dma %arg1 <6272 + 6272*iv0 + 7*iv1 + 1*iv2, {{\[\[}}49, 128], [25088, 128]]> to %[[W]]
// CHECK-NEXT: %[[X:.*]] = memref.alloc() : memref<128x1xf32, #ntile.mem<sbuf>>
// CHECK-NEXT: ntile.dma %arg0 <6272 + 6272*iv0 + 7*iv1 + 1*iv2, {{\[\[}}49, 128], [1, 1], [1, 1]]> to %[[X]]
// CHECK-NEXT: ntile.matmul %[[W]], %[[X]] to %[[ACC]] {accumulate}
// CHECK-NEXT: }
// CHECK-NEXT: }
// CHECK-NEXT: }
// CHECK-NEXT: %[[R:.*]] = memref.alloc() : memref<128x1xf32, #ntile.mem<sbuf>>
// CHECK-NEXT: ntile.copy %[[ACC]] to %[[R]] :
// CHECK-NEXT: ntile.dma %[[R]] {{.*}} to %arg2
// CHECK-NEXT: return
func.func @ntorch.conv2d$streamed_weights(%x: tensor<1x512x7x7xf32>, %w: tensor<128x512x7x7xf32>) -> tensor<1x128x1x1xf32> {
  %0 = ntorch.conv2d %x, %w stride [1, 1] padding [0, 0] dilation [1, 1] groups 1
      : tensor<1x512x7x7xf32>, tensor<128x512x7x7xf32> -> tensor<1x128x1x1xf32>
  return %0 : tensor<1x128x1x1xf32>
}

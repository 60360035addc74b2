// RUN: neuron-opt %s -convert-ntorch-to-ntile -split-input-file | FileCheck %s

// M = 130 and K = 200 split into 128 + the rest; N = 600 into 512 + 88. Here the rhs
// column panel moves fewer bytes when it stays resident in SBUF, so columns are the
// outer loop: both K tiles of a column block load side by side into one SBUF panel
// and the matmuls read views of it. The two column panels are a software pipeline
// over two slots of one SBUF tile (see $loops below), its loads marked ntile.prefetch:
// panel 0 loads first (the prologue), the remainder panel after the row blocks of
// panel 0, into the second slot (column 1024). The stationary tiles are lhs^T, read
// transposed by the DMA pattern; those of a row block load side by side into a panel
// too. K tiles accumulate in one PSUM tile. One tile of each dimension plus a
// remainder: no loop is left.
// CHECK-LABEL: func @ntorch.matmul$tiled
// CHECK-SAME: %[[A:.*]]: memref<130x200xbf16, #ntile.mem<hbm>> {ntile.input = 0 : i32}
// CHECK-SAME: %[[B:.*]]: memref<200x600xbf16, #ntile.mem<hbm>> {ntile.input = 1 : i32}
// CHECK-SAME: %[[C:.*]]: memref<130x600xbf16, #ntile.mem<hbm>> {ntile.output = 0 : i32}
// CHECK-NOT: ntile.loop
// CHECK: %[[PANEL:.*]] = memref.alloc() : memref<128x2048xbf16, #ntile.mem<sbuf>>
// CHECK: ntile.dma %[[B]] <0, {{\[\[}}600, 128], [1, 512]]> to %[[PANEL]] <0, {{\[\[}}2048, 128], [1, 512]]> {ntile.prefetch}
// CHECK: ntile.dma %[[B]] <76800, {{\[\[}}600, 72], [1, 512]]> to %[[PANEL]] <512, {{\[\[}}2048, 72], [1, 512]]> {ntile.prefetch}
// CHECK: %[[ROWS:.*]] = memref.alloc() : memref<128x256xbf16, #ntile.mem<sbuf>>
// CHECK: ntile.dma %[[A]] <0, {{\[\[}}1, 128], [200, 128]]> to %[[ROWS]] <0, {{\[\[}}256, 128], [1, 128]]> :
// CHECK: ntile.dma %[[A]] <128, {{\[\[}}1, 72], [200, 128]]> to %[[ROWS]] <128, {{\[\[}}256, 72], [1, 128]]> :
// CHECK: %[[P:.*]] = memref.alloc() : memref<128x512xf32, #ntile.mem<psum>>
// CHECK: %[[S0:.*]] = ntile.view %[[ROWS]] <0, {{\[\[}}256, 128], [1, 128]]>
// CHECK: %[[M0:.*]] = ntile.view %[[PANEL]] <0, {{\[\[}}2048, 128], [1, 512]]> : {{.*}} to memref<128x512xbf16, #ntile.mem<sbuf>>
// CHECK: ntile.matmul %[[S0]], %[[M0]] to %[[P]] :
// CHECK: %[[S1:.*]] = ntile.view %[[ROWS]] <128, {{\[\[}}256, 72], [1, 128]]>
// CHECK: %[[M1:.*]] = ntile.view %[[PANEL]] <512, {{\[\[}}2048, 72], [1, 512]]> : {{.*}} to memref<72x512xbf16, #ntile.mem<sbuf>>
// CHECK: ntile.matmul %[[S1]], %[[M1]] to %[[P]] {accumulate}
// CHECK: ntile.copy %[[P]] to %[[R:.*]] : memref<128x512xf32, #ntile.mem<psum>>, memref<128x512xbf16, #ntile.mem<sbuf>>
// CHECK: ntile.dma %[[R]] <0, {{\[\[}}512, 128], [1, 512]]> to %[[C]] <0, {{\[\[}}600, 128], [1, 512]]>
// CHECK: ntile.matmul %{{.*}}, %{{.*}} to %{{.*}} : memref<128x2xbf16, #ntile.mem<sbuf>>, memref<128x512xbf16, #ntile.mem<sbuf>>, memref<2x512xf32, #ntile.mem<psum>>
// CHECK: ntile.matmul
// CHECK: ntile.dma %[[B]] <512, {{\[\[}}600, 128], [1, 88]]> to %[[PANEL]] <1024, {{\[\[}}2048, 128], [1, 88]]> {ntile.prefetch}
// CHECK: ntile.dma %[[B]] <77312, {{\[\[}}600, 72], [1, 88]]> to %[[PANEL]] <1112, {{\[\[}}2048, 72], [1, 88]]> {ntile.prefetch}
// CHECK: ntile.view %[[PANEL]] <1024, {{\[\[}}2048, 128], [1, 88]]>
// CHECK-COUNT-4: ntile.matmul
// CHECK-NOT: ntile.matmul
func.func @ntorch.matmul$tiled(%a: tensor<130x200xbf16>, %b: tensor<200x600xbf16>) -> tensor<130x600xbf16> {
  %0 = ntorch.matmul %a, %b : tensor<130x200xbf16>, tensor<200x600xbf16> -> tensor<130x600xbf16>
  return %0 : tensor<130x600xbf16>
}

// -----

// A transposed rhs (a Linear weight [N, K]) is read with swapped strides.
// CHECK-LABEL: func @ntorch.matmul$transpose_rhs
// CHECK: ntile.dma %arg0 <0, {{\[\[}}1, 64], [64, 3]]> to %{{.*}} <0, {{\[\[}}3, 64], [1, 3]]>
// CHECK: ntile.dma %arg1 <0, {{\[\[}}1, 64], [64, 10]]> to %{{.*}} <0, {{\[\[}}10, 64], [1, 10]]>
func.func @ntorch.matmul$transpose_rhs(%x: tensor<3x64xf32>, %w: tensor<10x64xf32>) -> tensor<3x10xf32> {
  %0 = ntorch.matmul %x, %w {transpose_rhs} : tensor<3x64xf32>, tensor<10x64xf32> -> tensor<3x10xf32>
  return %0 : tensor<3x10xf32>
}

// -----

// Whole tiles become loops: batches (iv0), 512-column blocks whose three K tiles stay
// resident in an rhs panel, 128-row blocks, and the K tiles after the first that
// accumulate. Offsets are affine in the induction variables; one op per instruction of
// a loop body, not one per tile. A panel of whole K tiles loads as one DMA (K tiles 128
// rows apart in HBM, side by side in SBUF).
// The column panels are a software pipeline over two slots of one SBUF tile: panel 0
// loads before the loop (the prologue); iteration iv1 of the steady state (kept as a
// loop of one iteration) runs the row blocks (iv2) against panel iv1 in slot iv1 mod 2,
// then loads panel iv1 + 1 into the other slot (1536 - 1536 * (iv1 mod 2)); the last
// panel runs after the loop, from slot 1. The panel loads are marked ntile.prefetch.
// CHECK-LABEL: func @ntorch.matmul$loops
// CHECK: ntile.loop iv0 to 2 {
// CHECK-NEXT: %[[PANEL:.*]] = memref.alloc() : memref<128x3072xbf16, #ntile.mem<sbuf>>
// CHECK-NEXT: ntile.dma %arg1 <0 + 393216*iv0, {{\[\[}}1024, 128], [131072, 3], [1, 512]]> to %[[PANEL]] <0, {{\[\[}}3072, 128], [512, 3], [1, 512]]> {ntile.prefetch}
// CHECK-NEXT: ntile.loop iv1 to 1 {
// CHECK-NEXT: ntile.loop iv2 to 4 {
// CHECK-NEXT: %[[ROWS:.*]] = memref.alloc() : memref<128x384xbf16, #ntile.mem<sbuf>>
// CHECK-NEXT: ntile.dma %arg0 <0 + 196608*iv0 + 49152*iv2, {{\[\[}}1, 128], [128, 3], [384, 128]]> to %[[ROWS]] <0, {{\[\[}}384, 128], [128, 3], [1, 128]]> :
// CHECK: ntile.view %[[PANEL]] <0 + 1536*(iv1 mod 2), {{\[\[}}3072, 128], [1, 512]]>
// CHECK: ntile.matmul %{{.*}}, %{{.*}} to %{{.*}} :
// CHECK-NEXT: ntile.loop iv3 to 2 {
// CHECK: ntile.view %[[ROWS]] <128 + 128*iv3, {{\[\[}}384, 128], [1, 128]]>
// CHECK: ntile.view %[[PANEL]] <512 + 1536*(iv1 mod 2) + 512*iv3, {{\[\[}}3072, 128], [1, 512]]>
// CHECK: ntile.matmul {{.*}} {accumulate}
// CHECK-NEXT: }
// CHECK: ntile.copy
// CHECK-NEXT: ntile.dma {{.*}} to %arg2 <0 + 524288*iv0 + 131072*iv2 + 512*iv1, {{\[\[}}1024, 128], [1, 512]]>
// CHECK-NEXT: }
// CHECK-NEXT: ntile.dma %arg1 <512 + 393216*iv0 + 512*iv1, {{\[\[}}1024, 128], [131072, 3], [1, 512]]> to %[[PANEL]] <1536 + -1536*(iv1 mod 2), {{\[\[}}3072, 128], [512, 3], [1, 512]]> {ntile.prefetch}
// CHECK-NEXT: }
// CHECK-NEXT: ntile.loop iv1 to 4 {
// CHECK: ntile.dma %arg0 <0 + 196608*iv0 + 49152*iv1, {{.*}} :
// CHECK: ntile.view %[[PANEL]] <1536, {{\[\[}}3072, 128], [1, 512]]>
// CHECK: ntile.view %[[PANEL]] <2048 + 512*iv2, {{\[\[}}3072, 128], [1, 512]]>
// CHECK: ntile.dma {{.*}} to %arg2 <512 + 524288*iv0 + 131072*iv1, {{\[\[}}1024, 128], [1, 512]]>
// CHECK-NOT: ntile.matmul
func.func @ntorch.matmul$loops(%a: tensor<2x512x384xbf16>, %b: tensor<2x384x1024xbf16>) -> tensor<2x512x1024xbf16> {
  %0 = ntorch.matmul %a, %b : tensor<2x512x384xbf16>, tensor<2x384x1024xbf16> -> tensor<2x512x1024xbf16>
  return %0 : tensor<2x512x1024xbf16>
}

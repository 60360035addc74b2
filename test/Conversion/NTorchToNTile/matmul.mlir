// RUN: neuron-opt %s -convert-ntorch-to-ntile -split-input-file | FileCheck %s

// M = 130 and K = 200 split into 128 + the rest; N = 600 into 512 + 88. Here the rhs
// column panel moves fewer bytes when it stays resident in SBUF, so columns are the
// outer loop; the stationary tiles are lhs^T, read transposed by the DMA pattern;
// K tiles accumulate in one PSUM tile.
// CHECK-LABEL: func @ntorch.matmul$tiled
// CHECK-SAME: %[[A:.*]]: memref<130x200xbf16, #ntile.mem<hbm>> {ntile.input = 0 : i32}
// CHECK-SAME: %[[B:.*]]: memref<200x600xbf16, #ntile.mem<hbm>> {ntile.input = 1 : i32}
// CHECK-SAME: %[[C:.*]]: memref<130x600xbf16, #ntile.mem<hbm>> {ntile.output = 0 : i32}
// CHECK: ntile.dma %[[B]] <0, {{\[\[}}600, 128], [1, 512]]> to %[[M0:.*]] <0
// CHECK: ntile.dma %[[B]] <76800, {{\[\[}}600, 72], [1, 512]]> to %[[M1:.*]] <0
// CHECK: %[[P:.*]] = memref.alloc() : memref<128x512xf32, #ntile.mem<psum>>
// CHECK: ntile.dma %[[A]] <0, {{\[\[}}1, 128], [200, 128]]> to %[[S0:.*]] <0, {{\[\[}}128, 128], [1, 128]]>
// CHECK: ntile.matmul %[[S0]], %[[M0]] to %[[P]] :
// CHECK: ntile.dma %[[A]] <128, {{\[\[}}1, 72], [200, 128]]> to %[[S1:.*]] <0
// CHECK: ntile.matmul %[[S1]], %[[M1]] to %[[P]] {accumulate}
// CHECK: ntile.copy %[[P]] to %[[R:.*]] : memref<128x512xf32, #ntile.mem<psum>>, memref<128x512xbf16, #ntile.mem<sbuf>>
// CHECK: ntile.dma %[[R]] <0, {{\[\[}}512, 128], [1, 512]]> to %[[C]] <0, {{\[\[}}600, 128], [1, 512]]>
// CHECK: ntile.matmul %{{.*}}, %[[M0]] to %{{.*}} : memref<128x2xbf16, #ntile.mem<sbuf>>, memref<128x512xbf16, #ntile.mem<sbuf>>, memref<2x512xf32, #ntile.mem<psum>>
// CHECK-COUNT-5: ntile.matmul
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

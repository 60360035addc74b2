// RUN: neuron-opt %s -canonicalize -neuron-fuse-elementwise -split-input-file | FileCheck %s
// RUN: neuron-opt %s -neuron-lower -split-input-file | FileCheck %s --check-prefix=NISA

// Softmax becomes one fusion: the row max and sum stay in SBUF as [P, 1] tiles.
// CHECK-LABEL: func @softmax
// CHECK: %[[F:.*]] = ntorch.fusion %arg0 : tensor<4x100xf32> -> tensor<4x100xf32>
// CHECK: ntorch.reduce max
// CHECK: ntorch.unary exp
// CHECK: ntorch.reduce sum
// CHECK: ntorch.yield
// CHECK: return %[[F]]
// One load, one store. x - max and exp are one Scalar-engine activation whose bias tile
// is the max (a [4, 1] tile read with a free stride of 0) times -1, and whose row sums
// (accum) are the softmax denominators: no separate sum reduce.
// NISA-LABEL: func @softmax
// NISA-COUNT-1: nisa.dma_copy {{.*}}<hbm[0]
// NISA: nisa.tensor_reduce max on 1 <sbuf[0] + [[MAX:[0-9]+]], {{\[\[}}1, 4], [1, 1]], f32>
// NISA-NEXT: nisa.activation exp on 2 {{.*}}{accum = #nisa.ap<sbuf[0] + [[SUM:[0-9]+]], {{\[\[}}1, 4], [1, 1]], f32>, bias = -1.000000e+00 : f64, bias_tile = #nisa.ap<sbuf[0] + [[MAX]], {{\[\[}}1, 4], [0, 100]], f32>}
// NISA-NOT: nisa.tensor_reduce
// NISA: nisa.activation reciprocal on 2 {{.*}}, <sbuf[0] + [[SUM]], {{\[\[}}1, 4], [1, 1]], f32>
// NISA: nisa.tensor_tensor mul
// NISA: nisa.dma_copy {{.*}}<hbm[1]
// NISA-NOT: nisa.dma_copy
func.func @softmax(%x: tensor<4x100xf32>) -> tensor<4x100xf32> {
  %m = ntorch.reduce max %x [1] {keepdim} : tensor<4x100xf32> -> tensor<4x1xf32>
  %d = ntorch.binary sub %x, %m : tensor<4x100xf32>, tensor<4x1xf32> -> tensor<4x100xf32>
  %e = ntorch.unary exp %d : tensor<4x100xf32> -> tensor<4x100xf32>
  %s = ntorch.reduce sum %e [1] {keepdim} : tensor<4x100xf32> -> tensor<4x1xf32>
  %r = ntorch.unary reciprocal %s : tensor<4x1xf32> -> tensor<4x1xf32>
  %y = ntorch.binary mul %e, %r : tensor<4x100xf32>, tensor<4x1xf32> -> tensor<4x100xf32>
  return %y : tensor<4x100xf32>
}

// -----

// A value used outside the chain becomes a second result; the splat constant is
// cloned into the body and becomes an immediate, which folds into tanh's scale.
// CHECK-LABEL: func @two_results
// CHECK: %[[F:.*]]:2 = ntorch.fusion %arg0, %arg1 : tensor<8x16xf32>, tensor<16xf32> -> tensor<8x16xf32>, tensor<8x16xf32>
// CHECK: ntorch.constant dense<2.000000e+00>
// CHECK: return %[[F]]#1, %[[F]]#0
// NISA-LABEL: func @two_results
// NISA-NOT: nisa.tensor_scalar
// NISA: nisa.activation tanh on 2 {{.*}} {scale = 2.000000e+00 : f64}
func.func @two_results(%x: tensor<8x16xf32>, %b: tensor<16xf32>) -> (tensor<8x16xf32>, tensor<8x16xf32>) {
  %c = ntorch.constant dense<2.0> : tensor<f32>
  %0 = ntorch.binary add %x, %b : tensor<8x16xf32>, tensor<16xf32> -> tensor<8x16xf32>
  %1 = ntorch.binary mul %0, %c : tensor<8x16xf32>, tensor<f32> -> tensor<8x16xf32>
  %2 = ntorch.unary tanh %1 : tensor<8x16xf32> -> tensor<8x16xf32>
  return %2, %0 : tensor<8x16xf32>, tensor<8x16xf32>
}

// -----

// Ops over different iteration shapes stay apart: exp over [8, 16] and the
// reduction over [16, 8] remain single ops; the [16] ops fuse.
// CHECK-LABEL: func @shapes_differ
// CHECK-NEXT: %[[E:.*]] = ntorch.unary exp %arg0 : tensor<8x16xf32>
// CHECK-NEXT: %[[P:.*]] = ntorch.permute %[[E]] [1, 0]
// CHECK-NEXT: %[[R:.*]] = ntorch.reduce sum %[[P]] [1]
// CHECK-NEXT: ntorch.fusion %arg1, %[[R]] : tensor<16xf32>, tensor<16xf32> -> tensor<16xf32>
func.func @shapes_differ(%x: tensor<8x16xf32>, %y: tensor<16xf32>) -> tensor<16xf32> {
  %0 = ntorch.unary exp %x : tensor<8x16xf32> -> tensor<8x16xf32>
  %1 = ntorch.reduce sum %0 [0] : tensor<8x16xf32> -> tensor<16xf32>
  %2 = ntorch.unary exp %y : tensor<16xf32> -> tensor<16xf32>
  %3 = ntorch.binary add %1, %2 : tensor<16xf32>, tensor<16xf32> -> tensor<16xf32>
  return %3 : tensor<16xf32>
}

// -----

// The iteration shape is the broadcast of every value: [1, 50], not the [50] bias that
// happens to come first with as many elements.
// NISA-LABEL: func @bias_batch1
// NISA: nisa.dma_copy on {{[0-9]+}} <sbuf[0] + 0, {{\[\[}}1, 1], [1, 50]], f32>, <hbm[0] + 0, {{\[\[}}1, 1], [1, 50]], f32>
// NISA: nisa.tensor_tensor add on {{[0-9]+}} <sbuf[0] + {{[0-9]+}}, {{\[\[}}1, 1], [1, 50]], f32>
func.func @bias_batch1(%b: tensor<50xf32>, %x: tensor<1x50xf32>) -> tensor<1x50xf32> {
  %0 = ntorch.binary add %b, %x : tensor<50xf32>, tensor<1x50xf32> -> tensor<1x50xf32>
  %1 = ntorch.unary relu %0 : tensor<1x50xf32> -> tensor<1x50xf32>
  return %1 : tensor<1x50xf32>
}

// -----

// Rows wider than 2048 elements fuse while the tiles of a block of rows fit the fused-row
// budget (96 KiB per partition): softmax over 4096 f32 columns keeps the input tile and
// one reused work tile (x - max, exp and the product are computed in place): 32 KiB.
// The lowering takes two blocks per iteration when two blocks' tiles fit the budget.
// CHECK-LABEL: func @softmax_wide
// CHECK: ntorch.fusion %arg0 : tensor<256x4096xf32> -> tensor<256x4096xf32>
// CHECK: ntorch.reduce max
// CHECK: ntorch.reduce sum
// NISA-LABEL: func @softmax_wide
// NISA-NOT: nisa.loop
// NISA-COUNT-2: nisa.tensor_reduce max
// NISA-NOT: nisa.tensor_reduce max
// NISA: return
func.func @softmax_wide(%x: tensor<256x4096xf32>) -> tensor<256x4096xf32> {
  %m = ntorch.reduce max %x [1] {keepdim} : tensor<256x4096xf32> -> tensor<256x1xf32>
  %d = ntorch.binary sub %x, %m : tensor<256x4096xf32>, tensor<256x1xf32> -> tensor<256x4096xf32>
  %e = ntorch.unary exp %d : tensor<256x4096xf32> -> tensor<256x4096xf32>
  %s = ntorch.reduce sum %e [1] {keepdim} : tensor<256x4096xf32> -> tensor<256x1xf32>
  %r = ntorch.unary reciprocal %s : tensor<256x1xf32> -> tensor<256x1xf32>
  %y = ntorch.binary mul %e, %r : tensor<256x4096xf32>, tensor<256x1xf32> -> tensor<256x4096xf32>
  return %y : tensor<256x4096xf32>
}

// -----

// Rows of 16384 f32 (64 KiB per tile, 128 KiB with the work tile) exceed the budget: the
// row max is a fusion of its own (its input tile alone fits), and so is the row sum; the
// elementwise ops between them read and write HBM.
// CHECK-LABEL: func @softmax_too_wide
// CHECK: ntorch.fusion %arg0 : tensor<128x16384xf32> -> tensor<128x1xf32>
// CHECK-NEXT: ^bb0
// CHECK-NEXT: ntorch.reduce max
// CHECK-NEXT: ntorch.reshape
// CHECK-NEXT: ntorch.yield
// CHECK: ntorch.unary exp
// CHECK-NEXT: ntorch.yield
// CHECK: ntorch.reduce sum
func.func @softmax_too_wide(%x: tensor<128x16384xf32>) -> tensor<128x16384xf32> {
  %m = ntorch.reduce max %x [1] {keepdim} : tensor<128x16384xf32> -> tensor<128x1xf32>
  %d = ntorch.binary sub %x, %m : tensor<128x16384xf32>, tensor<128x1xf32> -> tensor<128x16384xf32>
  %e = ntorch.unary exp %d : tensor<128x16384xf32> -> tensor<128x16384xf32>
  %s = ntorch.reduce sum %e [1] {keepdim} : tensor<128x16384xf32> -> tensor<128x1xf32>
  %r = ntorch.unary reciprocal %s : tensor<128x1xf32> -> tensor<128x1xf32>
  %y = ntorch.binary mul %e, %r : tensor<128x16384xf32>, tensor<128x1xf32> -> tensor<128x16384xf32>
  return %y : tensor<128x16384xf32>
}

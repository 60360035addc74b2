// RUN: neuron-opt %s -neuron-fold-partitions -canonicalize -split-input-file | FileCheck %s

// A 1-D elementwise chain is viewed as [128 x 8192] rows: all partitions, 8 K-element rows;
// the reshapes between the folded ops cancel.
// CHECK-LABEL: func @chain_1d
// CHECK: %[[X:.*]] = ntorch.reshape %arg0 : tensor<1048576xf32> -> tensor<128x8192xf32>
// CHECK: %[[M:.*]] = ntorch.binary mul %[[X]], %{{.*}} : tensor<128x8192xf32>, tensor<f32> -> tensor<128x8192xf32>
// CHECK: %[[E:.*]] = ntorch.unary exp %[[M]] : tensor<128x8192xf32> -> tensor<128x8192xf32>
// CHECK: %[[R:.*]] = ntorch.reshape %[[E]] : tensor<128x8192xf32> -> tensor<1048576xf32>
// CHECK: return %[[R]]
func.func @chain_1d(%x: tensor<1048576xf32>) -> tensor<1048576xf32> {
  %c = ntorch.constant dense<2.0> : tensor<f32>
  %m = ntorch.binary mul %x, %c : tensor<1048576xf32>, tensor<f32> -> tensor<1048576xf32>
  %e = ntorch.unary exp %m : tensor<1048576xf32> -> tensor<1048576xf32>
  return %e : tensor<1048576xf32>
}

// Few rows of a count without 128 as a divisor: the largest divisor up to 128 (125).
// CHECK-LABEL: func @three_rows
// CHECK: ntorch.unary exp %{{.*}} : tensor<125x120xf32> -> tensor<125x120xf32>
func.func @three_rows(%x: tensor<3x5000xf32>) -> tensor<3x5000xf32> {
  %e = ntorch.unary exp %x : tensor<3x5000xf32> -> tensor<3x5000xf32>
  return %e : tensor<3x5000xf32>
}

// A matmul's epilogue stays in the matmul's shape (it fuses there), and so does an op
// beside a broadcast operand.
// CHECK-LABEL: func @epilogue
// CHECK-NOT: ntorch.reshape
// CHECK: ntorch.unary relu %{{.*}} : tensor<3x300xf32> -> tensor<3x300xf32>
func.func @epilogue(%x: tensor<3x200xf32>, %w: tensor<200x300xf32>, %b: tensor<300xf32>) -> tensor<3x300xf32> {
  %mm = ntorch.matmul %x, %w : tensor<3x200xf32>, tensor<200x300xf32> -> tensor<3x300xf32>
  %a = ntorch.binary add %b, %mm : tensor<300xf32>, tensor<3x300xf32> -> tensor<3x300xf32>
  %r = ntorch.unary relu %a : tensor<3x300xf32> -> tensor<3x300xf32>
  return %r : tensor<3x300xf32>
}

// Enough rows already: unchanged.
// CHECK-LABEL: func @many_rows
// CHECK-NOT: ntorch.reshape
func.func @many_rows(%x: tensor<256x64xf32>) -> tensor<256x64xf32> {
  %e = ntorch.unary exp %x : tensor<256x64xf32> -> tensor<256x64xf32>
  return %e : tensor<256x64xf32>
}

// -----

// A reduction of all of [1024, 768] into one value is split in two: 128 rows of 6144 (each
// on its own partition), then the 128 partial sums.
// CHECK-LABEL: func @sum_all
// CHECK: %[[X:.*]] = ntorch.reshape %arg0 : tensor<1024x768xf32> -> tensor<128x6144xf32>
// CHECK: %[[P:.*]] = ntorch.reduce sum %[[X]] [1] : tensor<128x6144xf32> -> tensor<128xf32>
// CHECK: %[[S:.*]] = ntorch.reduce sum %[[P]] [0] : tensor<128xf32> -> tensor<f32>
// CHECK: return %[[S]]
func.func @sum_all(%x: tensor<1024x768xf32>) -> tensor<f32> {
  %s = ntorch.reduce sum %x [0, 1] : tensor<1024x768xf32> -> tensor<f32>
  return %s : tensor<f32>
}

// -----

// Three rows of 50000: each split into 40 partitions' worth (120 rows of 1250), then the 40
// partial maxima of each row; keepdim stays in the result's shape.
// CHECK-LABEL: func @max_rows
// CHECK: %[[X:.*]] = ntorch.reshape %arg0 : tensor<3x50000xf32> -> tensor<3x40x1250xf32>
// CHECK: %[[P:.*]] = ntorch.reduce max %[[X]] [2] : tensor<3x40x1250xf32> -> tensor<3x40xf32>
// CHECK: %[[M:.*]] = ntorch.reduce max %[[P]] [1] : tensor<3x40xf32> -> tensor<3xf32>
// CHECK: ntorch.reshape %[[M]] : tensor<3xf32> -> tensor<3x1xf32>
func.func @max_rows(%x: tensor<3x50000xf32>) -> tensor<3x1xf32> {
  %m = ntorch.reduce max %x [1] {keepdim} : tensor<3x50000xf32> -> tensor<3x1xf32>
  return %m : tensor<3x1xf32>
}

// -----

// Rows enough to fill the partitions, short rows, or a length with no divisor of at least 8
// up to the partitions left: unchanged.
// CHECK-LABEL: func @unsplit
// CHECK: ntorch.reduce sum %arg0 [1] : tensor<64x8192xf32> -> tensor<64xf32>
// CHECK: ntorch.reduce sum %arg1 [1] : tensor<2x1000xf32> -> tensor<2xf32>
// CHECK: ntorch.reduce sum %arg2 [0] : tensor<100003xf32> -> tensor<f32>
func.func @unsplit(%a: tensor<64x8192xf32>, %b: tensor<2x1000xf32>, %c: tensor<100003xf32>) -> (tensor<64xf32>, tensor<2xf32>, tensor<f32>) {
  %0 = ntorch.reduce sum %a [1] : tensor<64x8192xf32> -> tensor<64xf32>
  %1 = ntorch.reduce sum %b [1] : tensor<2x1000xf32> -> tensor<2xf32>
  %2 = ntorch.reduce sum %c [0] : tensor<100003xf32> -> tensor<f32>
  return %0, %1, %2 : tensor<64xf32>, tensor<2xf32>, tensor<f32>
}

// -----

// A bf16 sum stays whole (it is rounded once from fp32; bf16 partial sums would round twice);
// a bf16 max splits (exact).
// CHECK-LABEL: func @bf16
// CHECK: ntorch.reduce sum %arg0 [0, 1] : tensor<1024x768xbf16> -> tensor<bf16>
// CHECK: ntorch.reduce max %{{.*}} [1] : tensor<128x6144xbf16> -> tensor<128xbf16>
func.func @bf16(%x: tensor<1024x768xbf16>) -> (tensor<bf16>, tensor<bf16>) {
  %s = ntorch.reduce sum %x [0, 1] : tensor<1024x768xbf16> -> tensor<bf16>
  %m = ntorch.reduce max %x [0, 1] : tensor<1024x768xbf16> -> tensor<bf16>
  return %s, %m : tensor<bf16>, tensor<bf16>
}

// RUN: neuron-opt %s -neuron-fuse-elementwise -neuron-fuse-matmul-epilogue -split-input-file | FileCheck %s

// Linear + bias + GELU: the fusion consumes the matmul's only result over the same
// shape, and its other operand (the bias) exists before the matmul: it becomes the
// matmul's epilogue and runs on each PSUM tile.
// CHECK-LABEL: func @epilogue
// CHECK: ntorch.matmul
// CHECK-NEXT: ntorch.fusion {{.*}} {ntorch.matmul_epilogue}
func.func @epilogue(%x: tensor<256x512xf32>, %w: tensor<512x384xf32>, %b: tensor<384xf32>) -> tensor<256x384xf32> {
  %0 = ntorch.matmul %x, %w : tensor<256x512xf32>, tensor<512x384xf32> -> tensor<256x384xf32>
  %1 = ntorch.binary add %0, %b : tensor<256x384xf32>, tensor<384xf32> -> tensor<256x384xf32>
  %2 = ntorch.unary gelu %1 : tensor<256x384xf32> -> tensor<256x384xf32>
  return %2 : tensor<256x384xf32>
}

// -----

// (a @ b - c @ d) + e: the fusion reads two matmuls' results; it is neither one's epilogue
// (the lowering would not know which matmul's PSUM tiles it runs on).
// CHECK-LABEL: func @two_matmuls
// CHECK-NOT: ntorch.matmul_epilogue
func.func @two_matmuls(%a: tensor<64x64xf32>, %b: tensor<64x64xf32>, %c: tensor<64x64xf32>, %d: tensor<64x64xf32>, %e: tensor<64x64xf32>) -> tensor<64x64xf32> {
  %0 = ntorch.matmul %a, %b : tensor<64x64xf32>, tensor<64x64xf32> -> tensor<64x64xf32>
  %1 = ntorch.matmul %c, %d : tensor<64x64xf32>, tensor<64x64xf32> -> tensor<64x64xf32>
  %2 = ntorch.binary sub %0, %1 : tensor<64x64xf32>, tensor<64x64xf32> -> tensor<64x64xf32>
  %3 = ntorch.binary add %2, %e : tensor<64x64xf32>, tensor<64x64xf32> -> tensor<64x64xf32>
  return %3 : tensor<64x64xf32>
}

// -----

// The matmul result is also returned: it must reach HBM, so no epilogue.
// CHECK-LABEL: func @two_users
// CHECK-NOT: ntorch.matmul_epilogue
func.func @two_users(%x: tensor<256x512xf32>, %w: tensor<512x384xf32>) -> (tensor<256x384xf32>, tensor<256x384xf32>) {
  %0 = ntorch.matmul %x, %w : tensor<256x512xf32>, tensor<512x384xf32> -> tensor<256x384xf32>
  %1 = ntorch.unary relu %0 : tensor<256x384xf32> -> tensor<256x384xf32>
  return %0, %1 : tensor<256x384xf32>, tensor<256x384xf32>
}

// -----

// A fusion with a row reduction (here max, sub, exp of a softmax) needs whole rows in
// one PSUM tile (512 fp32): rows of 1024 do not fit, rows of 384 do.
// CHECK-LABEL: func @wide_rows
// CHECK-NOT: ntorch.matmul_epilogue
// CHECK-LABEL: func @narrow_rows
// CHECK: ntorch.fusion {{.*}} {ntorch.matmul_epilogue}
func.func @wide_rows(%x: tensor<128x64xf32>, %w: tensor<64x1024xf32>) -> tensor<128x1024xf32> {
  %0 = ntorch.matmul %x, %w : tensor<128x64xf32>, tensor<64x1024xf32> -> tensor<128x1024xf32>
  %1 = ntorch.fusion %0 : tensor<128x1024xf32> -> tensor<128x1024xf32> {
  ^bb0(%a: tensor<128x1024xf32>):
    %m = ntorch.reduce max %a [1] {keepdim} : tensor<128x1024xf32> -> tensor<128x1xf32>
    %d = ntorch.binary sub %a, %m : tensor<128x1024xf32>, tensor<128x1xf32> -> tensor<128x1024xf32>
    %e = ntorch.unary exp %d : tensor<128x1024xf32> -> tensor<128x1024xf32>
    ntorch.yield %e : tensor<128x1024xf32>
  }
  return %1 : tensor<128x1024xf32>
}
func.func @narrow_rows(%x: tensor<128x64xf32>, %w: tensor<64x384xf32>) -> tensor<128x384xf32> {
  %0 = ntorch.matmul %x, %w : tensor<128x64xf32>, tensor<64x384xf32> -> tensor<128x384xf32>
  %1 = ntorch.fusion %0 : tensor<128x384xf32> -> tensor<128x384xf32> {
  ^bb0(%a: tensor<128x384xf32>):
    %m = ntorch.reduce max %a [1] {keepdim} : tensor<128x384xf32> -> tensor<128x1xf32>
    %d = ntorch.binary sub %a, %m : tensor<128x384xf32>, tensor<128x1xf32> -> tensor<128x384xf32>
    %e = ntorch.unary exp %d : tensor<128x384xf32> -> tensor<128x384xf32>
    ntorch.yield %e : tensor<128x384xf32>
  }
  return %1 : tensor<128x384xf32>
}

// -----

// A lone bias add on a matmul is outlined as a one-op fusion, so it becomes the epilogue.
// CHECK-LABEL: func @lone_bias_add
// CHECK: ntorch.matmul
// CHECK-NEXT: ntorch.fusion {{.*}} {ntorch.matmul_epilogue}
// CHECK: ntorch.binary add
func.func @lone_bias_add(%x: tensor<256x512xbf16>, %w: tensor<512x384xbf16>, %b: tensor<384xbf16>) -> tensor<256x384xbf16> {
  %0 = ntorch.matmul %x, %w : tensor<256x512xbf16>, tensor<512x384xbf16> -> tensor<256x384xbf16>
  %1 = ntorch.binary add %b, %0 : tensor<384xbf16>, tensor<256x384xbf16> -> tensor<256x384xbf16>
  return %1 : tensor<256x384xbf16>
}

// -----

// The model views the product with a batch dim of 1 before its activation: the reshape
// sinks below the elementwise ops (and cancels with the one after them), so bias add and
// activation form one epilogue.
// CHECK-LABEL: func @batch_view_between
// CHECK: ntorch.matmul
// CHECK-NEXT: ntorch.fusion {{.*}} {ntorch.matmul_epilogue} : tensor<384xbf16>, tensor<256x384xbf16> -> tensor<256x384xbf16>
// CHECK: ntorch.binary add
// CHECK: ntorch.unary tanh
// CHECK: ntorch.binary mul
// CHECK-NOT: ntorch.reshape
// CHECK: return
func.func @batch_view_between(%x: tensor<256x512xbf16>, %w: tensor<512x384xbf16>, %b: tensor<384xbf16>) -> tensor<256x384xbf16> {
  %half = ntorch.constant dense<5.000000e-01> : tensor<f32>
  %0 = ntorch.matmul %x, %w : tensor<256x512xbf16>, tensor<512x384xbf16> -> tensor<256x384xbf16>
  %1 = ntorch.binary add %b, %0 : tensor<384xbf16>, tensor<256x384xbf16> -> tensor<256x384xbf16>
  %2 = ntorch.reshape %1 : tensor<256x384xbf16> -> tensor<1x256x384xbf16>
  %3 = ntorch.unary tanh %2 : tensor<1x256x384xbf16> -> tensor<1x256x384xbf16>
  %4 = ntorch.binary mul %3, %half : tensor<1x256x384xbf16>, tensor<f32> -> tensor<1x256x384xbf16>
  %5 = ntorch.reshape %4 : tensor<1x256x384xbf16> -> tensor<256x384xbf16>
  return %5 : tensor<256x384xbf16>
}

// -----

// A full operand of the batch-1 shape is not reshaped for the sinking: the chain stays.
// CHECK-LABEL: func @full_operand_keeps_the_view
// CHECK: ntorch.reshape {{.*}} -> tensor<1x256x384xbf16>
// CHECK: ntorch.binary add {{.*}} : tensor<1x256x384xbf16>, tensor<1x256x384xbf16>
func.func @full_operand_keeps_the_view(%x: tensor<256x384xbf16>, %y: tensor<1x256x384xbf16>) -> tensor<1x256x384xbf16> {
  %0 = ntorch.reshape %x : tensor<256x384xbf16> -> tensor<1x256x384xbf16>
  %1 = ntorch.binary add %0, %y : tensor<1x256x384xbf16>, tensor<1x256x384xbf16> -> tensor<1x256x384xbf16>
  return %1 : tensor<1x256x384xbf16>
}
